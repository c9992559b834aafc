//! The CPU kernel under AVX-512 (issue 16): [`Moves`] for `pulp`'s [`V4`], whose lane
//! operations with a branch per lane (the cone projection, the flush of tiny values, the
//! lane-wise maximum) are written in explicit vector operations with mask registers, and
//! the residual's sums of squares (`mul_add`) in explicit 512-bit ones: LLVM compiled
//! their lane loop in the measuring pass into 128-bit pieces and scalar products of
//! values it had spilled (`benches/RESULTS.md`, forty-fourth session).
//!
//! Compiled under AVX-512, LLVM keeps the plain lane loops of [`super::lanes`] for the
//! straight arithmetic (one 512-bit register per `f64` lane vector, and 32 registers
//! instead of AVX2's 16), but lowers their per-lane selects to scalar code with masked
//! single-lane moves and branches: the kernel ran 1.3–2.1× slower under `V4` than under
//! AVX2 (`benches/RESULTS.md`, twenty-fifth and twenty-seventh sessions). Here each
//! select is one comparison into a mask register and one masked blend on `f64x8`, a whole
//! lane vector in one register. The operations and their order are those of the lane
//! loops, so the results are the same bits, NaN aside, whose sign Rust leaves open
//! (`the_moves_transpose`; the test below).
//!
//! The gathers of `w` are the AVX2 transposes of [`super::moves`] (`V4` holds a `V3`),
//! their components joined in 512-bit registers: a 512-bit gather (a body's record in one
//! load, an 8 × 8 transpose) measured no faster (`benches/RESULTS.md`, thirty-first
//! session). The adds of the products and the records of the coloured sweep are 512-bit:
//! each record one register, from the 8 × 8 transpose of 22 shuffles ([`records`]), added
//! in one masked move, one add and one store (`jacobi` 6 % faster on the Zen 4 VM,
//! forty-fifth session). The kernel runs `f32` under AVX2 ([`super::moves::Lane::WIDE`]).

use core::arch::x86_64::__m512d;

use pulp::f64x8;
use pulp::x86::{V3, V4};

use super::lanes::{Cones, L, Lanes};
use super::moves::{FIRST, Moves, Record, W, fence, quads_f64};
use super::rows::Velocities;
use crate::problem::real::Real;

/// The records of the lanes of one side `v` (components 0–5, the padding zero), each in
/// one register: the 8 × 8 transpose in three rounds of shuffles (pairs of components,
/// 128-bit pieces, then halves), 22 in all, the padding's rows zero.
#[inline(always)]
fn records(simd: V4, v: &[Lanes<f64>; 6]) -> [__m512d; L] {
    let f = simd.avx512f;
    let c: [__m512d; 6] = pulp::cast(fence(*v));
    let zero = f._mm512_setzero_pd();
    // Pairs: in each 128-bit piece, components 2p and 2p + 1 of one lane, the even lanes
    // (`unpacklo`) or the odd ones (`unpackhi`).
    let pairs = [
        f._mm512_unpacklo_pd(c[0], c[1]),
        f._mm512_unpackhi_pd(c[0], c[1]),
        f._mm512_unpacklo_pd(c[2], c[3]),
        f._mm512_unpackhi_pd(c[2], c[3]),
        f._mm512_unpacklo_pd(c[4], c[5]),
        f._mm512_unpackhi_pd(c[4], c[5]),
    ];
    // Pieces: for lane `j` and `j + 4` (`j` in 0–3), components 0–3 in `front[j]` and
    // 4–5 (then zeros) in `back[j]`, each pair of components a 128-bit piece.
    let front = [
        f._mm512_shuffle_f64x2::<0x88>(pairs[0], pairs[2]),
        f._mm512_shuffle_f64x2::<0x88>(pairs[1], pairs[3]),
        f._mm512_shuffle_f64x2::<0xDD>(pairs[0], pairs[2]),
        f._mm512_shuffle_f64x2::<0xDD>(pairs[1], pairs[3]),
    ];
    let back = [
        f._mm512_shuffle_f64x2::<0x88>(pairs[4], zero),
        f._mm512_shuffle_f64x2::<0x88>(pairs[5], zero),
        f._mm512_shuffle_f64x2::<0xDD>(pairs[4], zero),
        f._mm512_shuffle_f64x2::<0xDD>(pairs[5], zero),
    ];
    let mut records = [zero; L];
    for j in 0..4 {
        records[j] = f._mm512_shuffle_f64x2::<0x88>(front[j], back[j]);
        records[j + 4] = f._mm512_shuffle_f64x2::<0xDD>(front[j], back[j]);
    }
    records
}

