//! Helpers of the parallel passes that split their work into fixed runs of items, so that
//! what they write does not depend on the number of threads: a run's part of an output and
//! the runs' starts.

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
}
