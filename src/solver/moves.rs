//! Moves between the CPU kernel's records and its lanes (issue 16): the gather of `L`
//! bodies' velocities `w` (a record of [`W`] values per body) into 6 lane vectors, and the
//! add of `L` blocks' products `J_{k,s}ᵀ γ_k` from 12 lane vectors into the records of
//! their accumulator cells. Both are transposes of an `L × 6` matrix per side. Written as
//! plain loops, LLVM compiles them into one scalar insert or extract per value (96 per
//! gather of a group's two sides), and these moves, not the arithmetic, set the cost of a
//! block in `f32`. Under AVX2 they are in-register transposes of 128-bit pieces of the
//! records, through `pulp`'s safe intrinsics ([`Moves`] for [`V3`]): per group and side,
//! 8 loads and 8 inserts of 128 bits and 12 shuffles (`f32`) or 12 inserts and 12 shuffles
//! (`f64`) gather `w`; 16 shuffles, 8 joins of halves and 8 adds of a whole 256-bit
//! record (`f32`), or 24 shuffles and 16 adds of 256 bits, each after a mask that drops
//! the record's old bits on a pass's first add into it (8 broadcasts of the target, 8
//! shifts, 16 `andnot`: [`FIRST`]) (`f64`) add the products; under AVX-512 (`f64` only,
//! [`Lane::WIDE`]; [`super::avx512`]) the same gathers and 512-bit adds of whole records.
//! Elsewhere the plain loops run ([`Portable`]).
//!
//! The lane operations with a branch per lane (the cone projection, the flush of tiny
//! values, the lane-wise maximum) are [`Moves`]' too: the lane loops of [`super::lanes`]
//! by default, explicit mask-register selects under AVX-512, where LLVM lowers the loops'
//! selects to scalar code. So is the residual's product-and-sum (`mul_add`), explicit
//! 512-bit operations under AVX-512, where LLVM split the loop's sums into pieces.
//!
//! [`Isa::run`] runs a kernel task ([`Task`]) with the moves of the machine, under the
//! instruction set they need (`pulp`'s `vectorize`: the task, `#[inline(always)]`, is
//! compiled inside a function with AVX2 and FMA, or AVX-512, enabled), as
//! `pulp::Arch::dispatch` did.

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{__m128, __m128d, __m256, __m256d};
#[cfg(target_arch = "x86_64")]
use pulp::x86::{V3, V4};

use super::lanes::{self, Cones, L, Lanes};
use super::rows::Velocities;
use crate::problem::real::Real;

/// Values per body of `w`: the 6 velocities padded to 8, so that a body's record is one
/// 64-byte cache line in `f64` (half of one in `f32`).
pub(crate) const W: usize = 8;

/// A body's record of `w`: [`W`] values, aligned to their size (64 bytes in `f64`, 32 in
/// `f32`) so that a gather reads one cache line (in a `Vec` of plain arrays, aligned as
/// the allocator's 16 bytes, every `f64` record and half the `f32` ones straddle two).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Record<T: Lane> {
    /// The 6 velocities and the padding.
    pub(crate) v: [T; W],
    /// No bytes, the alignment.
    align: [T::Align; 0],
}

impl<T: Lane> Record<T> {
    /// The record of values `v`.
    pub(crate) const fn new(v: [T; W]) -> Self {
        Record { v, align: [] }
    }
}

/// Alignments of [`Record`]: 32 and 64 bytes.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
pub(crate) struct Align32;

/// See [`Align32`].
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
pub(crate) struct Align64;

/// The bit of an add's target that marks the first add into its cell in a pass. Where
/// [`Lane::REPLACES`], that add replaces the cell's record (padding included, zero) and no
/// pass zeroes the cells first; the result is the same bits as an add into a zeroed record.
pub(crate) const FIRST: u32 = 1 << 31;

