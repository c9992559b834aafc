// Counting sort, second pass: each item index goes into its key's segment
// sorted[starts[key]..starts[key + 1]], at a slot taken by an atomic (an order within the
// segment that depends on timing; `step_sort_segments` then fixes it).
// Mirror: `src/gpu/cpu/step.rs::step_sort_scatter`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read> starts: array<u32>;
@group(0) @binding(3) var<storage, read_write> fill: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> sorted: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= span.count {
        return;
    }
    let key = keys[i];
    let slot = atomicAdd(&fill[key], 1u);
    sorted[starts[key] + slot] = i;
}
