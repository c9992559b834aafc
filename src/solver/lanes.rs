//! Lanes of the CPU kernel (issue 16): the kernel moves [`L`] consecutive blocks at once,
//! each quantity of a block a lane of a `[T; L]` array (structure of arrays within a group
//! of `L` blocks). The helpers here are the lane-wise arithmetic and the cone projection;
//! they are `#[inline(always)]` loops (no closures, which LLVM may leave out of line,
//! compiled for the baseline) so that they compile inside the kernel's `pulp` dispatch
//! (`pulp::Arch::dispatch`, which runs its closure under the CPU's widest instruction set:
//! AVX2 + FMA where present, detected at run time, and AVX-512 for `f64`), where LLVM maps
//! each `[T; L]` operation onto vector registers (8 `f32` lanes = one AVX register, 8 `f64`
//! = two, or one AVX-512 register). The operations with a branch per lane ([`flush`],
//! [`max`], [`project`]) are reached through the kernel's moves, which replace them under
//! AVX-512 (`super::avx512`).

use crate::problem::real::Real;

/// Blocks per group: the lanes.
pub(crate) const L: usize = 8;

/// One value per lane.
pub(crate) type Lanes<T> = [T; L];

/// A group's iterate: `γ` rows × lanes.
pub(crate) type Impulses<T> = [Lanes<T>; 3];

/// `a + b`, lane-wise.
#[inline(always)]
pub(crate) fn add<T: Real>(mut a: Lanes<T>, b: Lanes<T>) -> Lanes<T> {
    for l in 0..L {
        a[l] += b[l];
    }
    a
}

/// `a − b`, lane-wise.
#[inline(always)]
pub(crate) fn sub<T: Real>(mut a: Lanes<T>, b: Lanes<T>) -> Lanes<T> {
    for l in 0..L {
        a[l] = a[l] - b[l];
    }
    a
}

/// `a b`, lane-wise.
#[inline(always)]
pub(crate) fn mul<T: Real>(mut a: Lanes<T>, b: Lanes<T>) -> Lanes<T> {
    for l in 0..L {
        a[l] = a[l] * b[l];
    }
    a
}

/// `acc + a b`, lane-wise (two roundings, as the scalar code: no fused multiply-add, which
/// would need a library call where the CPU has none).
#[inline(always)]
pub(crate) fn mul_add<T: Real>(mut acc: Lanes<T>, a: Lanes<T>, b: Lanes<T>) -> Lanes<T> {
    for l in 0..L {
        acc[l] += a[l] * b[l];
    }
    acc
}

/// `√a`, lane-wise.
#[inline(always)]
pub(crate) fn sqrt<T: Real>(mut a: Lanes<T>) -> Lanes<T> {
    for x in &mut a {
        *x = x.sqrt();
    }
    a
}

/// `|a|`, lane-wise.
#[inline(always)]
pub(crate) fn abs<T: Real>(mut a: Lanes<T>) -> Lanes<T> {
    for x in &mut a {
        *x = x.abs();
    }
    a
}

/// The larger value, lane-wise (a comparison and a select, which vectorize; `NaN` in `a`
/// gives `b`).
#[inline(always)]
pub(crate) fn max<T: Real>(mut a: Lanes<T>, b: Lanes<T>) -> Lanes<T> {
    for l in 0..L {
        a[l] = if a[l] > b[l] { a[l] } else { b[l] };
    }
    a
}

/// `x`, or zero where `|x|` is below [`Real::ROOT_MIN`] (2⁻⁶³ in `f32`, 2⁻⁵¹¹ in `f64`).
///
/// The kernel squares its values (the tangents' norm in [`project`], the residual's sums),
/// and the square of a smaller value is subnormal: on x86 an operation that produces or
/// reads a subnormal value takes a microcode assist of a hundred cycles or more. Iterates
/// that decay towards zero (the tangential impulses and velocities of a packing at rest)
/// reach that range: on the 1e6-contact packing in `f32`, a quarter of the velocities `u`
/// of 100 iterations lay below 2⁻⁶³ and the pass ran 2–3× slower. Setting the FPU to
/// flush them (MXCSR's FTZ/DAZ, as game physics engines do) is undefined behaviour in
/// Rust, so the kernel flushes its stored quantities (`γ`, `u`, `w`, the residual's
/// terms) itself. The projection cannot resolve such a value anyway: its square is zero
/// or has lost its precision.
#[inline(always)]
pub(crate) fn flushed<T: Real>(x: T) -> T {
    if x.abs() < T::ROOT_MIN { T::ZERO } else { x }
}

/// [`flushed`], lane-wise.
#[inline(always)]
pub(crate) fn flush<T: Real>(mut a: Lanes<T>) -> Lanes<T> {
    for x in &mut a {
        *x = flushed(*x);
    }
    a
}

/// The cones of a group's lanes: `μ` (negative for a bilateral block) and `1/(1 + μ²)`.
pub(crate) struct Cones<T: Real> {
    pub(crate) mu: Lanes<T>,
    pub(crate) inv: Lanes<T>,
}

