//! The passes over the KKT matrix outside its factorization — the Ruiz equilibration's norms
//! and scaling, the product of the iterative refinement — on rayon's threads (issue 20).
//!
//! The matrix is stored as its upper triangle by columns, so a row's entries right of the
//! diagonal lie in other columns: a pass that writes by rows (a row's ∞-norm, a row of the
//! product) would scatter into shared slots. [`Upper`] keeps, once per pattern, where each
//! row's entries right of the diagonal lie; every pass then gathers, each thread writing its
//! own rows (or, for the scaling, its own stretch of values). A matrix of at most [`CHUNK`]
//! rows keeps the sequential scatter over its columns (and its rounding). On the settled
//! pile of 4000 spheres these passes ran on one thread at a quarter of the interior point's
//! serial time (`benches/RESULTS.md`, seventeenth session).

use rayon::prelude::*;

/// Rows (or values) per rayon task; a matrix of at most this many rows is passed over on
/// the calling thread (rayon's dispatch costs more than its passes on the small Siconos
/// problems).
const CHUNK: usize = 4096;

/// A symmetric matrix's upper triangle, column-compressed (`col_ptr`, `row_idx`), with the
/// positions of each row's entries right of its diagonal.
pub(crate) struct Upper {
    pub(crate) col_ptr: Vec<usize>,
    pub(crate) row_idx: Vec<usize>,
    /// Row `r`'s entries `(r, c)`, `c > r`: `pos[row_ptr[r]..row_ptr[r + 1]]` their places
    /// in the values, `col[…]` their columns; empty for at most [`CHUNK`] rows, whose passes
    /// scatter over the columns on the calling thread.
    row_ptr: Vec<usize>,
    pos: Vec<usize>,
    col: Vec<usize>,
}

impl Upper {
    /// The pattern (`col_ptr`, `row_idx`: rows increasing within a column, none below the
    /// diagonal) and its row view.
    pub(crate) fn new(col_ptr: Vec<usize>, row_idx: Vec<usize>) -> Self {
        let dim = col_ptr.len() - 1;
        if dim <= CHUNK {
            return Upper {
                col_ptr,
                row_idx,
                row_ptr: Vec::new(),
                pos: Vec::new(),
                col: Vec::new(),
            };
        }
        let mut row_ptr = vec![0; dim + 1];
        for (c, w) in col_ptr.windows(2).enumerate() {
            for &r in &row_idx[w[0]..w[1]] {
                if r != c {
                    row_ptr[r + 1] += 1;
                }
            }
        }
        for r in 0..dim {
            row_ptr[r + 1] += row_ptr[r];
        }
        let mut next = row_ptr[..dim].to_vec();
        let (mut pos, mut col) = (vec![0; row_ptr[dim]], vec![0; row_ptr[dim]]);
        for (c, w) in col_ptr.windows(2).enumerate() {
            for (p, &r) in (w[0]..w[1]).zip(&row_idx[w[0]..w[1]]) {
                if r != c {
                    pos[next[r]] = p;
                    col[next[r]] = c;
                    next[r] += 1;
                }
            }
        }
        Upper {
            col_ptr,
            row_idx,
            row_ptr,
            pos,
            col,
        }
    }

