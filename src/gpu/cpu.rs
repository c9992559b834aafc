//! CPU mirror of the projected Jacobi kernels (`shaders/jacobi_bodies.wgsl`,
//! `shaders/jacobi_blocks.wgsl`): the same `f32` operations in the same order, buffers in
//! binding order. The parity tests compare one GPU iteration with these.

use super::data::{CONE_COULOMB, CONE_UNILATERAL, GpuBlock, GpuLink, Params};

/// `shaders/jacobi_bodies.wgsl`: `w_i = Σ_links minv_jac rows · γ`, 6 entries per body, each
/// entry summed in link order.
pub fn bodies_kernel(
    params: &Params,
    links_ptr: &[u32],
    links: &[GpuLink],
    minv_jac: &[f32],
    gamma: &[f32],
    w: &mut [f32],
) {
    for i in 0..params.n_bodies as usize {
        let mut acc = [0.0f32; 6];
        for link in &links[links_ptr[i] as usize..links_ptr[i + 1] as usize] {
            for r in 0..link.dim as usize {
                let g = gamma[link.row as usize + r];
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

/// `shaders/jacobi_blocks.wgsl`: `γ_out,k = Π_K(γ_in,k − ω η_k û_k)` with
/// `u_k = Σ_sides J rows · w + compliance · γ_in,k + r_k`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn blocks_kernel(
    params: &Params,
    blocks: &[GpuBlock],
    jac: &[f32],
    w: &[f32],
    r: &[f32],
    compliance: &[f32],
    gamma_in: &[f32],
    gamma_out: &mut [f32],
) {
    for (k, b) in blocks[..params.n_blocks as usize].iter().enumerate() {
        let (dim, row0) = (b.dim as usize, b.row as usize);
        let mut x = [0.0f32; 3];
        for (i, xi) in x.iter_mut().enumerate().take(dim) {
            let mut acc = 0.0f32;
            if b.body0 >= 0 {
                acc += dot6(params, jac, w, k, i as u32, b.body0);
            }
            if b.body1 >= 0 {
                acc += dot6(params, jac, w, k, params.max_dim + i as u32, b.body1);
            }
            let row = row0 + i;
            *xi = (acc + compliance[row] * gamma_in[row]) + r[row];
        }
        if params.coulomb == 1 && b.kind == CONE_COULOMB {
            x[0] += b.mu * (x[1] * x[1] + x[2] * x[2]).sqrt();
        }
        let step = params.omega * b.eta;
        for (i, xi) in x.iter_mut().enumerate().take(dim) {
            *xi = gamma_in[row0 + i] - step * *xi;
        }
        if b.kind == CONE_UNILATERAL {
            x[0] = x[0].max(0.0);
        } else if b.kind == CONE_COULOMB {
            let (a, n) = (b.mu, x[0]);
            let s = (x[1] * x[1] + x[2] * x[2]).sqrt();
            if s <= a * n {
                // Inside the cone.
            } else if a * s <= -n {
                x = [0.0; 3];
            } else {
                let n_new = (a * s + n) / (1.0 + a * a);
                let scale = a * n_new / s;
                x = [n_new, x[1] * scale, x[2] * scale];
            }
        }
        gamma_out[row0..row0 + dim].copy_from_slice(&x[..dim]);
    }
}
