//! Turns a validated [`SceneFile`] into bodies and joints.

use std::collections::HashMap;
use std::path::Path;

use nalgebra::{UnitQuaternion, Vector3};

use super::SpecError;
use super::spec::{
    BodySpec, ChainSpec, ContainerSpec, LatticeSpec, MaterialSpec, MotionSpec, NetSpec, NodeRegion,
    SceneFile, StackSpec, TensionerSpec, TrackSpec, WallSpec,
};
use crate::sim::body::{Motion, Oscillation, RigidBody, mass_properties};
use crate::sim::fe::{Material, Solid, TetMesh};
use crate::sim::joint::{Joint, JointKind};
use crate::sim::spring::Spring;
use crate::sim::world::World;
use crate::sim::{Pose, Shape};

/// Bodies and joints under construction.
struct Builder {
    bodies: Vec<RigidBody>,
    joints: Vec<Joint>,
    springs: Vec<Spring>,
    friction: f64,
}

impl Builder {
    fn dynamic(&mut self, shape: Shape, pose: Pose, density: f64, friction: Option<f64>) -> usize {
        let (mass, inertia) = mass_properties(&shape, density).expect("validated: not a plane");
        let mut body = RigidBody::dynamic(shape, pose, mass, inertia);
        body.friction = friction.unwrap_or(self.friction);
        self.bodies.push(body);
        self.bodies.len() - 1
    }

