// Exclusive prefix sums, second pass: the workgroup totals of the first pass (span.count of
// them) become their exclusive prefix sums, by one workgroup: each invocation sums a
// contiguous chunk, the chunk sums are scanned in workgroup memory (Hillis-Steele), then
// each invocation writes its chunk's prefixes (integers: exact, in any order of addition).
// Mirror: `src/gpu/cpu/step.rs::step_scan_totals`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read_write> totals: array<u32>;

var<workgroup> sums: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let chunk = (span.count + WORKGROUP - 1u) / WORKGROUP;
    let first = min(lid.x * chunk, span.count);
    let end = min(first + chunk, span.count);
    var own = 0u;
    for (var b = first; b < end; b++) {
        own = own + totals[b];
    }
    sums[lid.x] = own;
    for (var s = 1u; s < WORKGROUP; s = s * 2u) {
        workgroupBarrier();
        var add = 0u;
        if lid.x >= s {
            add = sums[lid.x - s];
        }
        workgroupBarrier();
        sums[lid.x] = sums[lid.x] + add;
    }
    workgroupBarrier();
    // The inclusive sum of the chunks before this one's.
    var acc = sums[lid.x] - own;
    for (var b = first; b < end; b++) {
        let t = totals[b];
        totals[b] = acc;
        acc = acc + t;
    }
}
