//! The cones of the interior point in standard form, their Jordan algebra and the
//! Nesterov–Todd scaling (thesis §4.14.2).
//!
//! After the friction scaling of [`super::standard`] every cone is self-dual: the free rows of
//! bilateral blocks (`z` free, `s = 0`), the non-negative orthant and the second-order cone
//! `{x₀ ≥ ‖x₁‖}` of dimension 3. For an interior pair `(s, z)` the scaling `G` (symmetric
//! positive definite, block by block) satisfies `G z = G⁻¹ s = λ`.

/// The kind of one cone block of the standard form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Bilateral rows: `z` free, `s = 0`, no complementarity.
    Free,
    /// One row of `ℝ₊`.
    NonNeg,
    /// A second-order cone of dimension 3.
    Soc,
}

/// One cone block: its kind and first row (`Free` blocks have 1 row each, `Soc` 3).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    pub kind: Kind,
    pub start: usize,
}

impl Block {
    pub fn dim(&self) -> usize {
        match self.kind {
            Kind::Soc => 3,
            _ => 1,
        }
    }

    pub fn rows(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.dim()
    }
}

/// `det x = x₀² − ‖x₁‖² = (x₀ − ‖x₁‖)(x₀ + ‖x₁‖)` of a 3-vector (the squared `J`-norm),
/// in the factored form that keeps its relative accuracy near the boundary.
pub(crate) fn soc_det(x: &[f64]) -> f64 {
    let t = x[1].hypot(x[2]);
    (x[0] - t) * (x[0] + t)
}

/// The NT scaling of one cone block: `g` (d × d, row-major), its inverse and `λ = G z`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Scaling {
    pub g: [f64; 9],
    pub g_inv: [f64; 9],
    pub lambda: [f64; 3],
}

impl Scaling {
    /// The scaling of an interior pair `(s, z)` of a `NonNeg` or `Soc` block.
    pub fn new(kind: Kind, s: &[f64], z: &[f64]) -> Self {
        let mut out = Scaling::default();
        match kind {
            Kind::Free => {}
            Kind::NonNeg => {
                let g = (s[0] / z[0]).sqrt();
                out.g[0] = g;
                out.g_inv[0] = 1.0 / g;
                out.lambda[0] = (s[0] * z[0]).sqrt();
            }
            Kind::Soc => {
                // Thesis §4.14.2 (CVXOPT's formulas): β = (det s / det z)^¼, w̄ the normalized
                // scaling point, G = β (2 v vᵀ − J) with v = (w̄ + e)/√(2(w̄₀ + 1)).
                // Iterates are interior; rounding may still put one on the boundary.
                let (ds, dz) = (
                    soc_det(s).max(f64::MIN_POSITIVE).sqrt(),
                    soc_det(z).max(f64::MIN_POSITIVE).sqrt(),
                );
                let beta = (ds / dz).sqrt();
                let sb = [s[0] / ds, s[1] / ds, s[2] / ds];
                let zb = [z[0] / dz, z[1] / dz, z[2] / dz];
                let dot = sb[0] * zb[0] + sb[1] * zb[1] + sb[2] * zb[2];
                let gam = ((1.0 + dot) / 2.0).sqrt();
                let w = [
                    (sb[0] + zb[0]) / (2.0 * gam),
                    (sb[1] - zb[1]) / (2.0 * gam),
                    (sb[2] - zb[2]) / (2.0 * gam),
                ];
                let c = (2.0 * (w[0] + 1.0)).sqrt();
                let v = [(w[0] + 1.0) / c, w[1] / c, w[2] / c];
                // G⁻¹ = (2 (Jv)(Jv)ᵀ − J) / β.
                let jv = [v[0], -v[1], -v[2]];
                for a in 0..3 {
                    for b in 0..3 {
                        let j = if a == b {
                            if a == 0 { 1.0 } else { -1.0 }
                        } else {
                            0.0
                        };
                        out.g[3 * a + b] = beta * (2.0 * v[a] * v[b] - j);
                        out.g_inv[3 * a + b] = (2.0 * jv[a] * jv[b] - j) / beta;
                    }
                }
                out.lambda = mat3_vec(&out.g, z);
            }
        }
        out
    }

    /// `y = G x` (`inverse`: `G⁻¹ x`) for a block of dimension `d`.
    pub fn apply(&self, inverse: bool, x: &[f64], y: &mut [f64]) {
        let m = if inverse { &self.g_inv } else { &self.g };
        if x.len() == 1 {
            y[0] = m[0] * x[0];
        } else {
            y.copy_from_slice(&mat3_vec(m, x));
        }
    }

    /// The entries of `G²` (row-major `d × d`), the block the cone adds to the KKT matrix.
    pub fn g_squared(&self, d: usize) -> [f64; 9] {
        let mut out = [0.0; 9];
        for a in 0..d {
            for b in 0..d {
                out[a * d + b] = (0..d).map(|c| self.g[a * d + c] * self.g[c * d + b]).sum();
            }
        }
        out
    }
}

fn mat3_vec(m: &[f64; 9], x: &[f64]) -> [f64; 3] {
    std::array::from_fn(|a| m[3 * a] * x[0] + m[3 * a + 1] * x[1] + m[3 * a + 2] * x[2])
}

