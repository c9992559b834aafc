//! A compressed-sparse-row matrix: the storage of assembled Delassus operators and of the
//! matrices of global problems.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A real matrix in CSR storage. Column indices within a row are strictly increasing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsrMatrix {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Row pointer, `nrows + 1` entries, starting at 0.
    pub indptr: Vec<usize>,
    /// Column index of each stored entry.
    pub indices: Vec<usize>,
    /// Value of each stored entry.
    pub values: Vec<f64>,
}

/// Rows per rayon task in parallel products: small enough to balance, large enough to amortize.
const ROWS_PER_TASK: usize = 256;

impl CsrMatrix {
    /// Builds a matrix from `(row, col, value)` triplets; duplicates are summed, explicit zeros
    /// are kept (they belong to the sparsity pattern).
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        triplets: &[(usize, usize, f64)],
    ) -> Result<Self> {
        for (k, &(i, j, _)) in triplets.iter().enumerate() {
            if i >= nrows || j >= ncols {
                return Err(Error::invalid(
                    format!("triplet[{k}]"),
                    format!("entry ({i}, {j}) outside a {nrows}×{ncols} matrix"),
                ));
            }
        }
        let mut sorted: Vec<(usize, usize, f64)> = triplets.to_vec();
        sorted.sort_by_key(|&(i, j, _)| (i, j));
        let mut indptr = vec![0; nrows + 1];
        let mut indices = Vec::with_capacity(sorted.len());
        let mut values: Vec<f64> = Vec::with_capacity(sorted.len());
        let mut last = None;
        for (i, j, v) in sorted {
            if last == Some((i, j)) {
                *values.last_mut().expect("a previous entry exists") += v;
            } else {
                indices.push(j);
                values.push(v);
                indptr[i + 1] += 1;
                last = Some((i, j));
            }
        }
        for i in 0..nrows {
            indptr[i + 1] += indptr[i];
        }
        Ok(CsrMatrix {
            nrows,
            ncols,
            indptr,
            indices,
            values,
        })
    }

    /// Builds a matrix from a dense column-major array, keeping the non-zero entries.
    pub fn from_dense_col_major(nrows: usize, ncols: usize, data: &[f64]) -> Self {
        let mut triplets = Vec::new();
        for j in 0..ncols {
            for i in 0..nrows {
                let v = data[j * nrows + i];
                if v != 0.0 {
                    triplets.push((i, j, v));
                }
            }
        }
        Self::from_triplets(nrows, ncols, &triplets).expect("indices are in range by construction")
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The stored entries of row `i`: `(column indices, values)`.
    pub fn row(&self, i: usize) -> (&[usize], &[f64]) {
        let range = self.indptr[i]..self.indptr[i + 1];
        (&self.indices[range.clone()], &self.values[range])
    }

    /// Entry `(i, j)`, zero when it is not stored.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let (cols, vals) = self.row(i);
        cols.binary_search(&j).map_or(0.0, |p| vals[p])
    }

    /// Dot product of row `i` with `x`.
    pub fn row_dot(&self, i: usize, x: &[f64]) -> f64 {
        let (cols, vals) = self.row(i);
        cols.iter().zip(vals).map(|(&j, v)| v * x[j]).sum()
    }

    /// `y = A x`, rows in parallel; each row sums in stored order, so the result does not
    /// depend on the number of threads.
    pub fn mul_vec(&self, x: &[f64], y: &mut [f64]) {
        y.par_chunks_mut(ROWS_PER_TASK)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (k, yi) in chunk.iter_mut().enumerate() {
                    *yi = self.row_dot(c * ROWS_PER_TASK + k, x);
                }
            });
    }

    /// `y = Aᵀ x` (sequential scatter).
    pub fn mul_transpose_vec(&self, x: &[f64], y: &mut [f64]) {
        y.iter_mut().for_each(|v| *v = 0.0);
        for (i, &xi) in x.iter().enumerate().take(self.nrows) {
            let (cols, vals) = self.row(i);
            for (&j, v) in cols.iter().zip(vals) {
                y[j] += v * xi;
            }
        }
    }

    /// The transpose, in CSR.
    pub fn transpose(&self) -> CsrMatrix {
        let mut triplets = Vec::with_capacity(self.nnz());
        for i in 0..self.nrows {
            let (cols, vals) = self.row(i);
            triplets.extend(cols.iter().zip(vals).map(|(&j, &v)| (j, i, v)));
        }
        Self::from_triplets(self.ncols, self.nrows, &triplets).expect("transpose stays in range")
    }

    /// The dense matrix (row-major `nrows × ncols`), for small problems and tests.
    pub fn to_dense(&self) -> nalgebra::DMatrix<f64> {
        let mut m = nalgebra::DMatrix::zeros(self.nrows, self.ncols);
        for i in 0..self.nrows {
            let (cols, vals) = self.row(i);
            for (&j, &v) in cols.iter().zip(vals) {
                m[(i, j)] = v;
            }
        }
        m
    }

    /// Checks the CSR invariants; `name` prefixes the field in the error.
    pub fn validate(&self, name: &str) -> Result<()> {
        // `nrows + 1` overflows for nrows = usize::MAX: such a matrix has no row pointer.
        if self.nrows.checked_add(1) != Some(self.indptr.len()) {
            return Err(Error::invalid(
                format!("{name}.indptr"),
                format!(
                    "has {} entries, expected nrows + 1 = {} + 1",
                    self.indptr.len(),
                    self.nrows
                ),
            ));
        }
        if self.indptr[0] != 0 || self.indptr[self.nrows] != self.indices.len() {
            return Err(Error::invalid(
                format!("{name}.indptr"),
                "must start at 0 and end at the number of stored entries",
            ));
        }
        if self.indices.len() != self.values.len() {
            return Err(Error::invalid(
                format!("{name}.values"),
                format!(
                    "has {} entries but indices has {}",
                    self.values.len(),
                    self.indices.len()
                ),
            ));
        }
        // Every pointer first: a row is sliced only once all of them are known in range.
        if let Some(i) = (0..self.nrows).find(|&i| self.indptr[i] > self.indptr[i + 1]) {
            return Err(Error::invalid(
                format!("{name}.indptr[{}]", i + 1),
                "row pointer decreases",
            ));
        }
        for i in 0..self.nrows {
            let (cols, vals) = self.row(i);
            for (p, (&j, &v)) in cols.iter().zip(vals).enumerate() {
                let at = self.indptr[i] + p;
                if j >= self.ncols {
                    return Err(Error::invalid(
                        format!("{name}.indices[{at}]"),
                        format!("column {j} out of range (ncols = {})", self.ncols),
                    ));
                }
                if p > 0 && cols[p - 1] >= j {
                    return Err(Error::invalid(
                        format!("{name}.indices[{at}]"),
                        format!("columns of row {i} are not strictly increasing"),
                    ));
                }
                if !v.is_finite() {
                    return Err(Error::invalid(
                        format!("{name}.values[{at}]"),
                        format!("is {v} (row {i}, column {j}); entries must be finite"),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triplets_sum_duplicates_and_products_agree() {
        let a =
            CsrMatrix::from_triplets(2, 3, &[(1, 2, 1.0), (0, 0, 2.0), (1, 2, 3.0), (0, 1, -1.0)])
                .unwrap();
        assert_eq!(a.get(1, 2), 4.0);
        assert_eq!(a.nnz(), 3);
        let mut y = [0.0; 2];
        a.mul_vec(&[1.0, 2.0, 3.0], &mut y);
        assert_eq!(y, [0.0, 12.0]);
        let mut z = [0.0; 3];
        a.mul_transpose_vec(&[1.0, 2.0], &mut z);
        assert_eq!(z, [2.0, -1.0, 8.0]);
        assert_eq!(a.transpose().transpose(), a);
        a.validate("a").unwrap();
    }

    #[test]
    fn validation_names_the_entry() {
        let mut a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)]).unwrap();
        a.values[1] = f64::NAN;
        let msg = a.validate("n").unwrap_err().to_string();
        assert!(msg.contains("n.values[1]"), "{msg}");
        // A pointer past the entries, then back: an error, not a slice out of range.
        let mut b = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)]).unwrap();
        b.indptr[1] = 5;
        let msg = b.validate("b").unwrap_err().to_string();
        assert!(msg.contains("b.indptr[2]"), "{msg}");
        // nrows at the integer limit: an error, not an overflow of `nrows + 1`.
        let mut c = CsrMatrix::from_triplets(1, 1, &[(0, 0, 1.0)]).unwrap();
        c.nrows = usize::MAX;
        let msg = c.validate("h").unwrap_err().to_string();
        assert!(msg.contains("h.indptr"), "{msg}");
    }
}
