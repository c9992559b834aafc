//! The time stepper: collision detection, assembly of the factored problem of the step
//! (contact and joint blocks, stabilization, warm start; with solids of finite elements, the
//! global problem of [`super::fe::assembly`]), the solve, and the integration (paper 001
//! eq. (1), DESIGN §1 and §5).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use nalgebra::Vector3;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::StepStats;
use super::body::RigidBody;
use super::collision::{self, Contact};
use super::fe::Solid;
use super::fe::assembly::{self as fe_assembly, NodeContact, NodeKey};
use super::joint::{ConstraintRow, Joint, tangent_frame};
use super::projection;
use super::spring::Spring;
use super::{Pose, Shape};
use crate::error::Result;
use crate::par::{split_by, starts};
use crate::problem::operator::{FactoredOperator, Storage};
use crate::problem::{
    BlockBodies, Body, Cone, Factored, FactoredParts, FrictionModel, Operator, Problem, System,
};
use crate::solver::{Criterion, Precision, Report, Runner, Settings};

/// Parameters of the time stepper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepSettings {
    /// Time step `h`, s.
    pub dt: f64,
    /// Gravity, m/s².
    pub gravity: [f64; 3],
    /// Friction model of the contact problems.
    pub friction_model: FrictionModel,
    /// Collision envelope: contacts enter the problem when the gap is below this, m.
    pub envelope: f64,
    /// Largest separation speed the stabilization `b = Φ/h` may ask for to push out a
    /// penetration, m/s. With `b ≥ 0` (this set to 0) a contact impulse can only take kinetic
    /// energy away (`ΔKE = −γᵀb − ½γᵀNγ ≤ 0`); a positive value corrects penetration at the
    /// price of the energy it adds.
    pub max_recovery_speed: f64,
    /// Compliance of every contact row (0 = rigid).
    pub contact_compliance: f64,
    /// Include the gyroscopic term `−ω × Jω` in the free velocity.
    pub gyroscopic: bool,
    /// Warm start each solve with the impulses of persistent contacts and joints.
    pub warm_start: bool,
    /// Residual the solver stops on: by default the velocity residual, m/s.
    pub criterion: Criterion,
    /// Tolerance of the solver on that residual.
    pub tol: f64,
    /// Iteration cap of the solver.
    pub max_iter: usize,
    /// Relaxation of the solver (`None` = its default).
    pub omega: Option<f64>,
    /// The CPU kernels measure the residual of every this-many-th iterate and of the last
    /// ([`Settings::check_every`]); the other solvers, of every iterate (the GPU-resident
    /// step checks every [`crate::gpu::step::CHECK_EVERY`] iterations whatever it is).
    pub check_every: usize,
    /// Floating-point type of the CPU kernels' iterations ([`Settings::precision`]; the
    /// step's residual and certification stay `f64`).
    pub precision: Precision,
    /// Whether a GPU solver's answer is measured again in `f64` on the CPU each step
    /// ([`Settings::certify`], `simulate --certify`); off, the step's residual is the GPU's
    /// own `f32` measure and the host spends nothing on it.
    pub certify: bool,
    /// Project the positions of jointed bodies back onto their joints after each step
    /// (post-stabilization, [`super::projection`]); without it the joints drift by what the
    /// solver leaves of their rows.
    pub joint_projection: bool,
    /// Largest violation `|C|` of a joint row the projection leaves, m (rad for angular
    /// rows).
    pub joint_projection_tol: f64,
}

impl Default for StepSettings {
    fn default() -> Self {
        StepSettings {
            dt: 0.01,
            gravity: [0.0, 0.0, -9.81],
            friction_model: FrictionModel::Ccp,
            envelope: 0.005,
            max_recovery_speed: 0.5,
            contact_compliance: 0.0,
            gyroscopic: true,
            warm_start: true,
            criterion: Criterion::Velocity,
            tol: 1e-6,
            max_iter: 500,
            omega: None,
            check_every: 1,
            precision: Precision::F64,
            certify: false,
            joint_projection: true,
            joint_projection_tol: 1e-6,
        }
    }
}

/// A contact's identity across steps: the body pair and the geometric feature.
type ContactKey = (usize, usize, u32);

/// The problem of one step and how its blocks map back to contacts and joints.
pub struct StepProblem {
    /// The problem: in the factored form, or in the global form when the world has solids.
    pub problem: Problem,
    /// Problem body index of each scene body (`None` for fixed and kinematic bodies).
    pub dynamic_index: Vec<Option<usize>>,
    /// Key of each contact block, in block order (contact blocks come first).
    pub contact_keys: Vec<ContactKey>,
    /// Joint rows present, as (joint, row) in block order, after the contact blocks.
    pub joint_rows: Vec<(usize, usize)>,
    /// Key of each contact block of a solid's node, in block order, after the joint rows
    /// (a world with solids only: its problem is in the global form).
    pub node_keys: Vec<NodeKey>,
}

/// Scene state advanced step by step.
#[derive(Debug, Clone)]
pub struct World {
    /// The bodies.
    pub bodies: Vec<RigidBody>,
    /// The joints.
    pub joints: Vec<Joint>,
    /// Deformable solids of finite elements: with any, each step's problem is in the global
    /// form ([`fe_assembly::global`]).
    pub solids: Vec<Solid>,
    /// Spring-dampers, explicit forces of the step.
    pub springs: Vec<Spring>,
    /// Simulated time, s.
    pub time: f64,
    /// Steps taken.
    pub steps: usize,
    /// Stepper parameters.
    pub settings: StepSettings,
    /// The impulses of the last step's contact blocks in block order, which is the order of
    /// their keys ([`collision::Detector::detect`] sorts the contacts): the warm start matches them
    /// with the next step's contacts in one merge of the two sorted lists.
    warm_contacts: Vec<(ContactKey, [f64; 3])>,
    warm_joints: HashMap<(usize, usize), f64>,
    warm_nodes: HashMap<NodeKey, [f64; 3]>,
    contacts: Vec<Contact>,
    node_contacts: Vec<NodeContact>,
    /// Body pairs joined by a joint: they do not collide with each other.
    jointed: HashSet<(usize, usize)>,
    /// The memory of the last step's assembly, operator and system, reused by the next step
    /// (fresh pages cost more to map and zero than to fill: about a third of the assembly
    /// of 10⁵ spheres). Scratch, not state: a clone starts without it.
    spare: Spare,
    /// The collision detection's buffers, reused by the next step (scratch, not state).
    collider: Collider,
}

