// Deterministic workgroup tree reduction, included by the kernels that produce partials.
// Fixed pairing (lid, lid + s) for s = 128, 64, ..., 1: the same result on every run.
// Mirror: `src/gpu/cpu.rs::workgroup_tree`.

var<workgroup> tree_sums: array<vec4<f32>, 256>;
var<workgroup> tree_maxes: array<vec4<f32>, 256>;

// Call from uniform control flow in every invocation; the result is the workgroup's.
fn workgroup_reduce(lid: u32, p: Partial) -> Partial {
    tree_sums[lid] = p.sums;
    tree_maxes[lid] = p.maxes;
    for (var s = WORKGROUP / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if lid < s {
            tree_sums[lid] = tree_sums[lid] + tree_sums[lid + s];
            tree_maxes[lid] = max(tree_maxes[lid], tree_maxes[lid + s]);
        }
    }
    workgroupBarrier();
    return Partial(tree_sums[0], tree_maxes[0]);
}
