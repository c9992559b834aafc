// The `GpuBlock` of contact k (`c`), for the generic kernels: its cone by the rows per
// contact, its rows, bodies, friction and step from the contact (no block is stored for
// `jacobi-gpu`). Included before the kernels that read blocks of the step's contacts
// (`kernel!(step NAME + step_block, ...)`; not in `step_common.wgsl`, which the renderer
// includes without `common.wgsl`'s `GpuBlock`). Mirror: `src/gpu/cpu/step.rs::step_block`.
fn step_block(params: StepParams, c: GpuContact, k: u32) -> GpuBlock {
    var kind = CONE_UNILATERAL;
    if params.dim == 3u {
        kind = CONE_COULOMB;
    }
    var body1 = -1;
    if c.other < params.n_bodies {
        body1 = i32(c.other);
    }
    return GpuBlock(kind, params.dim, params.dim * k, 0u, i32(c.owner), body1, c.mu, c.eta);
}
