// Exclusive prefix sums, second pass: the workgroup totals of the first pass (span.count of
// them) become their exclusive prefix sums, in order, by one invocation.
// Mirror: `src/gpu/cpu/step.rs::step_scan_totals`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read_write> totals: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    if lid.x != 0u {
        return;
    }
    var acc = 0u;
    for (var b = 0u; b < span.count; b++) {
        let t = totals[b];
        totals[b] = acc;
        acc = acc + t;
    }
}
