// The De Saxce term of the Coulomb model for `spg-gpu` and `apgd-gpu` in the GPU-resident
// step, one invocation per block: the outer fixed point of `src/solver/coulomb.rs` (DESIGN
// section 1) freezes s = mu ||u_t|| and solves the CCP with r + (s, 0, 0). From the velocity
// `u = A x + shifted` of the current iterate (its tangential rows do not depend on the
// shift), the normal row of each Coulomb block gets shifted = r + s, and `u` and `other` (a
// second vector of the same `shifted`: APGD's g_y; SPG's direction, rewritten before it is
// read) move by the change of the shift, so that
// the iterations go on from x on the new problem without a product; `u` is then the
// modified velocity u + mu ||u_t|| e_n of x, whose CCP natural map is x's Coulomb one.
// Mirror: `src/gpu/cpu/step.rs::step_coulomb`.

@group(0) @binding(0) var<uniform> solver: Params;
@group(0) @binding(1) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(2) var<storage, read> r: array<f32>;
@group(0) @binding(3) var<storage, read_write> shifted: array<f32>;
@group(0) @binding(4) var<storage, read_write> u: array<f32>;
@group(0) @binding(5) var<storage, read_write> other: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= solver.n_blocks {
        return;
    }
    let b = blocks[k];
    if b.kind != CONE_COULOMB {
        return;
    }
    let n = b.row;
    let s = b.mu * sqrt(u[n + 1u] * u[n + 1u] + u[n + 2u] * u[n + 2u]);
    let next = r[n] + s;
    let change = next - shifted[n];
    shifted[n] = next;
    u[n] = u[n] + change;
    other[n] = other[n] + change;
}
