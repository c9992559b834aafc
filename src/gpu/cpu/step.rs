//! Mirrors of the time-step kernels of `shaders/step/` (issue 14): grid, counting sort,
//! narrow phase, assembly, warm start, body links, the iterations on the sphere rows
//! (gather and Jacobi step), integration and statistics.

use super::measure::block_residual;
use super::operator::max_eigenvalue;
use super::reduce::partials;
use super::{load, model_velocity, project, workgroup_tree};
use crate::gpu::kernels::WORKGROUP;
use crate::gpu::step::{GpuBody, GpuContact, GpuPlane, Span, StepGate, StepParams};
use crate::gpu::{
    ApgdState, Apply, CONE_COULOMB, CONE_UNILATERAL, GpuBlock, Monitor, Params, Partial, SLOT_B,
};

const WG: usize = WORKGROUP as usize;

type V3 = [f32; 3];

fn xyz(v: [f32; 4]) -> V3 {
    [v[0], v[1], v[2]]
}

fn cross3(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot3(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `rotate` of `step_common.wgsl`: `q v q*` for a unit quaternion `(x, y, z, w)`.
fn rotate(q: [f32; 4], v: V3) -> V3 {
    let c = cross3(xyz(q), v);
    let t = c.map(|x| 2.0 * x);
    let u = cross3(xyz(q), t);
    std::array::from_fn(|i| v[i] + q[3] * t[i] + u[i])
}

/// `cell_of` of `step_common.wgsl`.
fn cell_of(p: V3, side: f32) -> [i32; 3] {
    p.map(|x| (x / side).floor() as i32)
}

/// `bucket_of` of `step_common.wgsl`.
fn bucket_of(c: [i32; 3], mask: u32) -> u32 {
    let h = (c[0] as u32).wrapping_mul(73_856_093)
        ^ (c[1] as u32).wrapping_mul(19_349_663)
        ^ (c[2] as u32).wrapping_mul(83_492_791);
    h & mask
}

/// `free_velocity` of `step_common.wgsl`: linear then angular.
fn free_velocity(b: &GpuBody, h: f32, gravity: [f32; 4]) -> [f32; 6] {
    let lin: V3 = std::array::from_fn(|i| b.vel[i] + h * gravity[i]);
    let mut ang = xyz(b.omega);
    if gravity[3] == 1.0 {
        let inertia = [b.props[1], b.props[2], b.props[3]];
        let iw = std::array::from_fn(|i| inertia[i] * ang[i]);
        let torque = cross3(ang, iw).map(|x| -x);
        ang = std::array::from_fn(|i| ang[i] + h * (torque[i] / inertia[i]));
    }
    [lin[0], lin[1], lin[2], ang[0], ang[1], ang[2]]
}

/// `step_grid.wgsl`.
pub fn step_grid(
    p: &StepParams,
    bodies: &[GpuBody],
    cells: &mut [[i32; 4]],
    keys: &mut [u32],
    consts: &mut [[f32; 2]],
) {
    for i in 0..p.n_bodies as usize {
        let b = &bodies[i];
        let c = cell_of(xyz(b.pos), p.cell);
        cells[i] = [c[0], c[1], c[2], 0];
        keys[i] = bucket_of(c, p.mask);
        consts[i] = [b.inv[0], b.pos[3] * b.pos[3] * b.inv[1]];
    }
}

/// `step_sort_count.wgsl` (on zeroed counts).
pub fn step_sort_count(span: &Span, keys: &[u32], counts: &mut [u32]) {
    for &k in &keys[..span.count as usize] {
        counts[k as usize] += 1;
    }
}

/// `step_scan_local.wgsl`.
pub fn step_scan_local(span: &Span, counts: &[u32], starts: &mut [u32], totals: &mut [u32]) {
    let n = span.count as usize;
    starts[0] = 0;
    for (w, total) in totals.iter_mut().enumerate().take(n.div_ceil(WG)) {
        let mut acc = 0u32;
        for i in w * WG..(w + 1) * WG {
            acc = acc.wrapping_add(if i < n { counts[i] } else { 0 });
            if i < n {
                starts[i + 1] = acc;
            }
        }
        *total = acc;
    }
}

/// `step_scan_totals.wgsl`.
pub fn step_scan_totals(span: &Span, totals: &mut [u32]) {
    let mut acc = 0u32;
    for t in &mut totals[..span.count as usize] {
        let v = *t;
        *t = acc;
        acc = acc.wrapping_add(v);
    }
}

/// `step_scan_add.wgsl`.
pub fn step_scan_add(span: &Span, totals: &[u32], starts: &mut [u32]) {
    for i in 0..span.count as usize {
        starts[i + 1] = starts[i + 1].wrapping_add(totals[i / WG]);
    }
}

/// `step_sort_scatter.wgsl` with the slots taken in item order (the kernel's order within a
/// segment depends on timing until `step_sort_segments`).
pub fn step_sort_scatter(
    span: &Span,
    keys: &[u32],
    starts: &[u32],
    fill: &mut [u32],
    sorted: &mut [u32],
) {
    for (i, &key) in keys[..span.count as usize].iter().enumerate() {
        let k = key as usize;
        sorted[(starts[k] + fill[k]) as usize] = i as u32;
        fill[k] += 1;
    }
}

/// `step_sort_segments.wgsl`.
pub fn step_sort_segments(span: &Span, starts: &[u32], sorted: &mut [u32]) {
    for k in 0..span.keys as usize {
        sorted[starts[k] as usize..starts[k + 1] as usize].sort_unstable();
    }
}

/// `step_narrow.wgsl`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn step_narrow(
    p: &StepParams,
    span: &Span,
    bodies: &[GpuBody],
    planes: &[GpuPlane],
    cells: &[[i32; 4]],
    starts: &[u32],
    sorted: &[u32],
    offsets: &mut [u32],
    contacts: &mut [GpuContact],
) {
    let n_bodies = p.n_bodies as usize;
    let write = span.mode == 1;
    if write && offsets[n_bodies] > p.capacity {
        return;
    }
    for i in 0..n_bodies {
        let me = bodies[i].pos;
        let home = [cells[i][0], cells[i][1], cells[i][2]];
        let mut found = Vec::new();
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let cell = [home[0] + dx, home[1] + dy, home[2] + dz];
                    let b = bucket_of(cell, p.mask) as usize;
                    for &j in &sorted[starts[b] as usize..starts[b + 1] as usize] {
                        let cj = cells[j as usize];
                        if j as usize <= i || [cj[0], cj[1], cj[2]] != cell {
                            continue;
                        }
                        let other = bodies[j as usize].pos;
                        let d: V3 = std::array::from_fn(|c| other[c] - me[c]);
                        let len = dot3(d, d).sqrt();
                        let gap = len - me[3] - other[3];
                        if gap <= p.envelope {
                            let normal = if len > 0.0 {
                                d.map(|x| x / len)
                            } else {
                                [0.0, 0.0, 1.0]
                            };
                            found.push(contact(i as u32, j, normal, gap));
                        }
                    }
                }
            }
        }
        for (q, plane) in planes[..p.n_planes as usize].iter().enumerate() {
            let rel: V3 = std::array::from_fn(|c| me[c] - plane.point[c]);
            let gap = dot3(rel, xyz(plane.normal)) - me[3];
            if gap <= p.envelope {
                found.push(contact(
                    i as u32,
                    p.n_bodies + q as u32,
                    xyz(plane.normal),
                    gap,
                ));
            }
        }
        if write {
            found.sort_by_key(|c| c.other);
            let base = offsets[i] as usize;
            contacts[base..base + found.len()].copy_from_slice(&found);
        } else {
            offsets[i] = found.len() as u32;
        }
    }
}