    fn plane(
        &mut self,
        point: Vector3<f64>,
        normal: Vector3<f64>,
        friction: Option<f64>,
        osc: Option<Oscillation>,
    ) {
        let orientation =
            UnitQuaternion::rotation_between(&Vector3::z(), &normal).unwrap_or_else(|| {
                UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI)
            });
        let mut body = RigidBody::fixed(
            Shape::Plane,
            Pose {
                position: point,
                orientation,
            },
        );
        body.friction = friction.unwrap_or(self.friction);
        if let Some(oscillation) = osc {
            body.motion = Motion::Kinematic {
                oscillation,
                rest: point - oscillation.displacement(0.0),
            };
        }
        self.bodies.push(body);
    }

    fn joint(&mut self, a: Option<usize>, b: usize, at: Vector3<f64>, kind: JointKind) {
        let joint = Joint::at_world_point(&self.bodies, a, b, at, kind);
        self.joints.push(joint);
    }

    fn body(&mut self, spec: &BodySpec) -> usize {
        let orientation = match spec.normal {
            Some(n) => UnitQuaternion::rotation_between(&Vector3::z(), &Vector3::from(n))
                .unwrap_or_else(|| {
                    UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI)
                }),
            None => UnitQuaternion::from_euler_angles(spec.euler[0], spec.euler[1], spec.euler[2]),
        };
        let pose = Pose {
            position: spec.position.into(),
            orientation,
        };
        let mut body = match spec.motion {
            MotionSpec::Dynamic => {
                let (mut mass, mut inertia) =
                    mass_properties(&spec.shape, spec.density).expect("validated: not a plane");
                if let Some(m) = spec.mass {
                    inertia *= m / mass;
                    mass = m;
                }
                RigidBody::dynamic(spec.shape, pose, mass, inertia)
            }
            MotionSpec::Fixed => RigidBody::fixed(spec.shape, pose),
            MotionSpec::Oscillation(oscillation) => {
                let mut b = RigidBody::fixed(spec.shape, pose);
                b.motion = Motion::Kinematic {
                    oscillation,
                    rest: pose.position - oscillation.displacement(0.0),
                };
                b
            }
        };
        body.friction = spec.friction.unwrap_or(self.friction);
        if body.is_dynamic() {
            body.velocity = spec.velocity.into();
            body.angular_velocity = spec.angular_velocity.into();
        }
        self.bodies.push(body);
        self.bodies.len() - 1
    }

    fn container(&mut self, c: &ContainerSpec) {
        let center = Vector3::from(c.center);
        let [hx, hy] = c.half_size;
        self.plane(center, Vector3::z(), c.friction, c.oscillation);
        for (offset, normal) in [
            (Vector3::new(-hx, 0.0, 0.0), Vector3::x()),
            (Vector3::new(hx, 0.0, 0.0), -Vector3::x()),
            (Vector3::new(0.0, -hy, 0.0), Vector3::y()),
            (Vector3::new(0.0, hy, 0.0), -Vector3::y()),
        ] {
            self.plane(center + offset, normal, c.friction, c.oscillation);
        }
    }

    fn lattice(&mut self, l: &LatticeSpec) {
        let size = bounding_radius(&l.shape);
        let spacing = l.spacing.unwrap_or(2.2 * size);
        let nx = (((l.max[0] - l.min[0]) / spacing).floor() as usize).max(1);
        let ny = (((l.max[1] - l.min[1]) / spacing).floor() as usize).max(1);
        let free = (spacing - 2.0 * size).max(0.0) / 2.0;
        let mut rng = SplitMix(l.seed);
        for k in 0..l.count {
            let (i, j, layer) = (k % nx, (k / nx) % ny, k / (nx * ny));
            let mut p = Vector3::new(
                l.min[0] + spacing * (i as f64 + 0.5),
                l.min[1] + spacing * (j as f64 + 0.5),
                l.min[2] + spacing * (layer as f64 + 0.5),
            );
            p.x += l.jitter * free * rng.symmetric();
            p.y += l.jitter * free * rng.symmetric();
            let b = self.dynamic(l.shape, Pose::at(p), l.density, l.friction);
            self.bodies[b].velocity = l.velocity.into();
        }
    }

    fn stack(&mut self, s: &StackSpec) {
        // (shape, mass): spheres sized by their mass at the stack's density, or one shape
        // with the given masses, or `count` copies of the shape.
        let bodies: Vec<(Shape, Option<f64>)> = match (&s.masses, s.shape) {
            (Some(masses), None) => masses
                .iter()
                .map(|m| {
                    let radius = (3.0 * m / (4.0 * std::f64::consts::PI * s.density)).cbrt();
                    (Shape::Sphere { radius }, None)
                })
                .collect(),
            (Some(masses), Some(shape)) => masses.iter().map(|m| (shape, Some(*m))).collect(),
            (None, shape) => vec![(shape.expect("validated"), None); s.count.expect("validated")],
        };
        let mut z = s.base[2];
        for (shape, mass) in bodies {
            let half = half_height(&shape);
            let center = Vector3::new(s.base[0], s.base[1], z + half);
            let b = match mass {
                Some(m) => self.with_mass(shape, Pose::at(center), m, s.friction),
                None => self.dynamic(shape, Pose::at(center), s.density, s.friction),
            };
            if s.guide {
                self.joint(
                    None,
                    b,
                    center,
                    JointKind::Line {
                        axis_a: [0.0, 0.0, 1.0],
                    },
                );
            }
            z += 2.0 * half + s.gap;
        }
    }

    fn chain(&mut self, c: &ChainSpec) {
        let dir = Vector3::from(c.direction).normalize();
        // Links are rods along the chain: body z axis along `dir`, center halfway between
        // their two joints; the end body hangs from the last joint by its surface.
        let orientation =
            UnitQuaternion::rotation_between(&Vector3::z(), &dir).unwrap_or_else(|| {
                UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI)
            });
        let links = (0..c.count).map(|_| (c.shape, c.density, 0.5 * c.spacing));
        let end = c.end_shape.map(|s| (s, c.end_density, bounding_radius(&s)));
        let mut previous: Option<usize> = None;
        let mut joint_at = Vector3::from(c.anchor);
        for (shape, density, offset) in links.chain(end) {
            let center = joint_at + dir * offset;
            let pose = Pose {
                position: center,
                orientation,
            };
            let b = self.dynamic(shape, pose, density, c.friction);
            self.joint(previous, b, joint_at, JointKind::Spherical);
            previous = Some(b);
            joint_at = center + dir * offset;
        }
    }

    fn wall(&mut self, w: &WallSpec) {
        let [hx, hy, hz] = w.brick;
        let shape = Shape::Box {
            half_extents: w.brick,
        };
        for r in 0..w.rows {
            // A shifted row has one brick less, so that no brick overhangs the row below.
            let shifted = w.stagger && r % 2 == 1;
            let shift = if shifted { hx + 0.5 * w.gap } else { 0.0 };
            for c in 0..w.columns - usize::from(shifted) {
                let p = Vector3::new(
                    w.origin[0] + shift + hx + c as f64 * (2.0 * hx + w.gap),
                    w.origin[1] + hy,
                    w.origin[2] + hz + r as f64 * (2.0 * hz + w.gap),
                );
                self.dynamic(shape, Pose::at(p), w.density, w.friction);
            }
        }
    }

    fn net(&mut self, n: &NetSpec) {
        let shape = Shape::Sphere { radius: n.radius };
        let origin = Vector3::from(n.origin);
        let first = self.bodies.len();
        let node = |i: usize, j: usize| first + j * n.nx + i;
        for j in 0..n.ny {
            for i in 0..n.nx {
                let p = origin + Vector3::new(i as f64, j as f64, 0.0) * n.spacing;
                self.dynamic(shape, Pose::at(p), n.density, Some(0.0));
            }
        }
        let link = |s: &mut Self, a: usize, b: usize| {
            let length = (s.bodies[b].pose.position - s.bodies[a].pose.position).norm();
            let at = s.bodies[a].pose.position;
            // A distance joint anchored at both centers.
            let mut joint =
                Joint::at_world_point(&s.bodies, Some(a), b, at, JointKind::Distance { length });
            joint.anchor_b = Vector3::zeros();
            s.joints.push(joint);
        };
        for j in 0..n.ny {
            for i in 0..n.nx {
                if i + 1 < n.nx {
                    link(self, node(i, j), node(i + 1, j));
                }
                if j + 1 < n.ny {
                    link(self, node(i, j), node(i, j + 1));
                }
                if n.diagonals && i + 1 < n.nx && j + 1 < n.ny {
                    link(self, node(i, j), node(i + 1, j + 1));
                }
            }
        }
        for (i, j) in [(0, 0), (n.nx - 1, 0), (0, n.ny - 1), (n.nx - 1, n.ny - 1)] {
            let b = node(i, j);
            let at = self.bodies[b].pose.position;
            self.joint(None, b, at, JointKind::Spherical);
        }
    }
}

