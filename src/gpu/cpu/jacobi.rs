//! The mirror of the projected Jacobi step.

use super::{load, model_velocity, project};
use crate::gpu::data::{GpuBlock, Params};

/// `shaders/jacobi_step.wgsl`: `γ_out,k = Π_K(γ_in,k − ω η_k û_k)`.
pub fn jacobi_step(
    params: &Params,
    blocks: &[GpuBlock],
    u: &[f32],
    gamma_in: &[f32],
    gamma_out: &mut [f32],
) {
    for b in &blocks[..params.n_blocks as usize] {
        let (g, v) = (load(gamma_in, b), load(u, b));
        let uh = model_velocity(b, params.coulomb, v);
        let step = params.omega * b.eta;
        let mut x = [0.0f32; 3];
        for i in 0..b.dim as usize {
            x[i] = g[i] - step * uh[i];
        }
        let x = project(b.kind, b.mu, x);
        for i in 0..b.dim as usize {
            gamma_out[b.row as usize + i] = x[i];
        }
    }
}
