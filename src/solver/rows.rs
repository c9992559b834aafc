//! The two encodings of a block's Jacobian in the CPU kernel (issue 16): the full rows, and
//! the compact rows of a sphere contact, expanded in registers.
//!
//! Every block is stored padded to 3 rows × 2 bodies; a row of body `s` is `[linear |
//! angular]` (linear velocity in the world frame, angular in the body frame). The kernel
//! stores the rows scaled by the bodies' masses, `J̃_{k,s} = J_{k,s} M_s^{-1/2}` (column
//! `c` times `√(M⁻¹_s)_c`, the scales of [`scales`]): then `J M⁻¹ Jᵀ = J̃ J̃ᵀ`, and the
//! kernel's body velocities are `w̃ = M^{1/2} w = J̃ᵀ γ`, with no `M⁻¹` in its loops.
//!
//! A contact between two bodies has the same linear rows on both sides up to the sign (the
//! contact frame: `−F` on the first body, `F` on the second); at a sphere the lever arm is
//! along the normal, so the normal row has no angular part. A rigid body's linear `M⁻¹` is
//! `m⁻¹ I`, one scale for its three linear columns. Such a block is determined by the frame
//! `F` (9 values) and the scaled tangent rows' angular parts of each body (2 × 6): 21 values
//! instead of 36; the scaled linear rows of body `s` are `∓σ_s F`, with `σ_s = √m_s⁻¹` the
//! body's linear scale, which the kernel holds per body ([`Rows::LINEAR`]). Joints and
//! contacts of other shapes keep the full rows. Where the frames follow the simulator's
//! tangent rule and the bodies are spheres, the normal alone ([`super::spheres`]).

use super::lanes::{L, Lanes, mul, mul_add, sub};
use crate::problem::operator::FactoredOperator;
use crate::problem::real::Real;

/// The body velocities a group's blocks gather: per side, 6 components of `L` lanes.
pub(crate) type Velocities<T> = [[Lanes<T>; 6]; 2];

/// One value per side and lane of a group.
pub(crate) type Sides<T> = [Lanes<T>; 2];

/// What a group's products use besides its stored rows, gathered or rebuilt once per group:
/// its sides' bodies' linear scales `σ = √m⁻¹` ([`Rows::LINEAR`]; else ones) and lever
/// scales `ρ` ([`Rows::LEVERS`], [`super::spheres`]; else zeros), and what the encoding
/// rebuilds of its rows in registers ([`Rows::rebuild`]).
#[derive(Clone, Copy)]
pub(crate) struct Operands<T, R> {
    pub sigma: Sides<T>,
    pub rho: Sides<T>,
    pub rebuilt: R,
}

/// A group of `L` blocks' Jacobian rows in the kernel's storage, lane `l` block `l` of the
/// group, and their products with the two bodies' sides.
pub(crate) trait Rows<T: Real>: Send + Sync + 'static {
    /// The stored rows of a group.
    type Group: Copy + Send + Sync;
    /// Values stored per block.
    const VALUES: u64;
    /// Whether the products need each side's linear scale `σ_s` (else they are passed
    /// ones).
    const LINEAR: bool;
    /// Whether the products need each side's lever scale `ρ_s` (else they are passed
    /// zeros).
    const LEVERS: bool;
    /// A group of zero rows (the padding of a group that is not full).
    const ZERO: Self::Group;
    /// What the products rebuild of a group's rows in registers, once per group.
    type Rebuilt: Copy;
    /// [`Rows::Rebuilt`] of `group`.
    fn rebuild(group: &Self::Group) -> Self::Rebuilt;
    /// Stores the padded rows `full` (side `s`, row `i`, column `c` at `(3 s + i) · 6 + c`)
    /// scaled by `scale` (side `s`, column `c`: [`scales`]) in lane `l` of `group`.
    fn encode(full: &[f64; 36], scale: &Scales, group: &mut Self::Group, l: usize);
    /// Whether the kernel stores the one body of the block `full` (its side 0) as its
    /// second side, the first the ground.
    fn flipped(_full: &[f64; 36]) -> bool {
        false
    }
    /// `J̃_{k,0} w̃_0 + J̃_{k,1} w̃_1` per lane, the sides' bodies' scales `sc`.
    fn times(
        group: &Self::Group,
        sc: &Operands<T, Self::Rebuilt>,
        w: &Velocities<T>,
    ) -> [Lanes<T>; 3];
    /// `J̃_{k,s}ᵀ g` of both sides per lane, the sides' bodies' scales `sc`.
    fn transpose_times(
        group: &Self::Group,
        sc: &Operands<T, Self::Rebuilt>,
        g: &[Lanes<T>; 3],
    ) -> Velocities<T>;
}