/// The bodies' shapes, poses and static flags as collision detection reads them, and its
/// buffers, kept between steps. A clone is empty.
#[derive(Debug, Default)]
struct Collider {
    shapes: Vec<Shape>,
    poses: Vec<Pose>,
    is_static: Vec<bool>,
    detector: collision::Detector,
}

impl Clone for Collider {
    fn clone(&self) -> Self {
        Collider::default()
    }
}

/// The buffers of a step's assembly, kept for the next step. A clone is empty.
#[derive(Debug, Default)]
struct Spare {
    /// The operator's and the system's.
    storage: Storage,
    dynamic_index: Vec<Option<usize>>,
    dynamic: Vec<usize>,
    contact_keys: Vec<ContactKey>,
    dims: Vec<usize>,
}

impl Clone for Spare {
    fn clone(&self) -> Self {
        Spare::default()
    }
}

/// The cone, row directions and bias of one contact block.
pub(crate) struct ContactBlock {
    /// Coulomb with friction, unilateral without.
    pub cone: Cone,
    /// The normal, then the two tangents: the block's rows are the first `cone.dim()`.
    pub dirs: [Vector3<f64>; 3],
    /// The bias `b`, one entry per direction.
    pub bias: [f64; 3],
}

/// The block of contact `c` with friction coefficient `mu` at time step `h`, a penetration
/// pushed out no faster than `v_rec`.
pub(crate) fn contact_block(c: &Contact, mu: f64, h: f64, v_rec: f64) -> ContactBlock {
    ContactBlock {
        cone: contact_cone(mu),
        dirs: contact_dirs(c),
        bias: [contact_bias(c, h, v_rec), 0.0, 0.0],
    }
}

/// The directions of contact `c`'s rows: the normal, then the two tangents.
fn contact_dirs(c: &Contact) -> [Vector3<f64>; 3] {
    let (t1, t2) = tangent_frame(&c.normal);
    [c.normal, t1, t2]
}

/// The normal entry of contact `c`'s bias, `b = Φ/h`: a gap may close within the step, a
/// penetration is pushed out no faster than the recovery speed `v_rec`.
fn contact_bias(c: &Contact, h: f64, v_rec: f64) -> f64 {
    (c.distance / h).max(-v_rec)
}

/// The cone of a contact with friction coefficient `mu`: Coulomb with friction,
/// unilateral without.
fn contact_cone(mu: f64) -> Cone {
    if mu > 0.0 {
        Cone::Coulomb { mu }
    } else {
        Cone::Unilateral
    }
}

/// The problem body of a dynamic body, its free velocity left at zero.
fn problem_body(b: &RigidBody) -> Body {
    Body {
        mass: b.mass,
        inertia: b.inertia.into(),
        v_free: [0.0; 6],
    }
}

/// Contact block `k`'s contact: `contacts[kept[k]]`, or `contacts[k]` when every contact
/// is kept.
fn kept_contact<'a>(contacts: &'a [Contact], kept: Option<&[usize]>, k: usize) -> &'a Contact {
    &contacts[kept.map_or(k, |kept| kept[k])]
}

/// The problem bodies of a block between scene bodies `a` and `b` (`None`: the ground;
/// `index` maps scene bodies to problem bodies): its dynamic sides, in that order. A block
/// with no dynamic side has none (and is left out of the problem).
fn block_bodies(index: &[Option<usize>], a: Option<usize>, b: Option<usize>) -> BlockBodies {
    // Plain pushes, not a `flatten` of a `filter_map` collected into a `SmallVec`: this
    // runs once per contact in the assembly's pass over the blocks' bodies.
    let mut bodies = BlockBodies::new();
    for side in [a, b].into_iter().flatten() {
        if let Some(i) = index[side] {
            bodies.push(i);
        }
    }
    bodies
}

/// Writes the Jacobian rows of a block with rows `rows_a`, `rows_b` for scene bodies `a`,
/// `b` (as [`block_bodies`]) to `out`, dynamic side by dynamic side. A non-dynamic side
/// contributes `J v` (a kinematic body's velocity) to `bias` instead; the ground (`None`)
/// has no velocity and contributes nothing.
fn write_block(
    bodies: &[RigidBody],
    index: &[Option<usize>],
    (a, rows_a): (Option<usize>, &[[f64; 6]]),
    (b, rows_b): (Option<usize>, &[[f64; 6]]),
    out: &mut [[f64; 6]],
    bias: &mut [f64],
) {
    let d = bias.len();
    let mut side = 0;
    for (body, rows) in [(a, rows_a), (b, rows_b)] {
        let Some(body) = body else { continue };
        if index[body].is_some() {
            out[side * d..(side + 1) * d].copy_from_slice(rows);
            side += 1;
        } else {
            let v = bodies[body].generalized_velocity();
            for (bi, row) in bias.iter_mut().zip(rows) {
                *bi += (0..6).map(|c| row[c] * v[c]).sum::<f64>();
            }
        }
    }
}

