//! The body records that the coloured sweep's blocks update in place (issue 16): plain
//! memory, which the blocks of one colour read and write in parallel, each only the
//! records of its own bodies.
//!
//! No two blocks of a colour share a body, nor do two tiles of a stage
//! ([`super::colored::Tiling`]), and the colours of a tile and the stages run one after
//! another (rayon's joins order them): so no record is ever written by one task while
//! another reads or writes it, and the records need no atomics. Safe Rust cannot say that
//! of indices computed at run time: the kernel checks the schedule before it makes these
//! records (`Kernel::schedule_is_disjoint`), and its two accesses here are `unsafe`. Atomic cells
//! instead move each value by a scalar load or store of its own, never by the vector moves
//! of whole records that Jacobi's cells have ([`super::moves`]): the coloured sweep ran
//! 15–18 % slower in `f32` (`benches/RESULTS.md`, thirty-seventh session).
//!
//! `unsafe` here is the crate's third use of it (the lint is `deny`).

use std::marker::PhantomData;

use super::moves::{Lane, Record};

/// Records borrowed from a slice, which tasks read and write in parallel at indices that no
/// two of them share at one time.
pub(crate) struct Disjoint<'a, T: Lane> {
    records: *mut Record<T>,
    len: usize,
    borrow: PhantomData<&'a mut [Record<T>]>,
}

// SAFETY: a `Disjoint` is a mutable borrow of its records (so `Send` as `&mut [Record<T>]`
// is); shared between threads, it is only accessed through `get` and `set`, whose
// callers promise that no record is written while another thread accesses it.
#[allow(unsafe_code)]
unsafe impl<T: Lane> Send for Disjoint<'_, T> {}
#[allow(unsafe_code)]
unsafe impl<T: Lane> Sync for Disjoint<'_, T> {}

impl<'a, T: Lane> Disjoint<'a, T> {
    /// The records of `records`, for as long as it is borrowed.
    pub(crate) fn new(records: &'a mut [Record<T>]) -> Self {
        Disjoint {
            records: records.as_mut_ptr(),
            len: records.len(),
            borrow: PhantomData,
        }
    }

    /// The address of record `i` (any `i`: the address is not read).
    #[inline(always)]
    pub(crate) fn address(&self, i: usize) -> *const Record<T> {
        self.records.wrapping_add(i)
    }

    /// Record `i`.
    ///
    /// # Safety
    /// No other thread writes record `i` while the returned borrow lives.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn get(&self, i: usize) -> &Record<T> {
        assert!(i < self.len, "record {i} of {}", self.len);
        // SAFETY: `i` is in bounds (above) of the borrowed slice, and the caller promises
        // that no other thread writes the record meanwhile.
        unsafe { &*self.records.add(i) }
    }

    /// Writes `record` into record `i`.
    ///
    /// # Safety
    /// No other thread reads or writes record `i` meanwhile, and no borrow from [`get`]
    /// of it lives.
    ///
    /// [`get`]: Disjoint::get
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn set(&self, i: usize, record: Record<T>) {
        assert!(i < self.len, "record {i} of {}", self.len);
        // SAFETY: `i` is in bounds (above) of the borrowed slice, and the caller promises
        // that no other access to the record overlaps this write.
        unsafe { self.records.add(i).write(record) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn tasks_on_disjoint_records_see_their_own_writes() {
        let mut records = vec![Record::new([0.0f32; 8]); 1000];
        {
            let shared = Disjoint::new(&mut records);
            // Two rounds (two colours): each task owns the indices of its residue.
            for round in 0..2usize {
                (0..8usize).into_par_iter().for_each(|task| {
                    for i in (task..shared.len).step_by(8) {
                        // SAFETY: index `i` belongs to this task alone in this round.
                        #[allow(unsafe_code)]
                        unsafe {
                            let mut v = shared.get(i).v;
                            v[round] = (i + round) as f32;
                            shared.set(i, Record::new(v));
                        }
                    }
                });
            }
        }
        for (i, r) in records.iter().enumerate() {
            assert_eq!(&r.v[..3], &[i as f32, (i + 1) as f32, 0.0]);
        }
    }
}
