//! The tables of a scene file and their validation.

use serde::{Deserialize, Serialize};

use super::SpecError;
use crate::sim::Shape;
use crate::sim::body::Oscillation;
use crate::sim::joint::JointKind;
use crate::sim::world::StepSettings;

/// How a scene runs (the `[run]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSettings {
    /// Number of steps.
    pub steps: usize,
    /// Solver name (see the registry).
    pub solver: String,
    /// Write a PNG snapshot (and VTK frame when asked) every this many steps; 0 = never.
    pub snapshot_every: usize,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            steps: 100,
            solver: "pgs".into(),
            snapshot_every: 0,
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Friction coefficient of every body that does not set its own.
    #[serde(default)]
    pub friction: f64,
    /// Stepper settings.
    #[serde(default)]
    pub settings: StepSettings,
    /// Run settings.
    #[serde(default)]
    pub run: RunSettings,
    /// Single bodies.
    #[serde(default)]
    pub body: Vec<BodySpec>,
    /// Open boxes made of planes (floor and four walls).
    #[serde(default)]
    pub container: Vec<ContainerSpec>,
    /// Bodies on a regular grid.
    #[serde(default)]
    pub lattice: Vec<LatticeSpec>,
    /// Vertical stacks.
    #[serde(default)]
    pub stack: Vec<StackSpec>,
    /// Hanging chains (pendulums, wrecking balls).
    #[serde(default)]
    pub chain: Vec<ChainSpec>,
    /// Brick walls.
    #[serde(default)]
    pub wall: Vec<WallSpec>,
    /// Nets of spheres joined by distance constraints.
    #[serde(default)]
    pub net: Vec<NetSpec>,
    /// Joints between named bodies (or the ground).
    #[serde(default)]
    pub joint: Vec<JointSpec>,
    /// Tracks of pinned shoes around a driven sprocket, an idler and road wheels, on a
    /// named hull.
    #[serde(default)]
    pub track: Vec<TrackSpec>,
    /// Spring-dampers between named bodies (or the ground).
    #[serde(default)]
    pub spring: Vec<SpringSpec>,
    /// Deformable boxes of finite elements.
    #[serde(default)]
    pub fe_box: Vec<FeBoxSpec>,
    /// Deformable solids of finite elements from mesh files.
    #[serde(default)]
    pub fe_mesh: Vec<FeMeshSpec>,
}

/// The motion of a `[[body]]`: `"dynamic"`, `"fixed"` or `{ oscillation = {...} }`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MotionSpec {
    /// Moved by forces and impulses.
    #[default]
    Dynamic,
    /// Never moves.
    Fixed,
    /// Prescribed sinusoidal translation.
    Oscillation(Oscillation),
}

/// One body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodySpec {
    /// A name that `[[joint]]` tables refer to.
    #[serde(default)]
    pub name: Option<String>,
    /// The shape.
    pub shape: Shape,
    /// Position of the center, m.
    #[serde(default)]
    pub position: [f64; 3],
    /// Orientation as roll, pitch, yaw (rad).
    #[serde(default)]
    pub euler: [f64; 3],
    /// For planes: the outward normal (overrides `euler`).
    #[serde(default)]
    pub normal: Option<[f64; 3]>,
    /// How it moves.
    #[serde(default)]
    pub motion: MotionSpec,
    /// Density, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Mass, kg (overrides the density; the inertia scales with it).
    #[serde(default)]
    pub mass: Option<f64>,
    /// Friction coefficient (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
    /// Initial linear velocity, m/s.
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Initial angular velocity (body frame), rad/s.
    #[serde(default)]
    pub angular_velocity: [f64; 3],
}

fn default_density() -> f64 {
    1000.0
}

/// An open box of five planes: a floor at `center.z` and walls at `center.x ± half_size[0]`,
/// `center.y ± half_size[1]`, all fixed or all following one oscillation (a shaker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerSpec {
    /// Center of the floor, m.
    #[serde(default)]
    pub center: [f64; 3],
    /// Half widths in x and y, m.
    pub half_size: [f64; 2],
    /// Friction coefficient of the walls (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
    /// Prescribed motion of the whole container.
    #[serde(default)]
    pub oscillation: Option<Oscillation>,
}