impl<T: Real> Cones<T> {
    /// The cones of coefficients `mu`.
    #[inline(always)]
    pub(crate) fn of(mu: &Lanes<T>) -> Self {
        let mut inv = [T::ONE; L];
        for l in 0..L {
            inv[l] = T::ONE / (T::ONE + mu[l] * mu[l]);
        }
        Cones { mu: *mu, inv }
    }
}

/// `Π(x)` on each lane's cone, by its coefficient `mu`: negative, the whole space (a
/// bilateral block); otherwise the circular cone `‖x_t‖ ≤ μ x_n` (a unilateral block is
/// the cone of `μ = 0` on rows whose tangents are zero padding). The three cases of
/// [`crate::problem::cone::project_circular`] (inside; polar cone; the boundary at
/// `n' = (μ‖t‖ + n)/(1 + μ²)`, `t' = μ n' t/‖t‖`), each computed and selected per lane, with
/// `‖t‖ = √(t₁² + t₂²)`: its squares overflow only where a tangent exceeds `√max` (1.8e19 in
/// `f32`, 1.3e154 in `f64`), which an iterate reaches only while diverging (the `f64`
/// residual of the system reports that), so `hypot`'s rescaling buys nothing here.
/// The cone's constant `1/(1 + μ²)` comes with it (`cone`, [`Cones::of`]), computed once per
/// group for the projections of a pass.
#[inline(always)]
pub(crate) fn project<T: Real>(x: &mut [Lanes<T>; 3], cone: &Cones<T>) {
    let (mu, inv) = (&cone.mu, &cone.inv);
    for l in 0..L {
        let (n, t1, t2, a) = (x[0][l], x[1][l], x[2][l], mu[l]);
        let s = (t1 * t1 + t2 * t2).sqrt();
        // `n ≥ 0` decides `s = 0 ≤ μ n` for `μ = 0` (the unilateral case).
        let inside = a < T::ZERO || (s <= a * n && n >= T::ZERO);
        let polar = a * s <= -n;
        let n_new = (a * s + n) * inv[l];
        let scale = a * n_new / if s > T::ZERO { s } else { T::ONE };
        let (n_out, t_scale) = if inside {
            (n, T::ONE)
        } else if polar {
            (T::ZERO, T::ZERO)
        } else {
            (n_new, scale)
        };
        x[0][l] = n_out;
        x[1][l] = t1 * t_scale;
        x[2][l] = t2 * t_scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::cone::project_circular;

    #[test]
    fn values_below_the_root_of_the_smallest_normal_flush_to_zero() {
        assert_eq!(f32::ROOT_MIN * f32::ROOT_MIN, f32::MIN_POSITIVE);
        assert_eq!(f64::ROOT_MIN * f64::ROOT_MIN, f64::MIN_POSITIVE);
        let below = f32::ROOT_MIN * (1.0 - f32::EPSILON);
        let x: Lanes<f32> = [
            f32::ROOT_MIN,
            -f32::ROOT_MIN,
            below,
            -below,
            1e-30,
            f32::MIN_POSITIVE / 4.0,
            0.5,
            -0.0,
        ];
        let want = [f32::ROOT_MIN, -f32::ROOT_MIN, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0];
        assert_eq!(flush(x), want);
        assert_eq!(flushed(-1e-200f64), 0.0);
        assert_eq!(flushed(1e-150f64), 1e-150);
    }

    #[test]
    fn lane_projection_is_the_scalar_one() {
        // Inside, polar, boundary, the apex, zero tangents, μ = 0, and bilateral (μ < 0).
        let points = [
            ([1.0, 0.1, -0.2], 0.5),
            ([-1.0, 0.1, 0.2], 0.5),
            ([0.3, 2.0, -1.0], 0.5),
            ([0.0, 0.0, 0.0], 0.5),
            ([-0.4, 0.0, 0.0], 0.5),
            ([0.7, 0.3, 0.4], 0.0),
            ([-0.7, 0.0, 0.0], 0.0),
            ([-0.7, 3.0, 1.0], -1.0),
        ];
        let mut x = [[0.0f64; L]; 3];
        let mut mu = [0.0f64; L];
        for (l, (p, m)) in points.iter().enumerate() {
            (0..3).for_each(|i| x[i][l] = p[i]);
            mu[l] = *m;
        }
        project(&mut x, &Cones::of(&mu));
        for (l, (p, m)) in points.iter().enumerate() {
            let mut want = *p;
            if *m >= 0.0 {
                project_circular(&mut want, *m);
            }
            if *m == 0.0 && want[1] == 0.0 && want[2] == 0.0 {
                // The unilateral cone: `project_circular` keeps a negative normal there.
                want[0] = want[0].max(0.0);
            }
            for i in 0..3 {
                assert!((x[i][l] - want[i]).abs() < 1e-15, "{l}: {x:?} {want:?}");
            }
        }
    }
}
