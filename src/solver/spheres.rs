//! The rows of a sphere contact rebuilt from its normal alone (issue 16's matrix-free
//! blocks, as the GPU's resident step has them): 3 values per block in the CPU kernel
//! instead of the 21 of [`super::rows::Compact`].
//!
//! A contact between spheres `A` and `B` (normal `n` from `A` to `B`, the frame `F = (n, t1,
//! t2)` with the tangents by the simulator's rule, [`tangents`]) has the linear rows `−F` on
//! `A` and `F` on `B`, and the angular rows `∓(r_s × f_i)` with the lever arm `r_s = ±R_s n`
//! along the normal, so, scaled by the body's `I^{-1/2}` (one value `ι` for a sphere's
//! inertia), the world-frame angular rows of both sides are `h_1 = −ρ_s t2` and `h_2 = ρ_s t1`
//! (`n × t1 = t2`, `n × t2 = −t1`), none for the normal, with `ρ_s = R_s ι_s` a value per
//! body. The system's angular rows are in the body frame (`Rᵀ h`); the kernel keeps each
//! sphere's angular velocity `w̃` in the world frame instead (`R w̃`), which leaves `J̃ J̃ᵀ`
//! and so every iterate as it was: the rows never need the orientation.
//!
//! So the kernel stores `n` per block and `σ = √m⁻¹` and `ρ` per body, and rebuilds the
//! rows in registers. [`levers`] decides from the system's rows whether every block is such
//! a contact, and finds `ρ`: per body, the orthogonal map `Q` that takes its first block's
//! body-frame angular rows to `−ρ t2` and `ρ t1`, then checks that it does so for each of
//! its blocks, to rounding. A block with one body is stored with that body on the side its
//! linear rows say (`−F`: the first, `F`: the second), the other side the ground.

use nalgebra::{Matrix3, Vector3};
use rayon::prelude::*;

use super::lanes::{L, Lanes, add, mul, mul_add, sub};
use super::rows::{Compact, Operands, Rows, Scales, Velocities, block_scales, padded_rows};
use crate::problem::operator::FactoredOperator;
use crate::problem::real::Real;

/// How far a rebuilt row may lie from the system's, relative to its size: rounding.
const TOLERANCE: f64 = 1e-12;

/// The tangents `(t1, t2)` of the normals `n` per lane, by the simulator's rule
/// (`sim::joint::tangent_frame`): `t1 = n × e / ‖n × e‖` with `e = x` where `|n_x| < 0.6`,
/// else `e = y`; `t2 = n × t1`. Zero tangents for a zero normal.
#[inline(always)]
pub(crate) fn tangents<T: Real>(n: &[Lanes<T>; 3]) -> ([Lanes<T>; 3], [Lanes<T>; 3]) {
    let [x, y, z] = *n;
    let limit = T::from_f64(0.6);
    let mut t1 = [[T::ZERO; L]; 3];
    for l in 0..L {
        let (a, b, c) = if x[l].abs() < limit {
            (T::ZERO, z[l], T::ZERO - y[l])
        } else {
            (T::ZERO - z[l], T::ZERO, x[l])
        };
        // Zero for a zero normal (a group's padding), whose rows are zero.
        let d = a * a + b * b + c * c;
        let inv = if d > T::ZERO {
            T::ONE / d.sqrt()
        } else {
            T::ZERO
        };
        t1[0][l] = a * inv;
        t1[1][l] = b * inv;
        t1[2][l] = c * inv;
    }
    let t2 = [
        sub(mul(y, t1[2]), mul(z, t1[1])),
        sub(mul(z, t1[0]), mul(x, t1[2])),
        sub(mul(x, t1[1]), mul(y, t1[0])),
    ];
    (t1, t2)
}

/// `a · b` per lane (a function, not a closure: see [`super::kernel`]'s notes on dispatch).
#[inline(always)]
fn dot<T: Real>(a: &[Lanes<T>; 3], b: &[Lanes<T>; 3]) -> Lanes<T> {
    mul_add(mul_add(mul(a[0], b[0]), a[1], b[1]), a[2], b[2])
}