/// The rows `±(e, r × e)` of a body at `pose` (angular part in the body frame) for the
/// directions `dirs` at world point `p`, into `rows` (one per direction):
/// [`super::joint::point_row`] for each, as `Rᵀ (r × e)` with the world lever arm `r` and
/// the body's rotation matrix formed once (a matrix product per direction instead of two
/// quaternion rotations).
fn point_rows(
    pose: &Pose,
    p: &Vector3<f64>,
    dirs: &[Vector3<f64>],
    sign: f64,
    rows: &mut [[f64; 6]],
) {
    let to_body = pose.orientation.to_rotation_matrix().transpose();
    let r = p - pose.position;
    for (row, e) in rows.iter_mut().zip(dirs) {
        let ang = to_body * r.cross(e);
        *row = [e.x, e.y, e.z, ang.x, ang.y, ang.z].map(|x| sign * x);
    }
}

/// The problem body of each scene body (`None` for fixed and kinematic bodies) into
/// `index`, and the scene body of each problem body (the dynamic bodies, in scene order)
/// into `dynamic`: parallel over fixed runs of bodies, each numbering its dynamic bodies
/// from the run's start.
fn dynamic_bodies(bodies: &[RigidBody], index: &mut Vec<Option<usize>>, dynamic: &mut Vec<usize>) {
    const RUN: usize = 4096;
    let counts: Vec<usize> = bodies
        .par_chunks(RUN)
        .map(|run| run.iter().filter(|b| b.is_dynamic()).count())
        .collect();
    let (first, total) = starts(counts.iter().copied());
    index.resize(bodies.len(), None);
    dynamic.resize(total, 0);
    index
        .par_chunks_mut(RUN)
        .zip(bodies.par_chunks(RUN))
        .zip(split_by(dynamic, counts))
        .zip(first)
        .enumerate()
        .for_each(|(r, (((index, run), part), first))| {
            let mut at = 0;
            for (i, (slot, body)) in index.iter_mut().zip(run).enumerate() {
                *slot = body.is_dynamic().then(|| {
                    part[at] = r * RUN + i;
                    at += 1;
                    first + at - 1
                });
            }
        });
}

/// A joint row of a step's problem: its bodies (scene indices), rows and bias.
struct JointBlock {
    a: Option<usize>,
    b: usize,
    rows: [[f64; 6]; 2],
    bias: f64,
}

/// How the blocks of a step's problem map back to the scene.
struct BlockMap {
    /// Problem body index of each scene body (`None` for fixed and kinematic bodies).
    dynamic_index: Vec<Option<usize>>,
    /// Key of each contact block, in block order (contact blocks come first).
    contact_keys: Vec<ContactKey>,
    /// Joint rows present, as (joint, row) in block order, after the contact blocks.
    joint_rows: Vec<(usize, usize)>,
    /// Key of each contact block of a solid's node, after the joint rows.
    node_keys: Vec<NodeKey>,
}

/// The factored problem of a step before its rows are written: its bodies and blocks.
struct Blocks {
    /// The scene index of each problem body (the dynamic bodies).
    dynamic: Vec<usize>,
    /// The free velocities of the problem bodies, 6 per body.
    v_free: Vec<f64>,
    /// Whether every free velocity is finite.
    v_finite: bool,
    cones: Vec<Cone>,
    /// The dimension of each block.
    dims: Vec<usize>,
    /// The contact (index into `World::contacts`) of each contact block; `None` when every
    /// contact has a block.
    kept: Option<Vec<usize>>,
    joints: Vec<JointBlock>,
    compliance: Vec<f64>,
    map: BlockMap,
}

/// The factored operator of a step's blocks and their bias `b`, or `r = J v_free + b`.
struct Written {
    op: FactoredOperator,
    b: Vec<f64>,
    /// Whether every row and bias entry is finite.
    finite: bool,
}

impl World {
    /// A world at `t = 0`.
    pub fn new(bodies: Vec<RigidBody>, joints: Vec<Joint>, settings: StepSettings) -> Self {
        let jointed = joints
            .iter()
            .filter_map(|j| {
                let a = j.body_a?;
                Some((a.min(j.body_b), a.max(j.body_b)))
            })
            .collect();
        World {
            jointed,
            bodies,
            joints,
            solids: Vec::new(),
            springs: Vec::new(),
            time: 0.0,
            steps: 0,
            settings,
            warm_contacts: Vec::new(),
            warm_joints: HashMap::new(),
            warm_nodes: HashMap::new(),
            contacts: Vec::new(),
            node_contacts: Vec::new(),
            spare: Spare::default(),
            collider: Collider::default(),
        }
    }

    /// Runs collision detection at the current poses, leaving out pairs joined by a joint;
    /// returns the number of contacts and their deepest penetration (`max(0, −distance)`).
    fn detect(&mut self) -> (usize, f64) {
        let c = &mut self.collider;
        let n = self.bodies.len();
        c.shapes.resize(n, Shape::Plane);
        c.poses.resize(n, Pose::at(Vector3::zeros()));
        c.is_static.resize(n, false);
        (
            c.shapes.par_iter_mut(),
            c.poses.par_iter_mut(),
            c.is_static.par_iter_mut(),
            self.bodies.par_iter(),
        )
            .into_par_iter()
            .with_min_len(crate::PAR_MIN_ITEMS)
            .for_each(|(shape, pose, is_static, b)| {
                (*shape, *pose, *is_static) = (b.shape, b.pose, !b.is_dynamic());
            });
        let stats = c.detector.detect(
            &c.shapes,
            &c.poses,
            &c.is_static,
            self.settings.envelope,
            &mut self.contacts,
        );
        let mut deepest = stats.deepest;
        if !self.jointed.is_empty() {
            let jointed = &self.jointed;
            self.contacts.retain(|c| {
                let pair = (c.body_a.min(c.body_b), c.body_a.max(c.body_b));
                !jointed.contains(&pair)
            });
            deepest = collision::deepest(&self.contacts);
        }
        fe_assembly::detect(
            &self.solids,
            &self.bodies,
            self.settings.envelope,
            &mut self.node_contacts,
        );
        let nodes = self.node_contacts.iter().map(|n| -n.contact.distance);
        (
            self.contacts.len() + self.node_contacts.len(),
            nodes.fold(deepest, f64::max),
        )
    }