/// Per side of a block, the scale of each column of its rows: `√(M⁻¹_s)_c` of the side's
/// body (the diagonal of `M⁻¹` is never negative), 0 for a missing body (the ground).
pub(crate) type Scales = [[f64; 6]; 2];

/// The scales of a block on the bodies whose diagonals of `M⁻¹` are `inv_mass` (one or two).
pub(crate) fn scales(inv_mass: &[[f64; 6]]) -> Scales {
    let mut scale = [[0.0; 6]; 2];
    for (side, m) in scale.iter_mut().zip(inv_mass) {
        *side = m.map(f64::sqrt);
    }
    scale
}

/// The rows of block `k` padded to 3 rows × 2 bodies: side `s`, row `i`, column `c` at
/// `(3 s + i) · 6 + c`.
pub(crate) fn padded_rows(f: &FactoredOperator, k: usize) -> [f64; 36] {
    let d = f.offsets()[k + 1] - f.offsets()[k];
    let mut full = [0.0; 36];
    for s in 0..f.block_bodies(k).len() {
        let start = f.jac_start()[k] + s * d;
        for (i, row) in f.jac()[start..start + d].iter().enumerate() {
            full[(3 * s + i) * 6..][..6].copy_from_slice(row);
        }
    }
    full
}

/// The column scales of block `k`'s rows in `f` ([`scales`]).
pub(crate) fn block_scales(f: &FactoredOperator, k: usize) -> Scales {
    let bodies = f.block_bodies(k);
    let mut inv_mass = [[0.0; 6]; 2];
    for (m, &b) in inv_mass.iter_mut().zip(bodies) {
        *m = f.inv_mass()[b];
    }
    scales(&inv_mass[..bodies.len()])
}

/// The full padded rows, 36 values per block.
pub(crate) struct Full;

impl<T: Real> Rows<T> for Full {
    type Group = [Lanes<T>; 36];
    const VALUES: u64 = 36;
    const LINEAR: bool = false;
    const LEVERS: bool = false;
    const ZERO: Self::Group = [[T::ZERO; L]; 36];
    type Rebuilt = ();

    #[inline(always)]
    fn rebuild(_: &Self::Group) {}

    fn encode(full: &[f64; 36], scale: &Scales, group: &mut Self::Group, l: usize) {
        for (j, (v, &x)) in group.iter_mut().zip(full).enumerate() {
            v[l] = T::from_f64(x * scale[j / 18][j % 6]);
        }
    }

    #[inline(always)]
    fn times(b: &Self::Group, _: &Operands<T, Self::Rebuilt>, w: &Velocities<T>) -> [Lanes<T>; 3] {
        let mut u = [[T::ZERO; L]; 3];
        for (i, ui) in u.iter_mut().enumerate() {
            for s in 0..2 {
                for c in 0..6 {
                    *ui = mul_add(*ui, b[(3 * s + i) * 6 + c], w[s][c]);
                }
            }
        }
        u
    }

    #[inline(always)]
    fn transpose_times(
        b: &Self::Group,
        _: &Operands<T, Self::Rebuilt>,
        g: &[Lanes<T>; 3],
    ) -> Velocities<T> {
        let mut v = [[[T::ZERO; L]; 6]; 2];
        for (s, side) in v.iter_mut().enumerate() {
            for (c, vc) in side.iter_mut().enumerate() {
                for i in 0..3 {
                    *vc = mul_add(*vc, b[(3 * s + i) * 6 + c], g[i]);
                }
            }
        }
        v
    }
}

/// A sphere contact: the frame `F` (rows `n`, `t1`, `t2`; the first body's linear rows are
/// `−F`, the second's `F`, each times its linear scale), then the scaled angular parts of
/// the tangent rows of each body, 21 values per block.
pub(crate) struct Compact;

/// Offset of the angular parts of side `s`'s tangent rows in a compact block.
const fn angular(s: usize) -> usize {
    9 + 6 * s
}

