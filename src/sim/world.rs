//! The time stepper: collision detection, assembly of the factored problem of the step
//! (contact and joint blocks, stabilization, warm start; with solids of finite elements, the
//! global problem of [`super::fe::assembly`]), the solve, and the integration (paper 001
//! eq. (1), DESIGN §1 and §5).

use std::collections::{HashMap, HashSet};
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
use crate::error::Result;
use crate::problem::operator::Storage;
use crate::problem::{
    Body, Cone, Factored, FrictionModel, JacobianBlock, Operator, Problem, System,
};
use crate::solver::{Criterion, Report, Runner, Settings};

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
    /// their keys ([`collision::detect`] sorts the contacts): the warm start matches them
    /// with the next step's contacts in one merge of the two sorted lists.
    warm_contacts: Vec<(ContactKey, [f64; 3])>,
    warm_joints: HashMap<(usize, usize), f64>,
    warm_nodes: HashMap<NodeKey, [f64; 3]>,
    contacts: Vec<Contact>,
    node_contacts: Vec<NodeContact>,
    /// Body pairs joined by a joint: they do not collide with each other.
    jointed: HashSet<(usize, usize)>,
    /// The memory of the last step's Jacobian blocks and of its operator's rows, reused by
    /// the next step (fresh pages cost more to map and zero than to fill: about a third of
    /// the assembly of 10⁵ spheres). Scratch, not state: a clone starts without it.
    spare: Spare,
}

/// Buffers of one step reused by the next.
#[derive(Debug, Default)]
struct Spare {
    jacobians: Vec<JacobianBlock>,
    storage: Storage,
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
    let (t1, t2) = tangent_frame(&c.normal);
    // b = Φ/h: a gap may close within the step, a penetration is pushed out no faster than
    // the recovery speed.
    let bias = [(c.distance / h).max(-v_rec), 0.0, 0.0];
    let cone = if mu > 0.0 {
        Cone::Coulomb { mu }
    } else {
        Cone::Unilateral
    };
    ContactBlock {
        cone,
        dirs: [c.normal, t1, t2],
        bias,
    }
}

/// The Jacobian block with rows `rows_a`, `rows_b` for bodies `a`, `b` (`None`: the ground;
/// `index` maps scene bodies to problem bodies). A non-dynamic side contributes `J v` (a
/// kinematic body's velocity) to `bias` instead; a block with no dynamic side has no
/// bodies (and is dropped by the caller).
fn jacobian_block(
    bodies: &[RigidBody],
    index: &[Option<usize>],
    (a, rows_a): (Option<usize>, &[[f64; 6]]),
    (b, rows_b): (Option<usize>, &[[f64; 6]]),
    bias: &mut [f64],
) -> JacobianBlock {
    let mut block = JacobianBlock::default();
    // The ground (`None`) has no velocity and contributes nothing.
    for (body, rows) in [(a, rows_a), (b, rows_b)] {
        let Some(body) = body else { continue };
        match index[body] {
            Some(i) => {
                block.bodies.push(i);
                block.rows.extend_from_slice(rows);
            }
            None => {
                let v = bodies[body].generalized_velocity();
                for (bi, row) in bias.iter_mut().zip(rows) {
                    *bi += (0..6).map(|c| row[c] * v[c]).sum::<f64>();
                }
            }
        }
    }
    block
}

/// The rows `±(e, r × e)` of `body` (angular part in the body frame) for the directions
/// `dirs` at world point `p`: [`super::joint::point_row`] for each, the lever arm computed once.
fn point_rows(
    body: &RigidBody,
    p: &Vector3<f64>,
    dirs: &[Vector3<f64>],
    sign: f64,
) -> [[f64; 6]; 3] {
    let inv = body.pose.orientation.inverse();
    let r = inv * (p - body.pose.position);
    let mut rows = [[0.0; 6]; 3];
    for (row, e) in rows.iter_mut().zip(dirs) {
        let ang = r.cross(&(inv * e));
        *row = [e.x, e.y, e.z, ang.x, ang.y, ang.z].map(|x| sign * x);
    }
    rows
}