    /// Puts kinematic bodies where their prescribed motion has them at the current time.
    fn prescribe(&mut self) {
        let (t, h) = (self.time, self.settings.dt);
        self.bodies
            .par_iter_mut()
            .with_min_len(crate::PAR_MIN_ITEMS)
            .for_each(|b| b.prescribe(t, h));
    }

    /// The problem the next step will solve (runs collision detection), e.g. to dump it.
    pub fn problem(&mut self) -> StepProblem {
        self.prescribe();
        self.detect();
        let (problem, map) = self.assemble_problem();
        let BlockMap {
            dynamic_index,
            contact_keys,
            joint_rows,
            node_keys,
        } = map;
        StepProblem {
            problem,
            dynamic_index,
            contact_keys,
            joint_rows,
            node_keys,
        }
    }

    /// The system the step solves and the map of its blocks. Without solids it is built
    /// straight from the contacts and joints (no [`Problem`]: the blocks are valid by
    /// construction, and a non-finite value sends them through [`Problem::validate`] for
    /// its error); with solids, from the global problem of [`Self::assemble_problem`].
    fn assemble_system(&mut self) -> Result<(System, BlockMap)> {
        if !self.solids.is_empty() {
            let (problem, map) = self.assemble_problem();
            return Ok((System::new(&problem)?, map));
        }
        let mut spare = std::mem::take(&mut self.spare);
        let blocks = self.blocks(&mut spare);
        let written = self.write(&blocks, Some(&blocks.v_free), &mut spare.storage);
        let finite = written.finite && blocks.v_finite;
        if !finite {
            let written = self.write(&blocks, None, &mut Storage::default());
            self.problem_of(blocks, written).0.validate()?;
            unreachable!("validation refuses a non-finite value");
        }
        let Blocks {
            dynamic,
            v_free,
            cones,
            dims,
            compliance,
            map,
            ..
        } = blocks;
        spare.dynamic = dynamic;
        spare.dims = dims;
        let parts = FactoredParts {
            name: format!("step {}", self.steps),
            class: Default::default(),
            cones,
            op: written.op,
            r: written.b,
            v_free,
            compliance,
        };
        let system = System::from_factored(parts, &mut spare.storage);
        self.spare = spare;
        Ok((system, map))
    }

    /// The problem of the step: the factored form of the rigid bodies, or, with solids, the
    /// global form of the rigid bodies and the solids together.
    fn assemble_problem(&mut self) -> (Problem, BlockMap) {
        let blocks = self.blocks(&mut Spare::default());
        let written = self.write(&blocks, None, &mut Storage::default());
        let (mut problem, mut map) = self.problem_of(blocks, written);
        if self.solids.is_empty() {
            return (problem, map);
        }
        let Operator::Factored(factored) = &problem.operator else {
            unreachable!("problem_of builds the factored form")
        };
        let g = fe_assembly::global(
            &fe_assembly::Parts {
                factored,
                cones: &problem.cones,
                bodies: &self.bodies,
                dynamic_index: &map.dynamic_index,
                solids: &self.solids,
                contacts: &self.node_contacts,
            },
            self.settings.dt,
            &Vector3::from(self.settings.gravity),
            self.settings.max_recovery_speed,
        );
        if !problem.compliance.is_empty() {
            let c = self.settings.contact_compliance;
            problem
                .compliance
                .extend(std::iter::repeat_n(c, g.node_rows));
        }
        problem.cones = g.cones;
        problem.operator = Operator::Global(g.global);
        map.node_keys = g.node_keys;
        (problem, map)
    }

    /// The factored [`Problem`] of `blocks` written with their bias `b`, and the map of
    /// its blocks.
    fn problem_of(&self, blocks: Blocks, written: Written) -> (Problem, BlockMap) {
        let bodies = blocks
            .dynamic
            .iter()
            .zip(blocks.v_free.chunks_exact(6))
            .map(|(&i, v)| Body {
                v_free: v.try_into().expect("6 free velocities per body"),
                ..problem_body(&self.bodies[i])
            })
            .collect();
        let problem = Problem {
            name: format!("step {}", self.steps),
            class: Default::default(),
            cones: blocks.cones,
            operator: Operator::Factored(Factored {
                bodies,
                jacobians: written.op.jacobian_blocks(),
                b: written.b,
            }),
            compliance: blocks.compliance,
        };
        (problem, blocks.map)
    }