impl Compact {
    /// Whether the padded rows `full` of a block on `bodies` (1 or 2) bodies with column
    /// scales `scale` are a sphere contact's: the second body's linear rows are exactly the
    /// negated first's, the normal row of each body has no angular part (at most `1e-12`
    /// times the largest entry of that body's rows: what rounding leaves of `r × n` with
    /// `r` along `n`), and each body's three linear columns have one scale.
    pub(crate) fn fits(full: &[f64; 36], scale: &Scales, bodies: usize) -> bool {
        // Straight loops over the fixed-size sides (iterator adaptors here cost several
        // times the arithmetic: this test runs once per block per solve).
        let side = |s: usize| -> &[f64; 18] {
            full[18 * s..18 * s + 18]
                .try_into()
                .expect("a side holds 3 rows of 6")
        };
        let (first, second) = (side(0), side(1));
        let mut linear_pair = true;
        for i in 0..3 {
            for c in 0..3 {
                linear_pair &= second[6 * i + c] == -first[6 * i + c];
            }
        }
        let normal_free = |rows: &[f64; 18]| {
            // The largest magnitude as `maxsd` computes it (the second operand where either
            // is NaN: a NaN entry is passed over, as `f64::max` does, and fails the test
            // below), in three independent chains: `f64::max`'s NaN handling made one
            // serial chain of 18 compares and blends, a third of this test's time.
            let mut scale = [0.0f64; 3];
            for (i, x) in rows.iter().enumerate() {
                let (a, s) = (x.abs(), &mut scale[i % 3]);
                *s = if a > *s { a } else { *s };
            }
            let scale = scale
                .into_iter()
                .fold(0.0, |m, s| if s > m { s } else { m });
            let mut free = true;
            for x in &rows[3..6] {
                free &= x.abs() <= 1e-12 * scale;
            }
            free
        };
        let one_mass = |s: &[f64; 6]| s[0] == s[1] && s[1] == s[2];
        (bodies == 1 || linear_pair)
            && normal_free(first)
            && (bodies == 1 || normal_free(second))
            && scale[..bodies].iter().all(one_mass)
    }
}

impl<T: Real> Rows<T> for Compact {
    type Group = [Lanes<T>; 21];
    const VALUES: u64 = 21;
    const LINEAR: bool = true;
    const LEVERS: bool = false;
    const ZERO: Self::Group = [[T::ZERO; L]; 21];
    type Rebuilt = ();

    #[inline(always)]
    fn rebuild(_: &Self::Group) {}

    fn encode(full: &[f64; 36], scale: &Scales, group: &mut Self::Group, l: usize) {
        for i in 0..3 {
            for c in 0..3 {
                group[3 * i + c][l] = T::from_f64(-full[i * 6 + c]);
            }
        }
        for s in 0..2 {
            for i in 1..3 {
                for c in 0..3 {
                    group[angular(s) + 3 * (i - 1) + c][l] =
                        T::from_f64(full[(3 * s + i) * 6 + 3 + c] * scale[s][3 + c]);
                }
            }
        }
    }

    /// `F (σ₁ w̃₁ − σ₀ w̃₀)` (linear parts) plus the tangent rows' scaled angular parts times
    /// each body's angular `w̃` (the normal row has none).
    #[inline(always)]
    fn times(b: &Self::Group, sc: &Operands<T, Self::Rebuilt>, w: &Velocities<T>) -> [Lanes<T>; 3] {
        let mut dv = [[T::ZERO; L]; 3];
        for (c, d) in dv.iter_mut().enumerate() {
            *d = sub(mul(sc.sigma[1], w[1][c]), mul(sc.sigma[0], w[0][c]));
        }
        let mut u = [[T::ZERO; L]; 3];
        for (i, ui) in u.iter_mut().enumerate() {
            *ui = mul(b[3 * i], dv[0]);
            *ui = mul_add(*ui, b[3 * i + 1], dv[1]);
            *ui = mul_add(*ui, b[3 * i + 2], dv[2]);
            if i > 0 {
                for s in 0..2 {
                    for c in 0..3 {
                        *ui = mul_add(*ui, b[angular(s) + 3 * (i - 1) + c], w[s][3 + c]);
                    }
                }
            }
        }
        u
    }

