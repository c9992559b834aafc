//! The mirrors of the kernels of the operator: `N x` in the factored form (bodies, then
//! rows) and in the assembled form (CSR rows).

use crate::gpu::data::GpuBlock;
use crate::gpu::data::{Apply, GpuLink, Params};

/// `shaders/factored_bodies.wgsl`: `w_i = Σ_links minv_jac rows · x`, 6 entries per body,
/// each summed in link order.
pub fn factored_bodies(
    params: &Params,
    links_ptr: &[u32],
    links: &[GpuLink],
    minv_jac: &[f32],
    x: &[f32],
    w: &mut [f32],
) {
    for i in 0..params.n_bodies as usize {
        let mut acc = [0.0f32; 6];
        for link in &links[links_ptr[i] as usize..links_ptr[i + 1] as usize] {
            for r in 0..link.dim as usize {
                let g = x[link.row as usize + r];
                let row = 6 * (link.minv_row as usize + r);
                for (c, a) in acc.iter_mut().enumerate() {
                    *a += minv_jac[row + c] * g;
                }
            }
        }
        w[6 * i..6 * i + 6].copy_from_slice(&acc);
    }
}

/// Row `slot` of block `k` of the component-major Jacobian times `w` of `body`.
fn dot6(params: &Params, jac: &[f32], w: &[f32], k: usize, slot: u32, body: i32) -> f32 {
    let (n, slot, body) = (params.n_blocks as usize, slot as usize, body as usize);
    let mut s = 0.0f32;
    for c in 0..6 {
        s += jac[(slot * 6 + c) * n + k] * w[6 * body + c];
    }
    s
}

/// `shaders/factored_rows.wgsl`: `y_k = Σ_sides J rows · w + compliance · x_k (+ r_k)`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn factored_rows(
    params: &Params,
    apply: &Apply,
    blocks: &[GpuBlock],
    jac: &[f32],
    w: &[f32],
    r: &[f32],
    compliance: &[f32],
    x: &[f32],
    y: &mut [f32],
) {
    for (k, b) in blocks[..params.n_blocks as usize].iter().enumerate() {
        for i in 0..b.dim {
            let mut acc = 0.0f32;
            if b.body0 >= 0 {
                acc += dot6(params, jac, w, k, i, b.body0);
            }
            if b.body1 >= 0 {
                acc += dot6(params, jac, w, k, params.max_dim + i, b.body1);
            }
            let row = (b.row + i) as usize;
            let mut v = acc + compliance[row] * x[row];
            if apply.add_r == 1 {
                v += r[row];
            }
            y[row] = v;
        }
    }
}

/// `shaders/csr_rows.wgsl`: `y_i = Σ_j N_ij x_j + compliance_i x_i (+ r_i)`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn csr_rows(
    params: &Params,
    apply: &Apply,
    indptr: &[u32],
    indices: &[u32],
    values: &[f32],
    r: &[f32],
    compliance: &[f32],
    x: &[f32],
    y: &mut [f32],
) {
    for i in 0..params.n_rows as usize {
        let mut acc = 0.0f32;
        for e in indptr[i] as usize..indptr[i + 1] as usize {
            acc += values[e] * x[indices[e] as usize];
        }
        let mut v = acc + compliance[i] * x[i];
        if apply.add_r == 1 {
            v += r[i];
        }
        y[i] = v;
    }
}

/// `rotate_pair` of `shaders/common.wgsl`: one Jacobi rotation zeroing `a[p][q]`.
fn rotate_pair(a: &mut [f32; 9], p: usize, q: usize) {
    let apq = a[3 * p + q];
    if apq == 0.0 {
        return;
    }
    let theta = (a[4 * q] - a[4 * p]) / (2.0 * apq);
    let mut t = 0.5 / theta.abs();
    if theta.abs() < 1e18 {
        t = 1.0 / (theta.abs() + (theta * theta + 1.0).sqrt());
    }
    if theta < 0.0 {
        t = -t;
    }
    let c = 1.0 / (t * t + 1.0).sqrt();
    let s = t * c;
    let r = 3 - p - q;
    let (arp, arq) = (a[3 * r + p], a[3 * r + q]);
    a[4 * p] -= t * apq;
    a[4 * q] += t * apq;
    a[3 * p + q] = 0.0;
    a[3 * q + p] = 0.0;
    let rp = c * arp - s * arq;
    let rq = s * arp + c * arq;
    a[3 * r + p] = rp;
    a[3 * p + r] = rp;
    a[3 * r + q] = rq;
    a[3 * q + r] = rq;
}

/// `max_eigenvalue` of `shaders/common.wgsl`: the largest eigenvalue of a symmetric 3×3
/// matrix (row-major) by four cyclic Jacobi sweeps.
pub fn max_eigenvalue(m: [f32; 9]) -> f32 {
    let mut a = m;
    for _ in 0..4 {
        rotate_pair(&mut a, 0, 1);
        rotate_pair(&mut a, 0, 2);
        rotate_pair(&mut a, 1, 2);
    }
    a[0].max(a[4].max(a[8]))
}

/// Row `a` of side `side` of block `k` times row `b` of the same side of `M⁻¹ Jᵀ`.
fn side_product(
    params: &Params,
    jac: &[f32],
    minv_jac: &[f32],
    k: usize,
    blk: &GpuBlock,
    [side, a, b]: [u32; 3],
) -> f32 {
    let minv = 6 * (blk.jac + side * blk.dim + b) as usize;
    let n = params.n_blocks as usize;
    let slot = (side * params.max_dim + a) as usize;
    let mut s = 0.0f32;
    for c in 0..6 {
        s += jac[(slot * 6 + c) * n + k] * minv_jac[minv + c];
    }
    s
}

/// `shaders/block_steps.wgsl`: `η_k = 1/λ_max(N_kk + E_kk)` into the blocks and
/// `mean diag(N_kk + E_kk)` into the preconditioner (factored form).
pub fn block_steps(
    params: &Params,
    jac: &[f32],
    minv_jac: &[f32],
    compliance: &[f32],
    blocks: &mut [GpuBlock],
    precond: &mut [f32],
) {
    for (k, blk) in blocks[..params.n_blocks as usize].iter_mut().enumerate() {
        let mut n = [0.0f32; 9];
        for a in 0..blk.dim {
            for b in 0..blk.dim {
                let mut s = 0.0f32;
                if blk.body0 >= 0 {
                    s += side_product(params, jac, minv_jac, k, blk, [0, a, b]);
                }
                if blk.body1 >= 0 {
                    s += side_product(params, jac, minv_jac, k, blk, [1, a, b]);
                }
                n[(3 * a + b) as usize] = s;
            }
        }
        let mut trace = 0.0f32;
        for a in 0..blk.dim as usize {
            n[4 * a] += compliance[blk.row as usize + a];
            trace += n[4 * a];
        }
        for a in 0..3 {
            for b in a + 1..3 {
                let m = 0.5 * (n[3 * a + b] + n[3 * b + a]);
                n[3 * a + b] = m;
                n[3 * b + a] = m;
            }
        }
        let lmax = max_eigenvalue(n);
        blk.eta = if lmax > 0.0 { 1.0 / lmax } else { 0.0 };
        let mean = trace / blk.dim as f32;
        let p = if mean > 0.0 { mean } else { 1.0 };
        precond[blk.row as usize..][..blk.dim as usize].fill(p);
    }
}
