//! The two encodings of a block's Jacobian in the CPU kernel (issue 16): the full rows, and
//! the compact rows of a sphere contact, expanded in registers.
//!
//! Every block is stored padded to 3 rows × 2 bodies; a row of body `s` is `[linear |
//! angular]` (linear velocity in the world frame, angular in the body frame). A contact
//! between two bodies has the same linear rows on both sides up to the sign (the contact
//! frame: `−F` on the first body, `F` on the second); at a sphere the lever arm is along
//! the normal, so the normal row has no angular part. Such a block is determined by the
//! frame `F` (9 values) and the tangent rows' angular parts of each body (2 × 6): 21 values
//! instead of 36. Joints and contacts of other shapes keep the full rows.

use crate::problem::real::Real;

/// A block's Jacobian rows in the kernel's storage: products with one body's side.
pub(crate) trait Rows<T: Real>: Send + Sync + 'static {
    /// One block's stored rows.
    type Block: Copy + Send + Sync;
    /// Values stored per block.
    const VALUES: u64;
    /// Values read per (block, body) pair by `Jᵀ γ`.
    const SIDE_VALUES: u64;
    /// The stored form of the padded rows `full` (side `s`, row `i`, column `c` at
    /// `(3 s + i) · 6 + c`).
    fn encode(full: &[f64; 36]) -> Self::Block;
    /// `J_{k,s} w` for the velocity `w` of side `s`.
    fn times(b: &Self::Block, s: usize, w: &[T; 6]) -> [T; 3];
    /// `J_{k,s}ᵀ g`.
    fn transpose_times(b: &Self::Block, s: usize, g: &[T; 3]) -> [T; 6];
}

/// The full padded rows, `[T; 36]`.
pub(crate) struct Full;

impl<T: Real> Rows<T> for Full {
    type Block = [T; 36];
    const VALUES: u64 = 36;
    const SIDE_VALUES: u64 = 18;

    fn encode(full: &[f64; 36]) -> [T; 36] {
        full.map(T::from_f64)
    }

    fn times(b: &[T; 36], s: usize, w: &[T; 6]) -> [T; 3] {
        std::array::from_fn(|i| {
            let row = &b[(3 * s + i) * 6..][..6];
            (0..6).fold(T::ZERO, |a, c| a + row[c] * w[c])
        })
    }

    fn transpose_times(b: &[T; 36], s: usize, g: &[T; 3]) -> [T; 6] {
        std::array::from_fn(|c| (0..3).fold(T::ZERO, |a, i| a + b[(3 * s + i) * 6 + c] * g[i]))
    }
}

/// A sphere contact: the frame `F` (rows `n`, `t1`, `t2`; the first body's linear rows are
/// `−F`, the second's `F`), then the angular parts of the tangent rows of each body,
/// `[T; 21]`.
pub(crate) struct Compact;

/// Offset of the angular parts of side `s`'s tangent rows in a compact block.
fn angular(s: usize) -> usize {
    9 + 6 * s
}

/// `−1` for the first body, `1` for the second.
fn sign<T: Real>(s: usize) -> T {
    if s == 0 { -T::ONE } else { T::ONE }
}

impl Compact {
    /// Whether the padded rows `full` of a block on `bodies` (1 or 2) bodies are a sphere
    /// contact's: the second body's linear rows are exactly the negated first's, and the
    /// normal row of each body has no angular part (at most `1e-12` times the largest entry
    /// of that body's rows: what rounding leaves of `r × n` with `r` along `n`).
    pub(crate) fn fits(full: &[f64; 36], bodies: usize) -> bool {
        let at = |s: usize, i: usize, c: usize| full[(3 * s + i) * 6 + c];
        let linear_pair = (0..3).all(|i| (0..3).all(|c| at(1, i, c) == -at(0, i, c)));
        let normal_free = (0..bodies).all(|s| {
            let scale = (0..3)
                .flat_map(|i| (0..6).map(move |c| at(s, i, c).abs()))
                .fold(0.0, f64::max);
            (3..6).all(|c| at(s, 0, c).abs() <= 1e-12 * scale)
        });
        (bodies == 1 || linear_pair) && normal_free
    }
}

impl<T: Real> Rows<T> for Compact {
    type Block = [T; 21];
    const VALUES: u64 = 21;
    const SIDE_VALUES: u64 = 15;

    fn encode(full: &[f64; 36]) -> [T; 21] {
        let mut b = [T::ZERO; 21];
        for i in 0..3 {
            for c in 0..3 {
                b[3 * i + c] = T::from_f64(-full[i * 6 + c]);
            }
        }
        for s in 0..2 {
            for i in 1..3 {
                for c in 0..3 {
                    b[angular(s) + 3 * (i - 1) + c] = T::from_f64(full[(3 * s + i) * 6 + 3 + c]);
                }
            }
        }
        b
    }

    fn times(b: &[T; 21], s: usize, w: &[T; 6]) -> [T; 3] {
        let a = &b[angular(s)..];
        std::array::from_fn(|i| {
            let linear = (0..3).fold(T::ZERO, |acc, c| acc + b[3 * i + c] * w[c]);
            let angular = if i == 0 {
                T::ZERO
            } else {
                (0..3).fold(T::ZERO, |acc, c| acc + a[3 * (i - 1) + c] * w[3 + c])
            };
            sign::<T>(s) * linear + angular
        })
    }

    fn transpose_times(b: &[T; 21], s: usize, g: &[T; 3]) -> [T; 6] {
        let a = &b[angular(s)..];
        std::array::from_fn(|c| {
            if c < 3 {
                sign::<T>(s) * (0..3).fold(T::ZERO, |acc, i| acc + b[3 * i + c] * g[i])
            } else {
                (1..3).fold(T::ZERO, |acc, i| acc + a[3 * (i - 1) + c - 3] * g[i])
            }
        })
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

    #[test]
    fn compact_rows_act_as_the_full_ones() {
        let full = sphere_contact();
        assert!(Compact::fits(&full, 2));
        let (f, c) = (
            <Full as Rows<f64>>::encode(&full),
            <Compact as Rows<f64>>::encode(&full),
        );
        let w = [0.3, -1.2, 0.7, 2.0, -0.5, 0.25];
        let g = [1.5, -0.25, 0.75];
        for s in 0..2 {
            let (a, b) = (Full::times(&f, s, &w), Compact::times(&c, s, &w));
            (0..3).for_each(|i| assert!((a[i] - b[i]).abs() < 1e-15, "{a:?} {b:?}"));
            let (a, b) = (
                Full::transpose_times(&f, s, &g),
                Compact::transpose_times(&c, s, &g),
            );
            (0..6).for_each(|i| assert!((a[i] - b[i]).abs() < 1e-15, "{a:?} {b:?}"));
        }
    }

    #[test]
    fn other_blocks_do_not_fit() {
        let mut lever = sphere_contact();
        lever[3 + 1] = 0.05; // the normal row of a box corner has an angular part
        assert!(!Compact::fits(&lever, 2));
        let mut joint = sphere_contact();
        joint[6 * 3] = 0.5; // linear rows that are not opposite
        assert!(!Compact::fits(&joint, 2));
        assert!(
            Compact::fits(&joint, 1),
            "one body: only its own rows count"
        );
    }
}
