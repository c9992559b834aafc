// Counting sort, third pass: one invocation per key sorts its segment by item index
// (insertion sort; segments are short), so that the sort is stable and deterministic.
// Mirror: `src/gpu/cpu/step.rs::step_sort_segments`.

@group(0) @binding(0) var<uniform> span: Span;
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read_write> sorted: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= span.keys {
        return;
    }
    let lo = starts[k];
    let hi = starts[k + 1u];
    for (var a = lo + 1u; a < hi; a++) {
        let v = sorted[a];
        var at = a;
        while at > lo && sorted[at - 1u] > v {
            sorted[at] = sorted[at - 1u];
            at = at - 1u;
        }
        sorted[at] = v;
    }
}
