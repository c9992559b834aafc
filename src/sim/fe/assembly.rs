//! The solids' part of a step: contacts of their surface nodes with rigid bodies, and the
//! global problem `H v = f + Jᵀ γ`, `u = J v + b` of a world with solids.
//!
//! The unknowns are the rigid bodies' 6-vectors (in the order of the factored problem), then
//! each solid's free nodes, 3 each. The linearly implicit Euler step of the thesis (eq. 3.22,
//! `H = M − h² ∂f/∂q − h ∂f/∂v`) with elastic forces `−f_int(q)` of tangent stiffness `K`
//! and Rayleigh damping `D = α M + β K` reads
//! `(M + h D + h² K) v⁺ = M v + h (f_ext − f_int(q))`, then `q⁺ = q + h v⁺`. A rigid body's
//! block is its diagonal mass with `f = M v_free`.

use nalgebra::{Matrix3, Vector3};

use super::Solid;
use crate::problem::{Cone, CsrMatrix, Factored, Global};
use crate::sim::body::RigidBody;
use crate::sim::collision::{self, Contact};
use crate::sim::joint::point_row;
use crate::sim::world::{ContactBlock, contact_block};

type V3 = Vector3<f64>;
type Triplets = Vec<(usize, usize, f64)>;

/// A contact of a solid's surface node with a rigid body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeContact {
    /// The solid.
    pub solid: usize,
    /// The node.
    pub node: usize,
    /// The contact: `body_a` is the rigid body, `point_b` the node, the normal points from
    /// the body to the node; `body_b` is the node index.
    pub contact: Contact,
}

/// A node contact's identity across steps: (solid, node, rigid body).
pub type NodeKey = (usize, usize, usize);

impl NodeContact {
    /// The contact's identity across steps.
    pub fn key(&self) -> NodeKey {
        (self.solid, self.node, self.contact.body_a)
    }
}

/// The contacts within `envelope` of every surface node of `solids` with every body of
/// `bodies` (pairs where neither side moves are left out), in the order of (solid, body,
/// node), written to `out` (cleared first).
pub fn detect(solids: &[Solid], bodies: &[RigidBody], envelope: f64, out: &mut Vec<NodeContact>) {
    out.clear();
    for (s, solid) in solids.iter().enumerate() {
        for (b, body) in bodies.iter().enumerate() {
            for &node in &solid.surface {
                if solid.dof(node).is_none() && !body.is_dynamic() {
                    continue;
                }
                let p = solid.positions[node];
                if let Some(mut contact) =
                    collision::point_contact(&body.shape, &body.pose, p, envelope)
                {
                    contact.body_a = b;
                    contact.body_b = node;
                    out.push(NodeContact {
                        solid: s,
                        node,
                        contact,
                    });
                }
            }
        }
    }
}

/// The first unknown of each solid's nodes after `rigid_dofs` rigid unknowns, and the total
/// number of unknowns (the last entry).
pub fn offsets(rigid_dofs: usize, solids: &[Solid]) -> Vec<usize> {
    let mut out = vec![rigid_dofs];
    for s in solids {
        out.push(out.last().copied().unwrap_or(0) + 3 * s.free_nodes());
    }
    out
}

/// Adds a solid's blocks of `H = M + h D + h² K` (at `offset`) to `triplets` and its part of
/// `f = M v + h (m g − f_int)` to `f`, with the element stiffness `R K_e Rᵀ` and forces of
/// the corotational tetrahedra at the current positions.
fn solid_terms(
    solid: &Solid,
    h: f64,
    gravity: &V3,
    offset: usize,
    triplets: &mut Triplets,
    f: &mut [f64],
) {
    let [alpha, beta] = solid.material.rayleigh;
    let unknown = |i: usize| solid.dof(i).map(|k| offset + 3 * k);
    for (i, (&m, v)) in solid.mass.iter().zip(&solid.velocities).enumerate() {
        let Some(at) = unknown(i) else { continue };
        let rhs = m * v + h * m * gravity;
        for c in 0..3 {
            triplets.push((at + c, at + c, m * (1.0 + h * alpha)));
            f[at + c] += rhs[c];
        }
    }
    let k_scale = h * h + h * beta;
    for tet in &solid.tets {
        let r = tet.rotation(&solid.positions);
        let u = tet.displacements(&r, &solid.positions, &solid.rest);
        let forces = tet.forces(&r, &u);
        for (a, &na) in tet.nodes.iter().enumerate() {
            let Some(row) = unknown(na) else { continue };
            for c in 0..3 {
                f[row + c] += h * forces[a][c];
            }
            for (b, &nb) in tet.nodes.iter().enumerate() {
                let Some(col) = unknown(nb) else { continue };
                let block: Matrix3<f64> = k_scale * (r * tet.block(a, b) * r.transpose());
                for (i, j) in (0..3).flat_map(|i| (0..3).map(move |j| (i, j))) {
                    triplets.push((row + i, col + j, block[(i, j)]));
                }
            }
        }
    }
}