/// `count` bodies of one shape on a grid filling `[min, max]` in x and y, layer after layer
/// upwards from `min.z`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatticeSpec {
    /// The shape of every body.
    pub shape: Shape,
    /// Number of bodies.
    pub count: usize,
    /// Lower corner of the region, m.
    pub min: [f64; 3],
    /// Upper corner in x and y (z grows as needed), m.
    pub max: [f64; 3],
    /// Grid spacing, m (default: 1.1 × the shape's diameter).
    #[serde(default)]
    pub spacing: Option<f64>,
    /// Random horizontal offsets, as a fraction of the free space between neighbors (0–1).
    #[serde(default)]
    pub jitter: f64,
    /// Seed of the offsets.
    #[serde(default)]
    pub seed: u64,
    /// Density, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Friction coefficient (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
    /// Initial velocity, m/s.
    #[serde(default)]
    pub velocity: [f64; 3],
}

/// A vertical stack resting at `base`: with `masses` alone, spheres of constant density whose
/// radii follow the masses; with `shape` and `masses`, that shape with those masses; with
/// `shape` and `count`, copies of the shape. Optionally each body on a vertical guide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackSpec {
    /// The shape of every body (required without `masses`).
    #[serde(default)]
    pub shape: Option<Shape>,
    /// Number of bodies (without `masses`).
    #[serde(default)]
    pub count: Option<usize>,
    /// Mass of each sphere from the bottom, kg (radius from the density).
    #[serde(default)]
    pub masses: Option<Vec<f64>>,
    /// Bottom point of the stack, m.
    #[serde(default)]
    pub base: [f64; 3],
    /// Vertical gap between bodies, m.
    #[serde(default)]
    pub gap: f64,
    /// Density, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Friction coefficient (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
    /// Put each body on a vertical guide (a line joint to the ground).
    #[serde(default)]
    pub guide: bool,
}

/// A chain hanging from `anchor` along `direction`: `count` links (rods `spacing` long, body
/// z axis along the chain, centered between their joints) joined end to end by spherical
/// joints, the first one to the ground, and an optional end body hanging from the last joint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSpec {
    /// Shape of each link.
    pub shape: Shape,
    /// Number of links.
    pub count: usize,
    /// Fixed point the chain hangs from, m.
    pub anchor: [f64; 3],
    /// Direction from the anchor along the chain (normalized).
    #[serde(default = "down")]
    pub direction: [f64; 3],
    /// Distance between consecutive joints (the length of a link), m.
    pub spacing: f64,
    /// Density of the links, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Shape of a body at the end of the chain (a wrecking ball).
    #[serde(default)]
    pub end_shape: Option<Shape>,
    /// Density of the end body, kg/m³.
    #[serde(default = "default_density")]
    pub end_density: f64,
    /// Friction coefficient (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
}

fn down() -> [f64; 3] {
    [0.0, 0.0, -1.0]
}

/// A wall of `rows` rows of `columns` bricks along x, starting at `origin`
/// (bottom-left-front); with `stagger`, every other row is shifted by half a brick and holds
/// one brick less.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WallSpec {
    /// Half extents of a brick, m.
    pub brick: [f64; 3],
    /// Rows.
    pub rows: usize,
    /// Bricks per row.
    pub columns: usize,
    /// Lower corner of the wall, m.
    #[serde(default)]
    pub origin: [f64; 3],
    /// Gap between bricks, m.
    #[serde(default)]
    pub gap: f64,
    /// Shift every other row by half a brick.
    #[serde(default = "yes")]
    pub stagger: bool,
    /// Density, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Friction coefficient (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
}

fn yes() -> bool {
    true
}

