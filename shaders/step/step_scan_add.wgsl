// Exclusive prefix sums, third pass: each inclusive sum gets the offset of its workgroup.
// Mirror: `src/gpu/cpu/step.rs::step_scan_add`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read> totals: array<u32>;
@group(0) @binding(2) var<storage, read_write> starts: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= span.count {
        return;
    }
    starts[i + 1u] = starts[i + 1u] + totals[i / WORKGROUP];
}
