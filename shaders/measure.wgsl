// One invocation: the residual of scalars[SLOT_RESIDUAL] (merit::Residual in f32) and the
// best-iterate bookkeeping of `Progress::record`: the first measure sets best (and asks
// copy_if to save the iterate), the second widens the divergence scale, and a finite,
// non-diverging value below best improves it. Mirror: `src/gpu/cpu.rs::measure`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> scalars: array<Partial>;
@group(0) @binding(2) var<storage, read_write> monitor: Monitor;

// DIVERGENCE_FACTOR of src/solver/mod.rs.
const DIVERGENCE: f32 = 1e12;

@compute @workgroup_size(1)
fn main() {
    let p = scalars[SLOT_RESIDUAL];
    var m = monitor;
    m.inf = p.maxes.x;
    m.two = sqrt(p.sums.x);
    m.velocity = p.maxes.y;
    m.gamma_inf = p.maxes.z;
    let scale = max(params.r_norm, max(sqrt(p.sums.y), sqrt(p.sums.z)));
    m.relative = m.two;
    if scale > 0.0 {
        m.relative = m.two / scale;
    }
    m.value = m.relative;
    if params.criterion == 1u {
        m.value = m.velocity;
    }
    if m.measures == 0u {
        m.best = m.value;
        // At least the upload's reference (a correction problem's base).
        m.gamma_scale = max(m.gamma_scale, m.gamma_inf);
        m.improved = 1u;
    } else {
        if m.measures == 1u {
            m.gamma_scale = max(m.gamma_scale, m.gamma_inf);
        }
        // value < best is false for NaN.
        let finite = abs(m.value) <= 3.4028235e38;
        let bounded = m.gamma_inf <= DIVERGENCE * m.gamma_scale;
        m.improved = select(0u, 1u, finite && bounded && m.value < m.best);
        if m.improved == 1u {
            m.best = m.value;
        }
    }
    m.measures = m.measures + 1u;
    monitor = m;
}
