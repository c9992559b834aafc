//! Helpers of the parallel passes that split their work into fixed runs of items, so that
//! what they write does not depend on the number of threads: a run's part of an output and
//! the runs' starts; a map over fixed runs (partial sums added in run order); and the
//! growth of an output buffer the passes then overwrite.

use std::ops::Range;

use rayon::prelude::*;

/// Items per run of [`map_runs`].
const RUN: usize = 4096;

/// `f` of each run of [`RUN`] consecutive items of `0..n` (the last one shorter), runs in
/// parallel, results in run order: partial sums added in that order give the same value on
/// any number of threads.
pub(crate) fn map_runs<R: Send>(n: usize, f: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    (0..n.div_ceil(RUN))
        .into_par_iter()
        .map(|run| f(run * RUN..n.min((run + 1) * RUN)))
        .collect()
}

/// `out` cut into consecutive parts of the given lengths (which sum to at most its length).
pub(crate) fn split_by<T>(
    out: &mut [T],
    lengths: impl IntoIterator<Item = usize>,
) -> Vec<&mut [T]> {
    let mut rest = out;
    lengths
        .into_iter()
        .map(|len| {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            part
        })
        .collect()
}

/// The start of each part of the given sizes laid one after the other (the exclusive
/// prefix sums), and their total.
pub(crate) fn starts(sizes: impl IntoIterator<Item = usize>) -> (Vec<usize>, usize) {
    let mut total = 0;
    let starts = sizes
        .into_iter()
        .map(|size| {
            total += size;
            total - size
        })
        .collect();
    (starts, total)
}

/// `v` with `len` entries, each `value` or what `v` held there (the caller overwrites them
/// all): in `v`'s memory when it holds `len`, else in a fresh allocation first written by
/// all the threads. A buffer kept from one time step to the next grows in its first steps;
/// its fresh pages cost a fault each (the system zeroes them), which `Vec::resize` would
/// take on one thread (at 1e6 spheres, ~1 GB of operator rows).
pub(crate) fn grow_for_overwrite<T: Copy + Send + Sync>(v: &mut Vec<T>, len: usize, value: T) {
    if len <= v.capacity() {
        v.resize(len, value);
    } else {
        // The old contents are not needed: drop them before the new pages are touched.
        *v = Vec::new();
        v.par_extend(rayon::iter::repeat_n(value, len));
    }
}

/// `dst` a copy of `src`, in `dst`'s memory when it holds as many ([`grow_for_overwrite`]),
/// copied by all the threads.
pub(crate) fn copy_into<T: Copy + Send + Sync>(src: &[T], dst: &mut Vec<T>) {
    let Some(&first) = src.first() else {
        dst.clear();
        return;
    };
    grow_for_overwrite(dst, src.len(), first);
    dst.par_chunks_mut(RUN)
        .zip(src.par_chunks(RUN))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_follow_the_lengths_and_starts_their_sums() {
        let mut data = [1, 2, 3, 4, 5, 6];
        let parts = split_by(&mut data, [2, 0, 3]);
        assert_eq!(parts, [&mut [1, 2][..], &mut [][..], &mut [3, 4, 5][..]]);
        assert_eq!(starts([2, 0, 3]), (vec![0, 2, 2], 5));
    }

    #[test]
    fn runs_cover_the_items_in_order() {
        let runs = map_runs(2 * RUN + 3, |r| r);
        assert_eq!(runs, [0..RUN, RUN..2 * RUN, 2 * RUN..2 * RUN + 3]);
        assert!(map_runs(0, |r| r).is_empty());
    }

    #[test]
    fn a_buffer_grows_to_its_length_in_place_or_fresh() {
        let mut v = vec![7u32; 3];
        grow_for_overwrite(&mut v, 2, 0);
        assert_eq!(v, [7, 7]);
        let capacity = v.capacity();
        grow_for_overwrite(&mut v, capacity, 0);
        assert_eq!((v.len(), v.capacity()), (capacity, capacity));
        grow_for_overwrite(&mut v, 100_000, 5);
        assert_eq!(v.len(), 100_000);
        assert!(v.iter().all(|&x| x == 5));
    }

    #[test]
    fn a_copy_has_the_source_whatever_the_buffer_held() {
        let src: Vec<u32> = (0..10_000).collect();
        for held in [vec![], vec![9; 3], vec![9; 20_000]] {
            let mut dst = held;
            copy_into(&src, &mut dst);
            assert_eq!(dst, src);
        }
        let mut dst = vec![1; 5];
        copy_into(&[], &mut dst);
        assert!(dst.is_empty());
    }
}