/// What a contact block adds to the problem besides its Jacobian.
struct ContactRows {
    cone: Cone,
    bias: [f64; 3],
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
        }
    }

    /// Runs collision detection at the current poses, leaving out pairs joined by a joint;
    /// returns the number of contacts.
    fn detect(&mut self) -> usize {
        let shapes: Vec<_> = self.bodies.iter().map(|b| b.shape).collect();
        let poses: Vec<_> = self.bodies.iter().map(|b| b.pose).collect();
        let is_static: Vec<bool> = self.bodies.iter().map(|b| !b.is_dynamic()).collect();
        self.contacts.clear();
        collision::detect(
            &shapes,
            &poses,
            &is_static,
            self.settings.envelope,
            &mut self.contacts,
        );
        if !self.jointed.is_empty() {
            let jointed = &self.jointed;
            self.contacts.retain(|c| {
                let pair = (c.body_a.min(c.body_b), c.body_a.max(c.body_b));
                !jointed.contains(&pair)
            });
        }
        fe_assembly::detect(
            &self.solids,
            &self.bodies,
            self.settings.envelope,
            &mut self.node_contacts,
        );
        self.contacts.len() + self.node_contacts.len()
    }

    /// Puts kinematic bodies where their prescribed motion has them at the current time.
    fn prescribe(&mut self) {
        let (t, h) = (self.time, self.settings.dt);
        self.bodies.iter_mut().for_each(|b| b.prescribe(t, h));
    }

    /// The problem the next step will solve (runs collision detection), e.g. to dump it.
    pub fn problem(&mut self) -> StepProblem {
        self.prescribe();
        self.detect();
        self.assemble_step()
    }

    /// The problem of the step: the factored form of the rigid bodies, or, with solids, the
    /// global form of the rigid bodies and the solids together.
    fn assemble_step(&mut self) -> StepProblem {
        let jacobians = std::mem::take(&mut self.spare.jacobians);
        let mut sp = self.assemble(jacobians);
        if self.solids.is_empty() {
            return sp;
        }
        let Operator::Factored(factored) = &sp.problem.operator else {
            unreachable!("assemble builds the factored form")
        };
        let g = fe_assembly::global(
            &fe_assembly::Parts {
                factored,
                cones: &sp.problem.cones,
                bodies: &self.bodies,
                dynamic_index: &sp.dynamic_index,
                solids: &self.solids,
                contacts: &self.node_contacts,
            },
            self.settings.dt,
            &Vector3::from(self.settings.gravity),
            self.settings.max_recovery_speed,
        );
        if !sp.problem.compliance.is_empty() {
            let c = self.settings.contact_compliance;
            sp.problem
                .compliance
                .extend(std::iter::repeat_n(c, g.node_rows));
        }
        sp.problem.cones = g.cones;
        sp.problem.operator = Operator::Global(g.global);
        sp.node_keys = g.node_keys;
        sp
    }

    /// Builds the factored problem from the current contacts and joints, its blocks in the
    /// memory of `jacobians` (cleared first).
    fn assemble(&self, jacobians: Vec<JacobianBlock>) -> StepProblem {
        let h = self.settings.dt;
        let gravity = Vector3::from(self.settings.gravity);
        let mut dynamic_index = Vec::with_capacity(self.bodies.len());
        // The springs' impulses over the step, `h M⁻¹ f`, per body.
        let mut pushed = vec![[0.0; 6]; self.bodies.len()];
        for f in self.springs.iter().flat_map(|s| s.forces(&self.bodies)) {
            let body = &self.bodies[f.body];
            if body.is_dynamic() {
                let dv = body.velocity_change(&f.point, &(h * f.force));
                (0..6).for_each(|c| pushed[f.body][c] += dv[c]);
            }
        }
        let mut count = 0;
        for b in &self.bodies {
            dynamic_index.push(b.is_dynamic().then(|| {
                count += 1;
                count - 1
            }));
        }
        let bodies: Vec<Body> = self
            .bodies
            .par_iter()
            .zip(&pushed)
            .filter(|(b, _)| b.is_dynamic())
            .map(|(b, dv)| {
                let v = b.free_velocity(h, &gravity, self.settings.gyroscopic);
                Body {
                    mass: b.mass,
                    inertia: b.inertia.into(),
                    v_free: std::array::from_fn(|c| v[c] + dv[c]),
                }
            })
            .collect();
        let v_rec = self.settings.max_recovery_speed;
        let index = &dynamic_index[..];
        // Contact blocks in parallel, in contact order.
        let mut jacobians = jacobians;
        let mut rows = Vec::with_capacity(self.contacts.len());
        self.contacts
            .par_iter()
            .map(|c| {
                let (ba, bb) = (&self.bodies[c.body_a], &self.bodies[c.body_b]);
                let ContactBlock {
                    cone,
                    dirs,
                    mut bias,
                } = contact_block(c, ba.friction.min(bb.friction), h, v_rec);
                let d = cone.dim();
                let rows_a = point_rows(ba, &c.point_a, &dirs[..d], -1.0);
                let rows_b = point_rows(bb, &c.point_b, &dirs[..d], 1.0);
                let block = jacobian_block(
                    &self.bodies,
                    index,
                    (Some(c.body_a), &rows_a[..d]),
                    (Some(c.body_b), &rows_b[..d]),
                    &mut bias[..d],
                );
                (block, ContactRows { cone, bias })
            })
            .unzip_into_vecs(&mut jacobians, &mut rows);
        let mut contact_keys: Vec<ContactKey> = self
            .contacts
            .iter()
            .map(|c| (c.body_a, c.body_b, c.feature))
            .collect();
        // Collision detection leaves out pairs of two non-dynamic bodies: a contact block
        // without bodies is an exception.
        if jacobians.iter().any(|j| j.bodies.is_empty()) {
            let keep: Vec<bool> = jacobians.iter().map(|j| !j.bodies.is_empty()).collect();
            let mut flags = keep.iter();
            rows.retain(|_| *flags.next().expect("one flag per block"));
            let mut flags = keep.iter();
            contact_keys.retain(|_| *flags.next().expect("one flag per block"));
            jacobians.retain(|j| !j.bodies.is_empty());
        }
        let mut cones: Vec<Cone> = rows.iter().map(|r| r.cone).collect();
        let mut b = Vec::with_capacity(3 * rows.len());
        for r in &rows {
            b.extend_from_slice(&r.bias[..r.cone.dim()]);
        }
        let n_contact_rows = b.len();
        let mut joint_rows = Vec::new();
        for (j, joint) in self.joints.iter().enumerate() {
            for (r, row) in joint.rows(&self.bodies, self.time).into_iter().enumerate() {
                let ConstraintRow {
                    a,
                    b: row_b,
                    violation,
                    rate,
                } = row;
                // Rheonomic rows: J v + ∂C/∂t + C/h = 0.
                let mut bias = [(violation / h).clamp(-v_rec, v_rec) + rate];
                let block = jacobian_block(
                    &self.bodies,
                    index,
                    (joint.body_a, &[a]),
                    (Some(joint.body_b), &[row_b]),
                    &mut bias,
                );
                if !block.bodies.is_empty() {
                    cones.push(Cone::Bilateral { dim: 1 });
                    jacobians.push(block);
                    b.extend_from_slice(&bias);
                    joint_rows.push((j, r));
                }
            }
        }
        let mut compliance = Vec::new();
        if self.settings.contact_compliance > 0.0 {
            compliance = vec![0.0; b.len()];
            compliance[..n_contact_rows].fill(self.settings.contact_compliance);
        }
        StepProblem {
            problem: Problem {
                name: format!("step {}", self.steps),
                class: Default::default(),
                cones,
                operator: Operator::Factored(Factored {
                    bodies,
                    jacobians,
                    b,
                }),
                compliance,
            },
            dynamic_index,
            contact_keys,
            joint_rows,
            node_keys: Vec::new(),
        }
    }

    /// The warm start of a step problem from the impulses of the previous step.
    fn warm_start(&self, sp: &StepProblem) -> Vec<f64> {
        let mut gamma = Vec::with_capacity(sp.problem.rows());
        for (g, cone) in self.warm_impulses(&sp.contact_keys).zip(&sp.problem.cones) {
            gamma.extend_from_slice(&g[..cone.dim()]);
        }
        for key in &sp.joint_rows {
            gamma.push(self.warm_joints.get(key).copied().unwrap_or_default());
        }
        let node_cones = &sp.problem.cones[sp.contact_keys.len() + sp.joint_rows.len()..];
        for (key, cone) in sp.node_keys.iter().zip(node_cones) {
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

    /// Remembers the impulses of this step for the next warm start.
    fn remember(&mut self, sp: &StepProblem, gamma: &[f64]) {
        self.warm_contacts.clear();
        self.warm_joints.clear();
        let mut at = 0;
        for (key, cone) in sp.contact_keys.iter().zip(&sp.problem.cones) {
            let mut g = [0.0; 3];
            g[..cone.dim()].copy_from_slice(&gamma[at..at + cone.dim()]);
            self.warm_contacts.push((*key, g));
            at += cone.dim();
        }
        for (key, g) in sp.joint_rows.iter().zip(&gamma[at..]) {
            self.warm_joints.insert(*key, *g);
        }
        self.warm_nodes.clear();
        at += sp.joint_rows.len();
        let node_cones = &sp.problem.cones[sp.contact_keys.len() + sp.joint_rows.len()..];
        for (key, cone) in sp.node_keys.iter().zip(node_cones) {
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
        let contacts = self.detect();
        let max_penetration = self
            .contacts
            .iter()
            .chain(self.node_contacts.iter().map(|n| &n.contact))
            .fold(0.0f64, |m, c| m.max(-c.distance));
        let collision_s = start.elapsed().as_secs_f64();
        let assembly_start = Instant::now();
        let sp = self.assemble_step();
        let sys = System::new_in(&sp.problem, std::mem::take(&mut self.spare.storage))?;
        let assembly_s = assembly_start.elapsed().as_secs_f64();
        let solve_start = Instant::now();
        let settings = Settings {
            friction: self.settings.friction_model,
            criterion: self.settings.criterion,
            tol: self.settings.tol,
            max_iter: self.settings.max_iter,
            omega: self.settings.omega,
            warm_start: self.settings.warm_start.then(|| self.warm_start(&sp)),
            certify: self.settings.certify,
            ..Settings::default()
        };
        let report = solver.solve(&sys, &settings)?;
        let solve_s = solve_start.elapsed().as_secs_f64();
        let v = sys
            .velocities(&report.gamma)
            .expect("a factored or global problem has velocities");
        self.remember(&sp, &report.gamma);
        self.spare.storage = sys.into_storage();
        let mut rigid_dofs = 0;
        for (body, index) in self.bodies.iter_mut().zip(&sp.dynamic_index) {
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
        if let Operator::Factored(f) = sp.problem.operator {
            self.spare.jacobians = f.jacobians;
        }
        let stats = StepStats {
            step: self.steps,
            time: self.time,
            bodies: self.bodies.len(),
            contacts,
            bilateral_rows: sp.joint_rows.len(),
            iterations: report.iterations,
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