/// The Jordan product `x ∘ y` of one block.
pub(crate) fn jordan(x: &[f64], y: &[f64], out: &mut [f64]) {
    if x.len() == 1 {
        out[0] = x[0] * y[0];
    } else {
        out[0] = x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
        out[1] = x[0] * y[1] + y[0] * x[1];
        out[2] = x[0] * y[2] + y[0] * x[2];
    }
}

/// `u` with `λ ∘ u = r` for an interior `λ` of one block.
pub(crate) fn jordan_solve(lambda: &[f64], r: &[f64], out: &mut [f64]) {
    if lambda.len() == 1 {
        out[0] = r[0] / lambda[0];
    } else {
        let l = lambda;
        let u0 = (l[0] * r[0] - l[1] * r[1] - l[2] * r[2]) / soc_det(l);
        out[0] = u0;
        out[1] = (r[1] - u0 * l[1]) / l[0];
        out[2] = (r[2] - u0 * l[2]) / l[0];
    }
}

/// The largest `α ≤ α_max` with `x + α d` in the cone (`x` interior); `α_max` when the ray
/// never leaves it (thesis §4.14.3).
pub(crate) fn max_step(kind: Kind, x: &[f64], d: &[f64], alpha_max: f64) -> f64 {
    match kind {
        Kind::Free => alpha_max,
        Kind::NonNeg => {
            if d[0] < 0.0 {
                alpha_max.min(-x[0] / d[0])
            } else {
                alpha_max
            }
        }
        Kind::Soc => {
            // det(x + αd) = a α² + 2 b α + c, c > 0: the first positive root is where the
            // ray crosses the boundary.
            let a = soc_det(d);
            let b = x[0] * d[0] - x[1] * d[1] - x[2] * d[2];
            let c = soc_det(x).max(0.0);
            let mut alpha = alpha_max;
            if d[0] < 0.0 {
                alpha = alpha.min(-x[0] / d[0]);
            }
            let root = if a.abs() <= 1e-15 * (b.abs() + c) {
                if b < 0.0 {
                    -c / (2.0 * b)
                } else {
                    f64::INFINITY
                }
            } else {
                let disc = b * b - a * c;
                if disc < 0.0 {
                    f64::INFINITY
                } else {
                    // Both roots, computed without cancellation.
                    let q = -(b + b.signum() * disc.sqrt());
                    let (r1, r2) = (q / a, if q != 0.0 { c / q } else { f64::INFINITY });
                    [r1, r2]
                        .into_iter()
                        .filter(|r| *r > 0.0)
                        .fold(f64::INFINITY, f64::min)
                }
            };
            alpha.min(root)
        }
    }
}

/// The smallest `t` with `x + t e` in the closed cone (≤ 0 when `x` is interior): `−x₀` for
/// `ℝ₊`, `‖x₁‖ − x₀` for the second-order cone.
pub(crate) fn distance_to_interior(kind: Kind, x: &[f64]) -> f64 {
    match kind {
        Kind::Free => f64::NEG_INFINITY,
        Kind::NonNeg => -x[0],
        Kind::Soc => x[1].hypot(x[2]) - x[0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soc_scaling_maps_z_and_s_to_the_same_point() {
        let s = [2.0, 0.5, -1.0];
        let z = [1.5, -0.3, 0.7];
        let sc = Scaling::new(Kind::Soc, &s, &z);
        let mut ginv_s = [0.0; 3];
        sc.apply(true, &s, &mut ginv_s);
        for i in 0..3 {
            assert!(
                (ginv_s[i] - sc.lambda[i]).abs() < 1e-12,
                "{ginv_s:?} {:?}",
                sc.lambda
            );
        }
        // G G⁻¹ = I and G² z = s.
        let g2 = sc.g_squared(3);
        let g2z = mat3_vec(&g2, &z);
        for i in 0..3 {
            assert!((g2z[i] - s[i]).abs() < 1e-12);
            let mut e = [0.0; 3];
            e[i] = 1.0;
            let mut t = [0.0; 3];
            sc.apply(true, &e, &mut t);
            let back = mat3_vec(&sc.g, &t);
            assert!((back[i] - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn jordan_solve_inverts_the_product() {
        let l = [2.0, 0.3, -0.4];
        let u = [0.7, -1.1, 0.2];
        let mut r = [0.0; 3];
        jordan(&l, &u, &mut r);
        let mut back = [0.0; 3];
        jordan_solve(&l, &r, &mut back);
        for i in 0..3 {
            assert!((back[i] - u[i]).abs() < 1e-12);
        }
    }

    #[test]
    fn soc_step_lands_on_the_boundary() {
        let x = [1.0, 0.0, 0.0];
        let d = [-1.0, 1.0, 0.0];
        let a = max_step(Kind::Soc, &x, &d, 10.0);
        // (1 − α, α, 0) on the boundary at α = ½.
        assert!((a - 0.5).abs() < 1e-14);
        assert_eq!(max_step(Kind::Soc, &x, &[1.0, 0.5, 0.0], 3.0), 3.0);
    }
}
