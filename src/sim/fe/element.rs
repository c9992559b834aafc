//! The 4-node corotational linear-elastic tetrahedron.
//!
//! Linear shape functions give constant gradients `g_a` (`∇N_a`) over the element, and the
//! linear-elastic stiffness between nodes `a` and `b` is the 3 × 3 block
//! `K_ab = V (λ g_a g_bᵀ + μ g_b g_aᵀ + μ (g_a·g_b) I)` (Lamé parameters `λ`, `μ` from
//! Young's modulus and Poisson's ratio). The corotational formulation (Müller & Gross,
//! *Interactive virtual materials*, GI 2004, §4) measures the displacement in the element's
//! rotated frame: with `R` the rotation of the deformation gradient `F = D_s D_m⁻¹`, the
//! elastic force on node `a` is `−R Σ_b K_ab (Rᵀ x_b − X_b)` and the tangent stiffness is
//! `R K_ab Rᵀ` (the derivative of `R` is left out, as in the reference). `R` is the rotation
//! of the polar decomposition `F = R S` by the SVD `F = U Σ Vᵀ`, `R = U Vᵀ`, with the column
//! of `U` of the smallest singular value negated when `det(U Vᵀ) < 0` (an inverted element;
//! Irving, Teran & Fedkiw, *Invertible finite elements*, SCA 2004, §5).

use nalgebra::{Matrix3, Vector3};

type V3 = Vector3<f64>;
type M3 = Matrix3<f64>;

/// Linear elastic, isotropic material with optional Rayleigh damping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Material {
    /// Young's modulus `E`, Pa.
    pub young: f64,
    /// Poisson's ratio `ν` (in `(−1, 0.5)`).
    pub poisson: f64,
    /// Density, kg/m³.
    pub density: f64,
    /// Rayleigh damping `D = α M + β K`: `[α (1/s), β (s)]`.
    pub rayleigh: [f64; 2],
}

impl Material {
    /// The Lamé parameters `(λ, μ)`: `λ = E ν / ((1 + ν)(1 − 2ν))`, `μ = E / (2 (1 + ν))`.
    pub fn lame(&self) -> (f64, f64) {
        let (e, nu) = (self.young, self.poisson);
        (
            e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
            e / (2.0 * (1.0 + nu)),
        )
    }
}

/// One tetrahedron's rest data: nodes, volume and rest stiffness blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Tet {
    /// Node indices into the solid's nodes, positively oriented at rest.
    pub nodes: [usize; 4],
    /// Rest volume, m³.
    pub volume: f64,
    /// `D_m⁻¹` of the rest edges `[X₁ − X₀, X₂ − X₀, X₃ − X₀]`.
    dm_inv: M3,
    /// Rest stiffness blocks `K_ab`, row-major over `(a, b)`.
    k: [M3; 16],
}

impl Tet {
    /// The element on `nodes` at rest positions `rest`; `None` for a degenerate (flat)
    /// element. A negatively oriented element has two nodes swapped.
    pub fn new(mut nodes: [usize; 4], rest: &[V3], material: &Material) -> Option<Tet> {
        let dm = edges(&nodes, rest);
        let det = dm.determinant();
        let scale = (0..3).map(|c| dm.column(c).norm()).product::<f64>();
        if det.is_nan() || det.abs() <= 1e-12 * scale {
            return None;
        }
        let dm = if det < 0.0 {
            nodes.swap(2, 3);
            edges(&nodes, rest)
        } else {
            dm
        };
        let dm_inv = dm.try_inverse()?;
        let volume = det.abs() / 6.0;
        // ∇N_a for a = 1..3 are the rows of D_m⁻¹; ∇N_0 = −Σ of them.
        let mut g: [V3; 4] = std::array::from_fn(|a| match a {
            0 => V3::zeros(),
            _ => dm_inv.row(a - 1).transpose(),
        });
        g[0] = -(g[1] + g[2] + g[3]);
        let (lambda, mu) = material.lame();
        let k = std::array::from_fn(|ab| {
            let (ga, gb) = (g[ab / 4], g[ab % 4]);
            volume * (lambda * ga * gb.transpose() + mu * gb * ga.transpose())
                + M3::identity() * (volume * mu * ga.dot(&gb))
        });
        Some(Tet {
            nodes,
            volume,
            dm_inv,
            k,
        })
    }

    /// The rest stiffness block `K_ab`.
    pub fn block(&self, a: usize, b: usize) -> &M3 {
        &self.k[4 * a + b]
    }

