// Exclusive prefix sums, first pass: each workgroup scans 256 counts in workgroup memory
// (`inclusive_scan`), writes the inclusive sums to starts[i + 1]
// (starts[0] = 0) and its total to totals. Mirror: `src/gpu/cpu/step.rs::step_scan_local`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> starts: array<u32>;
@group(0) @binding(3) var<storage, read_write> totals: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    var v = 0u;
    if i < span.count {
        v = counts[i];
    }
    let sum = inclusive_scan(lid.x, v);
    if i < span.count {
        starts[i + 1u] = sum;
    }
    if i == 0u {
        starts[0] = 0u;
    }
    let group = flat_group(wid, nwg);
    if lid.x == WORKGROUP - 1u && group < arrayLength(&totals) {
        totals[group] = sum;
    }
}