/// A horizontal net of `nx × ny` spheres `spacing` apart at `origin`, neighbors joined by
/// distance constraints (and one diagonal per cell when `diagonals`), corners pinned to the
/// ground by spherical joints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetSpec {
    /// Nodes along x.
    pub nx: usize,
    /// Nodes along y.
    pub ny: usize,
    /// Distance between neighbors, m.
    pub spacing: f64,
    /// Radius of the node spheres, m.
    pub radius: f64,
    /// Position of node (0, 0), m.
    #[serde(default)]
    pub origin: [f64; 3],
    /// Add a diagonal constraint per cell.
    #[serde(default = "yes")]
    pub diagonals: bool,
    /// Density, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
}

/// A joint between two named `[[body]]` entries (`"ground"` is the world frame), its kind
/// by `type` (`"spherical"`, `"distance"`, `"revolute"`, `"line"`, `"prismatic"`,
/// `"prescribed"`) with that kind's parameters. Unknown keys are refused by the kind (serde
/// cannot deny them on a struct with a flattened field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JointSpec {
    /// Name of body A, or `"ground"`.
    pub a: String,
    /// Name of body B.
    pub b: String,
    /// World point where the joint is made, m.
    pub at: [f64; 3],
    /// The kind and its parameters (axes, velocities and angular velocities in the world
    /// frame at creation).
    #[serde(flatten)]
    pub kind: JointKind,
}

/// A spring-damper between two named `[[body]]` entries (`a` may be `"ground"`, the world
/// frame): a force `k (l − l₀) + c l̇` pulling the anchors together along the line between
/// them (pushing them apart when compressed), applied explicitly in each step's free velocity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpringSpec {
    /// Name of body A, or `"ground"`.
    pub a: String,
    /// Name of body B.
    pub b: String,
    /// Anchor on A in A's frame (the world frame for the ground), m.
    #[serde(default)]
    pub anchor_a: [f64; 3],
    /// Anchor on B in B's frame, m.
    #[serde(default)]
    pub anchor_b: [f64; 3],
    /// Rest length `l₀`, m.
    pub rest_length: f64,
    /// Stiffness `k`, N/m.
    pub stiffness: f64,
    /// Damping `c`, N·s/m.
    #[serde(default)]
    pub damping: f64,
}

/// The tensioner of a track's idler: the idler's axle rides on a carrier (a small sphere of
/// half the idler's radius, inside it) on a prismatic joint along the hull's x axis, pushed
/// forward by a spring-damper from the hull, compressed by `preload` at build (the track's
/// tension once the idler bears on the shoes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensionerSpec {
    /// Stiffness of the spring, N/m.
    pub stiffness: f64,
    /// Damping of the spring, N·s/m.
    #[serde(default)]
    pub damping: f64,
    /// Force of the spring at build, N.
    pub preload: f64,
    /// Length of the spring at build: its anchor on the hull is this far behind the idler's
    /// axle, m.
    pub length: f64,
    /// Mass of the carrier, kg.
    pub carrier_mass: f64,
}

