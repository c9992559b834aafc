//! The floating-point types the CPU kernels iterate in (`f32` or `f64`, issue 16): the
//! arithmetic they need, conversions from and to the `f64` of the problem, and an atomic
//! cell of the same width for the body velocities that the blocks of one colour update in
//! parallel.

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `f32` or `f64`.
pub trait Real:
    Copy
    + Default
    + PartialOrd
    + Send
    + Sync
    + std::fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// `√` of the smallest normal value (2⁻⁶³ in `f32`, 2⁻⁵¹¹ in `f64`): the square of a
    /// smaller value is subnormal or zero.
    const ROOT_MIN: Self;
    /// An atomic cell holding one value (its bits).
    type Atomic: Send + Sync;
    /// The nearest value to `v`.
    fn from_f64(v: f64) -> Self;
    /// The value as an `f64` (exact).
    fn to_f64(self) -> f64;
    /// `√(a² + b²)` without undue overflow.
    fn hypot(self, other: Self) -> Self;
    /// The larger of two values.
    fn max(self, other: Self) -> Self;
    /// `√self`.
    fn sqrt(self) -> Self;
    /// `|self|`.
    fn abs(self) -> Self;
    /// A new atomic cell holding `v`.
    fn atomic(v: Self) -> Self::Atomic;
    /// The value of a cell. Relaxed: the kernels order their passes with rayon's joins.
    fn load(cell: &Self::Atomic) -> Self;
    /// Sets a cell. Relaxed, as [`Real::load`].
    fn store(cell: &Self::Atomic, v: Self);
}

macro_rules! real {
    ($t:ty, $atomic:ty, $root_min:expr) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const ROOT_MIN: Self = <$t>::from_bits($root_min);
            type Atomic = $atomic;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn hypot(self, other: Self) -> Self {
                <$t>::hypot(self, other)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn atomic(v: Self) -> Self::Atomic {
                <$atomic>::new(v.to_bits())
            }
            #[inline(always)]
            fn load(cell: &Self::Atomic) -> Self {
                <$t>::from_bits(cell.load(Ordering::Relaxed))
            }
            #[inline(always)]
            fn store(cell: &Self::Atomic, v: Self) {
                cell.store(v.to_bits(), Ordering::Relaxed)
            }
        }
    };
}

// The bits of 2⁻⁶³ and 2⁻⁵¹¹: biased exponents 64 and 512, zero mantissa.
real!(f32, AtomicU32, 64 << 23);
real!(f64, AtomicU64, 512 << 52);