fn contact(owner: u32, other: u32, n: V3, gap: f32) -> GpuContact {
    GpuContact {
        owner,
        other,
        mu: 0.0,
        eta: 0.0,
        normal: [n[0], n[1], n[2], gap],
    }
}

/// `tangents` of `step_common.wgsl` (`tangent_frame` in `f32`).
fn tangents(n: V3) -> [V3; 2] {
    let helper = if n[0].abs() < 0.6 {
        [1.0, 0.0, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let c = cross3(n, helper);
    let len = dot3(c, c).sqrt();
    let t1 = c.map(|x| x / len);
    [t1, cross3(n, t1)]
}

/// `step_contact_rows.wgsl`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn step_contact_rows(
    p: &StepParams,
    offsets: &[u32],
    bodies: &[GpuBody],
    planes: &[GpuPlane],
    contacts: &mut [GpuContact],
    r: &mut [f32],
) {
    let count = offsets[p.n_bodies as usize];
    if count > p.capacity {
        return;
    }
    let dim = p.dim as usize;
    for (k, c) in contacts[..count as usize].iter_mut().enumerate() {
        let n = xyz(c.normal);
        let [t1, t2] = tangents(n);
        let dirs = [n, t1, t2];
        let plane = c.other >= p.n_bodies;
        let mut bias = [(c.normal[3] / p.dt).max(-p.max_recovery), 0.0, 0.0];
        let me = &bodies[c.owner as usize];
        let (mu, sides) = if plane {
            let pl = &planes[(c.other - p.n_bodies) as usize];
            for (b, e) in bias.iter_mut().zip(&dirs).take(dim) {
                *b += dot3(e.map(|x| -x), xyz(pl.velocity));
            }
            (pl.normal[3].min(me.vel[3]), 1)
        } else {
            (me.vel[3].min(bodies[c.other as usize].vel[3]), 2)
        };
        let mut nkk = [0.0f32; 9];
        let mut rhs = bias;
        for s in 0..sides {
            let mut rows = [[0.0f32; 6]; 3];
            let (id, sgn, lever) = match (s, plane) {
                (1, _) => {
                    let id = c.other as usize;
                    (id, 1.0, n.map(|x| x * bodies[id].pos[3]).map(|x| -x))
                }
                (_, true) => (c.owner as usize, 1.0, n.map(|x| x * me.pos[3]).map(|x| -x)),
                (_, false) => (c.owner as usize, -1.0, n.map(|x| x * me.pos[3])),
            };
            let b = &bodies[id];
            let v = free_velocity(b, p.dt, p.gravity);
            let q = [-b.quat[0], -b.quat[1], -b.quat[2], b.quat[3]];
            let inv = [b.inv[0], b.inv[0], b.inv[0], b.inv[1], b.inv[2], b.inv[3]];
            for i in 0..dim {
                let e = dirs[i];
                let ang = rotate(q, cross3(lever, e));
                rows[i] = [e[0], e[1], e[2], ang[0], ang[1], ang[2]].map(|x| sgn * x);
                for m in 0..6 {
                    rhs[i] += rows[i][m] * v[m];
                }
            }
            for a in 0..dim {
                for bb in 0..dim {
                    let mut acc = 0.0f32;
                    for m in 0..6 {
                        acc += rows[a][m] * inv[m] * rows[bb][m];
                    }
                    nkk[3 * a + bb] += acc;
                }
            }
        }
        for i in 0..dim {
            nkk[4 * i] += p.compliance;
        }
        let lmax = if dim == 3 {
            max_eigenvalue(nkk)
        } else {
            nkk[0]
        };
        let eta = if lmax > 0.0 { 1.0 / lmax } else { 0.0 };
        c.mu = mu;
        c.eta = eta;
        r[dim * k..dim * (k + 1)].copy_from_slice(&rhs[..dim]);
    }
}

/// `step_block.wgsl`: the block of contact `k` for the generic kernels.
pub fn step_block(p: &StepParams, c: &GpuContact, k: usize) -> GpuBlock {
    GpuBlock {
        kind: if p.dim == 3 {
            CONE_COULOMB
        } else {
            CONE_UNILATERAL
        },
        dim: p.dim,
        row: p.dim * k as u32,
        jac: 0,
        body0: c.owner as i32,
        body1: if c.other < p.n_bodies {
            c.other as i32
        } else {
            -1
        },
        mu: c.mu,
        eta: c.eta,
    }
}

/// `step_blocks.wgsl`.
pub fn step_blocks(
    solver: &Params,
    p: &StepParams,
    contacts: &[GpuContact],
    blocks: &mut [GpuBlock],
) {
    let count = solver.n_blocks as usize;
    for (k, (c, b)) in contacts.iter().zip(blocks).take(count).enumerate() {
        *b = step_block(p, c, k);
    }
}

/// `step_residual.wgsl`.
pub fn step_residual(
    solver: &Params,
    p: &StepParams,
    contacts: &[GpuContact],
    gamma: &[f32],
    u: &[f32],
    parts: &mut [Partial],
) {
    let values: Vec<Partial> = contacts[..solver.n_blocks as usize]
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let b = step_block(p, c, k);
            block_residual(&b, solver.coulomb, load(gamma, &b), load(u, &b))
        })
        .collect();
    partials(&values, parts);
}