    /// Each row's ∞-norm of the symmetric matrix of values `vals`, into `norm`.
    pub(crate) fn row_norms(&self, vals: &[f64], norm: &mut [f64]) {
        if self.row_ptr.is_empty() {
            norm.fill(0.0);
            for (c, w) in self.col_ptr.windows(2).enumerate() {
                for (&r, v) in self.row_idx[w[0]..w[1]].iter().zip(&vals[w[0]..w[1]]) {
                    norm[r] = norm[r].max(v.abs());
                    norm[c] = norm[c].max(v.abs());
                }
            }
            return;
        }
        norm.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, chunk)| {
                for (i, out) in (k * CHUNK..).zip(chunk.iter_mut()) {
                    let column = vals[self.col_ptr[i]..self.col_ptr[i + 1]].iter();
                    let row = self.pos[self.row_ptr[i]..self.row_ptr[i + 1]]
                        .iter()
                        .map(|&p| &vals[p]);
                    *out = column.chain(row).fold(0.0f64, |m, v| m.max(v.abs()));
                }
            });
    }

    /// `vals ← D vals D`, `D = diag(d)`.
    pub(crate) fn scale(&self, vals: &mut [f64], d: &[f64]) {
        // A stretch of values from the `k`-th chunk's first on.
        let stretch = |(k, chunk): (usize, &mut [f64])| {
            let start = k * CHUNK;
            // The column of the stretch's first value.
            let mut c = self.col_ptr.partition_point(|&p| p <= start) - 1;
            for (p, v) in (start..).zip(chunk.iter_mut()) {
                while self.col_ptr[c + 1] <= p {
                    c += 1;
                }
                *v *= d[self.row_idx[p]] * d[c];
            }
        };
        if self.row_ptr.is_empty() {
            stretch((0, vals));
        } else {
            vals.par_chunks_mut(CHUNK).enumerate().for_each(stretch);
        }
    }

    /// `y = K x`, `K` the symmetric matrix of values `vals`: by rows on rayon's threads past
    /// [`CHUNK`] rows, below by a scatter over the columns (the rounding the small problems
    /// had before, see `standard::PARALLEL_ROWS`).
    pub(crate) fn product(&self, vals: &[f64], x: &[f64], y: &mut [f64]) {
        if self.row_ptr.is_empty() {
            y.fill(0.0);
            for (c, w) in self.col_ptr.windows(2).enumerate() {
                for (&r, &v) in self.row_idx[w[0]..w[1]].iter().zip(&vals[w[0]..w[1]]) {
                    y[r] += v * x[c];
                    if r != c {
                        y[c] += v * x[r];
                    }
                }
            }
            return;
        }
        y.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| {
            for (i, out) in (k * CHUNK..).zip(chunk.iter_mut()) {
                let (lo, hi) = (self.col_ptr[i], self.col_ptr[i + 1]);
                let column: f64 = vals[lo..hi]
                    .iter()
                    .zip(&self.row_idx[lo..hi])
                    .map(|(v, &r)| v * x[r])
                    .sum();
                let (lo, hi) = (self.row_ptr[i], self.row_ptr[i + 1]);
                let row: f64 = self.pos[lo..hi]
                    .iter()
                    .zip(&self.col[lo..hi])
                    .map(|(&p, &c)| vals[p] * x[c])
                    .sum();
                *out = column + row;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The upper triangle of a dense symmetric 5 × 5 matrix with a few zeros left out of the
    /// pattern, and the full matrix.
    fn example() -> (Upper, Vec<f64>, [[f64; 5]; 5]) {
        let full = [
            [4.0, -1.0, 0.0, 2.0, 0.0],
            [-1.0, 5.0, 3.0, 0.0, 0.5],
            [0.0, 3.0, -6.0, 0.0, 0.0],
            [2.0, 0.0, 0.0, 7.0, -8.0],
            [0.0, 0.5, 0.0, -8.0, 1.0],
        ];
        let (mut col_ptr, mut row_idx, mut vals) = (vec![0], Vec::new(), Vec::new());
        for c in 0..5 {
            for (r, row) in full.iter().enumerate().take(c + 1) {
                if row[c] != 0.0 {
                    row_idx.push(r);
                    vals.push(row[c]);
                }
            }
            col_ptr.push(row_idx.len());
        }
        (Upper::new(col_ptr, row_idx), vals, full)
    }

    #[test]
    fn the_row_view_gives_the_full_matrix_rows() {
        let (upper, vals, full) = example();
        let mut norm = vec![0.0; 5];
        upper.row_norms(&vals, &mut norm);
        for (i, row) in full.iter().enumerate() {
            assert_eq!(norm[i], row.iter().fold(0.0f64, |m, v| m.max(v.abs())));
        }
        let x = [1.0, -2.0, 0.5, 3.0, -1.5];
        let mut y = vec![0.0; 5];
        upper.product(&vals, &x, &mut y);
        for (i, row) in full.iter().enumerate() {
            let want: f64 = row.iter().zip(&x).map(|(a, b)| a * b).sum();
            assert!(
                (y[i] - want).abs() < 1e-14,
                "row {i}: {} against {want}",
                y[i]
            );
        }
        let d = [1.0, 2.0, 0.5, 0.25, 4.0];
        let mut scaled = vals.clone();
        upper.scale(&mut scaled, &d);
        let cols = &upper.col_ptr;
        for c in 0..5 {
            for (&r, &v) in upper.row_idx[cols[c]..cols[c + 1]]
                .iter()
                .zip(&scaled[cols[c]..cols[c + 1]])
            {
                assert_eq!(v, full[r][c] * d[r] * d[c]);
            }
        }
        assert_eq!(cols[5], vals.len());
    }

    /// Past one task's rows and values (several chunks, a chunk starting inside a column),
    /// the passes agree with a sequential scatter over the columns: a banded matrix of
    /// 10 000 unknowns.
    #[test]
    fn the_parallel_passes_agree_with_a_sequential_scatter() {
        let dim: usize = 10_000;
        let (mut col_ptr, mut row_idx, mut vals) = (vec![0], Vec::new(), Vec::new());
        for c in 0..dim {
            for r in c.saturating_sub(3)..=c {
                row_idx.push(r);
                vals.push(((r * 7 + c * 13) % 11) as f64 - 5.0);
            }
            col_ptr.push(row_idx.len());
        }
        let x: Vec<f64> = (0..dim).map(|i| ((i * 3) % 7) as f64 - 3.0).collect();
        let (mut want_y, mut want_norm) = (vec![0.0; dim], vec![0.0f64; dim]);
        for c in 0..dim {
            for p in col_ptr[c]..col_ptr[c + 1] {
                let (r, v) = (row_idx[p], vals[p]);
                want_y[r] += v * x[c];
                want_norm[r] = want_norm[r].max(v.abs());
                want_norm[c] = want_norm[c].max(v.abs());
                if r != c {
                    want_y[c] += v * x[r];
                }
            }
        }
        let upper = Upper::new(col_ptr.clone(), row_idx.clone());
        let (mut y, mut norm) = (vec![0.0; dim], vec![0.0; dim]);
        upper.product(&vals, &x, &mut y);
        upper.row_norms(&vals, &mut norm);
        assert_eq!(norm, want_norm);
        assert_eq!(y, want_y, "integer-valued: exact in any order");
        let d: Vec<f64> = (0..dim).map(|i| 1.0 + (i % 5) as f64).collect();
        let mut scaled = vals.clone();
        upper.scale(&mut scaled, &d);
        for c in 0..dim {
            for p in col_ptr[c]..col_ptr[c + 1] {
                assert_eq!(scaled[p], vals[p] * d[row_idx[p]] * d[c]);
            }
        }
    }
}