    /// The rotation of the polar decomposition of the deformation gradient at positions `x`.
    pub fn rotation(&self, x: &[V3]) -> M3 {
        let f = edges(&self.nodes, x) * self.dm_inv;
        let svd = f.svd(true, true);
        let (Some(mut u), Some(v_t)) = (svd.u, svd.v_t) else {
            return M3::identity();
        };
        if (u * v_t).determinant() < 0.0 {
            let smallest = svd.singular_values.imin();
            u.column_mut(smallest).neg_mut();
        }
        u * v_t
    }

    /// The rotated-frame displacements `Rᵀ x_a − X_a` of the four nodes.
    pub fn displacements(&self, r: &M3, x: &[V3], rest: &[V3]) -> [V3; 4] {
        std::array::from_fn(|a| r.transpose() * x[self.nodes[a]] - rest[self.nodes[a]])
    }

    /// The elastic forces on the four nodes, `−R Σ_b K_ab u_b`, for rotated-frame
    /// displacements `u`.
    pub fn forces(&self, r: &M3, u: &[V3; 4]) -> [V3; 4] {
        std::array::from_fn(|a| -(r * (0..4).map(|b| self.block(a, b) * u[b]).sum::<V3>()))
    }

    /// The elastic energy `½ Σ_ab u_aᵀ K_ab u_b` of rotated-frame displacements `u`.
    pub fn energy(&self, u: &[V3; 4]) -> f64 {
        0.5 * (0..16)
            .map(|ab| u[ab / 4].dot(&(self.k[ab] * u[ab % 4])))
            .sum::<f64>()
    }
}

/// The edge matrix `[x₁ − x₀, x₂ − x₀, x₃ − x₀]` of `nodes` at positions `x`.
fn edges(nodes: &[usize; 4], x: &[V3]) -> M3 {
    let o = x[nodes[0]];
    M3::from_columns(&[x[nodes[1]] - o, x[nodes[2]] - o, x[nodes[3]] - o])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_tet() -> (Vec<V3>, Tet) {
        let rest = vec![V3::zeros(), V3::x(), V3::y(), V3::z()];
        let material = Material {
            young: 1e6,
            poisson: 0.3,
            density: 1000.0,
            rayleigh: [0.0, 0.0],
        };
        let tet = Tet::new([0, 1, 2, 3], &rest, &material).unwrap();
        (rest, tet)
    }

    #[test]
    fn stiffness_is_symmetric_and_annihilates_translations() {
        let (_, tet) = unit_tet();
        for a in 0..4 {
            let row: M3 = (0..4).map(|b| *tet.block(a, b)).sum();
            assert!(row.norm() < 1e-9, "rows of K sum to zero: {row}");
            for b in 0..4 {
                assert!((tet.block(a, b) - tet.block(b, a).transpose()).norm() < 1e-9);
            }
        }
        assert!((tet.volume - 1.0 / 6.0).abs() < 1e-15);
    }

    #[test]
    fn inverted_rest_element_is_reoriented_and_flat_one_refused() {
        let (rest, _) = unit_tet();
        let m = Material {
            young: 1.0,
            poisson: 0.0,
            density: 1.0,
            rayleigh: [0.0; 2],
        };
        let tet = Tet::new([0, 2, 1, 3], &rest, &m).unwrap();
        assert_eq!(tet.nodes, [0, 2, 3, 1]);
        let flat = [V3::zeros(), V3::x(), V3::y(), V3::new(1.0, 1.0, 0.0)];
        assert!(Tet::new([0, 1, 2, 3], &flat, &m).is_none());
    }

    #[test]
    fn stretch_gives_the_uniaxial_force() {
        // Stretch along x by ε with the lateral faces free: the rotation is the identity
        // and the forces are those of K u (the rotated displacement is the displacement).
        let (rest, tet) = unit_tet();
        let eps = 1e-3;
        let x: Vec<V3> = rest
            .iter()
            .map(|p| V3::new(p.x * (1.0 + eps), p.y, p.z))
            .collect();
        let r = tet.rotation(&x);
        assert!((r - M3::identity()).norm() < 1e-12);
        let u = tet.displacements(&r, &x, &rest);
        let f = tet.forces(&r, &u);
        let total: V3 = f.iter().sum();
        assert!(total.norm() < 1e-9);
        // Energy = ½ V ε:C:ε with ε = diag(eps, 0, 0): ½ V (λ + 2μ) eps².
        let (lambda, mu) = Material {
            young: 1e6,
            poisson: 0.3,
            density: 1000.0,
            rayleigh: [0.0; 2],
        }
        .lame();
        let want = 0.5 * tet.volume * (lambda + 2.0 * mu) * eps * eps;
        assert!((tet.energy(&u) - want).abs() < 1e-9 * want);
    }
}
