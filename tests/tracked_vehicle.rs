//! `scenes/tracked_vehicle.toml` (paper 004, Fig. 2): the vehicle drives forward under its
//! motors and its two loops of pinned shoes stay closed.

use std::path::Path;

use nalgebra::Vector3;
use signorini::registry;
use signorini::sim::scene;
use signorini::sim::{JointKind, World};

/// The largest distance between the two anchors of a revolute joint (a pin's separation).
fn worst_pin(world: &World) -> f64 {
    world
        .joints
        .iter()
        .filter(|j| matches!(j.kind, JointKind::Revolute { .. }))
        .map(|j| {
            let a = &world.bodies[j.body_a.expect("pinned to a body")];
            let b = &world.bodies[j.body_b];
            (a.pose.to_world(&j.anchor_a) - b.pose.to_world(&j.anchor_b)).norm()
        })
        .fold(0.0, f64::max)
}

/// 100 steps (0.5 s) with the scene's solver: the hull ends up moving forward (+x) at the
/// commanded 1 m/s within 20 % after its start, has advanced, stayed level, and no pin of
/// the tracks or the wheels opened by more than 2 mm.
#[test]
fn the_vehicle_drives_forward_with_its_tracks_closed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tracked_vehicle.toml");
    let mut s = scene::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.world.joints.len(), 2 * (32 + 5));
    let hull = s
        .world
        .bodies
        .iter()
        .position(|b| b.mass == 600.0)
        .expect("the hull");
    let start = s.world.bodies[hull].pose.position;
    let mut solver = signorini::solver::Runner::new(registry::solver(&s.run.solver).unwrap());
    let mut worst = 0.0f64;
    for _ in 0..100 {
        let stats = s.world.step(&mut solver).unwrap();
        assert!(stats.kinetic_energy.is_finite());
        worst = worst.max(worst_pin(&s.world));
    }
    let b = &s.world.bodies[hull];
    let advanced = b.pose.position - start;
    assert!(advanced.x > 0.2, "advanced {advanced:?}");
    assert!(
        advanced.y.abs() < 0.01 && advanced.z.abs() < 0.01,
        "{advanced:?}"
    );
    assert!((b.velocity.x - 1.0).abs() < 0.2, "speed {}", b.velocity.x);
    let up = b.pose.orientation * Vector3::z();
    assert!(up.z > 0.999, "the hull tilted: {up:?}");
    eprintln!("worst pin {worst:e}");
    assert!(worst < 2e-3, "a pin opened by {worst:e} m");
}

/// A `[[track]]` on a hull that does not exist, or with wheels that do not fit in the loop,
/// is refused naming the key.
#[test]
fn a_bad_track_names_its_key() {
    let track = |hull: &str, road: f64| {
        format!(
            r#"
            [[body]]
            name = "hull"
            shape = {{ type = "box", half_extents = [1.0, 0.4, 0.1] }}
            position = [0.0, 0.0, 1.0]
            [[track]]
            hull = "{hull}"
            center = [0.0, 0.7, 1.0]
            pitch = 0.2
            shoes_per_run = 4
            shoes_per_half_turn = 4
            shoe = [0.09, 0.2, 0.02]
            shoe_mass = 2.0
            road_wheels = 1
            road_wheel_radius = {road}
            wheel_half_width = 0.1
            wheel_mass = 5.0
            sprocket_speed = 1.0
            "#
        )
    };
    let err = |text: String| {
        scene::parse(&text, "t.toml", "t", &[])
            .err()
            .expect("refused")
            .to_string()
    };
    let e = err(track("body", 0.1));
    assert!(e.contains("t.toml") && e.contains("track[0].hull"), "{e}");
    let e = err(track("hull", 0.5));
    assert!(e.contains("track[0].road_wheel_radius"), "{e}");
    // The same track with a good hull and wheels builds: 2·(4 + 4) shoes, 3 wheels.
    let s = scene::parse(&track("hull", 0.1), "t.toml", "t", &[]).unwrap();
    assert_eq!(s.world.bodies.len(), 1 + 16 + 3);
    assert_eq!(s.world.joints.len(), 16 + 3);
}