/// The gathers and adds of one instruction set, for each precision.
pub(crate) trait Moves: Copy {
    /// Components 0–5 of the records `rows`, lane `l` from `rows[l]`.
    fn gather_f32(self, rows: [&[f32; W]; L]) -> [Lanes<f32>; 6];
    /// As [`Moves::gather_f32`].
    fn gather_f64(self, rows: [&[f64; W]; L]) -> [Lanes<f64>; 6];
    /// Adds `v` (side `s`, component, lane `l`) into the record `cells[targets[s][l]]`
    /// (replaces it where the target is marked [`FIRST`] and [`Lane::REPLACES`]; the mark
    /// is not part of the cell's number): side 0's lanes in lane order, then side 1's,
    /// whatever the instruction set (so the sums are the same bits everywhere; lanes and
    /// sides may share a record).
    fn add_f32(self, v: &Velocities<f32>, targets: &[[u32; L]; 2], cells: &mut [Record<f32>]);
    /// As [`Moves::add_f32`].
    fn add_f64(self, v: &Velocities<f64>, targets: &[[u32; L]; 2], cells: &mut [Record<f64>]);
    /// The records of the lanes of one side `v` (components 0–5, the padding zero): the
    /// inverse of [`Moves::gather_f32`], for whole-record stores.
    fn records_f32(self, v: &[Lanes<f32>; 6]) -> [[f32; W]; L];
    /// As [`Moves::records_f32`].
    fn records_f64(self, v: &[Lanes<f64>; 6]) -> [[f64; W]; L];
    /// Asks the cache for the lines of `value`, with no wait for them: a hint, without
    /// effect on any value.
    fn prefetch<R>(self, value: &R);
    /// As [`Moves::prefetch`], for the value at `at` (never read: any address is a hint,
    /// one past a slice too, so the hot loops need no bounds check).
    fn prefetch_at<R>(self, at: *const R);
    /// [`lanes::flush`] in `f32`: the lane loop, unless the instruction set has its own.
    #[inline(always)]
    fn flush_f32(self, a: Lanes<f32>) -> Lanes<f32> {
        lanes::flush(a)
    }
    /// As [`Moves::flush_f32`].
    #[inline(always)]
    fn flush_f64(self, a: Lanes<f64>) -> Lanes<f64> {
        lanes::flush(a)
    }
    /// [`lanes::max`] in `f32`, as [`Moves::flush_f32`].
    #[inline(always)]
    fn max_f32(self, a: Lanes<f32>, b: Lanes<f32>) -> Lanes<f32> {
        lanes::max(a, b)
    }
    /// As [`Moves::max_f32`].
    #[inline(always)]
    fn max_f64(self, a: Lanes<f64>, b: Lanes<f64>) -> Lanes<f64> {
        lanes::max(a, b)
    }
    /// [`lanes::mul_add`] in `f32`, as [`Moves::flush_f32`].
    #[inline(always)]
    fn mul_add_f32(self, acc: Lanes<f32>, a: Lanes<f32>, b: Lanes<f32>) -> Lanes<f32> {
        lanes::mul_add(acc, a, b)
    }
    /// As [`Moves::mul_add_f32`].
    #[inline(always)]
    fn mul_add_f64(self, acc: Lanes<f64>, a: Lanes<f64>, b: Lanes<f64>) -> Lanes<f64> {
        lanes::mul_add(acc, a, b)
    }
    /// [`lanes::project`] in `f32`, as [`Moves::flush_f32`].
    #[inline(always)]
    fn project_f32(self, x: &mut [Lanes<f32>; 3], cone: &Cones<f32>) {
        lanes::project(x, cone)
    }
    /// As [`Moves::project_f32`].
    #[inline(always)]
    fn project_f64(self, x: &mut [Lanes<f64>; 3], cone: &Cones<f64>) {
        lanes::project(x, cone)
    }
}