    /// The bodies and blocks of the factored problem of the current contacts and joints:
    /// a contact block for each contact with a dynamic body, in contact order, then a
    /// block for each joint row with a dynamic body; in the memory of `spare`.
    fn blocks(&self, spare: &mut Spare) -> Blocks {
        let h = self.settings.dt;
        let gravity = Vector3::from(self.settings.gravity);
        // The springs' impulses over the step, `h M⁻¹ f`, per body (none without springs).
        let mut pushed = Vec::new();
        for f in self.springs.iter().flat_map(|s| s.forces(&self.bodies)) {
            pushed.resize(self.bodies.len(), [0.0; 6]);
            let body = &self.bodies[f.body];
            if body.is_dynamic() {
                let dv = body.velocity_change(&f.point, &(h * f.force));
                (0..6).for_each(|c| pushed[f.body][c] += dv[c]);
            }
        }
        let mut dynamic_index = std::mem::take(&mut spare.dynamic_index);
        let mut dynamic = std::mem::take(&mut spare.dynamic);
        dynamic_bodies(&self.bodies, &mut dynamic_index, &mut dynamic);
        let mut v_free = spare.storage.take_v_free();
        v_free.resize(6 * dynamic.len(), 0.0);
        let v_finite = AtomicBool::new(true);
        v_free
            .par_chunks_mut(6)
            .zip(&dynamic)
            .for_each(|(out, &i)| {
                let dv = pushed.get(i).copied().unwrap_or([0.0; 6]);
                let v = self.bodies[i].free_velocity(h, &gravity, self.settings.gyroscopic);
                (0..6).for_each(|c| out[c] = v[c] + dv[c]);
                if !out.iter().all(|v| v.is_finite()) {
                    v_finite.store(false, Ordering::Relaxed);
                }
            });
        let mut cones = spare.storage.take_cones();
        let mut contact_keys = std::mem::take(&mut spare.contact_keys);
        let mut dims = std::mem::take(&mut spare.dims);
        let mut parts = (&mut cones, &mut contact_keys, &mut dims);
        // Collision detection leaves out pairs of two non-dynamic bodies: a contact without
        // a dynamic body is an exception, which takes a second pass over the others.
        let kept = (!self.contact_blocks(&dynamic_index, None, &mut parts)).then(|| {
            let dynamic_contact = |c: &Contact| {
                dynamic_index[c.body_a].is_some() || dynamic_index[c.body_b].is_some()
            };
            let kept: Vec<usize> = (0..self.contacts.len())
                .filter(|&i| dynamic_contact(&self.contacts[i]))
                .collect();
            self.contact_blocks(&dynamic_index, Some(&kept), &mut parts);
            kept
        });
        let v_rec = self.settings.max_recovery_speed;
        let mut joints = Vec::new();
        let mut joint_rows = Vec::new();
        for (j, joint) in self.joints.iter().enumerate() {
            for (r, row) in joint.rows(&self.bodies, self.time).into_iter().enumerate() {
                let ConstraintRow {
                    a,
                    b: row_b,
                    violation,
                    rate,
                } = row;
                if block_bodies(&dynamic_index, joint.body_a, Some(joint.body_b)).is_empty() {
                    continue;
                }
                cones.push(Cone::Bilateral { dim: 1 });
                dims.push(1);
                joints.push(JointBlock {
                    a: joint.body_a,
                    b: joint.body_b,
                    rows: [a, row_b],
                    // Rheonomic rows: J v + ∂C/∂t + C/h = 0.
                    bias: (violation / h).clamp(-v_rec, v_rec) + rate,
                });
                joint_rows.push((j, r));
            }
        }
        let mut compliance = Vec::new();
        if self.settings.contact_compliance > 0.0 {
            let n_contact_rows: usize = dims[..contact_keys.len()].iter().sum();
            compliance = vec![0.0; n_contact_rows + joints.len()];
            compliance[..n_contact_rows].fill(self.settings.contact_compliance);
        }
        Blocks {
            dynamic,
            v_free,
            v_finite: v_finite.into_inner(),
            cones,
            dims,
            kept,
            joints,
            compliance,
            map: BlockMap {
                dynamic_index,
                contact_keys,
                joint_rows,
                node_keys: Vec::new(),
            },
        }
    }

    /// The cone, key and dimension of the contact block of each contact (each `kept`
    /// contact), in contact order, into `cones`, `keys` and `dims` (resized to the
    /// contacts, every entry written), in one parallel pass; whether every contact has a
    /// dynamic body (`index`: the problem body of each scene body).
    fn contact_blocks(
        &self,
        index: &[Option<usize>],
        kept: Option<&[usize]>,
        (cones, keys, dims): &mut (&mut Vec<Cone>, &mut Vec<ContactKey>, &mut Vec<usize>),
    ) -> bool {
        let n = kept.map_or(self.contacts.len(), <[usize]>::len);
        cones.resize(n, Cone::Unilateral);
        keys.resize(n, (0, 0, 0));
        dims.resize(n, 0);
        let all_dynamic = AtomicBool::new(true);
        (
            cones.par_iter_mut(),
            keys.par_iter_mut(),
            dims.par_iter_mut(),
        )
            .into_par_iter()
            .with_min_len(crate::PAR_MIN_ITEMS)
            .enumerate()
            .for_each(|(k, (cone, key, dim))| {
                let c = kept_contact(&self.contacts, kept, k);
                let mu = self.bodies[c.body_a]
                    .friction
                    .min(self.bodies[c.body_b].friction);
                *cone = contact_cone(mu);
                *key = (c.body_a, c.body_b, c.feature);
                *dim = cone.dim();
                if index[c.body_a].is_none() && index[c.body_b].is_none() {
                    all_dynamic.store(false, Ordering::Relaxed);
                }
            });
        all_dynamic.into_inner()
    }