impl Builder {
    /// A dynamic body of the given mass (inertia from the shape at uniform density).
    fn with_mass(&mut self, shape: Shape, pose: Pose, mass: f64, friction: Option<f64>) -> usize {
        let b = self.dynamic(shape, pose, 1.0, friction);
        let body = &mut self.bodies[b];
        body.inertia *= mass / body.mass;
        body.mass = mass;
        b
    }

    /// A track (see [`TrackSpec`]) on body `hull`: the loop of pins, the shoes between
    /// consecutive pins with their revolute joints, and the wheels with theirs.
    fn track(&mut self, t: &TrackSpec, hull: usize) {
        let [cx, y, cz] = t.center;
        let (k, m) = (t.shoes_per_run, t.shoes_per_half_turn);
        let (rho, step) = (t.pin_radius(), 2.0 * t.half_bend());
        let half_d = 0.5 * k as f64 * t.pitch;
        let (rear, front) = (cx - half_d, cx + half_d);
        // Pins counter-clockwise seen from −y: forward along the lower run, up around the
        // idler, back along the upper run, down around the sprocket.
        let mut pins = Vec::with_capacity(2 * (k + m));
        let around = |x: f64, from: f64, j: usize| {
            let a = from + step * j as f64;
            Vector3::new(x + rho * a.cos(), y, cz + rho * a.sin())
        };
        use std::f64::consts::FRAC_PI_2;
        pins.extend((0..k).map(|j| Vector3::new(rear + t.pitch * j as f64, y, cz - rho)));
        pins.extend((0..m).map(|j| around(front, -FRAC_PI_2, j)));
        pins.extend((0..k).map(|j| Vector3::new(front - t.pitch * j as f64, y, cz + rho)));
        pins.extend((0..m).map(|j| around(rear, FRAC_PI_2, j)));
        let shoe = Shape::Box {
            half_extents: t.shoe,
        };
        let first = self.bodies.len();
        for (j, p) in pins.iter().enumerate() {
            let q = pins[(j + 1) % pins.len()];
            let dir = q - p;
            let pose = Pose {
                position: 0.5 * (p + q),
                orientation: UnitQuaternion::from_euler_angles(0.0, (-dir.z).atan2(dir.x), 0.0),
            };
            self.with_mass(shoe, pose, t.shoe_mass, t.friction);
        }
        // Shoes turn about y only, so y is the pin axis in every shoe's frame.
        let pin_axis = JointKind::Revolute {
            axis_a: [0.0, 1.0, 0.0],
            axis_b: [0.0, 1.0, 0.0],
        };
        for j in 0..pins.len() {
            let next = first + (j + 1) % pins.len();
            self.joint(Some(first + j), next, pins[(j + 1) % pins.len()], pin_axis);
        }
        // Wheels: cylinders whose axis (body z) is world y.
        let across = UnitQuaternion::from_euler_angles(-FRAC_PI_2, 0.0, 0.0);
        let to_hull = self.bodies[hull].pose.orientation.inverse();
        let y_in_hull: [f64; 3] = (to_hull * Vector3::y()).into();
        let end = Shape::Cylinder {
            radius: t.end_wheel_radius(),
            half_length: t.wheel_half_width,
        };
        let road = Shape::Cylinder {
            radius: t.road_wheel_radius,
            half_length: t.wheel_half_width,
        };
        let road_z = cz - rho + t.shoe[2] + t.road_wheel_radius;
        let n = t.road_wheels;
        let wheels = [(end, rear, cz), (end, front, cz)]
            .into_iter()
            .chain((1..=n).map(|i| {
                (
                    road,
                    rear + 2.0 * half_d * i as f64 / (n + 1) as f64,
                    road_z,
                )
            }));
        for (w, (shape, x, z)) in wheels.enumerate() {
            let at = Vector3::new(x, y, z);
            let pose = Pose {
                position: at,
                orientation: across,
            };
            let b = self.with_mass(shape, pose, t.wheel_mass, t.friction);
            let kind = if w == 0 {
                JointKind::Prescribed {
                    velocity: [0.0; 3],
                    angular_velocity: (to_hull * Vector3::y() * t.sprocket_speed).into(),
                }
            } else {
                JointKind::Revolute {
                    axis_a: y_in_hull,
                    axis_b: [0.0, 0.0, 1.0],
                }
            };
            match (&t.tensioner, w) {
                (Some(ten), 1) => {
                    let carrier = self.tensioner(ten, hull, at, 0.5 * t.end_wheel_radius());
                    self.joint(Some(carrier), b, at, kind);
                }
                _ => self.joint(Some(hull), b, at, kind),
            }
        }
    }

