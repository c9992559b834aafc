// One projected Jacobi step per contact k on the sphere rows without stored blocks (issue 16;
// `factored_rows` then `jacobi_step` in one pass), shared by `step_jacobi` and
// `step_jacobi_next`: u_k = J_k w + E x_k + r_k (`contact_jw` of `step_velocity.wgsl`),
// handed to the kernel's `keep_velocity` (`step_jacobi` writes it for the residual,
// `step_jacobi_next` drops it); then gamma_out_k = Proj_K(x_k - omega eta_k u_hat_k), u_hat
// the model velocity (paper 001 eq. (3)). mu and eta come from the contact
// (`step_contact_rows`). The kernel binds `solver`, `params`, `contacts`, `w`, `r`, `x` and
// `gamma_out`. Mirror: `src/gpu/cpu/step.rs::jacobi_pass`.

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= solver.n_blocks {
        return;
    }
    let dim = params.dim;
    let c = contacts[k];
    let jw = contact_jw(c);
    var kind = CONE_UNILATERAL;
    if dim == 3u {
        kind = CONE_COULOMB;
    }
    let b = GpuBlock(kind, dim, dim * k, 0u, 0, 0, c.mu, c.eta);
    var g = vec3<f32>(0.0);
    var v = vec3<f32>(0.0);
    for (var i = 0u; i < dim; i++) {
        g[i] = x[dim * k + i];
        v[i] = jw[i] + params.compliance * g[i] + r[dim * k + i];
        keep_velocity(dim * k + i, v[i]);
    }
    let uh = model_velocity(b, solver.coulomb, v);
    let step = solver.omega * c.eta;
    var y = vec3<f32>(0.0);
    for (var i = 0u; i < dim; i++) {
        y[i] = g[i] - step * uh[i];
    }
    y = project(kind, c.mu, y);
    for (var i = 0u; i < dim; i++) {
        gamma_out[dim * k + i] = y[i];
    }
}