/// The precisions of the kernel's lanes: a [`Real`] whose moves [`Moves`] provides.
pub(crate) trait Lane: Real {
    /// The alignment of a body's [`Record`] (its size).
    type Align: Copy + Send + Sync + std::fmt::Debug;
    /// Whether the kernel runs under AVX-512 in this precision where the CPU has it
    /// ([`Isa::detect`]).
    const WIDE: bool;
    /// Whether the first add into an accumulator cell in a pass replaces its record
    /// ([`FIRST`]), rather than the pass zeroing its cells before it adds.
    const REPLACES: bool;
    /// Whether the passes write the next iterate by non-temporal stores
    /// ([`super::stream::Streamed`]).
    const STREAMS: bool;
    /// The gather of [`Moves::gather_f32`] in this precision.
    fn gather<M: Moves>(moves: M, rows: [&[Self; W]; L]) -> [Lanes<Self>; 6];
    /// The add of [`Moves::add_f32`] in this precision.
    fn add_products<M: Moves>(
        moves: M,
        v: &Velocities<Self>,
        targets: &[[u32; L]; 2],
        cells: &mut [Record<Self>],
    );
    /// [`Moves::records_f32`] in this precision.
    fn records<M: Moves>(moves: M, v: &[Lanes<Self>; 6]) -> [[Self; W]; L];
    /// [`Moves::flush_f32`] in this precision.
    fn flush<M: Moves>(moves: M, a: Lanes<Self>) -> Lanes<Self>;
    /// [`Moves::max_f32`] in this precision.
    fn larger<M: Moves>(moves: M, a: Lanes<Self>, b: Lanes<Self>) -> Lanes<Self>;
    /// [`Moves::mul_add_f32`] in this precision.
    fn mul_add<M: Moves>(moves: M, acc: Lanes<Self>, a: Lanes<Self>, b: Lanes<Self>)
    -> Lanes<Self>;
    /// [`Moves::project_f32`] in this precision.
    fn project<M: Moves>(moves: M, x: &mut [Lanes<Self>; 3], cone: &Cones<Self>);
}

impl Lane for f32 {
    type Align = Align32;
    /// No: 8 `f32` lanes fill one AVX2 register already, and the passes measured slower
    /// under AVX-512 (`benches/RESULTS.md`).
    const WIDE: bool = false;
    /// No: a part's cells (32 bytes a body) fit in L2, where zeroing them first brings
    /// them; the first adds would miss instead (5 % slower at 1e6, `benches/RESULTS.md`).
    const REPLACES: bool = false;
    /// No: a group's iterate is 1.5 lines and the `f32` pass is not bound by its fill
    /// buffers; `pgs-colored` measured 3 % slower (median of 14 pairs), `jacobi` alike.
    const STREAMS: bool = false;

    #[inline(always)]
    fn gather<M: Moves>(moves: M, rows: [&[f32; W]; L]) -> [Lanes<f32>; 6] {
        moves.gather_f32(rows)
    }

    #[inline(always)]
    fn add_products<M: Moves>(
        moves: M,
        v: &Velocities<f32>,
        targets: &[[u32; L]; 2],
        cells: &mut [Record<f32>],
    ) {
        moves.add_f32(v, targets, cells)
    }

    #[inline(always)]
    fn records<M: Moves>(moves: M, v: &[Lanes<f32>; 6]) -> [[f32; W]; L] {
        moves.records_f32(v)
    }

    #[inline(always)]
    fn flush<M: Moves>(moves: M, a: Lanes<f32>) -> Lanes<f32> {
        moves.flush_f32(a)
    }

    #[inline(always)]
    fn larger<M: Moves>(moves: M, a: Lanes<f32>, b: Lanes<f32>) -> Lanes<f32> {
        moves.max_f32(a, b)
    }

    #[inline(always)]
    fn mul_add<M: Moves>(moves: M, acc: Lanes<f32>, a: Lanes<f32>, b: Lanes<f32>) -> Lanes<f32> {
        moves.mul_add_f32(acc, a, b)
    }

    #[inline(always)]
    fn project<M: Moves>(moves: M, x: &mut [Lanes<f32>; 3], cone: &Cones<f32>) {
        moves.project_f32(x, cone)
    }
}

impl Lane for f64 {
    type Align = Align64;
    /// Yes: a lane vector is one 512-bit register instead of two AVX2 ones.
    const WIDE: bool = true;
    /// Yes: the zeroing cost more than it brought (4 % faster without, at 1e6).
    const REPLACES: bool = true;
    /// Yes: +12 % for `jacobi` (median of 18 pairs at 1e6), +14 % for `pgs-colored`.
    const STREAMS: bool = true;

    #[inline(always)]
    fn gather<M: Moves>(moves: M, rows: [&[f64; W]; L]) -> [Lanes<f64>; 6] {
        moves.gather_f64(rows)
    }