    /// Writes the rows of `blocks` into a factored operator in the memory of `storage`, in
    /// one parallel pass: each contact block's rows straight from its contact, at the poses
    /// of the last [`World::detect`] (the contacts' own). With
    /// `velocity` (the free velocities), `r = J v_free + b` comes back instead of `b`.
    fn write(&self, blocks: &Blocks, velocity: Option<&[f64]>, storage: &mut Storage) -> Written {
        let h = self.settings.dt;
        let v_rec = self.settings.max_recovery_speed;
        let index = &blocks.map.dynamic_index[..];
        let n_contacts = blocks.map.contact_keys.len();
        let contact = |k| kept_contact(&self.contacts, blocks.kept.as_deref(), k);
        let finite = AtomicBool::new(true);
        let (op, b) = FactoredOperator::build_in(
            blocks
                .dynamic
                .par_iter()
                .map(|&i| problem_body(&self.bodies[i]).inv_mass()),
            &blocks.dims,
            |k| match k.checked_sub(n_contacts) {
                None => {
                    let c = contact(k);
                    block_bodies(index, Some(c.body_a), Some(c.body_b))
                }
                Some(j) => block_bodies(index, blocks.joints[j].a, Some(blocks.joints[j].b)),
            },
            |k, out, bias| {
                match k.checked_sub(n_contacts) {
                    None => {
                        let c = contact(k);
                        // The poses of the detection (this step's): 56 bytes a body where
                        // a `RigidBody` is 248.
                        let poses = &self.collider.poses;
                        let (ba, bb) = (&poses[c.body_a], &poses[c.body_b]);
                        let (dirs, d) = (contact_dirs(c), bias.len());
                        bias[0] = contact_bias(c, h, v_rec);
                        bias[1..].fill(0.0);
                        if index[c.body_a].is_some() && index[c.body_b].is_some() {
                            // Both sides dynamic (the common case): the rows straight into
                            // place.
                            let (out_a, out_b) = out.split_at_mut(d);
                            point_rows(ba, &c.point_a, &dirs[..d], -1.0, out_a);
                            point_rows(bb, &c.point_b, &dirs[..d], 1.0, out_b);
                        } else {
                            let (mut rows_a, mut rows_b) = ([[0.0; 6]; 3], [[0.0; 6]; 3]);
                            point_rows(ba, &c.point_a, &dirs[..d], -1.0, &mut rows_a[..d]);
                            point_rows(bb, &c.point_b, &dirs[..d], 1.0, &mut rows_b[..d]);
                            write_block(
                                &self.bodies,
                                index,
                                (Some(c.body_a), &rows_a[..d]),
                                (Some(c.body_b), &rows_b[..d]),
                                out,
                                bias,
                            );
                        }
                    }
                    Some(j) => {
                        let joint = &blocks.joints[j];
                        bias[0] = joint.bias;
                        write_block(
                            &self.bodies,
                            index,
                            (joint.a, &joint.rows[..1]),
                            (Some(joint.b), &joint.rows[1..]),
                            out,
                            bias,
                        );
                    }
                }
                // An `&` of the values' tests, without branches (a sum of `0 · x`, NaN for a
                // value that is not finite, was one serial chain of 39 float adds per block).
                // Plain loops: a `chain` of a `flatten` in a `for` compiles into branches.
                let mut all_finite = true;
                for v in bias.iter() {
                    all_finite &= v.is_finite();
                }
                for row in out.iter() {
                    for v in row {
                        all_finite &= v.is_finite();
                    }
                }
                if !all_finite {
                    finite.store(false, Ordering::Relaxed);
                }
            },
            velocity,
            storage,
        );
        Written {
            op,
            b,
            finite: finite.into_inner(),
        }
    }

    /// The warm start of a step's blocks (`cones`, mapped by `map`) from the impulses of
    /// the previous step.
    fn warm_start(&self, map: &BlockMap, cones: &[Cone]) -> Vec<f64> {
        let mut gamma = Vec::with_capacity(cones.iter().map(Cone::dim).sum());
        for (g, cone) in self.warm_impulses(&map.contact_keys).zip(cones) {
            gamma.extend_from_slice(&g[..cone.dim()]);
        }
        for key in &map.joint_rows {
            gamma.push(self.warm_joints.get(key).copied().unwrap_or_default());
        }
        let node_cones = &cones[map.contact_keys.len() + map.joint_rows.len()..];
        for (key, cone) in map.node_keys.iter().zip(node_cones) {
            let g = self.warm_nodes.get(key).copied().unwrap_or_default();
            gamma.extend_from_slice(&g[..cone.dim()]);
        }
        gamma
    }

