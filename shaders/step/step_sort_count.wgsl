// Counting sort, first pass: the number of items of each key (an atomic count: the totals do
// not depend on the order of the additions). Mirror: `src/gpu/cpu/step.rs::step_sort_count`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= span.count {
        return;
    }
    atomicAdd(&counts[keys[i]], 1u);
}
