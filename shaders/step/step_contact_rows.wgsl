// Contact assembly, one invocation per contact k (`World::assemble` for spheres): the frame
// (normal, `tangent_frame`'s tangents), the Jacobian rows of each dynamic side (a sphere
// side A of a pair is negated; a plane side enters the bias with its velocity) in registers
// only: the iterations rebuild them from the normal and the radii (`step_gather`,
// `step_jacobi`). Written: the friction coefficient and the step η_k = 1/λ_max of the
// Delassus block (+ compliance) (`BlockStep::MaxEigenvalue`) into the contact (the block of
// the generic kernels follows from it: `step_block`), and r = J v_free + b with
// b_0 = max(gap/h, −v_rec).
// Mirror: `src/gpu/cpu/step.rs::step_contact_rows`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> bodies: array<GpuBody>;
@group(0) @binding(3) var<storage, read> planes: array<GpuPlane>;
@group(0) @binding(4) var<storage, read_write> contacts: array<GpuContact>;
@group(0) @binding(5) var<storage, read_write> r: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    let count = offsets[params.n_bodies];
    if count > params.capacity || k >= count {
        return;
    }
    let dim = params.dim;
    let c = contacts[k];
    let n = c.normal.xyz;
    let t = tangents(n);
    let dirs = array<vec3<f32>, 3>(n, t[0], t[1]);
    let plane = c.other >= params.n_bodies;
    var bias = array<f32, 3>(max(c.normal.w / params.dt, -params.max_recovery), 0.0, 0.0);
    let me = bodies[c.owner];
    var mu = 0.0;
    var sides = 2u;
    if plane {
        let pl = planes[c.other - params.n_bodies];
        mu = min(pl.normal.w, me.vel.w);
        sides = 1u;
        // The plane's rows are -[e, 0]: J v of the plane goes into the bias.
        for (var i = 0u; i < dim; i++) {
            bias[i] = bias[i] + dot3(-dirs[i], pl.velocity.xyz);
        }
    } else {
        mu = min(me.vel.w, bodies[c.other].vel.w);
    }
    var nkk = array<f32, 9>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    var rhs = bias;
    for (var s = 0u; s < sides; s++) {
        var rows = array<array<f32, 6>, 3>();
        // Side 0 is the owner: A of a pair (negated rows, lever +n r), B of a plane
        // contact (lever -n r); side 1 is B of a pair.
        var id = c.owner;
        var sgn = -1.0;
        var lever = n * me.pos.w;
        if plane {
            sgn = 1.0;
            lever = -(n * me.pos.w);
        }
        if s == 1u {
            id = c.other;
            sgn = 1.0;
            lever = -(n * bodies[id].pos.w);
        }
        let b = bodies[id];
        let vf = free_velocity(b, params.dt, params.gravity);
        let q = vec4<f32>(-b.quat.xyz, b.quat.w);
        let inv = array<f32, 6>(b.inv.x, b.inv.x, b.inv.x, b.inv.y, b.inv.z, b.inv.w);
        let v = array<f32, 6>(vf.lin.x, vf.lin.y, vf.lin.z, vf.ang.x, vf.ang.y, vf.ang.z);
        for (var i = 0u; i < dim; i++) {
            let e = dirs[i];
            let ang = rotate(q, cross3(lever, e));
            rows[i] = array<f32, 6>(
                sgn * e.x, sgn * e.y, sgn * e.z, sgn * ang.x, sgn * ang.y, sgn * ang.z);
            for (var m = 0u; m < 6u; m++) {
                rhs[i] = rhs[i] + rows[i][m] * v[m];
            }
        }
        for (var a = 0u; a < dim; a++) {
            for (var bb = 0u; bb < dim; bb++) {
                var acc = 0.0;
                for (var m = 0u; m < 6u; m++) {
                    acc = acc + rows[a][m] * inv[m] * rows[bb][m];
                }
                nkk[3u * a + bb] = nkk[3u * a + bb] + acc;
            }
        }
    }
    for (var i = 0u; i < dim; i++) {
        nkk[4u * i] = nkk[4u * i] + params.compliance;
    }
    var lmax = nkk[0];
    if dim == 3u {
        lmax = max_eigenvalue(nkk);
    }
    var eta = 0.0;
    if lmax > 0.0 {
        eta = 1.0 / lmax;
    }
    contacts[k].mu = mu;
    contacts[k].eta = eta;
    for (var i = 0u; i < dim; i++) {
        r[dim * k + i] = rhs[i];
    }
}