/// A sphere contact by its normal: `n` per lane (3 values per block); the sides' `σ` and
/// `ρ` are the bodies' ([`Operands`]), the tangents rebuilt once per group.
pub(crate) struct Sphere;

impl<T: Real> Rows<T> for Sphere {
    type Group = [Lanes<T>; 3];
    const VALUES: u64 = 3;
    const LINEAR: bool = true;
    const LEVERS: bool = true;
    const ZERO: Self::Group = [[T::ZERO; L]; 3];
    /// The tangents `(t1, t2)`.
    type Rebuilt = ([Lanes<T>; 3], [Lanes<T>; 3]);

    #[inline(always)]
    fn rebuild(n: &Self::Group) -> Self::Rebuilt {
        tangents(n)
    }

    fn encode(full: &[f64; 36], _: &Scales, group: &mut Self::Group, l: usize) {
        let (frame, _) = frame(full).expect("a sphere contact's rows ([`levers`])");
        for c in 0..3 {
            group[c][l] = T::from_f64(frame[0][c]);
        }
    }

    fn flipped(full: &[f64; 36]) -> bool {
        frame(full).is_some_and(|(_, flipped)| flipped)
    }

    /// `F (σ₁ w̃₁ − σ₀ w̃₀)` plus the angular rows `(0, −ρ_s t2, ρ_s t1)` times each side's
    /// angular `w̃`.
    #[inline(always)]
    fn times(n: &Self::Group, sc: &Operands<T, Self::Rebuilt>, w: &Velocities<T>) -> [Lanes<T>; 3] {
        let (t1, t2) = sc.rebuilt;
        // Components written out, no loop over them: LLVM vectorizes such a loop across
        // its 3 components (masked gathers and scatters) instead of across the lanes.
        let dv = [
            relative(&sc.sigma, w, 0),
            relative(&sc.sigma, w, 1),
            relative(&sc.sigma, w, 2),
        ];
        let om = [
            turning(&sc.rho, w, 0),
            turning(&sc.rho, w, 1),
            turning(&sc.rho, w, 2),
        ];
        [
            dot(n, &dv),
            sub(dot(&t1, &dv), dot(&t2, &om)),
            add(dot(&t2, &dv), dot(&t1, &om)),
        ]
    }

    /// Linear: `∓σ_s Fᵀ g`; angular: `ρ_s (t1 g_2 − t2 g_1)`.
    #[inline(always)]
    fn transpose_times(
        n: &Self::Group,
        sc: &Operands<T, Self::Rebuilt>,
        g: &[Lanes<T>; 3],
    ) -> Velocities<T> {
        let (t1, t2) = sc.rebuilt;
        // Components written out, as in `times`.
        let x = [
            linear(n, &t1, &t2, g, 0),
            linear(n, &t1, &t2, g, 1),
            linear(n, &t1, &t2, g, 2),
        ];
        let y = [
            angular_of(&t1, &t2, g, 0),
            angular_of(&t1, &t2, g, 1),
            angular_of(&t1, &t2, g, 2),
        ];
        let (s, r) = (&sc.sigma, &sc.rho);
        [
            [
                sub([T::ZERO; L], mul(s[0], x[0])),
                sub([T::ZERO; L], mul(s[0], x[1])),
                sub([T::ZERO; L], mul(s[0], x[2])),
                mul(r[0], y[0]),
                mul(r[0], y[1]),
                mul(r[0], y[2]),
            ],
            [
                mul(s[1], x[0]),
                mul(s[1], x[1]),
                mul(s[1], x[2]),
                mul(r[1], y[0]),
                mul(r[1], y[1]),
                mul(r[1], y[2]),
            ],
        ]
    }
}

/// Component `c` of `σ₁ w̃₁ − σ₀ w̃₀` (linear).
#[inline(always)]
fn relative<T: Real>(sigma: &[Lanes<T>; 2], w: &Velocities<T>, c: usize) -> Lanes<T> {
    sub(mul(sigma[1], w[1][c]), mul(sigma[0], w[0][c]))
}

