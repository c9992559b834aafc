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
    assert!(worst < 2e-3, "a pin opened by {worst:e} m");
}