    #[inline(always)]
    fn add_products<M: Moves>(
        moves: M,
        v: &Velocities<f64>,
        targets: &[[u32; L]; 2],
        cells: &mut [Record<f64>],
    ) {
        moves.add_f64(v, targets, cells)
    }

    #[inline(always)]
    fn records<M: Moves>(moves: M, v: &[Lanes<f64>; 6]) -> [[f64; W]; L] {
        moves.records_f64(v)
    }

    #[inline(always)]
    fn flush<M: Moves>(moves: M, a: Lanes<f64>) -> Lanes<f64> {
        moves.flush_f64(a)
    }

    #[inline(always)]
    fn larger<M: Moves>(moves: M, a: Lanes<f64>, b: Lanes<f64>) -> Lanes<f64> {
        moves.max_f64(a, b)
    }

    #[inline(always)]
    fn mul_add<M: Moves>(moves: M, acc: Lanes<f64>, a: Lanes<f64>, b: Lanes<f64>) -> Lanes<f64> {
        moves.mul_add_f64(acc, a, b)
    }

    #[inline(always)]
    fn project<M: Moves>(moves: M, x: &mut [Lanes<f64>; 3], cone: &Cones<f64>) {
        moves.project_f64(x, cone)
    }
}

/// The plain loops, for any instruction set.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

/// [`Moves::gather_f32`] as a loop.
#[inline(always)]
fn gather_plain<T: Real>(rows: [&[T; W]; L]) -> [Lanes<T>; 6] {
    let mut v = [[T::ZERO; L]; 6];
    for (l, row) in rows.iter().enumerate() {
        for c in 0..6 {
            v[c][l] = row[c];
        }
    }
    v
}

/// [`Moves::records_f32`] as a loop.
#[inline(always)]
fn records_plain<T: Real>(v: &[Lanes<T>; 6]) -> [[T; W]; L] {
    let mut records = [[T::ZERO; W]; L];
    for (l, record) in records.iter_mut().enumerate() {
        for c in 0..6 {
            record[c] = v[c][l];
        }
    }
    records
}

/// [`Moves::add_f32`] as a loop.
#[inline(always)]
fn add_plain<T: Lane>(v: &Velocities<T>, targets: &[[u32; L]; 2], cells: &mut [Record<T>]) {
    for (side, targets) in v.iter().zip(targets) {
        for l in 0..L {
            let cell = &mut cells[(targets[l] & !FIRST) as usize].v;
            if T::REPLACES && targets[l] & FIRST != 0 {
                *cell = [T::ZERO; W];
            }
            for c in 0..6 {
                cell[c] += side[c][l];
            }
        }
    }
}

impl Moves for Portable {
    #[inline(always)]
    fn gather_f32(self, rows: [&[f32; W]; L]) -> [Lanes<f32>; 6] {
        gather_plain(rows)
    }

    #[inline(always)]
    fn gather_f64(self, rows: [&[f64; W]; L]) -> [Lanes<f64>; 6] {
        gather_plain(rows)
    }

    #[inline(always)]
    fn add_f32(self, v: &Velocities<f32>, targets: &[[u32; L]; 2], cells: &mut [Record<f32>]) {
        add_plain(v, targets, cells)
    }

    #[inline(always)]
    fn add_f64(self, v: &Velocities<f64>, targets: &[[u32; L]; 2], cells: &mut [Record<f64>]) {
        add_plain(v, targets, cells)
    }

    #[inline(always)]
    fn records_f32(self, v: &[Lanes<f32>; 6]) -> [[f32; W]; L] {
        records_plain(v)
    }

    #[inline(always)]
    fn records_f64(self, v: &[Lanes<f64>; 6]) -> [[f64; W]; L] {
        records_plain(v)
    }

    /// None: the baseline has no prefetch that safe code can reach.
    #[inline(always)]
    fn prefetch<R>(self, _: &R) {}

    #[inline(always)]
    fn prefetch_at<R>(self, _: *const R) {}
}

// `V3`'s `add_f64` replaces a record on its first add and `add_f32` ignores the mark (as
// `V4`'s, which are `V3`'s): the precisions' `Lane::REPLACES` must say so.
#[cfg(target_arch = "x86_64")]
const _: () = assert!(<f64 as Lane>::REPLACES && !<f32 as Lane>::REPLACES);