/// `step_warm_start.wgsl`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn step_warm_start(
    p: &StepParams,
    offsets: &[u32],
    contacts: &[GpuContact],
    prev_offsets: &[u32],
    prev_others: &[u32],
    prev_gamma: &[f32],
    gamma: &mut [f32],
) {
    let count = offsets[p.n_bodies as usize];
    if count > p.capacity {
        return;
    }
    let kept = prev_offsets[p.n_bodies as usize] <= p.capacity;
    let dim = p.dim as usize;
    for (k, c) in contacts[..count as usize].iter().enumerate() {
        // The previous contacts of c's owner, by `other`.
        let (lo, hi) = if kept {
            let o = c.owner as usize;
            (prev_offsets[o] as usize, prev_offsets[o + 1] as usize)
        } else {
            (0, 0)
        };
        let at = lo + prev_others[lo..hi].partition_point(|&other| other < c.other);
        let mut g = [0.0f32; 3];
        if at < hi && prev_others[at] == c.other {
            g[..dim].copy_from_slice(&prev_gamma[dim * at..dim * at + dim]);
        }
        let b = step_block(p, c, k);
        let x = project(b.kind, b.mu, g);
        gamma[dim * k..dim * k + dim].copy_from_slice(&x[..dim]);
    }
}

/// `step_link_keys.wgsl`.
pub fn step_link_keys(p: &StepParams, offsets: &[u32], contacts: &[GpuContact], keys: &mut [u32]) {
    let count = offsets[p.n_bodies as usize];
    for (e, key) in keys.iter_mut().enumerate().take(2 * p.capacity as usize) {
        let k = e / 2;
        *key = p.n_bodies;
        if count <= p.capacity && k < count as usize {
            let c = &contacts[k];
            if e % 2 == 0 {
                *key = c.owner;
            } else if c.other < p.n_bodies {
                *key = c.other;
            }
        }
    }
}

