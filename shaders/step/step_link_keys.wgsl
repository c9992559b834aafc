// Body links, first pass: entry e = 2k + side of contact k gets the sphere of that side as
// its key, or n_bodies (no body: a plane side, or beyond the contact count); the counting
// sort of these keys gives each body its (block, side) links in block order.
// Mirror: `src/gpu/cpu/step.rs::step_link_keys`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read_write> keys: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let e = flat_index(gid, nwg);
    if e >= 2u * params.capacity {
        return;
    }
    let k = e / 2u;
    let count = offsets[params.n_bodies];
    var key = params.n_bodies;
    if count <= params.capacity && k < count {
        let c = contacts[k];
        if e % 2u == 0u {
            key = c.owner;
        } else if c.other < params.n_bodies {
            key = c.other;
        }
    }
    keys[e] = key;
}
