//! Cylinders: analytic contacts with planes, spheres, boxes and cylinders (gap, normal,
//! points), a cylinder rolling down an incline at `2/3 g sin θ`, and one standing at rest.

use nalgebra::{UnitQuaternion, Vector3};
use signorini::registry;
use signorini::sim::collision::{Contact, Detector};
use signorini::sim::scene::{self, Scene};
use signorini::sim::{Pose, Shape};

type V3 = Vector3<f64>;

const TOL: f64 = 1e-9;

fn cylinder(radius: f64, half_length: f64) -> Shape {
    Shape::Cylinder {
        radius,
        half_length,
    }
}

/// A pose at `p` whose body `z` axis (the cylinder's axis) points along `axis`.
fn along(p: [f64; 3], axis: V3) -> Pose {
    Pose {
        position: p.into(),
        orientation: UnitQuaternion::rotation_between(&V3::z(), &axis).expect("not −z"),
    }
}

/// The contacts of two bodies (neither static), checking the invariants of every contact.
fn contacts(shapes: &[Shape; 2], poses: &[Pose; 2], envelope: f64) -> Vec<Contact> {
    let mut out = Vec::new();
    Detector::default().detect(shapes, poses, &[false, false], envelope, &mut out);
    for c in &out {
        assert!((c.normal.norm() - 1.0).abs() < TOL, "unit normal");
        let gap = (c.point_b - c.point_a).dot(&c.normal);
        assert!((gap - c.distance).abs() < TOL, "distance = (pb − pa)·n");
    }
    out
}

fn close(a: V3, b: V3) -> bool {
    (a - b).norm() < 1e-9
}

#[test]
fn lying_on_a_plane_touches_at_both_ends_of_its_lowest_line() {
    let shapes = [Shape::Plane, cylinder(0.5, 1.0)];
    let poses = [Pose::at(V3::zeros()), along([0.3, 0.2, 0.51], V3::x())];
    let cs = contacts(&shapes, &poses, 0.05);
    assert_eq!(cs.len(), 2);
    for c in &cs {
        assert_eq!((c.body_a, c.body_b), (0, 1));
        assert!((c.distance - 0.01).abs() < TOL);
        assert!(close(c.normal, V3::z()));
        assert!((c.point_b.z - 0.01).abs() < TOL && c.point_a.z.abs() < TOL);
        assert!((c.point_b.y - 0.2).abs() < TOL);
    }
    let mut xs: Vec<f64> = cs.iter().map(|c| c.point_b.x).collect();
    xs.sort_by(f64::total_cmp);
    assert!(
        (xs[0] + 0.7).abs() < TOL && (xs[1] - 1.3).abs() < TOL,
        "{xs:?}"
    );
    // Lifted out of the envelope: nothing.
    assert!(contacts(&shapes, &poses, 0.009).is_empty());
}

#[test]
fn standing_on_a_plane_touches_by_four_rim_points_around_its_center() {
    let shapes = [Shape::Plane, cylinder(0.5, 1.0)];
    let poses = [Pose::at(V3::zeros()), Pose::at(V3::new(0.3, 0.2, 0.98))];
    let cs = contacts(&shapes, &poses, 0.05);
    assert_eq!(cs.len(), 4);
    let mut mean = V3::zeros();
    for c in &cs {
        assert!((c.distance + 0.02).abs() < TOL);
        assert!(close(c.normal, V3::z()));
        let r = c.point_b - V3::new(0.3, 0.2, -0.02);
        assert!(r.z.abs() < TOL && (r.norm() - 0.5).abs() < TOL, "{r:?}");
        mean += r / 4.0;
    }
    // The four points surround the center: their mean is well inside the rim.
    assert!(mean.norm() < 0.25, "{mean:?}");
}

#[test]
fn tilted_on_a_plane_touches_by_its_lowest_rim_point() {
    let (r, h, tilt) = (0.5, 1.0, 0.4f64);
    let axis = V3::new(tilt.sin(), 0.0, tilt.cos());
    let lowest_above_center = h * tilt.cos() + r * tilt.sin();
    let shapes = [Shape::Plane, cylinder(r, h)];
    let poses = [
        Pose::at(V3::zeros()),
        along([0.0, 0.0, lowest_above_center + 0.003], axis),
    ];
    let cs = contacts(&shapes, &poses, 0.05);
    assert_eq!(cs.len(), 1);
    let c = cs[0];
    assert!((c.distance - 0.003).abs() < TOL);
    // The bottom cap's rim point farthest down: −h·a + r·(cos t, 0, −sin t).
    let want = poses[1].position - axis * h + V3::new(tilt.cos(), 0.0, -tilt.sin()) * r;
    assert!(close(c.point_b, want), "{:?} vs {want:?}", c.point_b);
}