/// `step_gate.wgsl`: at the check before iteration `span.count`, stops the iterations (their
/// indirect dispatches get no workgroups) when the monitor's residual meets the tolerance;
/// counts the tests run until then; with `span.keys` > 0, also stops after that many tests in
/// a row without improvement (the stall rule of the Coulomb model's outer rounds).
pub fn step_gate(
    p: &StepParams,
    span: &Span,
    monitor: &Monitor,
    gate: &mut StepGate,
    args: &mut [u32],
) {
    let stall = span.keys > 0;
    if gate.converged == 1 || (stall && gate.stalled >= span.keys) {
        return;
    }
    gate.checks += 1;
    if monitor.value <= p.tol {
        gate.converged = 1;
    } else if stall {
        gate.stalled = if monitor.improved == 1 {
            0
        } else {
            gate.stalled + 1
        };
        if gate.stalled < span.keys {
            return;
        }
    } else {
        return;
    }
    gate.iterations = span.count;
    for a in args.iter_mut().step_by(3) {
        *a = 0;
    }
}

/// `step_coulomb.wgsl`: the De Saxcé term `μ‖u_t‖` of each Coulomb block into the normal
/// row of `shifted = r + s`, `u` and `other` moved by the change of the shift.
pub fn step_coulomb(
    solver: &Params,
    blocks: &[GpuBlock],
    r: &[f32],
    shifted: &mut [f32],
    u: &mut [f32],
    other: &mut [f32],
) {
    for b in &blocks[..solver.n_blocks as usize] {
        if b.kind != CONE_COULOMB {
            continue;
        }
        let n = b.row as usize;
        let s = b.mu * (u[n + 1] * u[n + 1] + u[n + 2] * u[n + 2]).sqrt();
        let next = r[n] + s;
        let change = next - shifted[n];
        shifted[n] = next;
        u[n] += change;
        other[n] += change;
    }
}

