// One invocation: the scalar part of a P-SPG-FB iteration (src/solver/spg.rs). With
// dg = d . g (scalars[SLOT_B] when the fallback direction was taken, else [SLOT_A]; at most
// -d . P d / alpha) and
// the curvature of scalars[SLOT_C]: the non-monotone GLL line search on the quadratic
// f(x + lambda d) = f + lambda dg + lambda^2 dAd / 2 (no product), the alternating BB step,
// and the GLL memory kept as differences f_i - f. lambda = 0 when d is not a descent
// direction (stationary). Mirror: `src/gpu/cpu.rs::spg_scalars`.

@group(0) @binding(0) var<uniform> cfg: SpgConfig;
@group(0) @binding(1) var<storage, read> scalars: array<Partial>;
@group(0) @binding(2) var<storage, read_write> state: SpgState;

@compute @workgroup_size(1)
fn main() {
    var s = state;
    var dir = scalars[SLOT_A].sums;
    if dir.x >= 0.0 {
        dir = scalars[SLOT_B].sums;
    }
    // With P constant on each block, d . g <= -d . P d / alpha in exact arithmetic (the
    // projection's variational inequality at x). Near the solution the f32 rounding of d . g
    // (of the order eps |x| |g|) exceeds that bound and could make a good direction look
    // ascending; the bound replaces it then.
    let dg = min(dir.x, -dir.y / s.alpha);
    if !(dg < 0.0) {
        s.lambda = 0.0;
        state = s;
        return;
    }
    let c = scalars[SLOT_C].sums;
    let dad = c.x;
    if s.hist_len == 0u {
        s.history[0] = 0.0;
        s.hist_len = 1u;
        s.hist_head = 1u % cfg.n_gll;
    }
    // f_ref - f.
    var gap = s.history[0];
    for (var i = 1u; i < s.hist_len; i++) {
        gap = max(gap, s.history[i]);
    }
    var lambda = 1.0;
    // f(x + lambda d) - f.
    var gain = dg + 0.5 * dad;
    while gain > gap + cfg.armijo * lambda * dg && lambda > 1e-12 {
        // Minimizer of the quadratic along d, safeguarded in [sigma_min lambda, sigma_max lambda].
        let curvature = gain - lambda * dg;
        var lq = cfg.sigma_max * lambda;
        if curvature > 0.0 {
            lq = -0.5 * lambda * lambda * dg / curvature;
        }
        lambda = clamp(lq, cfg.sigma_min * lambda, cfg.sigma_max * lambda);
        gain = lambda * dg + 0.5 * lambda * lambda * dad;
    }
    // BB1 (s.Ps / s.y) on odd line searches, BB2 (s.y / y.P^-1 y) on even ones; lambda^2
    // cancels.
    var alpha = cfg.alpha_max;
    if dad > 0.0 {
        if s.j % 2u == 1u {
            alpha = c.y / dad;
        } else {
            alpha = dad / c.z;
        }
    }
    s.alpha = clamp(alpha, cfg.alpha_min, cfg.alpha_max);
    // The memory relative to the new f, then f_new itself (difference 0).
    for (var i = 0u; i < s.hist_len; i++) {
        s.history[i] = s.history[i] - gain;
    }
    s.history[s.hist_head] = 0.0;
    s.hist_head = (s.hist_head + 1u) % cfg.n_gll;
    s.hist_len = min(s.hist_len + 1u, cfg.n_gll);
    s.lambda = lambda;
    s.j = s.j + 1u;
    state = s;
}
