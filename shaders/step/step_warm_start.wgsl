// Warm start, one invocation per contact: the impulse of the previous step's contact with
// the same key (owner, other), found by binary search in the previous list (sorted by key),
// projected on the block's cone (`World::warm_start`, then the solvers' initial iterate);
// zero for a new contact. Mirror: `src/gpu/cpu/step.rs::step_warm_start`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(4) var<storage, read> prev_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> prev_contacts: array<GpuContact>;
@group(0) @binding(6) var<storage, read> prev_gamma: array<f32>;
@group(0) @binding(7) var<storage, read_write> gamma: array<f32>;

// Whether contact a's key is below (owner, other).
fn below(a: GpuContact, owner: u32, other: u32) -> bool {
    return a.owner < owner || (a.owner == owner && a.other < other);
}

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
    var prev = prev_offsets[params.n_bodies];
    if prev > params.capacity {
        prev = 0u;
    }
    // First previous contact whose key is not below c's.
    var lo = 0u;
    var hi = prev;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if below(prev_contacts[mid], c.owner, c.other) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let dim = params.dim;
    var g = vec3<f32>(0.0, 0.0, 0.0);
    if lo < prev && prev_contacts[lo].owner == c.owner && prev_contacts[lo].other == c.other {
        for (var i = 0u; i < dim; i++) {
            g[i] = prev_gamma[dim * lo + i];
        }
    }
    let b = blocks[k];
    let x = project(b.kind, b.mu, g);
    for (var i = 0u; i < dim; i++) {
        gamma[dim * k + i] = x[i];
    }
}