/// The AVX2 transposes. `f32`: lanes 0–3 and 4–7 are the two 128-bit halves of a
/// register, so a register `[a | b]` of 4 values of lane `i` and 4 of lane `i + 4`, and
/// the in-half 4 × 4 transpose (`unpacklo/hi`, then `shuffle` 0x44/0xEE) turns 4 such
/// registers into 4 components of the 8 lanes, and back. `f64`: a lane vector is two
/// registers of 4 lanes; a register `[a | b]` of 2 values of lane `i` and 2 of lane
/// `i + 2`, and `unpacklo/hi` of two such turns them into 2 components of 4 lanes, and
/// back.
#[cfg(target_arch = "x86_64")]
impl Moves for V3 {
    #[inline(always)]
    fn gather_f32(self, rows: [&[f32; W]; L]) -> [Lanes<f32>; 6] {
        let avx = self.avx;
        let mut v = [[0.0; L]; 6];
        for h in 0..2 {
            // Components 4h..4h + 4 of lane `i` and of lane `i + 4`.
            let mut x = [avx._mm256_setzero_ps(); 4];
            for (i, xi) in x.iter_mut().enumerate() {
                *xi = avx._mm256_set_m128(quarter(rows[i + 4], h), quarter(rows[i], h));
            }
            let c = transpose4(self, x);
            // Components 6 and 7 are the padding.
            for k in 0..4 - 2 * h {
                v[4 * h + k] = pulp::cast(c[k]);
            }
        }
        fence(v)
    }

    #[inline(always)]
    fn gather_f64(self, rows: [&[f64; W]; L]) -> [Lanes<f64>; 6] {
        fence(pulp::cast(quads_f64(self, rows)))
    }

    #[inline(always)]
    fn add_f32(self, v: &Velocities<f32>, targets: &[[u32; L]; 2], cells: &mut [Record<f32>]) {
        let avx = self.avx;
        for (side, targets) in v.iter().zip(targets) {
            // A lane's whole record: one add of 256 bits.
            for (record, target) in self.records_f32(side).iter().zip(targets) {
                let cell = &mut cells[(target & !FIRST) as usize].v;
                *cell = pulp::cast(avx._mm256_add_ps(pulp::cast(*cell), pulp::cast(*record)));
            }
        }
    }

    #[inline(always)]
    fn add_f64(self, v: &Velocities<f64>, targets: &[[u32; L]; 2], cells: &mut [Record<f64>]) {
        let avx = self.avx;
        for (side, targets) in v.iter().zip(targets) {
            for (record, target) in self.records_f64(side).iter().zip(targets) {
                let cell = &mut cells[(target & !FIRST) as usize].v;
                let drop = pulp::cast(first_mask(self, target));
                let [first, second]: &mut [[f64; 4]; 2] = bytemuck::cast_mut(cell);
                let [low, high]: &[[f64; 4]; 2] = bytemuck::cast_ref(record);
                let old = avx._mm256_andnot_pd(drop, pulp::cast(*first));
                *first = pulp::cast(avx._mm256_add_pd(old, pulp::cast(*low)));
                // Components 4 and 5, and the padding (zero, plus zero).
                let old = avx._mm256_andnot_pd(drop, pulp::cast(*second));
                *second = pulp::cast(avx._mm256_add_pd(old, pulp::cast(*high)));
            }
        }
    }

    #[inline(always)]
    fn records_f32(self, v: &[Lanes<f32>; 6]) -> [[f32; W]; L] {
        let avx = self.avx;
        let v = &fence(*v);
        // Components 4h..4h + 4 (6 and 7 the padding, zeros) of lane `i` in the low half
        // of `x[h][i]`, of lane `i + 4` in its high half.
        let mut x = [[avx._mm256_setzero_ps(); 4]; 2];
        for (h, xh) in x.iter_mut().enumerate() {
            for (k, xk) in xh.iter_mut().enumerate() {
                if 4 * h + k < 6 {
                    *xk = pulp::cast(v[4 * h + k]);
                }
            }
            *xh = transpose4(self, *xh);
        }
        // A lane's record, its two halves joined.
        std::array::from_fn(|l| {
            let (half, i) = (l / 4, l % 4);
            pulp::cast(if half == 0 {
                avx._mm256_permute2f128_ps::<0x20>(x[0][i], x[1][i])
            } else {
                avx._mm256_permute2f128_ps::<0x31>(x[0][i], x[1][i])
            })
        })
    }

