// The state of `apgd-gpu` at the start of a GPU-resident step's solve, one invocation: the
// initial L = ||(N + E) 1|| / sqrt(m) of `Apgd` (`ProblemData::with_lipschitz`) from the
// sums of `spg_curvature` with d = P = 1 and Ad = (N + E) 1 in scalars[SLOT_B]:
// sums.y = 1 . 1 = m and sums.z = ||A 1||^2; its step 1/L and the momentum reset.
// Mirror: `src/gpu/cpu/step.rs::step_apgd_start`.

@group(0) @binding(0) var<storage, read> scalars: array<Partial>;
@group(0) @binding(1) var<storage, read_write> state: ApgdState;

// f32::MIN_POSITIVE.
const MIN_POSITIVE: f32 = 1.1754944e-38;

@compute @workgroup_size(1)
fn main() {
    let c = scalars[SLOT_B].sums;
    var lipschitz = MIN_POSITIVE;
    if c.y > 0.0 {
        lipschitz = max(sqrt(c.z / c.y), MIN_POSITIVE);
    }
    state = ApgdState(lipschitz, 1.0 / lipschitz, 1.0, 0.0, 0u, 0u, 0u, 0u);
}
