// Narrow phase, one invocation per sphere i: the contacts it owns, with the spheres j > i of
// the 27 cells around its own (the grid's buckets, filtered by cell) and with every plane,
// kept when the gap is at most the envelope (the CPU's rule, `collision::detect`).
// span.mode 0 writes the count of each sphere to `offsets`; span.mode 1 reads the scanned
// offsets and writes the contacts, each sphere's sorted by `other`, so that the whole list
// is sorted by (owner, other). Mirror: `src/gpu/cpu/step.rs::step_narrow`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<uniform> span: Span;
@group(0) @binding(2) var<storage, read> bodies: array<GpuBody>;
@group(0) @binding(3) var<storage, read> planes: array<GpuPlane>;
@group(0) @binding(4) var<storage, read> cells: array<vec4<i32>>;
@group(0) @binding(5) var<storage, read> starts: array<u32>;
@group(0) @binding(6) var<storage, read> sorted: array<u32>;
@group(0) @binding(7) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(8) var<storage, read_write> contacts: array<GpuContact>;

// Puts c after the `n` contacts written from `base`, keeping them sorted by `other`.
fn insert(base: u32, n: u32, c: GpuContact) {
    var at = base + n;
    while at > base && contacts[at - 1u].other > c.other {
        contacts[at] = contacts[at - 1u];
        at = at - 1u;
    }
    contacts[at] = c;
}

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= params.n_bodies {
        return;
    }
    let write = span.mode == 1u;
    if write && offsets[params.n_bodies] > params.capacity {
        return;
    }
    var base = 0u;
    if write {
        base = offsets[i];
    }
    let me = bodies[i].pos;
    let home = cells[i].xyz;
    var n = 0u;
    for (var dz = -1; dz <= 1; dz++) {
        for (var dy = -1; dy <= 1; dy++) {
            for (var dx = -1; dx <= 1; dx++) {
                let cell = home + vec3<i32>(dx, dy, dz);
                let b = bucket_of(cell, params.mask);
                for (var s = starts[b]; s < starts[b + 1u]; s++) {
                    let j = sorted[s];
                    if j <= i || any(cells[j].xyz != cell) {
                        continue;
                    }
                    let other = bodies[j].pos;
                    let d = other.xyz - me.xyz;
                    let len = sqrt(dot3(d, d));
                    let gap = len - me.w - other.w;
                    if gap <= params.envelope {
                        if write {
                            var normal = vec3<f32>(0.0, 0.0, 1.0);
                            if len > 0.0 {
                                normal = d / len;
                            }
                            insert(base, n, GpuContact(i, j, 0.0, 0.0, vec4<f32>(normal, gap)));
                        }
                        n = n + 1u;
                    }
                }
            }
        }
    }
    for (var p = 0u; p < params.n_planes; p++) {
        let plane = planes[p];
        let gap = dot3(me.xyz - plane.point.xyz, plane.normal.xyz) - me.w;
        if gap <= params.envelope {
            if write {
                let c = GpuContact(i, params.n_bodies + p, 0.0, 0.0, vec4<f32>(plane.normal.xyz, gap));
                insert(base, n, c);
            }
            n = n + 1u;
        }
    }
    if !write {
        offsets[i] = n;
    }
}