/// The global problem of a world with solids.
pub struct GlobalStep {
    /// `H`, `J`, `f`, `b`.
    pub global: Global,
    /// The cones: those of the factored part, then one per node contact.
    pub cones: Vec<Cone>,
    /// The identity of each node contact block, in block order (after the factored part's).
    pub node_keys: Vec<NodeKey>,
    /// Rows of the node contact blocks (the last rows).
    pub node_rows: usize,
}

/// What [`global`] assembles from.
pub struct Parts<'a> {
    /// The rigid part as a factored problem (its blocks come first).
    pub factored: &'a Factored,
    /// The cones of the factored part.
    pub cones: &'a [Cone],
    /// The scene's rigid bodies.
    pub bodies: &'a [RigidBody],
    /// Index of each rigid body among the factored problem's bodies (`None`: not dynamic).
    pub dynamic_index: &'a [Option<usize>],
    /// The solids.
    pub solids: &'a [Solid],
    /// Their node contacts.
    pub contacts: &'a [NodeContact],
}

/// Assembles `H v = f + Jᵀ γ`, `u = J v + b` from the factored rigid part, the solids and
/// their node contacts at time step `h` (`v_rec`: the recovery speed of penetrations).
pub fn global(p: &Parts, h: f64, gravity: &V3, v_rec: f64) -> GlobalStep {
    let f_rigid = p.factored;
    let offsets = offsets(6 * f_rigid.bodies.len(), p.solids);
    let ndof = offsets[p.solids.len()];
    let mut hm = Triplets::new();
    let mut f = vec![0.0; ndof];
    for (i, body) in f_rigid.bodies.iter().enumerate() {
        let mass = [
            body.mass,
            body.mass,
            body.mass,
            body.inertia[0],
            body.inertia[1],
            body.inertia[2],
        ];
        for c in 0..6 {
            hm.push((6 * i + c, 6 * i + c, mass[c]));
            f[6 * i + c] = mass[c] * body.v_free[c];
        }
    }
    for (s, solid) in p.solids.iter().enumerate() {
        solid_terms(solid, h, gravity, offsets[s], &mut hm, &mut f);
    }
    // The factored blocks, body by body into the rigid columns.
    let mut jt = Triplets::new();
    let mut row = 0;
    for (block, cone) in f_rigid.jacobians.iter().zip(p.cones) {
        let d = cone.dim();
        for (s, &body) in block.bodies.iter().enumerate() {
            for (r, entries) in block.rows[s * d..(s + 1) * d].iter().enumerate() {
                for (c, &v) in entries.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                    jt.push((row + r, 6 * body + c, v));
                }
            }
        }
        row += d;
    }
    let mut b = f_rigid.b.clone();
    let mut cones = p.cones.to_vec();
    let mut node_keys = Vec::with_capacity(p.contacts.len());
    let first_node_row = row;
    for nc in p.contacts {
        let (solid, c) = (&p.solids[nc.solid], &nc.contact);
        let body = &p.bodies[c.body_a];
        let ContactBlock {
            cone,
            dirs,
            mut bias,
        } = contact_block(c, body.friction.min(solid.friction), h, v_rec);
        let node = solid.dof(nc.node).map(|k| offsets[nc.solid] + 3 * k);
        let rigid = p.dynamic_index[c.body_a].map(|i| 6 * i);
        if node.is_none() && rigid.is_none() {
            continue;
        }
        let d = cone.dim();
        for (r, e) in dirs[..d].iter().enumerate() {
            if let Some(col) = node {
                (0..3).for_each(|k| jt.push((row + r, col + k, e[k])));
            }
            let body_row = point_row(body, &c.point_a, e).map(|x| -x);
            match rigid {
                Some(col) => (0..6).for_each(|k| jt.push((row + r, col + k, body_row[k]))),
                // A body that does not move under impulses moves the contact by J v.
                None => {
                    let v = body.generalized_velocity();
                    bias[r] += (0..6).map(|k| body_row[k] * v[k]).sum::<f64>();
                }
            }
        }
        row += d;
        b.extend_from_slice(&bias[..d]);
        cones.push(cone);
        node_keys.push(nc.key());
    }
    let in_range = "the unknowns and rows are numbered within the sizes";
    GlobalStep {
        global: Global {
            h: CsrMatrix::from_triplets(ndof, ndof, &hm).expect(in_range),
            j: CsrMatrix::from_triplets(row, ndof, &jt).expect(in_range),
            f,
            b,
        },
        cones,
        node_keys,
        node_rows: row - first_node_row,
    }
}

/// Sets the velocities of the solids' free nodes from the global solution `v` (held nodes
/// keep a zero velocity) and advances their positions over `h`.
pub fn update(solids: &mut [Solid], rigid_dofs: usize, v: &[f64], h: f64) {
    let offsets = offsets(rigid_dofs, solids);
    for (solid, &start) in solids.iter_mut().zip(&offsets) {
        for i in 0..solid.positions.len() {
            if let Some(k) = solid.dof(i) {
                let at = start + 3 * k;
                solid.velocities[i] = V3::new(v[at], v[at + 1], v[at + 2]);
            }
        }
        solid.integrate(h);
    }
}
