// Warm start, one invocation per contact: the impulse of the previous step's contact with
// the same key (owner, other), found by binary search of `other` among the previous contacts
// of the owner (the list is sorted by key: the owner's are those of its offsets), projected
// on the block's cone (`World::warm_start`, then the solvers' initial iterate); zero for a
// new contact. Mirror: `src/gpu/cpu/step.rs::step_warm_start`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read> prev_offsets: array<u32>;
@group(0) @binding(4) var<storage, read> prev_others: array<u32>;
@group(0) @binding(5) var<storage, read> prev_gamma: array<f32>;
@group(0) @binding(6) var<storage, read_write> gamma: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    let count = offsets[params.n_bodies];
    if count > params.capacity || k >= count {
        return;
    }
    let c = contacts[k];
    // The previous contacts of c's owner: none when the previous step kept none.
    var lo = 0u;
    var hi = 0u;
    if prev_offsets[params.n_bodies] <= params.capacity {
        lo = prev_offsets[c.owner];
        hi = prev_offsets[c.owner + 1u];
    }
    let end = hi;
    // The first of them whose `other` is not below c's.
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if prev_others[mid] < c.other {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let dim = params.dim;
    var g = vec3<f32>(0.0, 0.0, 0.0);
    if lo < end && prev_others[lo] == c.other {
        for (var i = 0u; i < dim; i++) {
            g[i] = prev_gamma[dim * lo + i];
        }
    }
    let b = step_block(params, c, k);
    let x = project(b.kind, b.mu, g);
    for (var i = 0u; i < dim; i++) {
        gamma[dim * k + i] = x[i];
    }
}