#[test]
fn sphere_against_the_side_the_cap_and_the_rim() {
    let shapes = [cylinder(0.5, 1.0), Shape::Sphere { radius: 0.2 }];
    let cyl = along([1.0, 0.0, 0.0], V3::y()); // axis along y
    // Side: 0.8 from the axis along z, within the length.
    let cs = contacts(&shapes, &[cyl, Pose::at(V3::new(1.0, 0.3, 0.8))], 0.5);
    assert_eq!(cs.len(), 1);
    assert!((cs[0].distance - 0.1).abs() < TOL);
    assert!(close(cs[0].normal, V3::z()));
    assert!(close(cs[0].point_a, V3::new(1.0, 0.3, 0.5)));
    // Cap: beyond y = +1 on the axis.
    let cs = contacts(&shapes, &[cyl, Pose::at(V3::new(1.1, 1.25, 0.0))], 0.5);
    assert!((cs[0].distance - 0.05).abs() < TOL);
    assert!(close(cs[0].normal, V3::y()));
    assert!(close(cs[0].point_a, V3::new(1.1, 1.0, 0.0)));
    // Rim: past the cap by 0.3 and past the side by 0.4 (center gap 0.5).
    let cs = contacts(&shapes, &[cyl, Pose::at(V3::new(1.0, 1.3, 0.9))], 0.5);
    assert!((cs[0].distance - 0.3).abs() < TOL);
    assert!(close(cs[0].normal, V3::new(0.0, 0.6, 0.8)));
    // Sphere first: the normal is flipped, A is still the smaller index.
    let cs = contacts(
        &[shapes[1], shapes[0]],
        &[Pose::at(V3::new(1.0, 0.3, 0.8)), cyl],
        0.5,
    );
    assert!(close(cs[0].normal, -V3::z()) && (cs[0].distance - 0.1).abs() < TOL);
}

#[test]
fn lying_on_a_box_touches_along_the_part_of_its_line_over_the_face() {
    // A box top at z = 0.5 spanning x ∈ [−1, 1]; a cylinder along x over x ∈ [0.5, 2.5].
    let shapes = [
        Shape::Box {
            half_extents: [1.0, 1.0, 0.5],
        },
        cylinder(0.25, 1.0),
    ];
    let poses = [Pose::at(V3::zeros()), along([1.5, 0.1, 0.76], V3::x())];
    let cs = contacts(&shapes, &poses, 0.05);
    assert_eq!(cs.len(), 2);
    let mut xs: Vec<f64> = cs.iter().map(|c| c.point_b.x).collect();
    xs.sort_by(f64::total_cmp);
    // Clipped at the box's edge x = 1.
    assert!(
        (xs[0] - 0.5).abs() < TOL && (xs[1] - 1.0).abs() < TOL,
        "{xs:?}"
    );
    for c in &cs {
        assert!((c.distance - 0.01).abs() < TOL && close(c.normal, V3::z()));
        assert!((c.point_a.z - 0.5).abs() < TOL && (c.point_b.y - 0.1).abs() < TOL);
    }
    // Cylinder first: normals from the cylinder down to the box.
    let cs = contacts(&[shapes[1], shapes[0]], &[poses[1], poses[0]], 0.05);
    assert_eq!(cs.len(), 2);
    assert!(cs.iter().all(|c| close(c.normal, -V3::z())));
}

#[test]
fn standing_on_a_box_and_a_box_on_its_side() {
    let slab = Shape::Box {
        half_extents: [2.0, 2.0, 0.5],
    };
    let shapes = [slab, cylinder(0.3, 0.4)];
    let poses = [Pose::at(V3::zeros()), Pose::at(V3::new(0.1, 0.0, 0.895))];
    let cs = contacts(&shapes, &poses, 0.05);
    assert_eq!(cs.len(), 4);
    for c in &cs {
        assert!((c.distance + 0.005).abs() < TOL && close(c.normal, V3::z()));
        let r = c.point_b - V3::new(0.1, 0.0, 0.495);
        assert!(r.z.abs() < TOL && (r.norm() - 0.3).abs() < TOL);
    }
    // A small box resting flat on a lying cylinder's side: the line of tangency clipped to
    // the box's bottom face, x ∈ [−0.1, 0.1].
    let shapes = [
        cylinder(0.5, 1.0),
        Shape::Box {
            half_extents: [0.1, 0.2, 0.05],
        },
    ];
    let poses = [
        along([0.0, 0.0, 0.0], V3::x()),
        Pose::at(V3::new(0.0, 0.0, 0.56)),
    ];
    let cs = contacts(&shapes, &poses, 0.05);
    assert!(!cs.is_empty() && cs.len() <= 4);
    for c in &cs {
        assert!((c.distance - 0.01).abs() < TOL, "{}", c.distance);
        assert!(close(c.normal, V3::z()));
    }
    let xs: Vec<f64> = cs.iter().map(|c| c.point_a.x).collect();
    assert!(xs.iter().any(|x| (x + 0.1).abs() < TOL) && xs.iter().any(|x| (x - 0.1).abs() < TOL));
}

