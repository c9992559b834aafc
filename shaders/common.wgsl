// Shared declarations of the projected Jacobi kernels; prepended to each kernel's source.
// Keep in sync with `src/gpu/data.rs` (`Params`, `GpuBlock`, cone kinds).

struct Params {
    n_bodies: u32,
    n_blocks: u32,
    // 1: Coulomb friction model (De Saxcé shift), 0: CCP.
    coulomb: u32,
    omega: f32,
}

struct GpuBlock {
    // 0: bilateral, 1: unilateral, 2: Coulomb.
    kind: u32,
    dim: u32,
    // First row of the block in gamma, r and compliance.
    row: u32,
    // First Jacobian row of the block in jac / minv_jac (dim rows per side, side by side).
    jac: u32,
    // Body of each side, -1 for none.
    body0: i32,
    body1: i32,
    mu: f32,
    eta: f32,
}