    /// Linear: `∓σ_s Fᵀ g`; angular: the tangent rows' scaled parts times `g_t`.
    #[inline(always)]
    fn transpose_times(
        b: &Self::Group,
        sc: &Operands<T, Self::Rebuilt>,
        g: &[Lanes<T>; 3],
    ) -> Velocities<T> {
        let mut v = [[[T::ZERO; L]; 6]; 2];
        for c in 0..3 {
            let mut x = mul(b[c], g[0]);
            x = mul_add(x, b[3 + c], g[1]);
            x = mul_add(x, b[6 + c], g[2]);
            v[1][c] = mul(sc.sigma[1], x);
            let x0 = mul(sc.sigma[0], x);
            for l in 0..L {
                v[0][c][l] = -x0[l];
            }
        }
        for (s, side) in v.iter_mut().enumerate() {
            for c in 0..3 {
                let a = angular(s) + c;
                side[3 + c] = mul_add(mul(b[a], g[1]), b[a + 3], g[2]);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sphere contact's padded rows: frame rows `e_i`, lever arms along the normal.
    fn sphere_contact() -> [f64; 36] {
        let frame = [[0.6, 0.0, 0.8], [0.8, 0.0, -0.6], [0.0, 1.0, 0.0]];
        // Angular parts of the tangent rows (any values: body frames are arbitrary).
        let ang = [
            [[0.1, -0.2, 0.3], [0.0, 0.4, -0.1]],
            [[-0.3, 0.2, 0.5], [0.2, 0.1, 0.0]],
        ];
        let mut full = [0.0; 36];
        for s in 0..2 {
            let sign = if s == 0 { -1.0 } else { 1.0 };
            for i in 0..3 {
                for c in 0..3 {
                    full[(3 * s + i) * 6 + c] = sign * frame[i][c];
                    if i > 0 {
                        full[(3 * s + i) * 6 + 3 + c] = ang[s][i - 1][c];
                    }
                }
            }
        }
        full
    }

    /// The scales of two bodies of different masses and inertias.
    fn two_bodies() -> Scales {
        scales(&[
            [4.0, 4.0, 4.0, 0.5, 0.3, 0.7],
            [0.25, 0.25, 0.25, 9.0, 1.0, 2.0],
        ])
    }

    #[test]
    fn compact_rows_act_as_the_full_ones() {
        let (full, scale) = (sphere_contact(), two_bodies());
        assert!(Compact::fits(&full, &scale, 2));
        let (mut f, mut c) = (<Full as Rows<f64>>::ZERO, <Compact as Rows<f64>>::ZERO);
        // The block in every lane but the last, which stays zero padding.
        for l in 0..L - 1 {
            Full::encode(&full, &scale, &mut f, l);
            Compact::encode(&full, &scale, &mut c, l);
        }
        // The scaled rows `J M^{-1/2}`.
        let scaled = |s: usize, i: usize, col: usize| full[(3 * s + i) * 6 + col] * scale[s][col];
        let w: Velocities<f64> = std::array::from_fn(|s| {
            std::array::from_fn(|col| {
                std::array::from_fn(|l| (s * 6 + col) as f64 - 0.3 * l as f64)
            })
        });
        let g: [Lanes<f64>; 3] =
            std::array::from_fn(|i| std::array::from_fn(|l| 1.5 - i as f64 + 0.25 * l as f64));
        let sigma = Operands {
            sigma: std::array::from_fn(|s| [scale[s][0]; L]),
            rho: [[0.0; L]; 2],
            rebuilt: (),
        };
        let (uf, uc) = (Full::times(&f, &sigma, &w), Compact::times(&c, &sigma, &w));
        let (vf, vc) = (
            Full::transpose_times(&f, &sigma, &g),
            Compact::transpose_times(&c, &sigma, &g),
        );
        for l in 0..L {
            let on = if l < L - 1 { 1.0 } else { 0.0 };
            for i in 0..3 {
                let want: f64 = (0..2)
                    .map(|s| {
                        (0..6)
                            .map(|col| scaled(s, i, col) * w[s][col][l])
                            .sum::<f64>()
                    })
                    .sum();
                for u in [uf[i][l], uc[i][l]] {
                    assert!((u - on * want).abs() < 1e-13, "{l} {i}: {u} {want}");
                }
            }
            for s in 0..2 {
                for col in 0..6 {
                    let want: f64 = (0..3).map(|i| scaled(s, i, col) * g[i][l]).sum();
                    for v in [vf[s][col][l], vc[s][col][l]] {
                        assert!((v - on * want).abs() < 1e-13, "{l} {s} {col}: {v} {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn other_blocks_do_not_fit() {
        let scale = two_bodies();
        let mut lever = sphere_contact();
        lever[3 + 1] = 0.05; // the normal row of a box corner has an angular part
        assert!(!Compact::fits(&lever, &scale, 2));
        let mut joint = sphere_contact();
        joint[6 * 3] = 0.5; // linear rows that are not opposite
        assert!(!Compact::fits(&joint, &scale, 2));
        assert!(
            Compact::fits(&joint, &scale, 1),
            "one body: only its own rows count"
        );
        // What rounding leaves of `r × n` with `r` along `n` fits; more does not, nor NaN.
        let mut rounded = sphere_contact();
        rounded[3 + 2] = 1e-13;
        assert!(Compact::fits(&rounded, &scale, 2));
        rounded[18 + 3] = -1e-11;
        assert!(!Compact::fits(&rounded, &scale, 2));
        let mut nan = sphere_contact();
        nan[3] = f64::NAN;
        assert!(!Compact::fits(&nan, &scale, 2));
        // A body whose linear columns have different masses.
        let mut anisotropic = scale;
        anisotropic[1][2] = 0.4;
        assert!(!Compact::fits(&sphere_contact(), &anisotropic, 2));
        assert!(Compact::fits(&sphere_contact(), &anisotropic, 1));
    }
}
