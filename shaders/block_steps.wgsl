// One invocation per block (factored form): the diagonal block N_kk + E_kk = sum over sides
// of J_side M^-1 J_side^T plus the compliance, from the rows of J (`jac`, component-major)
// and of M^-1 J^T (`minv_jac`); writes the block's step eta_k = 1 / lambda_max(N_kk + E_kk)
// (the `BlockStep::MaxEigenvalue` rule of `solver::block_steps`, 0 when it is not positive)
// and P-SPG-FB's preconditioner P = mean diag(N_kk + E_kk) on the block's rows (paper 004; 1
// when not positive), over the host's placeholders. Mirror: `src/gpu/cpu/operator.rs`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> jac: array<f32>;
@group(0) @binding(2) var<storage, read> minv_jac: array<f32>;
@group(0) @binding(3) var<storage, read> compliance: array<f32>;
@group(0) @binding(4) var<storage, read_write> blocks: array<GpuBlock>;
@group(0) @binding(5) var<storage, read_write> precond: array<f32>;

// Row `a` of side `side` of block k times row `b` of the same side of M^-1 J^T.
fn side_product(k: u32, blk: GpuBlock, side: u32, a: u32, b: u32) -> f32 {
    let minv = 6u * (blk.jac + side * blk.dim + b);
    var s = 0.0;
    for (var c = 0u; c < 6u; c++) {
        s = s + jac[((side * params.max_dim + a) * 6u + c) * params.n_blocks + k] * minv_jac[minv + c];
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
    var blk = blocks[k];
    var n = array<f32, 9>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (var a = 0u; a < blk.dim; a++) {
        for (var b = 0u; b < blk.dim; b++) {
            var s = 0.0;
            if blk.body0 >= 0 {
                s = s + side_product(k, blk, 0u, a, b);
            }
            if blk.body1 >= 0 {
                s = s + side_product(k, blk, 1u, a, b);
            }
            n[3u * a + b] = s;
        }
    }
    var trace = 0.0;
    for (var a = 0u; a < blk.dim; a++) {
        n[4u * a] = n[4u * a] + compliance[blk.row + a];
        trace = trace + n[4u * a];
    }
    // The symmetric part, as the CPU's rule takes it.
    for (var a = 0u; a < 3u; a++) {
        for (var b = a + 1u; b < 3u; b++) {
            let m = 0.5 * (n[3u * a + b] + n[3u * b + a]);
            n[3u * a + b] = m;
            n[3u * b + a] = m;
        }
    }
    let lmax = max_eigenvalue(n);
    blk.eta = 0.0;
    if lmax > 0.0 {
        blk.eta = 1.0 / lmax;
    }
    blocks[k] = blk;
    let mean = trace / f32(blk.dim);
    var p = 1.0;
    if mean > 0.0 {
        p = mean;
    }
    for (var a = 0u; a < blk.dim; a++) {
        precond[blk.row + a] = p;
    }
}