    /// The carrier of a tensioned idler whose axle is at `axle`: a sphere of radius `radius`
    /// turned as the hull, on a prismatic joint along the hull's x axis, and the spring that
    /// pushes it forward from a point `ten.length` behind it on the hull; returns the carrier.
    fn tensioner(
        &mut self,
        ten: &TensionerSpec,
        hull: usize,
        axle: Vector3<f64>,
        radius: f64,
    ) -> usize {
        let hull_pose = self.bodies[hull].pose;
        let forward = hull_pose.orientation * Vector3::x();
        let pose = Pose {
            position: axle,
            orientation: hull_pose.orientation,
        };
        let carrier = self.with_mass(Shape::Sphere { radius }, pose, ten.carrier_mass, None);
        self.joint(
            Some(hull),
            carrier,
            axle,
            JointKind::Prismatic {
                axis_a: [1.0, 0.0, 0.0],
            },
        );
        // Compressed by preload / k at build: it pushes the carrier forward.
        self.springs.push(Spring {
            body_a: Some(hull),
            body_b: carrier,
            anchor_a: hull_pose.orientation.inverse()
                * (axle - ten.length * forward - hull_pose.position),
            anchor_b: Vector3::zeros(),
            rest_length: ten.length + ten.preload / ten.stiffness,
            stiffness: ten.stiffness,
            damping: ten.damping,
        });
        carrier
    }
}