/// Component `c` of `ρ₀ w̃₀ + ρ₁ w̃₁` (angular).
#[inline(always)]
fn turning<T: Real>(rho: &[Lanes<T>; 2], w: &Velocities<T>, c: usize) -> Lanes<T> {
    mul_add(mul(rho[0], w[0][3 + c]), rho[1], w[1][3 + c])
}

/// Component `c` of `Fᵀ g`.
#[inline(always)]
fn linear<T: Real>(
    n: &[Lanes<T>; 3],
    t1: &[Lanes<T>; 3],
    t2: &[Lanes<T>; 3],
    g: &[Lanes<T>; 3],
    c: usize,
) -> Lanes<T> {
    mul_add(mul_add(mul(n[c], g[0]), t1[c], g[1]), t2[c], g[2])
}

/// Component `c` of `t1 g_2 − t2 g_1`.
#[inline(always)]
fn angular_of<T: Real>(
    t1: &[Lanes<T>; 3],
    t2: &[Lanes<T>; 3],
    g: &[Lanes<T>; 3],
    c: usize,
) -> Lanes<T> {
    sub(mul(t1[c], g[2]), mul(t2[c], g[1]))
}

/// A block's frame `F` (rows `n`, `t1`, `t2`) if its padded rows `full` are those of a
/// contact in the frame of the tangent rule ([`tangents`]) with the linear rows `−F` on the
/// first body and `F` on the second; with whether its one body (side 0 of `full`) has `F`,
/// so that the kernel stores it as the second.
fn frame(full: &[f64; 36]) -> Option<([[f64; 3]; 3], bool)> {
    let linear = |s: usize| -> [[f64; 3]; 3] {
        std::array::from_fn(|i| std::array::from_fn(|c| full[(3 * s + i) * 6 + c]))
    };
    let neg = |f: [[f64; 3]; 3]| f.map(|r| r.map(|x| -x));
    let second = linear(1);
    if second.iter().flatten().any(|&x| x != 0.0) {
        return ruled(&second).then_some((second, false));
    }
    let first = linear(0);
    if ruled(&neg(first)) {
        Some((neg(first), false))
    } else {
        ruled(&first).then_some((first, true))
    }
}

/// Whether `f`'s first row is a unit normal and its other two its tangents by the rule.
fn ruled(f: &[[f64; 3]; 3]) -> bool {
    let n: [Lanes<f64>; 3] = std::array::from_fn(|c| [f[0][c]; L]);
    let (t1, t2) = tangents(&n);
    let unit = (f[0].iter().map(|x| x * x).sum::<f64>() - 1.0).abs() <= TOLERANCE;
    unit && (0..3)
        .all(|c| (t1[c][0] - f[1][c]).abs() <= TOLERANCE && (t2[c][0] - f[2][c]).abs() <= TOLERANCE)
}

/// The scaled body-frame angular parts of the tangent rows of side `s` of `full`.
fn angular(full: &[f64; 36], scale: &Scales, s: usize) -> [[f64; 3]; 2] {
    std::array::from_fn(|i| {
        std::array::from_fn(|c| full[(3 * s + i + 1) * 6 + 3 + c] * scale[s][3 + c])
    })
}

/// A body's map `Q` from its body frame to the world's, and its `ρ`.
type Lever = (Matrix3<f64>, f64);