/// `step_keep.wgsl`.
pub fn step_keep(
    p: &StepParams,
    offsets: &[u32],
    contacts: &[GpuContact],
    gamma: &[f32],
    prev_offsets: &mut [u32],
    prev_others: &mut [u32],
    prev_gamma: &mut [f32],
) {
    let n = p.n_bodies as usize;
    let count = offsets[n];
    if count > p.capacity {
        return;
    }
    let count = count as usize;
    prev_offsets[..=n].copy_from_slice(&offsets[..=n]);
    for (other, c) in prev_others[..count].iter_mut().zip(&contacts[..count]) {
        *other = c.other;
    }
    let rows = p.dim as usize * count;
    prev_gamma[..rows].copy_from_slice(&gamma[..rows]);
}

/// `step_gather.wgsl`: `w = M⁻¹ Jᵀ x` of the sphere rows, the angular part scaled by `−r`.
pub fn step_gather(
    p: &StepParams,
    starts: &[u32],
    sorted: &[u32],
    contacts: &[GpuContact],
    consts: &[[f32; 2]],
    x: &[f32],
    w: &mut [f32],
) {
    let dim = p.dim as usize;
    for i in 0..p.n_bodies as usize {
        let mut lin = [0.0f32; 3];
        let mut ang = [0.0f32; 3];
        for &e in &sorted[starts[i] as usize..starts[i + 1] as usize] {
            let k = (e / 2) as usize;
            let c = &contacts[k];
            let n = xyz(c.normal);
            let sgn = if e % 2 == 0 && c.other < p.n_bodies {
                -1.0
            } else {
                1.0
            };
            let row = dim * k;
            if dim == 3 {
                let [t1, t2] = tangents(n);
                let g = [x[row], x[row + 1], x[row + 2]];
                for j in 0..3 {
                    lin[j] += sgn * (g[0] * n[j] + g[1] * t1[j] + g[2] * t2[j]);
                    ang[j] += g[1] * t2[j] - g[2] * t1[j];
                }
            } else {
                for j in 0..3 {
                    lin[j] += sgn * (x[row] * n[j]);
                }
            }
        }
        let m = consts[i];
        for j in 0..3 {
            w[6 * i + j] = m[0] * lin[j];
            w[6 * i + 3 + j] = m[1] * ang[j];
        }
    }
}

/// `side` of `step_velocity.wgsl`: a sphere's share of a contact's rows.
fn side(w: &[f32], body: u32, sgn: f32, n: V3, [t1, t2]: [V3; 2]) -> V3 {
    let at = 6 * body as usize;
    let wl = [w[at], w[at + 1], w[at + 2]];
    let wa = [w[at + 3], w[at + 4], w[at + 5]];
    [
        sgn * dot3(n, wl),
        sgn * dot3(t1, wl) + dot3(t2, wa),
        sgn * dot3(t2, wl) - dot3(t1, wa),
    ]
}

/// `contact_jw` of `step_velocity.wgsl`: `J_k w` of contact `c`.
fn contact_jw(p: &StepParams, c: &GpuContact, w: &[f32]) -> V3 {
    let n = xyz(c.normal);
    let t = tangents(n);
    let pair = c.other < p.n_bodies;
    let jw = side(w, c.owner, if pair { -1.0 } else { 1.0 }, n, t);
    if !pair {
        return jw;
    }
    let b = side(w, c.other, 1.0, n, t);
    std::array::from_fn(|i| jw[i] + b[i])
}

/// `step_jacobi_pass.wgsl`: `u = J w + E x + r` of the sphere rows, each handed to `keep`
/// (row, value), then the projected step into `gamma_out`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
fn jacobi_pass(
    solver: &Params,
    p: &StepParams,
    contacts: &[GpuContact],
    w: &[f32],
    r: &[f32],
    x: &[f32],
    mut keep: impl FnMut(usize, f32),
    gamma_out: &mut [f32],
) {
    let dim = p.dim as usize;
    for (k, c) in contacts[..solver.n_blocks as usize].iter().enumerate() {
        let jw = contact_jw(p, c, w);
        let kind = if dim == 3 {
            CONE_COULOMB
        } else {
            CONE_UNILATERAL
        };
        let b = GpuBlock {
            kind,
            dim: p.dim,
            row: p.dim * k as u32,
            jac: 0,
            body0: 0,
            body1: 0,
            mu: c.mu,
            eta: c.eta,
        };
        let mut g = [0.0f32; 3];
        let mut v = [0.0f32; 3];
        for i in 0..dim {
            g[i] = x[dim * k + i];
            v[i] = jw[i] + p.compliance * g[i] + r[dim * k + i];
            keep(dim * k + i, v[i]);
        }
        let uh = model_velocity(&b, solver.coulomb, v);
        let step = solver.omega * c.eta;
        let mut y = [0.0f32; 3];
        for i in 0..dim {
            y[i] = g[i] - step * uh[i];
        }
        let y = project(kind, c.mu, y);
        gamma_out[dim * k..dim * (k + 1)].copy_from_slice(&y[..dim]);
    }
}

