// The blocks of the step's contacts for the generic kernels of `spg-gpu` and `apgd-gpu`
// (`spg_direction`, `apgd_trial`, `step_coulomb`), one invocation per contact:
// `step_block`. Mirror: `src/gpu/cpu/step.rs::step_blocks`.

@group(0) @binding(0) var<uniform> solver: Params;
@group(0) @binding(1) var<uniform> params: StepParams;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read_write> blocks: array<GpuBlock>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= solver.n_blocks {
        return;
    }
    blocks[k] = step_block(params, contacts[k], k);
}
