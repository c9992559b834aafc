// The workgroup scan of the time step's compute kernels (after `step_common.wgsl`, which
// the renderer also includes: this part needs compute). Its workgroup memory:
var<workgroup> scan_sums: array<u32, 256>;

// The inclusive prefix sum of `v` over the workgroup's invocations, in invocation order
// (Hillis-Steele; integers, so exact). Called by every invocation, in uniform control flow.
fn inclusive_scan(lid: u32, v: u32) -> u32 {
    scan_sums[lid] = v;
    for (var s = 1u; s < WORKGROUP; s = s * 2u) {
        workgroupBarrier();
        var add = 0u;
        if lid >= s {
            add = scan_sums[lid - s];
        }
        workgroupBarrier();
        scan_sums[lid] = scan_sums[lid] + add;
    }
    workgroupBarrier();
    return scan_sums[lid];
}