/// `step_jacobi.wgsl` (the pass of `step_jacobi_pass.wgsl`): `u = J w + E x + r` of the
/// sphere rows, written, then the projected step.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn step_jacobi(
    solver: &Params,
    p: &StepParams,
    contacts: &[GpuContact],
    w: &[f32],
    r: &[f32],
    x: &[f32],
    u: &mut [f32],
    gamma_out: &mut [f32],
) {
    let keep = |row: usize, v: f32| u[row] = v;
    jacobi_pass(solver, p, contacts, w, r, x, keep, gamma_out);
}

/// `step_jacobi_next.wgsl`: the projected step of [`step_jacobi`] without writing `u`.
pub fn step_jacobi_next(
    solver: &Params,
    p: &StepParams,
    contacts: &[GpuContact],
    w: &[f32],
    r: &[f32],
    x: &[f32],
    gamma_out: &mut [f32],
) {
    jacobi_pass(solver, p, contacts, w, r, x, |_, _| {}, gamma_out);
}

/// `step_rows.wgsl`: `y = J w + E x (+ r)` of the sphere rows.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn step_rows(
    solver: &Params,
    p: &StepParams,
    apply: &Apply,
    contacts: &[GpuContact],
    w: &[f32],
    r: &[f32],
    x: &[f32],
    y: &mut [f32],
) {
    let dim = p.dim as usize;
    for (k, c) in contacts[..solver.n_blocks as usize].iter().enumerate() {
        let jw = contact_jw(p, c, w);
        for (i, jwi) in jw.iter().enumerate().take(dim) {
            let row = dim * k + i;
            let v = jwi + p.compliance * x[row];
            y[row] = if apply.add_r == 1 { v + r[row] } else { v };
        }
    }
}

/// `step_precond.wgsl`: `diag(N + E)` averaged within each contact block.
pub fn step_precond(
    solver: &Params,
    p: &StepParams,
    contacts: &[GpuContact],
    consts: &[[f32; 2]],
    precond: &mut [f32],
) {
    let dim = p.dim as usize;
    let share = (p.dim - 1) as f32 / p.dim as f32;
    for (k, c) in contacts[..solver.n_blocks as usize].iter().enumerate() {
        let a = consts[c.owner as usize];
        let mut mean = a[0] + share * a[1];
        if c.other < p.n_bodies {
            let b = consts[c.other as usize];
            mean += b[0] + share * b[1];
        }
        mean += p.compliance;
        let value = if mean > 0.0 { mean } else { 1.0 };
        precond[dim * k..dim * (k + 1)].fill(value);
    }
}

/// `step_apgd_start.wgsl`: `L = ‖A 1‖ / √m` from `scalars[SLOT_B]`, its step, no momentum.
pub fn step_apgd_start(scalars: &[Partial], state: &mut ApgdState) {
    let c = scalars[SLOT_B as usize].sums;
    let lipschitz = if c[1] > 0.0 {
        (c[2] / c[1]).sqrt().max(f32::MIN_POSITIVE)
    } else {
        f32::MIN_POSITIVE
    };
    *state = ApgdState {
        lipschitz,
        step: 1.0 / lipschitz,
        theta: 1.0,
        beta: 0.0,
        accepted: 0,
        pad: [0; 3],
    };
}