    #[inline(always)]
    fn records_f64(self, v: &[Lanes<f64>; 6]) -> [[f64; W]; L] {
        let avx = self.avx;
        let v = &fence(*v);
        let c: [[__m256d; 2]; 6] = std::array::from_fn(|c| pulp::cast(v[c]));
        let mut records = [[0.0; W]; L];
        // Lanes 4 quad.. 4 quad + 4: components 0–3 in one register per lane (the 4 × 4
        // transpose: pairs, then halves), 4 and 5 in one half of one.
        for quad in 0..2 {
            let t = [
                avx._mm256_unpacklo_pd(c[0][quad], c[1][quad]),
                avx._mm256_unpackhi_pd(c[0][quad], c[1][quad]),
                avx._mm256_unpacklo_pd(c[2][quad], c[3][quad]),
                avx._mm256_unpackhi_pd(c[2][quad], c[3][quad]),
            ];
            let low = [
                avx._mm256_permute2f128_pd::<0x20>(t[0], t[2]),
                avx._mm256_permute2f128_pd::<0x20>(t[1], t[3]),
                avx._mm256_permute2f128_pd::<0x31>(t[0], t[2]),
                avx._mm256_permute2f128_pd::<0x31>(t[1], t[3]),
            ];
            let lo = avx._mm256_unpacklo_pd(c[4][quad], c[5][quad]);
            let hi = avx._mm256_unpackhi_pd(c[4][quad], c[5][quad]);
            let high = [
                avx._mm256_castpd256_pd128(lo),
                avx._mm256_castpd256_pd128(hi),
                avx._mm256_extractf128_pd::<1>(lo),
                avx._mm256_extractf128_pd::<1>(hi),
            ];
            for j in 0..4 {
                let high = avx._mm256_insertf128_pd::<0>(avx._mm256_setzero_pd(), high[j]);
                records[4 * quad + j] = pulp::cast([low[j], high]);
            }
        }
        records
    }

    /// `prefetcht0` of each 64-byte line from the first byte to the last.
    #[inline(always)]
    fn prefetch<R>(self, value: &R) {
        lines::<R>(self, (value as *const R).cast());
    }

    #[inline(always)]
    fn prefetch_at<R>(self, at: *const R) {
        lines::<R>(self, at.cast());
    }
}

/// `prefetcht0` of the 64-byte lines of an `R` at `first`: one per 64 bytes, and the
/// line of the last byte unless the value lies in one line (aligned to its size, which
/// divides 64: a body's [`Record`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lines<R>(simd: V3, first: *const i8) {
    const T0: i32 = 3;
    let mut at = 0;
    while at < size_of::<R>() {
        simd.sse._mm_prefetch::<T0>(first.wrapping_add(at));
        at += 64;
    }
    let one_line = size_of::<R>() <= align_of::<R>() && 64 % align_of::<R>() == 0;
    if !one_line {
        simd.sse
            ._mm_prefetch::<T0>(first.wrapping_add(size_of::<R>() - 1));
    }
}

/// The gather of [`Moves::gather_f64`] before its fence: component `c`, lanes
/// `4q..4q + 4`, in register `[c][q]`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn quads_f64(simd: V3, rows: [&[f64; W]; L]) -> [[__m256d; 2]; 6] {
    let avx = simd.avx;
    let mut v = [[avx._mm256_setzero_pd(); 2]; 6];
    for p in 0..3 {
        for quad in [0, 1] {
            // Components 2p, 2p + 1 of lanes `i` and `i + 2` (`a`), `i + 1` and `i + 3`.
            let i = 4 * quad;
            let a = avx._mm256_set_m128d(pair(rows[i + 2], p), pair(rows[i], p));
            let b = avx._mm256_set_m128d(pair(rows[i + 3], p), pair(rows[i + 1], p));
            v[2 * p][quad] = avx._mm256_unpacklo_pd(a, b);
            v[2 * p + 1][quad] = avx._mm256_unpackhi_pd(a, b);
        }
    }
    v
}

