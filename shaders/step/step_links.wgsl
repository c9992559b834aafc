// Body links, last pass: the sorted entries 2k + side of the bodies become the `GpuLink`s
// `factored_bodies` gathers (rows of minv_jac and of the impulses); the link starts of the
// bodies are the sort's starts. Mirror: `src/gpu/cpu/step.rs::step_links`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read> sorted: array<u32>;
@group(0) @binding(3) var<storage, read_write> links: array<GpuLink>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let l = flat_index(gid, nwg);
    if l >= starts[params.n_bodies] {
        return;
    }
    let e = sorted[l];
    let k = e / 2u;
    let dim = params.dim;
    links[l] = GpuLink(2u * dim * k + (e % 2u) * dim, dim * k, dim, 0u);
}