/// `step_integrate.wgsl`: nothing moves in a step whose contacts overflowed.
pub fn step_integrate(p: &StepParams, offsets: &[u32], w: &[f32], bodies: &mut [GpuBody]) {
    if offsets[p.n_bodies as usize] > p.capacity {
        return;
    }
    let h = p.dt;
    for (i, b) in bodies.iter_mut().enumerate().take(p.n_bodies as usize) {
        let vf = free_velocity(b, h, p.gravity);
        let v: V3 = std::array::from_fn(|c| vf[c] + w[6 * i + c]);
        let wa: V3 = std::array::from_fn(|c| w[6 * i + 3 + c] / -b.pos[3]);
        let turn = rotate([-b.quat[0], -b.quat[1], -b.quat[2], b.quat[3]], wa);
        let om: V3 = std::array::from_fn(|c| vf[3 + c] + turn[c]);
        b.vel = [v[0], v[1], v[2], b.vel[3]];
        b.omega = [om[0], om[1], om[2], b.omega[3]];
        b.pos = [
            b.pos[0] + h * v[0],
            b.pos[1] + h * v[1],
            b.pos[2] + h * v[2],
            b.pos[3],
        ];
        let a = om.map(|x| h * x);
        let angle = dot3(a, a).sqrt();
        let rot = if angle > 0.0 {
            let s = (angle / 2.0).sin() / angle;
            [a[0] * s, a[1] * s, a[2] * s, (angle / 2.0).cos()]
        } else {
            [0.0, 0.0, 0.0, 1.0]
        };
        let q = b.quat;
        let c = cross3(xyz(q), xyz(rot));
        let prod: [f32; 4] = [
            q[3] * rot[0] + rot[3] * q[0] + c[0],
            q[3] * rot[1] + rot[3] * q[1] + c[1],
            q[3] * rot[2] + rot[3] * q[2] + c[2],
            q[3] * rot[3] - dot3(xyz(q), xyz(rot)),
        ];
        let norm =
            (prod[0] * prod[0] + prod[1] * prod[1] + prod[2] * prod[2] + prod[3] * prod[3]).sqrt();
        b.quat = prod.map(|x| x / norm);
    }
}

/// `non_finite` of `step_stats.wgsl`.
fn non_finite(x: f32) -> f32 {
    if x.to_bits() & 0x7f80_0000 == 0x7f80_0000 {
        1.0
    } else {
        0.0
    }
}

/// `step_stats.wgsl`: one partial per workgroup of spheres.
pub fn step_stats(
    p: &StepParams,
    offsets: &[u32],
    bodies: &[GpuBody],
    contacts: &[GpuContact],
    parts: &mut [Partial],
) {
    let n = p.n_bodies as usize;
    let valid = offsets[n] <= p.capacity;
    let values: Vec<Partial> = bodies[..n]
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (v, om) = (xyz(b.vel), xyz(b.omega));
            let inertia = [b.props[1], b.props[2], b.props[3]];
            let iw: V3 = std::array::from_fn(|c| om[c] * inertia[c]);
            let energy = 0.5 * b.props[0] * dot3(v, v) + 0.5 * dot3(iw, om);
            let bad = [
                b.pos[0], b.pos[1], b.pos[2], b.quat[0], b.quat[1], b.quat[2], b.quat[3],
            ]
            .into_iter()
            .chain(v)
            .chain(om)
            .map(non_finite)
            .sum::<f32>();
            let mut pen = 0.0f32;
            if valid {
                for c in &contacts[offsets[i] as usize..offsets[i + 1] as usize] {
                    pen = pen.max(-c.normal[3]);
                }
            }
            Partial {
                sums: [energy, b.pos[2], bad, 0.0],
                maxes: [pen, 0.0, 0.0, 0.0],
            }
        })
        .collect();
    for (part, chunk) in parts.iter_mut().zip(values.chunks(WG)) {
        *part = workgroup_tree(chunk);
    }
}

/// `step_solver_params.wgsl`.
pub fn step_solver_params(p: &StepParams, offsets: &[u32], solver: &mut [Params]) {
    let mut count = offsets[p.n_bodies as usize];
    if count > p.capacity {
        count = 0;
    }
    solver[0] = Params {
        n_bodies: p.n_bodies,
        n_blocks: count,
        n_rows: p.dim * count,
        coulomb: p.coulomb,
        omega: p.omega,
        r_norm: 0.0,
        criterion: p.criterion,
        max_dim: p.dim,
    };
}
