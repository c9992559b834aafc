// One invocation per row, one partial per workgroup: sums = (d . Ad, d . P d, Ad . P^-1 Ad, 0),
// the curvature along d and the two preconditioned Barzilai-Borwein products (paper 004
// eqs. (10)-(11), with s = lambda d and y = lambda A d). Mirror: `src/gpu/cpu.rs::spg_curvature`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> precond: array<f32>;
@group(0) @binding(2) var<storage, read> d: array<f32>;
@group(0) @binding(3) var<storage, read> ad: array<f32>;
@group(0) @binding(4) var<storage, read_write> parts: array<Partial>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var p = zero_partial();
    let i = flat_index(gid, nwg);
    if i < params.n_rows {
        let di = d[i];
        let ai = ad[i];
        p.sums = vec4<f32>(di * ai, di * precond[i] * di, ai * ai / precond[i], 0.0);
    }
    let total = workgroup_reduce(lid.x, p);
    let group = flat_group(wid, nwg);
    if lid.x == 0u && group < arrayLength(&parts) {
        parts[group] = total;
    }
}