/// Radius of the smallest sphere around the shape's center.
fn bounding_radius(shape: &Shape) -> f64 {
    match *shape {
        Shape::Sphere { radius } => radius,
        Shape::Box { half_extents } => Vector3::from(half_extents).norm(),
        Shape::Cylinder {
            radius,
            half_length,
        } => radius.hypot(half_length),
        Shape::Plane => 0.0,
    }
}

/// Half of the vertical extent of an unrotated shape.
fn half_height(shape: &Shape) -> f64 {
    match *shape {
        Shape::Sphere { radius } => radius,
        Shape::Box { half_extents } => half_extents[2],
        Shape::Cylinder { half_length, .. } => half_length,
        Shape::Plane => 0.0,
    }
}

/// SplitMix64: a small, seeded, portable generator for the lattice offsets.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [−1, 1).
    fn symmetric(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Builds the world of a validated scene file.
/// The world of `spec`; mesh files are found relative to `base` (the scene file's folder).
pub(super) fn world(spec: &SceneFile, base: &Path) -> Result<World, SpecError> {
    let mut b = Builder {
        bodies: Vec::new(),
        joints: Vec::new(),
        springs: Vec::new(),
        friction: spec.friction,
    };
    spec.container.iter().for_each(|c| b.container(c));
    let mut names = HashMap::new();
    for (i, body) in spec.body.iter().enumerate() {
        let index = b.body(body);
        if let Some(name) = &body.name
            && (name == "ground" || names.insert(name.clone(), index).is_some())
        {
            return Err((
                Some(("body", i)),
                format!("body[{i}].name"),
                format!("`{name}` is reserved or used twice"),
            ));
        }
    }
    spec.lattice.iter().for_each(|l| b.lattice(l));
    spec.stack.iter().for_each(|s| b.stack(s));
    spec.chain.iter().for_each(|c| b.chain(c));
    spec.wall.iter().for_each(|w| b.wall(w));
    spec.net.iter().for_each(|n| b.net(n));
    for (i, t) in spec.track.iter().enumerate() {
        let hull = names.get(&t.hull).copied().ok_or_else(|| {
            (
                Some(("track", i)),
                format!("track[{i}].hull"),
                format!("no [[body]] named `{}`", t.hull),
            )
        })?;
        b.track(t, hull);
    }
    // The body named `a` (`None`: the ground) and `b` (not the ground) of entry `i` of
    // `section`.
    let pair = |section: &'static str, i: usize, a: &str, b: &str| {
        let find = |name: &str, key: &str| -> Result<Option<usize>, SpecError> {
            match (name, names.get(name)) {
                ("ground", _) => Ok(None),
                (_, Some(&index)) => Ok(Some(index)),
                _ => Err((
                    Some((section, i)),
                    format!("{section}[{i}].{key}"),
                    format!("no [[body]] named `{name}`"),
                )),
            }
        };
        let body_a = find(a, "a")?;
        let body_b = find(b, "b")?.ok_or_else(|| {
            (
                Some((section, i)),
                format!("{section}[{i}].b"),
                "body B cannot be the ground".to_string(),
            )
        })?;
        Ok::<_, SpecError>((body_a, body_b))
    };
    for (i, sp) in spec.spring.iter().enumerate() {
        let (body_a, body_b) = pair("spring", i, &sp.a, &sp.b)?;
        b.springs.push(Spring {
            body_a,
            body_b,
            anchor_a: sp.anchor_a.into(),
            anchor_b: sp.anchor_b.into(),
            rest_length: sp.rest_length,
            stiffness: sp.stiffness,
            damping: sp.damping,
        });
    }
    for (i, j) in spec.joint.iter().enumerate() {
        let (a, bb) = pair("joint", i, &j.a, &j.b)?;
        // Axes are given in the world frame at creation: express them in A's frame.
        let to_a = a.map_or(UnitQuaternion::identity(), |k| {
            b.bodies[k].pose.orientation.inverse()
        });
        let axis = |v: [f64; 3]| (to_a * Vector3::from(v)).into();
        let kind = match j.kind {
            JointKind::Revolute { axis_a, axis_b } => {
                let to_b = b.bodies[bb].pose.orientation.inverse();
                JointKind::Revolute {
                    axis_a: axis(axis_a),
                    axis_b: (to_b * Vector3::from(axis_b)).into(),
                }
            }
            JointKind::Prismatic { axis_a } => JointKind::Prismatic {
                axis_a: axis(axis_a),
            },
            JointKind::Line { axis_a } => JointKind::Line {
                axis_a: axis(axis_a),
            },
            JointKind::Prescribed {
                velocity,
                angular_velocity,
            } => JointKind::Prescribed {
                velocity: axis(velocity),
                angular_velocity: axis(angular_velocity),
            },
            other => other,
        };
        b.joint(a, bb, j.at.into(), kind);
    }
    let mut world = World::new(b.bodies, b.joints, spec.settings.clone());
    world.springs = b.springs;
    world.solids = solids(spec, base)?;
    Ok(world)
}

