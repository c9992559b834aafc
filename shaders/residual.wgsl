// One invocation per block, one partial per workgroup: the natural-map residual of
// `merit::residual` in f32. sums = (||e||^2, ||gamma||^2, ||u||^2, 0) and
// maxes = (||e||_inf, max ||e_eta||_inf, ||gamma||_inf, 0) with e = gamma - Proj(gamma - u_hat)
// and e_eta = (gamma - Proj(gamma - eta u_hat)) / eta (unit step where eta = 0).
// Mirror: `src/gpu/cpu.rs::residual`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> u: array<f32>;
@group(0) @binding(4) var<storage, read_write> parts: array<Partial>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var p = zero_partial();
    let k = flat_index(gid, nwg);
    if k < params.n_blocks {
        let b = blocks[k];
        var g = vec3<f32>(0.0);
        var v = vec3<f32>(0.0);
        for (var i = 0u; i < b.dim; i++) {
            g[i] = gamma[b.row + i];
            v[i] = u[b.row + i];
        }
        let uh = model_velocity(b, params.coulomb, v);
        var step = 1.0;
        if b.eta > 0.0 {
            step = b.eta;
        }
        var unit = vec3<f32>(0.0);
        var scaled = vec3<f32>(0.0);
        for (var i = 0u; i < b.dim; i++) {
            unit[i] = g[i] - uh[i];
            scaled[i] = g[i] - step * uh[i];
        }
        unit = project(b.kind, b.mu, unit);
        scaled = project(b.kind, b.mu, scaled);
        for (var i = 0u; i < b.dim; i++) {
            let e = g[i] - unit[i];
            let e_eta = (g[i] - scaled[i]) / step;
            p.sums = p.sums + vec4<f32>(e * e, g[i] * g[i], v[i] * v[i], 0.0);
            p.maxes = max(p.maxes, vec4<f32>(abs(e), abs(e_eta), abs(g[i]), 0.0));
        }
    }
    let total = workgroup_reduce(lid.x, p);
    let group = flat_group(wid, nwg);
    if lid.x == 0u && group < arrayLength(&parts) {
        parts[group] = total;
    }
}