/// A track in the vertical plane `y = center[1]` (world x forward, z up) on the `[[body]]`
/// named `hull`: a closed loop of box shoes pinned by revolute joints (axis y), wrapped
/// around a sprocket (rear, at `center.x − D/2`) and an idler (front, at `center.x + D/2`),
/// both at `center.z`, with road wheels on the lower run. The loop is `shoes_per_run`
/// straight pitches of `pitch` on each run (`D = shoes_per_run · pitch`) and
/// `shoes_per_half_turn` around each end, so the pins lie on circles of radius
/// `ρ = pitch / (2 sin(π / (2 · shoes_per_half_turn)))` and the loop closes exactly. The
/// sprocket and the idler are cylinders of radius `ρ cos(π / (2 · shoes_per_half_turn)) −
/// shoe[2] − 0.005` (touching the middle of the wrapped shoes' inner faces, 5 mm apart);
/// the road wheels touch the lower run's inner faces. The road wheels turn on revolute
/// joints to the hull, the idler on one to the hull too, or, with a `tensioner`, to a
/// spring-loaded carrier sliding along the hull's x axis; the sprocket turns on a
/// prescribed joint (a motor) at `sprocket_speed` about +y, which drives the hull towards
/// +x. Every wheel is `2 · wheel_half_width` wide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackSpec {
    /// Name of the `[[body]]` the wheels turn on.
    pub hull: String,
    /// Midpoint between the sprocket's and the idler's axles, m.
    pub center: [f64; 3],
    /// Distance between consecutive pins, m.
    pub pitch: f64,
    /// Shoes on each straight run.
    pub shoes_per_run: usize,
    /// Shoes around each end wheel (half a turn).
    pub shoes_per_half_turn: usize,
    /// Half extents of a shoe: along the track (at most `pitch / 2`), across, thickness.
    pub shoe: [f64; 3],
    /// Mass of a shoe, kg.
    pub shoe_mass: f64,
    /// Road wheels, evenly spaced between the sprocket and the idler.
    pub road_wheels: usize,
    /// Radius of the road wheels, m.
    pub road_wheel_radius: f64,
    /// Half of the width of every wheel, m.
    pub wheel_half_width: f64,
    /// Mass of each wheel (sprocket, idler, road wheels), kg.
    pub wheel_mass: f64,
    /// Angular velocity of the sprocket relative to the hull about +y, rad/s.
    pub sprocket_speed: f64,
    /// Friction coefficient of the shoes and wheels (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
    /// The idler's tensioner (default: none, the idler turns on the hull).
    #[serde(default)]
    pub tensioner: Option<TensionerSpec>,
}

impl TrackSpec {
    /// Half the angle between consecutive shoes around an end wheel, rad.
    pub(crate) fn half_bend(&self) -> f64 {
        std::f64::consts::FRAC_PI_2 / self.shoes_per_half_turn as f64
    }

    /// Radius of the circles of pins around the end wheels, m.
    pub(crate) fn pin_radius(&self) -> f64 {
        self.pitch / (2.0 * self.half_bend().sin())
    }

    /// Radius of the sprocket and the idler, m.
    pub(crate) fn end_wheel_radius(&self) -> f64 {
        self.pin_radius() * self.half_bend().cos() - self.shoe[2] - 0.005
    }

    /// The commanded ground speed: shoes pass the sprocket at `sprocket_speed / (2 ·
    /// half_bend)` per second, each a pitch long, m/s.
    pub fn commanded_speed(&self) -> f64 {
        self.sprocket_speed * self.pitch / (2.0 * self.half_bend())
    }
}

/// The material of a solid of finite elements (a `material = { ... }` table).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialSpec {
    /// Young's modulus, Pa.
    pub young: f64,
    /// Poisson's ratio, in `(−1, 0.5)`.
    pub poisson: f64,
    /// Density, kg/m³.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Rayleigh damping `[α (1/s), β (s)]`: `D = α M + β K`.
    #[serde(default)]
    pub rayleigh: [f64; 2],
    /// Friction coefficient of the surface (default: the scene's).
    #[serde(default)]
    pub friction: Option<f64>,
}

/// A region of nodes held fixed: `{ box = { min, max } }` (the nodes inside the box) or
/// `{ plane = { point, normal } }` (the nodes on the plane or behind it, against the normal).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum NodeRegion {
    /// The nodes inside an axis-aligned box.
    Box {
        /// Lower corner, m.
        min: [f64; 3],
        /// Upper corner, m.
        max: [f64; 3],
    },
    /// The nodes on a plane or behind it.
    Plane {
        /// A point of the plane, m.
        point: [f64; 3],
        /// The normal; the nodes with `(x − point)·normal ≤ 0` are selected.
        normal: [f64; 3],
    },
}

