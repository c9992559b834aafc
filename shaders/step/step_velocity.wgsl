// J_k w of a contact's sphere rows, shared by the kernels that bind `params: StepParams` and
// `w` (M^-1 J^T x per sphere, from `step_gather`): row j of a side (as `step_gather` builds
// it from the normal n and the tangents (e_0, e_1, e_2) = (n, t1, t2)) gives
// sgn e_j . w_lin + (n x e_j) . W, W = -r w_ang of that sphere, sgn = -1 for the owner of a
// sphere pair. Included by `step_jacobi` and `step_rows`; mirror:
// `src/gpu/cpu/step.rs::contact_jw`.

// The sphere `body`'s share of the rows: (n, t1, t2) . w_lin times sgn, plus (0, t2, -t1) . W.
fn side(body: u32, sgn: f32, n: vec3<f32>, t: array<vec3<f32>, 2>) -> vec3<f32> {
    let wl = vec3<f32>(w[6u * body], w[6u * body + 1u], w[6u * body + 2u]);
    let wa = vec3<f32>(w[6u * body + 3u], w[6u * body + 4u], w[6u * body + 5u]);
    return vec3<f32>(
        sgn * dot3(n, wl),
        sgn * dot3(t[0], wl) + dot3(t[1], wa),
        sgn * dot3(t[1], wl) - dot3(t[0], wa),
    );
}

// J_k w of contact c (the rows past its block's dimension are not used).
fn contact_jw(c: GpuContact) -> vec3<f32> {
    let n = c.normal.xyz;
    let t = tangents(n);
    let pair = c.other < params.n_bodies;
    var sgn = 1.0;
    if pair {
        sgn = -1.0;
    }
    var jw = side(c.owner, sgn, n, t);
    if pair {
        jw = jw + side(c.other, 1.0, n, t);
    }
    return jw;
}
