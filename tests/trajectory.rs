//! The trajectory file of `simulate --trajectory` (issue 18): a run written and read back, a
//! run stopped midway, and damaged headers.

mod common;

use std::path::{Path, PathBuf};

use signorini::app::report::frame::FrameOptions;
use signorini::app::report::trajectory::TrajectoryReader;
use signorini::app::run::{Outputs, run};
use signorini::registry;
use signorini::render::ColorField;
use signorini::sim::Shape;
use signorini::sim::scene::{self, Scene};
use signorini::solver::Runner;

/// Spheres falling on a plane beside a pendulum of two rods: every shape and a joint.
const SCENE: &str = r#"
[run]
solver = "pgs"
[[body]]
shape = { type = "plane" }
motion = "fixed"
[[body]]
shape = { type = "sphere", radius = 0.1 }
position = [0.0, 0.0, 0.3]
velocity = [1.0, 0.0, 0.0]
[[body]]
shape = { type = "sphere", radius = 0.15 }
position = [0.5, 0.0, 0.16]
[[chain]]
shape = { type = "box", half_extents = [0.02, 0.02, 0.1] }
count = 2
anchor = [1.0, 0.0, 1.0]
direction = [0.6, 0.0, -0.8]
spacing = 0.2
"#;

/// Runs `steps` steps of the test scene with a trajectory every 2 steps into `dir`;
/// returns the scene at the end and the file.
fn record(dir: &Path, steps: usize) -> (Scene, PathBuf) {
    let mut scene = scene::parse(SCENE, "test.toml", "traj", &[]).unwrap();
    let path = dir.join("run.traj");
    let outputs = Outputs {
        dir: dir.to_path_buf(),
        snapshot_every: 2,
        trajectory: Some(path.clone()),
        frames: FrameOptions {
            width: 32,
            height: 32,
            ..FrameOptions::default()
        },
        ..Outputs::default()
    };
    let mut solver = Runner::new(registry::solver("pgs").unwrap());
    run(&mut scene, &mut solver, steps, &outputs, |_| {}).unwrap();
    (scene, path)
}

/// A run of 6 steps with a frame every 2 reads back as its start and 3 frames: the header's
/// names, shapes and joint, and the last frame's step, time, poses (to `f32`), speeds and
/// contacts; the frame as the renderer sees it has one value per body in every field.
#[test]
fn a_run_reads_back() {
    let dir = common::fresh_dir("trajectory-round-trip");
    let (scene, path) = record(&dir, 6);
    let world = &scene.world;
    let mut reader = TrajectoryReader::open(&path).unwrap();
    assert_eq!(reader.note(), None);
    assert_eq!(reader.frames(), 4);
    let header = reader.header().clone();
    assert_eq!(
        (header.scene.as_str(), header.solver.as_str()),
        ("traj", "pgs")
    );
    assert_eq!(header.shapes.len(), world.bodies.len());
    assert_eq!(header.shapes[0], Shape::Plane);
    assert_eq!(
        header.shapes[1],
        Shape::Sphere {
            radius: 0.1f32.into()
        }
    );
    assert!(
        matches!(header.shapes[3], Shape::Box { half_extents } if half_extents[2] == f64::from(0.1f32))
    );
    assert_eq!(header.links.len(), world.joints.len());
    assert!(!header.links.is_empty());
    let first = reader.frame(0).unwrap();
    assert_eq!((first.step, first.time), (0, 0.0));
    assert_eq!(first.speeds[1], 1.0);
    let last = reader.frame(3).unwrap();
    assert_eq!((last.step, last.time), (6, world.time));
    for (k, body) in world.bodies.iter().enumerate() {
        let p = &last.poses[k];
        assert!((p.position - body.pose.position).norm() < 1e-6, "body {k}");
        assert!(
            p.orientation.angle_to(&body.pose.orientation) < 1e-5,
            "body {k}"
        );
        assert!(
            (last.speeds[k] - body.velocity.norm()).abs() < 1e-6,
            "body {k}"
        );
    }
    let contacts = ColorField::Contacts.values(world);
    let read: Vec<f64> = last.contacts.iter().map(|&c| f64::from(c)).collect();
    assert_eq!(read, contacts);
    assert!(
        contacts.iter().any(|&c| c > 0.0),
        "the sphere at rest touches the plane"
    );
    for field in [ColorField::Speed, ColorField::Contacts, ColorField::BodyId] {
        let frame = header.scene_frame(&last, field).unwrap();
        frame.check().unwrap();
        assert_eq!(frame.links.is_empty(), header.links.is_empty());
    }
    assert_eq!(
        header
            .scene_frame(&last, ColorField::BodyId)
            .unwrap()
            .values[4],
        4.0
    );
    let impulse = header.scene_frame(&last, ColorField::Impulse).unwrap_err();
    assert!(impulse.to_string().contains("not impulses"), "{impulse}");
}

/// A file cut inside its last frame (a run stopped midway) reads up to the last whole frame,
/// with a note naming the file; the frame past it is an error, not a panic.
#[test]
fn a_cut_off_file_reads_its_whole_frames() {
    let dir = common::fresh_dir("trajectory-cut");
    let (_, path) = record(&dir, 6);
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.join("cut.traj");
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).unwrap();
    let mut reader = TrajectoryReader::open(&cut).unwrap();
    assert_eq!(reader.frames(), 3);
    let note = reader.note().expect("a note on the cut-off frame");
    assert!(
        note.contains("cut.traj") && note.contains("cut off"),
        "{note}"
    );
    assert_eq!(reader.frame(2).unwrap().step, 4);
    assert!(reader.frame(3).is_err());
}

/// A change made to a good file's bytes.
type Damage = Box<dyn Fn(&mut Vec<u8>)>;

/// Damaged headers are errors naming the file and what is wrong: another format, another
/// version, a body count the file cannot hold, an unknown shape tag, a header cut short.
#[test]
fn bad_headers_are_clear_errors() {
    let dir = common::fresh_dir("trajectory-bad");
    let (_, path) = record(&dir, 2);
    let good = std::fs::read(&path).unwrap();
    // Bytes 12..16 are the body count; the shapes start after the two names (20..).
    let shapes = 20 + 2 + "traj".len() + 2 + "pgs".len();
    let cases: [(&str, Damage, &str); 5] = [
        (
            "other.traj",
            Box::new(|b| b[0] = b'X'),
            "not a signorini trajectory",
        ),
        ("version.traj", Box::new(|b| b[8] = 9), "version 9"),
        (
            "count.traj",
            Box::new(|b| b[12..16].copy_from_slice(&u32::MAX.to_le_bytes())),
            "header (shapes)",
        ),
        ("tag.traj", Box::new(move |b| b[shapes] = 7), "shape tag 7"),
        (
            "short.traj",
            Box::new(|b| b.truncate(20)),
            "not a whole header",
        ),
    ];
    for (name, damage, expected) in cases {
        let mut bytes = good.clone();
        damage(&mut bytes);
        let file = dir.join(name);
        std::fs::write(&file, &bytes).unwrap();
        let err = TrajectoryReader::open(&file).unwrap_err().to_string();
        assert!(
            err.contains(name) && err.contains(expected),
            "{name}: {err}"
        );
    }
}
