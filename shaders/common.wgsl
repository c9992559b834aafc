// Shared declarations of the projected Jacobi kernels; prepended to each kernel's source.
// Keep in sync with `src/gpu/data.rs` (`Params`, `GpuBlock`, `GpuLink`, cone kinds).

struct Params {
    n_bodies: u32,
    n_blocks: u32,
    // 1: Coulomb friction model (De Saxcé shift), 0: CCP.
    coulomb: u32,
    omega: f32,
    // Largest block dimension: Jacobian slots per side in `jac`.
    max_dim: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

struct GpuBlock {
    // 0: bilateral, 1: unilateral, 2: Coulomb.
    kind: u32,
    dim: u32,
    // First row of the block in gamma, r and compliance.
    row: u32,
    // First row of the block in minv_jac (dim rows per side, side by side).
    jac: u32,
    // Body of each side, -1 for none.
    body0: i32,
    body1: i32,
    mu: f32,
    eta: f32,
}

// One (block, side) link of a body.
struct GpuLink {
    // First row of this side of the block in minv_jac.
    minv_row: u32,
    // First row of the block in gamma.
    row: u32,
    dim: u32,
    pad: u32,
}

// The linear index of an invocation in a grid of `groups` workgroups of `size` invocations
// laid out in two dimensions (one dimension holds at most 65535 workgroups).
fn linear_index(gid: vec3<u32>, groups: vec3<u32>, size: u32) -> u32 {
    return gid.y * groups.x * size + gid.x;
}
