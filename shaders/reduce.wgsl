// One workgroup combines `count` workgroup partials into scalars[slot]: invocation t adds
// partials t, t + 256, ... in order, then the tree. Mirror: `src/gpu/cpu.rs::reduce`.

struct Reduce {
    count: u32,
    slot: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> cfg: Reduce;
@group(0) @binding(1) var<storage, read> parts: array<Partial>;
@group(0) @binding(2) var<storage, read_write> scalars: array<Partial>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    var p = zero_partial();
    for (var i = lid.x; i < cfg.count; i = i + WORKGROUP) {
        p.sums = p.sums + parts[i].sums;
        p.maxes = max(p.maxes, parts[i].maxes);
    }
    let total = workgroup_reduce(lid.x, p);
    if lid.x == 0u {
        scalars[cfg.slot] = total;
    }
}