/// `ρ` of every body of `f`, if every block of `f` is a sphere contact whose rows the kernel
/// can rebuild from its normal ([`Sphere`]); `None` otherwise.
pub(crate) fn levers(f: &FactoredOperator) -> Option<Vec<f64>> {
    let blocks = f.offsets().len() - 1;
    // Every block fits the compact form in the rule's frame; then each body's map from its
    // first side (`2 k + s`), and every side of it checked against that map.
    let fits = (0..blocks)
        .into_par_iter()
        .with_min_len(crate::PAR_MIN_ITEMS)
        .all(|k| {
            let full = padded_rows(f, k);
            let bodies = f.block_bodies(k).len();
            Compact::fits(&full, &block_scales(f, k), bodies) && frame(&full).is_some()
        });
    if !fits {
        return None;
    }
    let mut first = vec![usize::MAX; f.bodies()];
    for k in 0..blocks {
        for (s, &b) in f.block_bodies(k).iter().enumerate() {
            if first[b] == usize::MAX {
                first[b] = 2 * k + s;
            }
        }
    }
    let maps: Vec<Option<Lever>> = first
        .par_iter()
        .with_min_len(crate::PAR_MIN_ITEMS)
        .map(|&at| {
            (at != usize::MAX)
                .then(|| lever(f, at / 2, at % 2))
                .flatten()
        })
        .collect();
    let consistent = (0..blocks)
        .into_par_iter()
        .with_min_len(crate::PAR_MIN_ITEMS)
        .all(|k| {
            let full = padded_rows(f, k);
            let scale = block_scales(f, k);
            let (frame, _) = frame(&full).expect("checked above");
            f.block_bodies(k).iter().enumerate().all(|(s, &b)| {
                maps[b].is_some_and(|m| maps_to_rule(&m, &angular(&full, &scale, s), &frame))
            })
        });
    consistent.then(|| maps.iter().map(|m| m.map_or(0.0, |(_, rho)| rho)).collect())
}

/// The map and `ρ` of the body on side `s` of block `k`, from that side's angular rows `g_1`,
/// `g_2` (`ρ = ‖g_1‖`, `Q` taking `−g_1/ρ` to `t2`, `g_2/ρ` to `t1` and their product to
/// `−n`); the identity for a body without angular rows. `None` if `g_1`, `g_2` are not
/// orthogonal of one length.
fn lever(f: &FactoredOperator, k: usize, s: usize) -> Option<Lever> {
    lever_of(&padded_rows(f, k), &block_scales(f, k), s)
}

/// [`lever`] of side `s` of the padded rows `full` with column scales `scale`.
fn lever_of(full: &[f64; 36], scale: &Scales, s: usize) -> Option<Lever> {
    let [g1, g2] = angular(full, scale, s).map(Vector3::from);
    let [n, t1, t2] = frame(full)?.0.map(Vector3::from);
    let rho = g1.norm();
    if rho == 0.0 {
        return (g2.norm() == 0.0).then_some((Matrix3::identity(), 0.0));
    }
    let (u1, u2) = (-g1 / rho, g2 / rho);
    if (u2.norm() - 1.0).abs() > TOLERANCE || u1.dot(&u2).abs() > TOLERANCE {
        return None;
    }
    let q = t2 * u1.transpose() + t1 * u2.transpose() - n * u1.cross(&u2).transpose();
    Some((q, rho))
}

/// Whether the map `(q, ρ)` takes the angular rows `g` of a block in frame `frame` to
/// `−ρ t2` and `ρ t1`, to rounding.
fn maps_to_rule((q, rho): &Lever, g: &[[f64; 3]; 2], frame: &[[f64; 3]; 3]) -> bool {
    let h1 = q * Vector3::from(g[0]) + *rho * Vector3::from(frame[2]);
    let h2 = q * Vector3::from(g[1]) - *rho * Vector3::from(frame[1]);
    let tol = TOLERANCE * rho.max(f64::MIN_POSITIVE);
    h1.amax() <= tol && h2.amax() <= tol
}

#[cfg(test)]
mod tests {
    use nalgebra::Rotation3;

    use super::*;
    use crate::solver::rows::{Full, scales};