/// The AVX2 moves of the `V3` inside a `V4`.
#[inline(always)]
fn v3(simd: V4) -> V3 {
    *simd
}

impl Moves for V4 {
    #[inline(always)]
    fn gather_f32(self, rows: [&[f32; W]; L]) -> [Lanes<f32>; 6] {
        v3(self).gather_f32(rows)
    }

    /// [`V3`]'s transposes, each component's two 256-bit halves then joined in one
    /// register before the fence: a 512-bit load of the fence's two 256-bit stores would
    /// wait for them to leave the store buffer (no store forwarding across two stores).
    #[inline(always)]
    fn gather_f64(self, rows: [&[f64; W]; L]) -> [Lanes<f64>; 6] {
        let (f, quads) = (self.avx512f, quads_f64(v3(self), rows));
        let mut joined = [f._mm512_setzero_pd(); 6];
        for (c, [lo, hi]) in joined.iter_mut().zip(quads) {
            *c = f._mm512_insertf64x4::<1>(f._mm512_castpd256_pd512(lo), hi);
        }
        pulp::cast(fence(joined))
    }

    #[inline(always)]
    fn add_f32(self, v: &Velocities<f32>, targets: &[[u32; L]; 2], cells: &mut [Record<f32>]) {
        v3(self).add_f32(v, targets, cells)
    }

    /// A record in one register ([`records`]): per record one masked move that drops the
    /// old bits on a pass's first add into it ([`FIRST`]), one 512-bit add, one store.
    #[inline(always)]
    fn add_f64(self, v: &Velocities<f64>, targets: &[[u32; L]; 2], cells: &mut [Record<f64>]) {
        let f = self.avx512f;
        for (side, targets) in v.iter().zip(targets) {
            for (record, &target) in records(self, side).iter().zip(targets) {
                let cell = &mut cells[(target & !FIRST) as usize].v;
                let keep: u8 = if target & FIRST != 0 { 0 } else { 0xff };
                let old = f._mm512_maskz_mov_pd(keep, pulp::cast(*cell));
                *cell = pulp::cast(f._mm512_add_pd(old, *record));
            }
        }
    }

    #[inline(always)]
    fn records_f32(self, v: &[Lanes<f32>; 6]) -> [[f32; W]; L] {
        v3(self).records_f32(v)
    }

    #[inline(always)]
    fn records_f64(self, v: &[Lanes<f64>; 6]) -> [[f64; W]; L] {
        pulp::cast(records(self, v))
    }

    #[inline(always)]
    fn prefetch<R>(self, value: &R) {
        v3(self).prefetch(value)
    }

    #[inline(always)]
    fn prefetch_at<R>(self, at: *const R) {
        v3(self).prefetch_at(at)
    }

    /// [`super::lanes::flush`]: zero where `|a|` is below [`Real::ROOT_MIN`].
    /// [`super::lanes::flush`]: zero where `|a|` is below [`Real::ROOT_MIN`].
    #[inline(always)]
    fn flush_f64(self, a: Lanes<f64>) -> Lanes<f64> {
        let a: f64x8 = pulp::cast(a);
        let tiny = self.cmp_lt_f64x8(self.abs_f64x8(a), self.splat_f64x8(f64::ROOT_MIN));
        pulp::cast(self.select_f64x8(tiny, self.splat_f64x8(0.0), a))
    }

    /// [`super::lanes::max`]: `a` where `a > b`, else `b`.
    #[inline(always)]
    fn max_f64(self, a: Lanes<f64>, b: Lanes<f64>) -> Lanes<f64> {
        let (a, b): (f64x8, f64x8) = (pulp::cast(a), pulp::cast(b));
        pulp::cast(self.select_f64x8(self.cmp_gt_f64x8(a, b), a, b))
    }

    /// [`super::lanes::mul_add`]: a product, then a sum (two roundings).
    #[inline(always)]
    fn mul_add_f64(self, acc: Lanes<f64>, a: Lanes<f64>, b: Lanes<f64>) -> Lanes<f64> {
        let (acc, a, b): (f64x8, f64x8, f64x8) = (pulp::cast(acc), pulp::cast(a), pulp::cast(b));
        pulp::cast(self.add_f64x8(acc, self.mul_f64x8(a, b)))
    }

