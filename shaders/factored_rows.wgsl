// One invocation per block: y_k = sum over sides of J rows . w_body + compliance x_k
// (+ r_k when apply.add_r = 1). With w = M^-1 J^T x from factored_bodies: y = (N + E) x (+ r).
// Mirror: `src/gpu/cpu.rs::factored_rows`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> apply: Apply;
@group(0) @binding(2) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(3) var<storage, read> jac: array<f32>;
@group(0) @binding(4) var<storage, read> w: array<f32>;
@group(0) @binding(5) var<storage, read> r: array<f32>;
@group(0) @binding(6) var<storage, read> compliance: array<f32>;
@group(0) @binding(7) var<storage, read> x: array<f32>;
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

// Row `slot` of block k (jac is component-major across blocks: `OperatorData::Factored`).
fn dot6(k: u32, slot: u32, body: u32) -> f32 {
    var s = 0.0;
    for (var c = 0u; c < 6u; c++) {
        s = s + jac[(slot * 6u + c) * params.n_blocks + k] * w[6u * body + c];
    }
    return s;
}

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= params.n_blocks {
        return;
    }
    let b = blocks[k];
    for (var i = 0u; i < b.dim; i++) {
        var acc = 0.0;
        if b.body0 >= 0 {
            acc = acc + dot6(k, i, u32(b.body0));
        }
        if b.body1 >= 0 {
            acc = acc + dot6(k, params.max_dim + i, u32(b.body1));
        }
        let row = b.row + i;
        var v = acc + compliance[row] * x[row];
        if apply.add_r == 1u {
            v = v + r[row];
        }
        y[row] = v;
    }
}