/// `v`, through memory that LLVM cannot see into (`black_box`): the lane vectors of the
/// arithmetic and the transposes' shuffles stay apart. Without it LLVM moves the shuffles
/// into the arithmetic, which it then splits into 128- and 64-bit pieces (more
/// instructions, not fewer); the price is one store and one load per vector.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn fence<V>(v: V) -> V {
    std::hint::black_box(v)
}

/// All ones where `target` is marked [`FIRST`], else zero, in every bit of a register: a
/// broadcast load and a shift (no shuffle: the transposes keep that port busy).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_mask(simd: V3, target: &u32) -> __m256 {
    let t = simd.avx._mm256_broadcast_ss(bytemuck::cast_ref(target));
    pulp::cast(simd.avx2._mm256_srai_epi32::<31>(pulp::cast(t)))
}

/// Components `4h..4h + 4` of an `f32` record.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn quarter(row: &[f32; W], h: usize) -> __m128 {
    pulp::cast(bytemuck::cast_ref::<_, [[f32; 4]; 2]>(row)[h])
}

/// Components `2p, 2p + 1` of an `f64` record.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pair(row: &[f64; W], p: usize) -> __m128d {
    pulp::cast(bytemuck::cast_ref::<_, [[f64; 2]; 4]>(row)[p])
}

/// The 4 × 4 transpose within each 128-bit half of 4 `f32` registers: `x[i]` half `h`
/// holds 4 values of lane `i + 4h`, component `k` of the result half `h` the values `k` of
/// lanes `4h..4h + 4`. Its own inverse.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn transpose4(simd: V3, x: [__m256; 4]) -> [__m256; 4] {
    let avx = simd.avx;
    let t0 = avx._mm256_unpacklo_ps(x[0], x[1]);
    let t1 = avx._mm256_unpackhi_ps(x[0], x[1]);
    let t2 = avx._mm256_unpacklo_ps(x[2], x[3]);
    let t3 = avx._mm256_unpackhi_ps(x[2], x[3]);
    [
        avx._mm256_shuffle_ps::<0x44>(t0, t2),
        avx._mm256_shuffle_ps::<0xEE>(t0, t2),
        avx._mm256_shuffle_ps::<0x44>(t1, t3),
        avx._mm256_shuffle_ps::<0xEE>(t1, t3),
    ]
}

/// The instruction set the kernel's passes run under, detected at run time.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Isa {
    /// AVX-512 (F, BW, CD, DQ, VL), with AVX2 and FMA ([`super::avx512`]).
    #[cfg(target_arch = "x86_64")]
    V4(V4),
    /// AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    V3(V3),
    /// The baseline of the target.
    Portable,
}

/// A kernel task that [`Isa::run`] runs with the machine's moves. Its `run` must be
/// `#[inline(always)]` and call no closure (LLVM may leave a closure out of line, compiled
/// for the baseline), so that it compiles under the instruction set.
pub(crate) trait Task {
    /// What the task returns.
    type Output;
    /// Runs the task with `moves`.
    fn run<M: Moves>(self, moves: M) -> Self::Output;
}

/// A task with its moves, as `pulp`'s `vectorize` calls it.
#[cfg(target_arch = "x86_64")]
struct Under<Op, S>(Op, S);

#[cfg(target_arch = "x86_64")]
impl<Op: Task, S: Moves> pulp::NullaryFnOnce for Under<Op, S> {
    type Output = Op::Output;

    #[inline(always)]
    fn call(self) -> Op::Output {
        self.0.run(self.1)
    }
}

impl Isa {
    /// The widest instruction set of this machine that the kernel has moves for in
    /// precision `T` (AVX-512 only where [`Lane::WIDE`]).
    pub(crate) fn detect<T: Lane>() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = V4::try_new().filter(|_| T::WIDE) {
            return Isa::V4(simd);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = V3::try_new() {
            return Isa::V3(simd);
        }
        Isa::Portable
    }

