//! The floating-point types the CPU kernels iterate in (`f32` or `f64`, issue 16): the
//! arithmetic they need and conversions from and to the `f64` of the problem.

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

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
}

macro_rules! real {
    ($t:ty, $root_min:expr) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const ROOT_MIN: Self = <$t>::from_bits($root_min);
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
        }
    };
}

// The bits of 2⁻⁶³ and 2⁻⁵¹¹: biased exponents 64 and 512, zero mantissa.
real!(f32, 64 << 23);
real!(f64, 512 << 52);