    #[test]
    fn the_tangents_are_the_simulators_rule() {
        for n in [
            [0.0, 0.0, 1.0],
            [0.0, 0.0, -1.0],
            [1.0, 0.0, 0.0],
            [0.59, 0.8, 0.1],
            [-0.61, 0.3, -0.7],
            [0.36, -0.48, 0.8],
        ] {
            let n = Vector3::from(n).normalize();
            let (t1, t2) = crate::sim::joint::tangent_frame(&n);
            let lanes: [Lanes<f64>; 3] = std::array::from_fn(|c| [n[c]; L]);
            let (a, b) = tangents(&lanes);
            let lanes32: [Lanes<f32>; 3] = std::array::from_fn(|c| [n[c] as f32; L]);
            let (a32, b32) = tangents(&lanes32);
            for c in 0..3 {
                assert!((a[c][0] - t1[c]).abs() <= 1e-15 && (b[c][0] - t2[c]).abs() <= 1e-15);
                assert!((f64::from(a32[c][3]) - t1[c]).abs() <= 1e-6);
                assert!((f64::from(b32[c][3]) - t2[c]).abs() <= 1e-6);
            }
            assert!(ruled(&[n.into(), t1.into(), t2.into()]));
            assert!(!ruled(&[n.into(), t2.into(), t1.into()]));
        }
        // Padding: a zero normal has zero tangents (no NaN).
        let (a, b) = tangents(&[[0.0f64; L]; 3]);
        assert!(a.iter().chain(&b).flatten().all(|&x| x == 0.0));
    }

    /// The padded rows of a contact between spheres of radii `radius` at orientations `rot`
    /// (side 0 the first, `−F`), normal `n` from the first to the second, frame by the
    /// rule; angular rows in the body frames, as the simulator writes them.
    fn contact(n: Vector3<f64>, radius: [f64; 2], rot: [Rotation3<f64>; 2]) -> [f64; 36] {
        let (t1, t2) = crate::sim::joint::tangent_frame(&n);
        let frame = [n, t1, t2];
        let mut full = [0.0; 36];
        for s in 0..2 {
            let (sign, r) = if s == 0 {
                (-1.0, n * radius[0])
            } else {
                (1.0, -n * radius[1])
            };
            for (i, e) in frame.iter().enumerate() {
                let ang = rot[s].transpose() * r.cross(e);
                for c in 0..3 {
                    full[(3 * s + i) * 6 + c] = sign * e[c];
                    full[(3 * s + i) * 6 + 3 + c] = sign * ang[c];
                }
            }
        }
        full
    }