    /// Runs `task` with the moves of the instruction set, compiled under it.
    #[inline(always)]
    pub(crate) fn run<Op: Task>(self, task: Op) -> Op::Output {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::V4(simd) => simd.vectorize(Under(task, simd)),
            #[cfg(target_arch = "x86_64")]
            Isa::V3(simd) => simd.vectorize(Under(task, simd)),
            Isa::Portable => task.run(Portable),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The moves of `moves` against the plain loops, on values that tell every slot apart.
    fn same_as_plain<M: Moves>(moves: M) {
        let rows32: [[f32; W]; L] =
            std::array::from_fn(|l| std::array::from_fn(|c| (10 * l + c) as f32));
        let rows64: [[f64; W]; L] = rows32.map(|r| r.map(f64::from));
        let refs32: [&[f32; W]; L] = std::array::from_fn(|l| &rows32[l]);
        let refs64: [&[f64; W]; L] = std::array::from_fn(|l| &rows64[l]);
        assert_eq!(moves.gather_f32(refs32), gather_plain(refs32));
        assert_eq!(moves.gather_f64(refs64), gather_plain(refs64));
        let lanes32 = gather_plain(refs32);
        let lanes64 = gather_plain(refs64);
        let zero_padded = |r: [f32; W]| std::array::from_fn(|c| if c < 6 { r[c] } else { 0.0 });
        assert_eq!(moves.records_f32(&lanes32), rows32.map(zero_padded));
        assert_eq!(moves.records_f32(&lanes32), records_plain(&lanes32));
        assert_eq!(moves.records_f64(&lanes64), records_plain(&lanes64));
        let mut v32: Velocities<f32> = std::array::from_fn(|s| {
            std::array::from_fn(|c| std::array::from_fn(|l| (100 * s + 10 * c + l) as f32))
        });
        let mut v64 = v32.map(|side| side.map(|c| c.map(f64::from)));
        // Record 4 receives side 0's lane 7, then side 1's lanes 0 and 2: values whose
        // sum is another in any other order.
        for c in 0..6 {
            (v32[0][c][7], v32[1][c][0], v32[1][c][2]) = (1.0, 1e8, -1e8);
            (v64[0][c][7], v64[1][c][0], v64[1][c][2]) = (1.0, 1e16, -1e16);
        }
        // Lanes that share a record (consecutive and not), and sides that share one.
        let targets = [[0, 0, 1, 2, 1, 3, 3, 4], [4, 5, 4, 6, 7, 5, 7, 7]];
        let start = || std::array::from_fn(|c| Record::new([c as f64; W]));
        let (mut got64, mut want64): ([Record<f64>; 8], _) = (start(), start());
        moves.add_f64(&v64, &targets, &mut got64);
        add_plain(&v64, &targets, &mut want64);
        assert_eq!(got64.map(|r| r.v), want64.map(|r| r.v));
        let narrow = |r: Record<f64>| Record::new(r.v.map(|x| x as f32));
        let (mut got32, mut want32) = (start().map(narrow), start().map(narrow));
        moves.add_f32(&v32, &targets, &mut got32);
        add_plain(&v32, &targets, &mut want32);
        assert_eq!(got32.map(|r| r.v), want32.map(|r| r.v));
        // The first add into each record marked: in `f64` it replaces the record (NaN
        // here, padding included) as an add into a zeroed one would; in `f32` the mark
        // changes nothing.
        let mut marked = targets;
        let mut reached = [false; 8];
        for t in marked.iter_mut().flatten() {
            if !std::mem::replace(&mut reached[*t as usize], true) {
                *t |= FIRST;
            }
        }
        let mut got64 = [Record::new([f64::NAN; W]); 8];
        moves.add_f64(&v64, &marked, &mut got64);
        let mut want64 = [Record::new([0.0; W]); 8];
        add_plain(&v64, &targets, &mut want64);
        assert_eq!(got64.map(|r| r.v), want64.map(|r| r.v));
        let mut got32 = start().map(narrow);
        moves.add_f32(&v32, &marked, &mut got32);
        assert_eq!(got32.map(|r| r.v), want32.map(|r| r.v));
    }

    #[test]
    fn the_moves_transpose() {
        same_as_plain(Portable);
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = V3::try_new() {
            same_as_plain(simd);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = V4::try_new() {
            same_as_plain(simd);
        }
    }
}
