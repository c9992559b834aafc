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