    #[test]
    fn sphere_rows_act_as_the_body_frame_rows_with_world_angular_velocities() {
        let rot = [
            Rotation3::from_euler_angles(0.3, -1.1, 2.0),
            Rotation3::from_euler_angles(-0.7, 0.4, 0.2),
        ];
        let (radius, inertia) = ([0.5, 0.2], [0.1, 0.016]);
        let scale = scales(&[
            [
                4.0,
                4.0,
                4.0,
                1.0 / inertia[0],
                1.0 / inertia[0],
                1.0 / inertia[0],
            ],
            [
                25.0,
                25.0,
                25.0,
                1.0 / inertia[1],
                1.0 / inertia[1],
                1.0 / inertia[1],
            ],
        ]);
        // Two contacts of the same bodies with different normals: one map per body.
        let normals = [
            Vector3::new(0.36, -0.48, 0.8),
            Vector3::new(-0.8, 0.1, 0.3).normalize(),
        ];
        let levers: Vec<[Lever; 2]> = normals
            .iter()
            .map(|&n| {
                let full = contact(n, radius, rot);
                std::array::from_fn(|s| lever_of(&full, &scale, s).expect("a sphere's rows"))
            })
            .collect();
        for (k, &n) in normals.iter().enumerate() {
            let full = contact(n, radius, rot);
            assert!(Compact::fits(&full, &scale, 2));
            assert_eq!(frame(&full).map(|(_, flipped)| flipped), Some(false));
            for s in 0..2 {
                // The first contact's map, and `ρ = R ι`.
                let first = levers[0][s];
                assert!((first.1 - radius[s] / inertia[s].sqrt()).abs() < 1e-14);
                assert!(maps_to_rule(
                    &first,
                    &angular(&full, &scale, s),
                    &frame(&full).unwrap().0
                ));
                assert!((levers[k][s].1 - first.1).abs() < 1e-14);
            }
            let (mut fg, mut sg) = (<Full as Rows<f64>>::ZERO, <Sphere as Rows<f64>>::ZERO);
            Full::encode(&full, &scale, &mut fg, 0);
            Sphere::encode(&full, &scale, &mut sg, 0);
            let sc = Operands {
                sigma: std::array::from_fn(|s| [scale[s][0]; L]),
                rho: std::array::from_fn(|s| [levers[0][s].1; L]),
                rebuilt: <Sphere as Rows<f64>>::rebuild(&sg),
            };
            let ones = Operands {
                sigma: [[1.0; L]; 2],
                rho: [[0.0; L]; 2],
                rebuilt: (),
            };
            // Body-frame velocities for the full rows, world-frame (`Q w`) for the sphere's.
            let body: Velocities<f64> = std::array::from_fn(|s| {
                std::array::from_fn(|c| [0.3 * c as f64 - 0.7 * s as f64 + 0.1; L])
            });
            let mut world = body;
            for s in 0..2 {
                let q = levers[0][s].0;
                for i in 0..3 {
                    world[s][3 + i] = [(0..3).map(|j| q[(i, j)] * body[s][3 + j][0]).sum(); L];
                }
            }
            let (uf, us) = (
                Full::times(&fg, &ones, &body),
                Sphere::times(&sg, &sc, &world),
            );
            for i in 0..3 {
                assert!(
                    (uf[i][0] - us[i][0]).abs() < 1e-13,
                    "{k} {i}: {uf:?} {us:?}"
                );
            }
            let g = [[0.9; L], [-0.4; L], [0.25; L]];
            let (vf, vs) = (
                Full::transpose_times(&fg, &ones, &g),
                Sphere::transpose_times(&sg, &sc, &g),
            );
            for s in 0..2 {
                let q = levers[0][s].0;
                for i in 0..3 {
                    let rotated: f64 = (0..3).map(|j| q[(i, j)] * vf[s][3 + j][0]).sum();
                    assert!((vf[s][i][0] - vs[s][i][0]).abs() < 1e-13);
                    assert!((rotated - vs[s][3 + i][0]).abs() < 1e-13);
                }
            }
        }
    }

    #[test]
    fn one_body_blocks_take_the_side_of_their_rows_and_others_do_not_fit() {
        let n = Vector3::new(0.36, -0.48, 0.8);
        let rot = [Rotation3::identity(); 2];
        let full = contact(n, [0.5, 0.5], rot);
        // The first body alone (a wall as the second), then the second alone.
        let mut first = [0.0; 36];
        first[..18].copy_from_slice(&full[..18]);
        let mut second = [0.0; 36];
        second[..18].copy_from_slice(&full[18..]);
        assert_eq!(
            frame(&first).map(|(f, flipped)| (f[0], flipped)),
            Some((n.into(), false))
        );
        assert_eq!(
            frame(&second).map(|(f, flipped)| (f[0], flipped)),
            Some((n.into(), true))
        );
        assert!(<Sphere as Rows<f64>>::flipped(&second) && !<Sphere as Rows<f64>>::flipped(&first));
        // A frame off the rule does not fit.
        let mut swapped = full;
        for s in 0..2 {
            for c in 0..6 {
                swapped.swap((3 * s + 1) * 6 + c, (3 * s + 2) * 6 + c);
            }
        }
        assert!(frame(&swapped).is_none());
        // Nor does a body whose angular rows are not those of one rotation and lever.
        let scale = scales(&[[1.0, 1.0, 1.0, 2.0, 3.0, 2.0], [1.0; 6]]);
        let other = contact(Vector3::new(-0.8, 0.1, 0.3).normalize(), [0.5, 0.5], rot);
        let g = angular(&other, &scale, 0);
        if let Some(map) = lever_of(&full, &scale, 0) {
            assert!(!maps_to_rule(&map, &g, &frame(&other).unwrap().0));
        }
        assert!(lever_of(&full, &scales(&[[1.0; 6], [1.0; 6]]), 0).is_some());
    }
}
