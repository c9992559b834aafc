// One invocation: accepts the trial when d . Ad <= L d . d (or d = 0), else doubles L and
// leaves the iterate in place (one trial per iteration: a rejected trial costs its product,
// as on the CPU). On acceptance: gradient restart when g_y . (x_new - x) > 0, Nesterov's
// theta and beta, then L <- 0.9 L (src/solver/apgd.rs). Mirror: `src/gpu/cpu.rs::apgd_scalars`.

@group(0) @binding(0) var<storage, read> scalars: array<Partial>;
@group(0) @binding(1) var<storage, read_write> state: ApgdState;

// Apgd::SHRINK.
const SHRINK: f32 = 0.9;

@compute @workgroup_size(1)
fn main() {
    var s = state;
    let c = scalars[SLOT_A].sums;
    let dad = c.x;
    let dd = c.y;
    if !(dad <= s.lipschitz * dd || dd == 0.0) {
        s.lipschitz = 2.0 * s.lipschitz;
        s.step = 1.0 / s.lipschitz;
        s.accepted = 0u;
        state = s;
        return;
    }
    let restart = c.z > 0.0;
    let theta = s.theta;
    let theta_new = 0.5 * (-theta * theta + theta * sqrt(theta * theta + 4.0));
    if restart {
        s.beta = 0.0;
        s.theta = 1.0;
    } else {
        s.beta = theta * (1.0 - theta) / (theta * theta + theta_new);
        s.theta = theta_new;
    }
    s.lipschitz = SHRINK * s.lipschitz;
    s.step = 1.0 / s.lipschitz;
    s.accepted = 1u;
    state = s;
}
