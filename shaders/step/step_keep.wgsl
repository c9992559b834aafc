// The step's offsets, contacts' other sides and impulses kept for the next step's warm
// start, one invocation per contact (with its rows) or offset; nothing is kept from a step
// whose contacts overflowed the room (the previous step's stay, for the step taken again).
// Mirror: `src/gpu/cpu/step.rs::step_keep`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read> gamma: array<f32>;
@group(0) @binding(4) var<storage, read_write> prev_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> prev_others: array<u32>;
@group(0) @binding(6) var<storage, read_write> prev_gamma: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    let count = offsets[params.n_bodies];
    if count > params.capacity {
        return;
    }
    if i <= params.n_bodies {
        prev_offsets[i] = offsets[i];
    }
    if i < count {
        prev_others[i] = contacts[i].other;
        for (var j = params.dim * i; j < params.dim * (i + 1u); j++) {
            prev_gamma[j] = gamma[j];
        }
    }
}
