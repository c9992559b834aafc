// One invocation per row: y_i = sum_j N_ij x_j (entries in stored order) + compliance_i x_i
// (+ r_i when apply.add_r = 1): the product of the assembled form.
// Mirror: `src/gpu/cpu.rs::csr_rows`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> apply: Apply;
@group(0) @binding(2) var<storage, read> indptr: array<u32>;
@group(0) @binding(3) var<storage, read> indices: array<u32>;
@group(0) @binding(4) var<storage, read> values: array<f32>;
@group(0) @binding(5) var<storage, read> r: array<f32>;
@group(0) @binding(6) var<storage, read> compliance: array<f32>;
@group(0) @binding(7) var<storage, read> x: array<f32>;
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= params.n_rows {
        return;
    }
    var acc = 0.0;
    for (var e = indptr[i]; e < indptr[i + 1u]; e++) {
        acc = acc + values[e] * x[indices[e]];
    }
    var v = acc + compliance[i] * x[i];
    if apply.add_r == 1u {
        v = v + r[i];
    }
    y[i] = v;
}
