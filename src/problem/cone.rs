//! The cones of the constraint blocks and their Euclidean projections.
//!
//! A Coulomb cone `K_μ = {(γn, γt) : ‖γt‖ ≤ μ γn}` stores the normal component first, then the
//! two tangential ones. Its dual is `K_μ* = {(un, ut) : μ‖ut‖ ≤ un}` and its polar `K° = −K*`.

use serde::{Deserialize, Serialize};

use super::real::Real;

/// The cone `K_k` of one constraint block (DESIGN §1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Cone {
    /// An equality block (joint rows): `K = ℝ^dim`, `K* = {0}`, projection = identity.
    Bilateral {
        /// Number of rows of the block (1 to 3).
        dim: usize,
    },
    /// A frictionless contact row: `K = K* = ℝ₊`.
    Unilateral,
    /// A frictional contact (normal, tangent, tangent) with friction coefficient `mu ≥ 0`.
    Coulomb {
        /// Coulomb friction coefficient.
        mu: f64,
    },
}

impl Cone {
    /// Number of rows of the block.
    pub fn dim(&self) -> usize {
        match *self {
            Cone::Bilateral { dim } => dim,
            Cone::Unilateral => 1,
            Cone::Coulomb { .. } => 3,
        }
    }

    /// The friction coefficient of a Coulomb cone, `None` for the other cones.
    pub fn mu(&self) -> Option<f64> {
        match *self {
            Cone::Coulomb { mu } => Some(mu),
            _ => None,
        }
    }

    /// Replaces `x` (of length [`Cone::dim`]) by its Euclidean projection on `K`.
    pub fn project(&self, x: &mut [f64]) {
        match *self {
            Cone::Bilateral { .. } => {}
            Cone::Unilateral => x[0] = x[0].max(0.0),
            Cone::Coulomb { mu } => project_circular(x, mu),
        }
    }

    /// Replaces `x` by its Euclidean projection on the dual cone `K*`.
    pub fn project_dual(&self, x: &mut [f64]) {
        match *self {
            Cone::Bilateral { .. } => x.iter_mut().for_each(|v| *v = 0.0),
            Cone::Unilateral => x[0] = x[0].max(0.0),
            // K_μ* = {‖ut‖ ≤ un/μ}; for μ = 0 it is the half-space un ≥ 0.
            Cone::Coulomb { mu: 0.0 } => x[0] = x[0].max(0.0),
            Cone::Coulomb { mu } => project_circular(x, 1.0 / mu),
        }
    }

    /// Euclidean distance of `x` from `K`.
    pub fn distance(&self, x: &[f64]) -> f64 {
        let mut p = [0.0; 3];
        let p = &mut p[..x.len()];
        p.copy_from_slice(x);
        self.project(p);
        distance(x, p)
    }

    /// Euclidean distance of `x` from the dual cone `K*`.
    pub fn distance_dual(&self, x: &[f64]) -> f64 {
        let mut p = [0.0; 3];
        let p = &mut p[..x.len()];
        p.copy_from_slice(x);
        self.project_dual(p);
        distance(x, p)
    }