#[test]
fn a_box_edge_along_the_axis_touches_the_side_along_the_cylinders_length() {
    // A cube turned 45° about x: its lowest edge runs along x, above a cylinder along x.
    let h = 0.5;
    let shapes = [
        cylinder(0.5, 1.0),
        Shape::Box {
            half_extents: [2.0, h, h],
        },
    ];
    let edge_height = h * std::f64::consts::SQRT_2;
    let cube = Pose {
        position: V3::new(0.0, 0.0, 0.5 + edge_height + 0.02),
        orientation: UnitQuaternion::from_axis_angle(&V3::x_axis(), std::f64::consts::FRAC_PI_4),
    };
    let poses = [along([0.0, 0.0, 0.0], V3::x()), cube];
    let cs = contacts(&shapes, &poses, 0.05);
    assert_eq!(cs.len(), 2);
    let mut xs: Vec<f64> = cs.iter().map(|c| c.point_b.x).collect();
    xs.sort_by(f64::total_cmp);
    assert!(
        (xs[0] + 1.0).abs() < TOL && (xs[1] - 1.0).abs() < TOL,
        "{xs:?}"
    );
    for c in &cs {
        assert!((c.distance - 0.02).abs() < TOL && close(c.normal, V3::z()));
    }
}

#[test]
fn cylinders_side_by_side_stacked_and_crossing() {
    let c = cylinder(0.5, 1.0);
    // Parallel along y, side by side along x, offset by 0.5 along the axis.
    let poses = [
        along([0.0, 0.0, 0.0], V3::y()),
        along([1.02, 0.5, 0.0], V3::y()),
    ];
    let cs = contacts(&[c, c], &poses, 0.05);
    assert_eq!(cs.len(), 2);
    let mut ys: Vec<f64> = cs.iter().map(|c| c.point_a.y).collect();
    ys.sort_by(f64::total_cmp);
    assert!(
        (ys[0] + 0.5).abs() < TOL && (ys[1] - 1.0).abs() < TOL,
        "{ys:?}"
    );
    assert!(
        cs.iter()
            .all(|c| (c.distance - 0.02).abs() < TOL && close(c.normal, V3::x()))
    );
    // Coaxial, one standing on the other (axes opposite): rim points, gap −0.01.
    let small = cylinder(0.3, 0.2);
    let upside_down = Pose {
        position: V3::new(0.05, 0.0, 1.19),
        orientation: UnitQuaternion::from_axis_angle(&V3::x_axis(), std::f64::consts::PI),
    };
    let poses = [Pose::at(V3::zeros()), upside_down];
    let cs = contacts(&[c, small], &poses, 0.05);
    assert!(!cs.is_empty() && cs.len() <= 4);
    for c in &cs {
        assert!((c.distance + 0.01).abs() < 1e-6 && (c.normal - V3::z()).norm() < 1e-6);
        assert!((c.point_a.z - 1.0).abs() < 1e-6);
    }
    // Crossing at right angles, one along x on top of one along y: one point.
    let poses = [
        along([0.0, 0.0, 0.0], V3::y()),
        along([0.1, 0.2, 1.03], V3::x()),
    ];
    let cs = contacts(&[c, c], &poses, 0.05);
    assert_eq!(cs.len(), 1);
    assert!((cs[0].distance - 0.03).abs() < TOL && close(cs[0].normal, V3::z()));
    assert!(close(cs[0].point_a, V3::new(0.0, 0.2, 0.5)));
}

