//! Stores that bypass the caches, for the iterate a pass of the CPU kernel writes and does
//! not read back in that pass (issue 16).
//!
//! A plain store to a line that is not in the caches first reads that line (a read for
//! ownership): for the next iterate of a pass, 24 bytes a contact in `f64` that DRAM sends
//! only to have them overwritten, each line holding one of the core's line fill buffers for
//! a memory latency, the resource the passes wait on (`benches/RESULTS.md`, thirty-second
//! and thirty-third sessions). x86's non-temporal stores (`movntdq`) write whole lines
//! through the write-combining buffers without reading them; the copy that the throughput
//! benchmark holds the kernels against writes the same way (glibc's `memcpy` past a size).
//! They are weakly ordered: the thread that made them must fence (`sfence`) before any other
//! access to what they wrote. [`Streamed`] fences when it is dropped, which is before its
//! borrow of the slice ends (on unwinding too).
//!
//! `unsafe` here is the crate's second use of it (the lint is `deny`): no safe interface
//! (`core::arch`, `pulp`) has a non-temporal store.

use super::lanes::Impulses;
use super::moves::Lane;

/// The kernel's iterates (one [`Impulses`] a group) written into a slice by non-temporal stores where the precision asks for them ([`Lane::STREAMS`]) and
/// the target has them (x86_64, with the slice aligned to 16 bytes: always so for the
/// kernel's `Vec`s, whose allocations are 16-aligned; an element is 96 or 192 bytes), by
/// plain stores otherwise; fenced when dropped. The kernel never leaks one
/// (`mem::forget` would leave its stores unfenced).
pub(crate) struct Streamed<'a, T: Lane> {
    out: &'a mut [Impulses<T>],
    /// Whether the stores bypass the caches.
    streams: bool,
}

impl<'a, T: Lane> Streamed<'a, T> {
    /// Writes into `out`.
    pub(crate) fn new(out: &'a mut [Impulses<T>]) -> Self {
        let streams = T::STREAMS
            && cfg!(target_arch = "x86_64")
            && (out.as_ptr() as usize).is_multiple_of(16);
        Streamed { out, streams }
    }

    /// `out[i] = x`.
    #[inline(always)]
    pub(crate) fn put(&mut self, i: usize, x: &Impulses<T>) {
        let at = &mut self.out[i];
        #[cfg(target_arch = "x86_64")]
        if self.streams {
            use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
            let to = (at as *mut Impulses<T>).cast::<__m128i>();
            let from = (x as *const Impulses<T>).cast::<__m128i>();
            // SAFETY: `to` points to `out[i]`, borrowed mutably here, 16-byte aligned (the
            // slice's start is, `new`, and its elements are 24 values of 4 or 8 bytes),
            // `from` to `x`, borrowed; both span `size_of` bytes of `f32` or `f64` values
            // (no padding: every byte initialised), read and written in 16-byte pieces. SSE2 is
            // part of x86_64. The stores are fenced before the borrow of `out` ends (`Drop`).
            #[allow(unsafe_code)]
            unsafe {
                for k in 0..size_of::<Impulses<T>>() / 16 {
                    _mm_stream_si128(to.add(k), _mm_loadu_si128(from.add(k)));
                }
            }
            return;
        }
        *at = *x;
    }
}

impl<T: Lane> Drop for Streamed<'_, T> {
    /// Orders the non-temporal stores before every later access (`sfence`).
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if self.streams {
            // SAFETY: `sfence` needs SSE, part of x86_64; it has no operands.
            #[allow(unsafe_code)]
            unsafe {
                std::arch::x86_64::_mm_sfence()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::lanes::L;

    #[test]
    fn streamed_iterates_are_the_stored_ones() {
        fn check<T: Lane>() {
            let values: Vec<Impulses<T>> = (0..50)
                .map(|g| {
                    std::array::from_fn(|i| {
                        std::array::from_fn(|l| T::from_f64((g * 3 * L + i * L + l) as f64 - 0.5))
                    })
                })
                .collect();
            // On the heap, as the kernel's: aligned to 16 bytes.
            let mut out: Vec<Impulses<T>> =
                (0..50).map(|_| [[T::from_f64(f64::NAN); L]; 3]).collect();
            // A part of the slice, as the passes write theirs, in the passes' order.
            {
                let mut s = Streamed::new(&mut out[10..]);
                assert_eq!(s.streams, T::STREAMS && cfg!(target_arch = "x86_64"));
                for (i, v) in values[10..].iter().enumerate() {
                    s.put(i, v);
                }
            }
            for (g, (o, v)) in out.iter().zip(&values).enumerate() {
                for (a, b) in o.iter().flatten().zip(v.iter().flatten()) {
                    let a = a.to_f64();
                    assert!(if g < 10 { a.is_nan() } else { a == b.to_f64() });
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
