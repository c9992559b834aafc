// One invocation per block: u_k = sum over sides of J rows . w_body + compliance gamma_k + r_k,
// u_hat with the De Saxce shift under the Coulomb model, then
// gamma_out_k = Proj_K(gamma_in_k - omega eta_k u_hat_k) (ping-pong buffers).
// Mirror: `src/gpu/cpu.rs::blocks_kernel`. Bindings: keep in sync with `src/gpu/jacobi.rs`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(2) var<storage, read> jac: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read> r: array<f32>;
@group(0) @binding(5) var<storage, read> compliance: array<f32>;
@group(0) @binding(6) var<storage, read> gamma_in: array<f32>;
@group(0) @binding(7) var<storage, read_write> gamma_out: array<f32>;

// Row `slot` of block k (jac is component-major across blocks, see `JacobiData::jac`).
fn dot6(k: u32, slot: u32, body: u32) -> f32 {
    var s = 0.0;
    for (var c = 0u; c < 6u; c++) {
        s = s + jac[(slot * 6u + c) * params.n_blocks + k] * w[6u * body + c];
    }
    return s;
}

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let k = linear_index(gid, groups, 64u);
    if k >= params.n_blocks {
        return;
    }
    let b = blocks[k];
    var x: array<f32, 3>;
    for (var i = 0u; i < b.dim; i++) {
        var acc = 0.0;
        if b.body0 >= 0 {
            acc = acc + dot6(k, i, u32(b.body0));
        }
        if b.body1 >= 0 {
            acc = acc + dot6(k, params.max_dim + i, u32(b.body1));
        }
        let row = b.row + i;
        x[i] = (acc + compliance[row] * gamma_in[row]) + r[row];
    }
    if params.coulomb == 1u && b.kind == 2u {
        x[0] = x[0] + b.mu * sqrt(x[1] * x[1] + x[2] * x[2]);
    }
    let step = params.omega * b.eta;
    for (var i = 0u; i < b.dim; i++) {
        x[i] = gamma_in[b.row + i] - step * x[i];
    }
    if b.kind == 1u {
        x[0] = max(x[0], 0.0);
    } else if b.kind == 2u {
        // Projection on the circular cone {|t| <= mu n} (src/problem/cone.rs).
        let a = b.mu;
        let n = x[0];
        let s = sqrt(x[1] * x[1] + x[2] * x[2]);
        if s <= a * n {
            // Inside the cone.
        } else if a * s <= -n {
            x[0] = 0.0;
            x[1] = 0.0;
            x[2] = 0.0;
        } else {
            let n_new = (a * s + n) / (1.0 + a * a);
            let scale = a * n_new / s;
            x[0] = n_new;
            x[1] = x[1] * scale;
            x[2] = x[2] * scale;
        }
    }
    for (var i = 0u; i < b.dim; i++) {
        gamma_out[b.row + i] = x[i];
    }
}
