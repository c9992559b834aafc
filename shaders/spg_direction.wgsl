// P-SPG-FB direction, one invocation per block, one partial per workgroup (sums.x = d . g,
// sums.y = d . P d, with P = 1 in the fallback):
// d = Proj_K(x - alpha P^-1 g) - x (paper 004, `projected_move`), or with cfg.fallback = 1 and only when the
// preconditioned d of scalars[SLOT_A] is not a descent direction (d . g >= 0), the
// unpreconditioned d = Proj_K(x - alpha g) - x. Mirror: `src/gpu/cpu.rs::spg_direction`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> cfg: SpgConfig;
@group(0) @binding(2) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(3) var<storage, read> scalars: array<Partial>;
@group(0) @binding(4) var<storage, read> state: SpgState;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read> g: array<f32>;
@group(0) @binding(7) var<storage, read> precond: array<f32>;
@group(0) @binding(8) var<storage, read_write> d: array<f32>;
@group(0) @binding(9) var<storage, read_write> parts: array<Partial>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var p = zero_partial();
    let k = flat_index(gid, nwg);
    let fallback = cfg.fallback == 1u;
    let enabled = !fallback || scalars[SLOT_A].sums.x >= 0.0;
    if k < params.n_blocks && enabled {
        let b = blocks[k];
        let alpha = state.alpha;
        var xk = vec3<f32>(0.0);
        var s = vec3<f32>(0.0);
        for (var i = 0u; i < b.dim; i++) {
            let row = b.row + i;
            xk[i] = x[row];
            if fallback {
                s[i] = -(alpha * g[row]);
            } else {
                s[i] = -(alpha * g[row] / precond[row]);
            }
        }
        let dk = projected_move(b.kind, b.mu, xk, s);
        for (var i = 0u; i < b.dim; i++) {
            let row = b.row + i;
            d[row] = dk[i];
            var pd = dk[i];
            if !fallback {
                pd = precond[row] * dk[i];
            }
            p.sums.x = p.sums.x + dk[i] * g[row];
            p.sums.y = p.sums.y + pd * dk[i];
        }
    }
    let total = workgroup_reduce(lid.x, p);
    let group = flat_group(wid, nwg);
    if lid.x == 0u && group < arrayLength(&parts) {
        parts[group] = total;
    }
}
