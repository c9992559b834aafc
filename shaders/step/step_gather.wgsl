// w = M^-1 J^T x of the sphere contacts, one invocation per sphere i, without stored rows
// (`factored_bodies` of the matrix-free blocks, issue 16). Row j of a contact's side, as
// `step_contact_rows` builds it from the normal n and the tangents (e_0, e_1, e_2) =
// (n, t1, t2): linear sgn e_j (sgn = -1 for the owner of a sphere pair, +1 otherwise) and,
// in the world frame, angular -r (n x e_j) with n x t1 = t2, n x t2 = -t1. Over the sphere's
// link entries e = 2k + side in block order (the counting sort by body):
//   w_lin = (1/m) sum sgn (x_0 n + x_1 t1 + x_2 t2),
//   W = -r w_ang = (r^2/I) sum (x_1 t2 - x_2 t1)   (isotropic inertia),
// the angular part kept scaled by -r (what `step_jacobi` and `step_integrate` read).
// Mirror: `src/gpu/cpu/step.rs::step_gather`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read> sorted: array<u32>;
@group(0) @binding(3) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(4) var<storage, read> consts: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> w: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= params.n_bodies {
        return;
    }
    let dim = params.dim;
    var lin = vec3<f32>(0.0);
    var ang = vec3<f32>(0.0);
    for (var l = starts[i]; l < starts[i + 1u]; l++) {
        let e = sorted[l];
        let k = e / 2u;
        let c = contacts[k];
        let n = c.normal.xyz;
        var sgn = 1.0;
        if e % 2u == 0u && c.other < params.n_bodies {
            sgn = -1.0;
        }
        let row = dim * k;
        if dim == 3u {
            let t = tangents(n);
            let g = vec3<f32>(x[row], x[row + 1u], x[row + 2u]);
            lin = lin + sgn * (g.x * n + g.y * t[0] + g.z * t[1]);
            ang = ang + (g.y * t[1] - g.z * t[0]);
        } else {
            lin = lin + sgn * (x[row] * n);
        }
    }
    let m = consts[i];
    let wl = m.x * lin;
    let wa = m.y * ang;
    w[6u * i] = wl.x;
    w[6u * i + 1u] = wl.y;
    w[6u * i + 2u] = wl.z;
    w[6u * i + 3u] = wa.x;
    w[6u * i + 4u] = wa.y;
    w[6u * i + 5u] = wa.z;
}