fn scene(text: &str) -> Scene {
    scene::parse(text, "test.toml", "test", &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn run(s: &mut Scene, steps: usize) {
    let mut solver = signorini::solver::Runner::new(registry::solver(&s.run.solver).unwrap());
    for _ in 0..steps {
        s.world.step(&mut solver).unwrap();
    }
}

/// A solid cylinder rolling without slip down a 20° incline (μ = 1 > tan θ / 3) accelerates
/// at `2/3 g sin θ` (within 2 %) and turns at `v / r`.
#[test]
fn rolls_down_an_incline_at_two_thirds_g_sin_theta() {
    let (theta, r, g, dt, steps) = (20f64.to_radians(), 0.1, 9.81, 0.002, 250);
    // Plane normal (sin θ, 0, cos θ): downhill is (cos θ, 0, −sin θ); the axis along y.
    let mut s = scene(&format!(
        r#"
        friction = 1.0
        [settings]
        dt = {dt}
        tol = 1e-10
        max_iter = 2000
        [[body]]
        shape = {{ type = "plane" }}
        normal = [{sx}, 0.0, {cz}]
        motion = "fixed"
        [[body]]
        shape = {{ type = "cylinder", radius = {r}, half_length = 0.2 }}
        position = [{px}, 0.0, {pz}]
        euler = [1.5707963267948966, 0.0, 0.0]
        "#,
        sx = theta.sin(),
        cz = theta.cos(),
        px = r * theta.sin(),
        pz = r * theta.cos(),
    ));
    run(&mut s, steps);
    let b = &s.world.bodies[1];
    let downhill = V3::new(theta.cos(), 0.0, -theta.sin());
    let v = b.velocity.dot(&downhill);
    let a = v / (steps as f64 * dt);
    let want = 2.0 / 3.0 * g * theta.sin();
    assert!((a - want).abs() < 0.02 * want, "acceleration {a} vs {want}");
    let spin = b.angular_velocity.norm();
    assert!(
        (spin * r - v).abs() < 0.02 * v,
        "ω r = {} vs v = {v}",
        spin * r
    );
    // It stayed on the incline: the center at r above the plane.
    let height = b.pose.position.dot(&V3::new(theta.sin(), 0.0, theta.cos()));
    assert!((height - r).abs() < 1e-3, "height {height}");
}

/// A cylinder standing on a floor stays where it is, upright, for 500 steps.
#[test]
fn a_standing_cylinder_stays_at_rest() {
    let mut s = scene(
        r#"
        friction = 0.5
        [settings]
        dt = 0.01
        tol = 1e-10
        [[body]]
        shape = { type = "plane" }
        motion = "fixed"
        [[body]]
        shape = { type = "cylinder", radius = 0.1, half_length = 0.3 }
        position = [0.2, -0.1, 0.3]
        "#,
    );
    run(&mut s, 500);
    let b = &s.world.bodies[1];
    let drift = (b.pose.position - V3::new(0.2, -0.1, 0.3)).norm();
    assert!(drift < 1e-5, "drift {drift:e}");
    let tilt = (b.pose.orientation * V3::z()).angle(&V3::z());
    assert!(tilt < 1e-6, "tilt {tilt:e}");
    assert!(b.velocity.norm() < 1e-6 && b.angular_velocity.norm() < 1e-6);
}

/// A scene's cylinder with a non-positive size is refused, naming the key.
#[test]
fn a_bad_cylinder_size_names_its_key() {
    let err = scene::parse(
        "[[body]]\nshape = { type = \"cylinder\", radius = 0.1, half_length = -1.0 }\n",
        "bad.toml",
        "bad",
        &[],
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        err.contains("bad.toml") && err.contains("body[0].shape.half_length"),
        "{err}"
    );
}

/// The GPU-resident step does not take cylinders.
#[test]
fn the_resident_step_refuses_cylinders() {
    let s = scene(
        r#"
        [[body]]
        shape = { type = "plane" }
        motion = "fixed"
        [[body]]
        shape = { type = "cylinder", radius = 0.1, half_length = 0.3 }
        position = [0.0, 0.0, 0.3]
        "#,
    );
    let why = signorini::sim::resident::unqualified(&s.world).expect("refused");
    assert!(why.contains("cylinder"), "{why}");
}

/// A cylinder (a pusher) on a prescribed joint to the ground rises at 0.2 m/s (its initial
/// velocity) under gravity exactly as prescribed, and the impulse of its vertical row is
/// `m g h` (the force `m g`); a motor (a prescribed angular velocity) turns a wheel at
/// exactly its speed.
#[test]
fn prescribed_motion_is_followed_and_its_force_reported() {
    let mut s = scene(
        r#"
        [settings]
        dt = 0.01
        tol = 1e-12
        max_iter = 1000
        [[body]]
        name = "pusher"
        shape = { type = "cylinder", radius = 0.025, half_length = 0.1 }
        position = [0.0, 0.0, 1.0]
        velocity = [0.0, 0.0, 0.2]
        euler = [1.5707963267948966, 0.0, 0.0]
        density = 2000.0
        [[body]]
        name = "wheel"
        shape = { type = "cylinder", radius = 0.3, half_length = 0.05 }
        position = [2.0, 0.0, 1.0]
        [[joint]]
        type = "prescribed"
        a = "ground"
        b = "pusher"
        at = [0.0, 0.0, 1.0]
        velocity = [0.0, 0.0, 0.2]
        [[joint]]
        type = "prescribed"
        a = "ground"
        b = "wheel"
        at = [2.0, 0.0, 1.0]
        angular_velocity = [0.0, 0.0, 3.0]
        "#,
    );
    let (m, h, g) = (s.world.bodies[0].mass, 0.01, 9.81);
    let start = s.world.bodies[0].pose;
    let mut solver = signorini::solver::Runner::new(registry::solver("pgs").unwrap());
    for k in 1..=100 {
        s.world.step(&mut solver).unwrap();
        let t = k as f64 * h;
        let p = &s.world.bodies[0].pose;
        let want = start.position + V3::new(0.0, 0.0, 0.2 * t);
        assert!(
            (p.position - want).norm() < 1e-9,
            "step {k}: {:?}",
            p.position
        );
        assert!(p.orientation.angle_to(&start.orientation) < 1e-9);
        let gamma = s.world.joint_impulses(0);
        assert!((gamma[2] - m * g * h).abs() < 1e-9 * m * g * h, "{gamma:?}");
        assert!(
            gamma
                .iter()
                .enumerate()
                .all(|(r, x)| r == 2 || x.abs() < 1e-12)
        );
        let turned = s.world.bodies[1].pose.orientation.euler_angles().2;
        let want = (3.0 * t + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU);
        assert!(
            (turned + std::f64::consts::PI - want).abs() < 1e-9,
            "{turned}"
        );
    }
}

/// A pusher (a lying cylinder) on a prescribed horizontal velocity drives a box across a
/// floor with friction μ: it moves as prescribed through the contact, and once the box
/// slides at the pusher's speed the force along the drive is `μ m_box g` (within 1 %).
#[test]
fn a_prescribed_pusher_reports_the_friction_force_it_overcomes() {
    let mu = 0.4;
    let mut s = scene(&format!(
        r#"
        friction = {mu}
        [settings]
        dt = 0.005
        tol = 1e-12
        max_iter = 2000
        [[body]]
        shape = {{ type = "plane" }}
        motion = "fixed"
        [[body]]
        shape = {{ type = "box", half_extents = [0.1, 0.1, 0.05] }}
        position = [0.0, 0.0, 0.05]
        mass = 2.0
        friction = {mu}
        [[body]]
        name = "pusher"
        shape = {{ type = "cylinder", radius = 0.02, half_length = 0.1 }}
        position = [-0.125, 0.0, 0.05]
        euler = [1.5707963267948966, 0.0, 0.0]
        friction = 0.0
        [[joint]]
        type = "prescribed"
        a = "ground"
        b = "pusher"
        at = [-0.125, 0.0, 0.05]
        velocity = [0.1, 0.0, 0.0]
        "#
    ));
    let mut solver = signorini::solver::Runner::new(registry::solver("pgs").unwrap());
    let steps = 200;
    for _ in 0..steps {
        s.world.step(&mut solver).unwrap();
    }
    let x = s.world.bodies[2].pose.position.x;
    let want = -0.125 + 0.1 * steps as f64 * 0.005;
    assert!((x - want).abs() < 1e-9, "pusher at {x}, prescribed {want}");
    let box_speed = s.world.bodies[1].velocity.x;
    assert!((box_speed - 0.1).abs() < 1e-3, "box speed {box_speed}");
    let force = s.world.joint_impulses(0)[0] / 0.005;
    // The impulse is the one the joint applies to B (the pusher): forward, the push.
    let want = mu * 2.0 * 9.81;
    assert!(
        (force - want).abs() < 0.01 * want.abs(),
        "force {force} vs {want}"
    );
}

/// A `[[joint]]` with a key its kind does not have is refused, naming the key.
#[test]
fn a_joint_with_an_unknown_key_is_refused() {
    let text = r#"
        [[body]]
        name = "b"
        shape = { type = "sphere", radius = 0.1 }
        [[joint]]
        type = "prescribed"
        a = "ground"
        b = "b"
        at = [0.0, 0.0, 0.0]
        speed = 1.0
        "#;
    let err = scene::parse(text, "j.toml", "j", &[])
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("j.toml") && err.contains("speed"), "{err}");
}
