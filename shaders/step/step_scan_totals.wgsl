// Exclusive prefix sums, second pass: the workgroup totals of the first pass (span.count of
// them) become their exclusive prefix sums, by one workgroup: each invocation sums a
// contiguous chunk, the chunk sums are scanned in workgroup memory (`inclusive_scan`), then
// each invocation writes its chunk's prefixes (integers: exact, in any order of addition).
// Mirror: `src/gpu/cpu/step.rs::step_scan_totals`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read_write> totals: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let chunk = (span.count + WORKGROUP - 1u) / WORKGROUP;
    let first = min(lid.x * chunk, span.count);
    let end = min(first + chunk, span.count);
    var own = 0u;
    for (var b = first; b < end; b++) {
        own = own + totals[b];
    }
    // The sum of the chunks before this one's.
    var acc = inclusive_scan(lid.x, own) - own;
    for (var b = first; b < end; b++) {
        let t = totals[b];
        totals[b] = acc;
        acc = acc + t;
    }
}