    /// [`super::lanes::project`], the same operations in the same order: the three cases
    /// computed on every lane and selected by masks.
    #[inline(always)]
    fn project_f64(self, x: &mut [Lanes<f64>; 3], cone: &Cones<f64>) {
        let [n, t1, t2]: [f64x8; 3] = pulp::cast(*x);
        let (a, inv): (f64x8, f64x8) = (pulp::cast(cone.mu), pulp::cast(cone.inv));
        let (zero, one) = (self.splat_f64x8(0.0), self.splat_f64x8(1.0));
        let s = self.sqrt_f64x8(self.add_f64x8(self.mul_f64x8(t1, t1), self.mul_f64x8(t2, t2)));
        let inside = self.cmp_lt_f64x8(a, zero)
            | (self.cmp_le_f64x8(s, self.mul_f64x8(a, n)) & self.cmp_ge_f64x8(n, zero));
        let a_s = self.mul_f64x8(a, s);
        // `−n` as `0 − n`: the two differ only in the sign of a zero, which `≤` ignores.
        let polar = self.cmp_le_f64x8(a_s, self.sub_f64x8(zero, n));
        let n_new = self.mul_f64x8(self.add_f64x8(a_s, n), inv);
        let s_or_one = self.select_f64x8(self.cmp_gt_f64x8(s, zero), s, one);
        let scale = self.div_f64x8(self.mul_f64x8(a, n_new), s_or_one);
        let n_out = self.select_f64x8(inside, n, self.select_f64x8(polar, zero, n_new));
        let t_scale = self.select_f64x8(inside, one, self.select_f64x8(polar, zero, scale));
        *x = pulp::cast([
            n_out,
            self.mul_f64x8(t1, t_scale),
            self.mul_f64x8(t2, t_scale),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::lanes;

    /// Values that take every branch of the lane loops: signs and zeros of either sign,
    /// values about the flush threshold, subnormals, infinities and NaN.
    fn edge_values() -> Vec<f64> {
        let tiny = f64::ROOT_MIN;
        vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.3,
            2.0,
            1e-3,
            tiny,
            -tiny,
            tiny * (1.0 - f64::EPSILON),
            f64::MIN_POSITIVE / 4.0,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]
    }

    /// `x` as lane vectors, `L` values at a time from `start` (wrapping).
    fn lanes_from(values: &[f64], start: usize, stride: usize) -> Lanes<f64> {
        std::array::from_fn(|l| values[(start + stride * l) % values.len()])
    }

    /// The bits of `x`, every NaN as one (Rust leaves a NaN's sign and payload open, and
    /// LLVM's lowering of the scalar loops does not keep x86's).
    fn bits(x: &[Lanes<f64>]) -> Vec<u64> {
        let bits = |v: &f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
        x.iter().flatten().map(bits).collect()
    }

    #[test]
    fn the_lane_operations_are_the_bits_of_the_lane_loops() {
        let Some(simd) = V4::try_new() else {
            eprintln!("note: no AVX-512 on this CPU; the V4 lane operations are not run");
            return;
        };
        let values = edge_values();
        let mus = [0.5, 0.0, -1.0, 1.3, 0.1];
        let n = values.len();
        // Every triple of values (n, t1, t2) in some lane, with each cone coefficient.
        for start in 0..n * n * n / L + 1 {
            let (k0, k1, k2) = (start * L, start * L / n, start * L / (n * n));
            let x: [Lanes<f64>; 3] = [
                lanes_from(&values, k0, 1),
                lanes_from(&values, k1, n),
                lanes_from(&values, k2, n * n),
            ];
            let mu: Lanes<f64> = std::array::from_fn(|l| mus[(start + l) % mus.len()]);
            let cone = Cones::of(&mu);
            let (mut got, mut want) = (x, x);
            simd.project_f64(&mut got, &cone);
            lanes::project(&mut want, &cone);
            assert_eq!(bits(&got), bits(&want), "projection of {x:?}, μ {mu:?}");
            for (a, b, c) in [(x[0], x[1], x[2]), (x[1], x[2], x[0]), (x[2], x[0], x[1])] {
                assert_eq!(bits(&[simd.flush_f64(a)]), bits(&[lanes::flush(a)]));
                assert_eq!(bits(&[simd.max_f64(a, b)]), bits(&[lanes::max(a, b)]));
                let sum = simd.mul_add_f64(c, a, b);
                assert_eq!(bits(&[sum]), bits(&[lanes::mul_add(c, a, b)]));
            }
        }
    }
}