/// The solids of `[[fe_box]]` and `[[fe_mesh]]`, in that order.
fn solids(spec: &SceneFile, base: &Path) -> Result<Vec<Solid>, SpecError> {
    let mut out = Vec::new();
    for (i, fb) in spec.fe_box.iter().enumerate() {
        let mesh = TetMesh::cuboid(fb.min, fb.max, fb.cells);
        let at = (Some(("fe_box", i)), format!("fe_box[{i}]"));
        out.push(solid(spec, &mesh, &fb.material, &fb.fixed, at)?);
    }
    for (i, fm) in spec.fe_mesh.iter().enumerate() {
        let section = Some(("fe_mesh", i));
        let mut mesh = TetMesh::read_gmsh(&base.join(&fm.file))
            .map_err(|e| (section, format!("fe_mesh[{i}].file"), e.to_string()))?;
        for p in &mut mesh.nodes {
            (0..3).for_each(|d| p[d] += fm.offset[d]);
        }
        let at = (section, format!("fe_mesh[{i}]"));
        out.push(solid(spec, &mesh, &fm.material, &fm.fixed, at)?);
    }
    Ok(out)
}

/// One solid on `mesh` with its nodes in the `fixed` regions held; `at` is its section and
/// key prefix.
fn solid(
    spec: &SceneFile,
    mesh: &TetMesh,
    m: &MaterialSpec,
    fixed: &[NodeRegion],
    (section, prefix): (Option<(&'static str, usize)>, String),
) -> Result<Solid, SpecError> {
    // Nodes within this fraction of the mesh's size of a plane count as on it.
    const ON_PLANE: f64 = 1e-9;
    let size = mesh
        .nodes
        .iter()
        .flat_map(|p| p.iter().map(|v| v.abs()))
        .fold(0.0, f64::max);
    let held: Vec<bool> = mesh
        .nodes
        .iter()
        .map(|p| {
            fixed.iter().any(|region| match *region {
                NodeRegion::Box { min, max } => (0..3).all(|d| min[d] <= p[d] && p[d] <= max[d]),
                NodeRegion::Plane { point, normal } => {
                    let n = Vector3::from(normal).normalize();
                    (Vector3::from(*p) - Vector3::from(point)).dot(&n) <= ON_PLANE * size
                }
            })
        })
        .collect();
    let material = Material {
        young: m.young,
        poisson: m.poisson,
        density: m.density,
        rayleigh: m.rayleigh,
    };
    Solid::new(mesh, material, &held, m.friction.unwrap_or(spec.friction))
        .map_err(|message| (section, prefix, message))
}