/// A box `[min, max]` of `cells` hexahedra, each cut into 6 corotational tetrahedra.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeBoxSpec {
    /// Lower corner, m.
    pub min: [f64; 3],
    /// Upper corner, m.
    pub max: [f64; 3],
    /// Cells along x, y and z.
    pub cells: [usize; 3],
    /// The material.
    pub material: MaterialSpec,
    /// Regions of fixed nodes.
    #[serde(default)]
    pub fixed: Vec<NodeRegion>,
}

/// A tetrahedral mesh read from a Gmsh `.msh` file (format 4.1 ASCII).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeMeshSpec {
    /// The mesh file, relative to the scene file's folder.
    pub file: String,
    /// Translation added to the mesh's nodes, m.
    #[serde(default)]
    pub offset: [f64; 3],
    /// The material.
    pub material: MaterialSpec,
    /// Regions of fixed nodes (in the translated positions).
    #[serde(default)]
    pub fixed: Vec<NodeRegion>,
}

/// Checks a material and the fixed regions of solid `name[i]`.
fn solid(
    section: Option<(&'static str, usize)>,
    prefix: &str,
    m: &MaterialSpec,
    fixed: &[NodeRegion],
) -> Result<(), SpecError> {
    positive(section, format!("{prefix}.material.young"), m.young)?;
    positive(section, format!("{prefix}.material.density"), m.density)?;
    if !(m.poisson > -1.0 && m.poisson < 0.5) {
        return Err((
            section,
            format!("{prefix}.material.poisson"),
            format!("is {}; Poisson's ratio must lie in (−1, 0.5)", m.poisson),
        ));
    }
    for r in m.rayleigh {
        non_negative(section, format!("{prefix}.material.rayleigh"), r)?;
    }
    if let Some(f) = m.friction {
        non_negative(section, format!("{prefix}.material.friction"), f)?;
    }
    for (k, region) in fixed.iter().enumerate() {
        match *region {
            NodeRegion::Box { min, max } if (0..3).any(|d| max[d] < min[d]) => {
                return Err((
                    section,
                    format!("{prefix}.fixed[{k}].box.max"),
                    "must be at least min on every axis".into(),
                ));
            }
            NodeRegion::Plane { normal, .. } if normal.iter().all(|v| *v == 0.0) => {
                return Err((
                    section,
                    format!("{prefix}.fixed[{k}].plane.normal"),
                    "is zero; a plane needs a normal".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn positive(section: Option<(&'static str, usize)>, key: String, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err((section, key, format!("is {v}; must be finite and > 0")))
    }
}

fn non_negative(
    section: Option<(&'static str, usize)>,
    key: String,
    v: f64,
) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err((section, key, format!("is {v}; must be finite and ≥ 0")))
    }
}

/// Checks a shape's sizes; `prefix` is its key path.
fn shape(section: Option<(&'static str, usize)>, prefix: &str, s: &Shape) -> Result<(), SpecError> {
    match *s {
        Shape::Sphere { radius } => positive(section, format!("{prefix}.radius"), radius),
        Shape::Box { half_extents } => half_extents
            .iter()
            .try_for_each(|&h| positive(section, format!("{prefix}.half_extents"), h)),
        Shape::Cylinder {
            radius,
            half_length,
        } => {
            positive(section, format!("{prefix}.radius"), radius)?;
            positive(section, format!("{prefix}.half_length"), half_length)
        }
        Shape::Plane => Ok(()),
    }
}

impl SceneFile {
    /// Checks every value that deserialization cannot: signs, sizes, references.
    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        non_negative(None, "friction".into(), self.friction)?;
        let st = &self.settings;
        let set = Some(("settings", 0));
        positive(set, "settings.dt".into(), st.dt)?;
        non_negative(set, "settings.envelope".into(), st.envelope)?;
        non_negative(
            set,
            "settings.max_recovery_speed".into(),
            st.max_recovery_speed,
        )?;
        non_negative(
            set,
            "settings.contact_compliance".into(),
            st.contact_compliance,
        )?;
        non_negative(set, "settings.tol".into(), st.tol)?;
        positive(
            set,
            "settings.joint_projection_tol".into(),
            st.joint_projection_tol,
        )?;
        if st.max_iter == 0 {
            return Err((
                set,
                "settings.max_iter".into(),
                "is 0; a solver needs at least 1 iteration".into(),
            ));
        }
        if st.check_every == 0 {
            return Err((
                set,
                "settings.check_every".into(),
                "is 0; the residual is measured every N ≥ 1 iterations".into(),
            ));
        }
        if let Some(w) = st.omega.filter(|w| !(*w > 0.0 && *w < 2.0)) {
            return Err((
                set,
                "settings.omega".into(),
                format!("is {w}; the relaxation must lie in (0, 2)"),
            ));
        }
        for (i, b) in self.body.iter().enumerate() {
            let sec = Some(("body", i));
            shape(sec, &format!("body[{i}].shape"), &b.shape)?;
            positive(sec, format!("body[{i}].density"), b.density)?;
            if let Some(m) = b.mass {
                positive(sec, format!("body[{i}].mass"), m)?;
            }
            if let Some(f) = b.friction {
                non_negative(sec, format!("body[{i}].friction"), f)?;
            }
            if b.shape == Shape::Plane && b.motion == MotionSpec::Dynamic {
                return Err((
                    sec,
                    format!("body[{i}].motion"),
                    "a plane must be fixed or oscillate".into(),
                ));
            }
        }
        for (i, c) in self.container.iter().enumerate() {
            let sec = Some(("container", i));
            for h in c.half_size {
                positive(sec, format!("container[{i}].half_size"), h)?;
            }
        }
        for (i, l) in self.lattice.iter().enumerate() {
            let sec = Some(("lattice", i));
            shape(sec, &format!("lattice[{i}].shape"), &l.shape)?;
            if l.shape == Shape::Plane {
                return Err((
                    sec,
                    format!("lattice[{i}].shape"),
                    "must be a sphere, a box or a cylinder".into(),
                ));
            }
            positive(sec, format!("lattice[{i}].density"), l.density)?;
            if let Some(s) = l.spacing {
                positive(sec, format!("lattice[{i}].spacing"), s)?;
            }
            if !(0.0..=1.0).contains(&l.jitter) {
                return Err((
                    sec,
                    format!("lattice[{i}].jitter"),
                    format!("is {}; must lie in [0, 1]", l.jitter),
                ));
            }
            if l.max[0] <= l.min[0] || l.max[1] <= l.min[1] {
                return Err((
                    sec,
                    format!("lattice[{i}].max"),
                    "must exceed min in x and y".into(),
                ));
            }
        }
        for (i, s) in self.stack.iter().enumerate() {
            let sec = Some(("stack", i));
            positive(sec, format!("stack[{i}].density"), s.density)?;
            non_negative(sec, format!("stack[{i}].gap"), s.gap)?;
            if let Some(sh) = &s.shape {
                shape(sec, &format!("stack[{i}].shape"), sh)?;
                if *sh == Shape::Plane {
                    return Err((
                        sec,
                        format!("stack[{i}].shape"),
                        "must be a sphere, a box or a cylinder".into(),
                    ));
                }
            }
            match (&s.masses, &s.shape, s.count) {
                (Some(masses), _, _) => {
                    for m in masses {
                        positive(sec, format!("stack[{i}].masses"), *m)?;
                    }
                }
                (None, Some(_), Some(_)) => {}
                _ => {
                    return Err((
                        sec,
                        format!("stack[{i}].masses"),
                        "give `masses`, or `shape` and `count`".into(),
                    ));
                }
            }
        }
        for (i, c) in self.chain.iter().enumerate() {
            let sec = Some(("chain", i));
            shape(sec, &format!("chain[{i}].shape"), &c.shape)?;
            positive(sec, format!("chain[{i}].spacing"), c.spacing)?;
            positive(sec, format!("chain[{i}].density"), c.density)?;
            if let Some(e) = &c.end_shape {
                shape(sec, &format!("chain[{i}].end_shape"), e)?;
            }
        }
        for (i, w) in self.wall.iter().enumerate() {
            let sec = Some(("wall", i));
            for h in w.brick {
                positive(sec, format!("wall[{i}].brick"), h)?;
            }
            positive(sec, format!("wall[{i}].density"), w.density)?;
            if w.columns < 2 && w.stagger {
                return Err((
                    sec,
                    format!("wall[{i}].columns"),
                    "a staggered wall needs at least 2 columns".into(),
                ));
            }
        }
        for (i, t) in self.track.iter().enumerate() {
            let sec = Some(("track", i));
            let key = |k: &str| format!("track[{i}].{k}");
            for (k, v) in [
                ("pitch", t.pitch),
                ("shoe_mass", t.shoe_mass),
                ("road_wheel_radius", t.road_wheel_radius),
                ("wheel_half_width", t.wheel_half_width),
                ("wheel_mass", t.wheel_mass),
            ] {
                positive(sec, key(k), v)?;
            }
            t.shoe
                .iter()
                .try_for_each(|&h| positive(sec, key("shoe"), h))?;
            if t.shoes_per_run == 0 || t.shoes_per_half_turn < 2 {
                return Err((
                    sec,
                    key("shoes_per_half_turn"),
                    "a track needs at least 1 shoe per run and 2 per half turn".into(),
                ));
            }
            if 2.0 * t.shoe[0] > t.pitch {
                return Err((sec, key("shoe"), "a shoe is longer than the pitch".into()));
            }
            if t.end_wheel_radius() <= 0.0 || t.road_wheel_radius >= t.pin_radius() - t.shoe[2] {
                return Err((
                    sec,
                    key("road_wheel_radius"),
                    "the wheels do not fit inside the loop of shoes".into(),
                ));
            }
            if let Some(ten) = &t.tensioner {
                for (k, v) in [
                    ("stiffness", ten.stiffness),
                    ("length", ten.length),
                    ("carrier_mass", ten.carrier_mass),
                ] {
                    positive(sec, key(&format!("tensioner.{k}")), v)?;
                }
                for (k, v) in [("damping", ten.damping), ("preload", ten.preload)] {
                    non_negative(sec, key(&format!("tensioner.{k}")), v)?;
                }
            }
        }
        for (i, sp) in self.spring.iter().enumerate() {
            let sec = Some(("spring", i));
            non_negative(sec, format!("spring[{i}].rest_length"), sp.rest_length)?;
            non_negative(sec, format!("spring[{i}].stiffness"), sp.stiffness)?;
            non_negative(sec, format!("spring[{i}].damping"), sp.damping)?;
        }
        for (i, b) in self.fe_box.iter().enumerate() {
            let sec = Some(("fe_box", i));
            solid(sec, &format!("fe_box[{i}]"), &b.material, &b.fixed)?;
            if b.cells.contains(&0) {
                return Err((
                    sec,
                    format!("fe_box[{i}].cells"),
                    "needs at least 1 cell on every axis".into(),
                ));
            }
            if (0..3).any(|d| b.max[d] <= b.min[d]) {
                return Err((
                    sec,
                    format!("fe_box[{i}].max"),
                    "must exceed min on every axis".into(),
                ));
            }
        }
        for (i, m) in self.fe_mesh.iter().enumerate() {
            solid(
                Some(("fe_mesh", i)),
                &format!("fe_mesh[{i}]"),
                &m.material,
                &m.fixed,
            )?;
        }
        for (i, n) in self.net.iter().enumerate() {
            let sec = Some(("net", i));
            positive(sec, format!("net[{i}].spacing"), n.spacing)?;
            positive(sec, format!("net[{i}].radius"), n.radius)?;
            if n.nx < 2 || n.ny < 2 {
                return Err((
                    sec,
                    format!("net[{i}].nx"),
                    "a net needs at least 2 × 2 nodes".into(),
                ));
            }
        }
        Ok(())
    }
}