    /// The De Saxcé shift of the Coulomb model: `û = u + (μ‖u_t‖, 0, 0)`; no-op for the other
    /// cones.
    pub fn de_saxce_shift(&self, u: &mut [f64]) {
        if let Cone::Coulomb { mu } = *self {
            u[0] += mu * u[1].hypot(u[2]);
        }
    }
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Projection of `x = (n, t1, t2)` on the circular cone `{‖t‖ ≤ a n}`, `a ≥ 0` finite.
///
/// Three cases (the same as Siconos' `projectionOnCone`): inside the cone, `x` stays; inside
/// the polar cone (`a‖t‖ ≤ −n`), the projection is 0; otherwise it lands on the boundary at
/// `n' = (a‖t‖ + n)/(1 + a²)`, `t' = a n' t/‖t‖`. In `f64` for the problem, in the kernels'
/// precision for the CPU kernels ([`Real`]).
pub(crate) fn project_circular<T: Real>(x: &mut [T], a: T) {
    let n = x[0];
    let s = x[1].hypot(x[2]);
    // `n ≥ 0` too: with `a = 0` a negative normal and zero tangents also meet `s ≤ a n`.
    if s <= a * n && n >= T::ZERO {
        return;
    }
    if a * s <= -n {
        x.iter_mut().for_each(|v| *v = T::ZERO);
        return;
    }
    // Here s > 0: s = 0 falls in one of the two cases above.
    let n_new = (a * s + n) / (T::ONE + a * a);
    let scale = a * n_new / s;
    x[0] = n_new;
    x[1] = x[1] * scale;
    x[2] = x[2] * scale;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_cone() -> impl Strategy<Value = Cone> {
        prop_oneof![
            (1usize..=3).prop_map(|dim| Cone::Bilateral { dim }),
            Just(Cone::Unilateral),
            Just(Cone::Coulomb { mu: 0.0 }),
            (0.0f64..5.0).prop_map(|mu| Cone::Coulomb { mu }),
        ]
    }

    fn cone_and_points() -> impl Strategy<Value = (Cone, Vec<f64>, Vec<f64>)> {
        any_cone().prop_flat_map(|c| {
            let d = c.dim();
            (
                Just(c),
                proptest::collection::vec(-1e3f64..1e3, d),
                proptest::collection::vec(-1e3f64..1e3, d),
            )
        })
    }

    fn projected(c: &Cone, x: &[f64]) -> Vec<f64> {
        let mut p = x.to_vec();
        c.project(&mut p);
        p
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    proptest! {
        #[test]
        fn projection_is_idempotent((c, x, _) in cone_and_points()) {
            let p = projected(&c, &x);
            let pp = projected(&c, &p);
            for (a, b) in p.iter().zip(&pp) {
                prop_assert!((a - b).abs() <= 1e-12 * (1.0 + a.abs()));
            }
            prop_assert!(c.distance(&p) <= 1e-9 * (1.0 + dot(&p, &p).sqrt()));
        }

        #[test]
        fn projection_is_non_expansive((c, x, y) in cone_and_points()) {
            let px = projected(&c, &x);
            let py = projected(&c, &y);
            prop_assert!(distance(&px, &py) <= distance(&x, &y) * (1.0 + 1e-12) + 1e-9);
        }

        #[test]
        fn moreau_decomposition((c, x, _) in cone_and_points()) {
            // x = Π_K(x) + Π_K°(x) with Π_K°(x) = −Π_K*(−x), computed by the dual projection.
            let p = projected(&c, &x);
            let mut q: Vec<f64> = x.iter().map(|v| -v).collect();
            c.project_dual(&mut q);
            q.iter_mut().for_each(|v| *v = -*v);
            let scale = 1.0 + dot(&x, &x).sqrt();
            for i in 0..x.len() {
                prop_assert!((x[i] - p[i] - q[i]).abs() <= 1e-9 * scale);
            }
            prop_assert!(dot(&p, &q).abs() <= 1e-9 * scale * scale);
        }
    }

    #[test]
    fn frictionless_coulomb_projection_keeps_the_normal_non_negative() {
        // K_0 = ℝ₊ × {0}: a negative normal goes to 0 even when the tangents are exactly 0.
        let c = Cone::Coulomb { mu: 0.0 };
        assert_eq!(projected(&c, &[-1.0, 0.0, 0.0]), vec![0.0, 0.0, 0.0]);
        assert_eq!(projected(&c, &[-1.0, 0.5, 0.0]), vec![0.0, 0.0, 0.0]);
        assert_eq!(projected(&c, &[1.0, 0.0, 0.0]), vec![1.0, 0.0, 0.0]);
        assert_eq!(projected(&c, &[2.0, 3.0, 4.0]), vec![2.0, 0.0, 0.0]);
    }

    #[test]
    fn coulomb_projection_cases() {
        let c = Cone::Coulomb { mu: 0.5 };
        assert_eq!(projected(&c, &[2.0, 0.6, 0.8]), vec![2.0, 0.6, 0.8]);
        assert_eq!(projected(&c, &[-2.0, 0.6, 0.8]), vec![0.0, 0.0, 0.0]);
        // (0, 1, 0): n' = 0.5/1.25 = 0.4, t' = 0.5 · 0.4 = 0.2.
        let p = projected(&c, &[0.0, 1.0, 0.0]);
        assert!((p[0] - 0.4).abs() < 1e-15 && (p[1] - 0.2).abs() < 1e-15 && p[2] == 0.0);
        assert_eq!(c.distance_dual(&[1.0, 2.0, 0.0]), 0.0);
        assert!(c.distance_dual(&[1.0, 2.1, 0.0]) > 0.0);
    }
}