    /// The impulses of the last step for the contacts `keys` (zero for a contact it did not
    /// have), one merge of the sorted keys with those of the last step: a key out of order
    /// gets zero.
    fn warm_impulses<'a>(
        &'a self,
        keys: impl IntoIterator<Item = &'a ContactKey> + 'a,
    ) -> impl Iterator<Item = [f64; 3]> + 'a {
        let mut last = self.warm_contacts.iter().peekable();
        keys.into_iter().map(move |key| {
            while last.next_if(|(k, _)| k < key).is_some() {}
            last.next_if(|(k, _)| k == key)
                .map_or([0.0; 3], |&(_, g)| g)
        })
    }

    /// Remembers the impulses of this step (blocks `cones`, mapped by `map`) for the next
    /// warm start.
    fn remember(&mut self, map: &BlockMap, cones: &[Cone], gamma: &[f64]) {
        self.warm_contacts.clear();
        self.warm_joints.clear();
        let mut at = 0;
        for (key, cone) in map.contact_keys.iter().zip(cones) {
            let mut g = [0.0; 3];
            g[..cone.dim()].copy_from_slice(&gamma[at..at + cone.dim()]);
            self.warm_contacts.push((*key, g));
            at += cone.dim();
        }
        for (key, g) in map.joint_rows.iter().zip(&gamma[at..]) {
            self.warm_joints.insert(*key, *g);
        }
        self.warm_nodes.clear();
        at += map.joint_rows.len();
        let node_cones = &cones[map.contact_keys.len() + map.joint_rows.len()..];
        for (key, cone) in map.node_keys.iter().zip(node_cones) {
            let mut g = [0.0; 3];
            g[..cone.dim()].copy_from_slice(&gamma[at..at + cone.dim()]);
            self.warm_nodes.insert(*key, g);
            at += cone.dim();
        }
    }

    /// The impulses of the last step's contacts (normal then tangential components, N·s),
    /// each with the contact's body pair.
    pub fn contact_impulses(&self) -> impl Iterator<Item = ((usize, usize), [f64; 3])> + '_ {
        self.warm_contacts.iter().map(|&((a, b, _), g)| ((a, b), g))
    }

    /// The contacts of solids' nodes with rigid bodies found by the last collision detection,
    /// each with the impulse the last step's solve gave it (normal then tangential
    /// components along the normal and [`crate::sim::joint::tangent_frame`], N·s; zero when the step's problem
    /// did not have it).
    pub fn node_contacts(&self) -> impl Iterator<Item = (&NodeContact, [f64; 3])> + '_ {
        self.node_contacts.iter().map(|n| {
            (
                n,
                self.warm_nodes.get(&n.key()).copied().unwrap_or_default(),
            )
        })
    }

    /// The impulses of joint `joint`'s rows in the last step (N·s, or N·m·s for angular
    /// rows), in the order of [`Joint::rows`]; zero for a row the step did not have. The
    /// force (torque) a joint applied is its impulse over the time step: a prescribed
    /// joint's driving force.
    pub fn joint_impulses(&self, joint: usize) -> Vec<f64> {
        let rows = self.joints.get(joint).map_or(0, Joint::rows_count);
        (0..rows)
            .map(|r| {
                self.warm_joints
                    .get(&(joint, r))
                    .copied()
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The contacts of the last collision detection (that of the last step, or of
    /// [`World::problem`] when it was called since), each with the impulse the last step's
    /// solve gave it (normal then tangential components, N·s; zero for a contact the step's
    /// problem left out or did not have). What a binding shows of the contacts.
    pub fn contacts(&self) -> impl Iterator<Item = (&Contact, [f64; 3])> + '_ {
        let keys: Vec<ContactKey> = self
            .contacts
            .iter()
            .map(|c| (c.body_a, c.body_b, c.feature))
            .collect();
        let impulses: Vec<[f64; 3]> = self.warm_impulses(&keys).collect();
        self.contacts.iter().zip(impulses)
    }

    /// Advances one step with `solver` (its session is kept for the next steps).
    pub fn step(&mut self, solver: &mut Runner) -> Result<StepStats> {
        self.step_with_report(solver).map(|(stats, _)| stats)
    }

    /// Advances one step with `solver`; also returns the solver's report of the step.
    pub fn step_with_report(&mut self, solver: &mut Runner) -> Result<(StepStats, Report)> {
        let start = Instant::now();
        let h = self.settings.dt;
        self.prescribe();
        let (contacts, max_penetration) = self.detect();
        let collision_s = start.elapsed().as_secs_f64();
        let assembly_start = Instant::now();
        let (sys, map) = self.assemble_system()?;
        let assembly_s = assembly_start.elapsed().as_secs_f64();
        let solve_start = Instant::now();
        let settings = Settings {
            friction: self.settings.friction_model,
            criterion: self.settings.criterion,
            tol: self.settings.tol,
            max_iter: self.settings.max_iter,
            omega: self.settings.omega,
            check_every: self.settings.check_every,
            precision: self.settings.precision,
            warm_start: (self.settings.warm_start).then(|| self.warm_start(&map, sys.cones())),
            certify: self.settings.certify,
            ..Settings::default()
        };
        let report = solver.solve(&sys, &settings)?;
        let solve_s = solve_start.elapsed().as_secs_f64();
        let v = sys
            .velocities(&report.gamma)
            .expect("a factored or global problem has velocities");
        self.remember(&map, sys.cones(), &report.gamma);
        let mut rigid_dofs = 0;
        for (body, index) in self.bodies.iter_mut().zip(&map.dynamic_index) {
            if let Some(i) = index {
                body.set_generalized_velocity(&v[6 * i..6 * i + 6]);
                body.integrate(h);
                rigid_dofs += 6;
            }
        }
        fe_assembly::update(&mut self.solids, rigid_dofs, &v, h);
        self.time += h;
        self.steps += 1;
        self.prescribe();
        if self.settings.joint_projection && !self.joints.is_empty() {
            projection::project(
                &mut self.bodies,
                &self.joints,
                self.time,
                self.settings.joint_projection_tol,
            )?;
        }
        let bilateral_rows = map.joint_rows.len();
        self.spare.storage = sys.into_storage();
        self.spare.dynamic_index = map.dynamic_index;
        self.spare.contact_keys = map.contact_keys;
        let stats = StepStats {
            step: self.steps,
            time: self.time,
            bodies: self.bodies.len(),
            contacts,
            bilateral_rows,
            iterations: report.iterations,
            rounds: report.rounds,
            residual: report.residual.velocity,
            max_penetration,
            kinetic_energy: self
                .bodies
                .iter()
                .map(RigidBody::kinetic_energy)
                .sum::<f64>()
                + self.solids.iter().map(Solid::kinetic_energy).sum::<f64>(),
            collision_s,
            assembly_s,
            solve_s,
            status: report.status,
        };
        Ok((stats, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::operator::DelassusOperator;

    /// The wrecking-ball scene (contacts and joints) after `steps` steps of `pgs`, its
    /// step buffers sized by them.
    fn wrecking_ball_after(steps: usize) -> crate::sim::scene::Scene {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/wrecking_ball.toml");
        let mut scene = crate::sim::scene::load(std::path::Path::new(path), &[]).unwrap();
        let mut solver = Runner::new(crate::registry::solver("pgs").unwrap());
        for _ in 0..steps {
            scene.world.step(&mut solver).unwrap();
        }
        scene
    }

    /// The step's system, built straight from the contacts in the memory of the last
    /// steps' (larger) system, against the system of the validated [`Problem`] of
    /// [`World::problem`]: the same `r`, diagonal blocks, products and velocities, to the bit.
    #[test]
    fn system_from_contacts_in_reused_memory_equals_the_problems() {
        let mut scene = wrecking_ball_after(30);
        let world = &mut scene.world;
        // Leave fewer contacts than the memory was last sized for.
        let kept = world.bodies.len() - 3;
        world.bodies.truncate(kept);
        world
            .joints
            .retain(|j| j.body_b < kept && j.body_a.is_none_or(|a| a < kept));
        let mut copy = world.clone();
        let expected = System::new(&copy.problem().problem).unwrap();
        world.prescribe();
        world.detect();
        let (sys, map) = world.assemble_system().unwrap();
        assert!(map.contact_keys.len() > 5 && !map.joint_rows.is_empty());
        assert_eq!(sys.r(), expected.r());
        assert_eq!(sys.cones(), expected.cones());
        assert_eq!(sys.compliance(), expected.compliance());
        let gamma: Vec<f64> = (0..sys.rows()).map(|i| 1.0 + (i % 7) as f64).collect();
        assert_eq!(sys.velocity(&gamma), expected.velocity(&gamma));
        assert_eq!(sys.velocities(&gamma), expected.velocities(&gamma));
        for k in 0..sys.blocks() {
            assert_eq!(sys.diagonal_block(k), expected.diagonal_block(k));
        }
    }

    /// The operator's products form the rows of `M⁻¹ Jᵀ` on the fly: the table that
    /// `minv_jac` forms holds `M⁻¹`·row, and the products made from it, in the order of the
    /// body links, equal the operator's to the bit.
    #[test]
    fn products_on_the_fly_equal_those_of_the_minv_jac_table() {
        let mut scene = wrecking_ball_after(20);
        let world = &mut scene.world;
        world.prescribe();
        world.detect();
        let (sys, _) = world.assemble_system().unwrap();
        let op = sys.factored().unwrap();
        let (jac, minv, start, offsets) = (op.jac(), op.minv_jac(), op.jac_start(), op.offsets());
        assert!(op.links().len() > 20);
        let row = |k: usize, s: usize, i: usize| start[k] + s * (offsets[k + 1] - offsets[k]) + i;
        for k in 0..sys.blocks() {
            for (s, &body) in op.block_bodies(k).iter().enumerate() {
                for i in 0..offsets[k + 1] - offsets[k] {
                    let (j, m) = (jac[row(k, s, i)], minv[row(k, s, i)]);
                    assert_eq!(m, std::array::from_fn(|c| op.inv_mass()[body][c] * j[c]));
                }
            }
        }
        let gamma: Vec<f64> = (0..sys.rows()).map(|i| 0.5 + (i % 5) as f64).collect();
        let mut w = vec![0.0; 6 * op.bodies()];
        op.impulse_to_velocity(&gamma, &mut w);
        let mut expected = vec![0.0; w.len()];
        for (body, wb) in expected.chunks_mut(6).enumerate() {
            for &(k, s) in &op.links()[op.links_ptr()[body]..op.links_ptr()[body + 1]] {
                for (i, g) in gamma[offsets[k]..offsets[k + 1]].iter().enumerate() {
                    (0..6).for_each(|c| wb[c] += minv[row(k, s, i)][c] * g);
                }
            }
        }
        assert_eq!(w, expected);
        for k in 0..sys.blocks() {
            let d = offsets[k + 1] - offsets[k];
            let mut out = [0.0; 9];
            let mut expected = [0.0; 9];
            op.diagonal_block(k, &mut out);
            for s in 0..op.block_bodies(k).len() {
                for (a, b) in (0..d).flat_map(|a| (0..d).map(move |b| (a, b))) {
                    let (ja, mb) = (jac[row(k, s, a)], minv[row(k, s, b)]);
                    expected[a * d + b] += (0..6).map(|c| ja[c] * mb[c]).sum::<f64>();
                }
            }
            assert_eq!(out, expected, "block {k}");
        }
    }

    /// The dynamic index, numbered run by run in parallel, against its definition, in
    /// buffers that hold stale values.
    #[test]
    fn dynamic_index_numbers_the_dynamic_bodies_in_scene_order() {
        let ball = Shape::Sphere { radius: 0.1 };
        let bodies: Vec<RigidBody> = (0..10_000)
            .map(|i| {
                let pose = Pose::at(Vector3::new(i as f64, 0.0, 0.0));
                if i % 7 == 3 || (4000..4200).contains(&i) {
                    RigidBody::fixed(ball, pose)
                } else {
                    RigidBody::dynamic(ball, pose, 1.0, Vector3::repeat(1.0))
                }
            })
            .collect();
        let (mut index, mut dynamic) = (vec![Some(99); 3], vec![5; 20_000]);
        dynamic_bodies(&bodies, &mut index, &mut dynamic);
        let expected: Vec<usize> = (0..bodies.len())
            .filter(|&i| bodies[i].is_dynamic())
            .collect();
        assert_eq!(dynamic, expected);
        assert_eq!(index.len(), bodies.len());
        for (i, slot) in index.iter().enumerate() {
            assert_eq!(*slot, expected.binary_search(&i).ok(), "body {i}");
        }
    }

    /// A contact row that is not finite (here from a body's orientation, as the detection
    /// copied it: the rows are written at those poses) is refused with the validation's
    /// error, though every free velocity is finite: the rows' own test.
    #[test]
    fn a_non_finite_contact_row_is_an_error() {
        let mut scene = wrecking_ball_after(5);
        let world = &mut scene.world;
        world.prescribe();
        world.detect();
        let dynamic = |i: usize| world.bodies[i].is_dynamic();
        let c = *world
            .contacts
            .iter()
            .find(|c| dynamic(c.body_a) && dynamic(c.body_b))
            .expect("a contact between two dynamic bodies");
        world.collider.poses[c.body_b].orientation = nalgebra::UnitQuaternion::new_unchecked(
            nalgebra::Quaternion::new(f64::NAN, 0.0, 0.0, 0.0),
        );
        assert!(world.blocks(&mut Spare::default()).v_finite);
        let err = world
            .assemble_system()
            .err()
            .expect("a non-finite row is refused");
        assert!(err.to_string().contains("finite"), "{err}");
    }

    #[test]
    fn warm_start_matches_sorted_keys_and_leaves_new_contacts_at_zero() {
        let mut world = World::new(Vec::new(), Vec::new(), StepSettings::default());
        world.warm_contacts = vec![
            ((0, 1, 0), [1.0, 0.1, 0.2]),
            ((0, 2, 3), [2.0, 0.0, 0.0]),
            ((1, 2, 0), [3.0, 0.3, 0.0]),
            ((4, 5, 1), [4.0, 0.0, 0.4]),
        ];
        // A contact gone (0, 2, 3), new ones before, between and after the old keys.
        let keys = [
            (0, 0, 7),
            (0, 1, 0),
            (1, 2, 0),
            (2, 3, 0),
            (4, 5, 1),
            (9, 9, 9),
        ];
        let got: Vec<[f64; 3]> = world.warm_impulses(&keys).collect();
        let zero = [0.0; 3];
        assert_eq!(
            got,
            [
                zero,
                [1.0, 0.1, 0.2],
                [3.0, 0.3, 0.0],
                zero,
                [4.0, 0.0, 0.4],
                zero
            ]
        );
    }
}
