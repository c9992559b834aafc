//! Helpers of the parallel passes that split their work into fixed runs of items, so that
//! what they write does not depend on the number of threads: a run's part of an output and
//! the runs' starts; and the growth of an output buffer the passes then overwrite.

use rayon::prelude::*;

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
}
