//! Fill-reducing orderings of the KKT matrix beside faer's AMD: METIS' nested dissection
//! (`METIS_NodeND`, Karypis & Kumar 1998), which on the contact graphs of piles in three
//! dimensions separates the graph by planes of bodies and leaves less fill than minimum degree
//! as the pile grows. [`super::kkt::Kkt`] analyses both on large systems and keeps the
//! cheaper by its cost model (operations plus a fixed cost per supernode).

use metis_sys::{
    METIS_NOPTIONS, METIS_NodeND, METIS_SetDefaultOptions, idx_t,
    moptions_et_METIS_OPTION_NUMBERING, rstatus_et_METIS_OK,
};

/// METIS' nested-dissection permutation `(fwd, inv)` of the symmetric matrix whose upper
/// triangle has the column-compressed pattern (`col_ptr`, `row_idx`) (`fwd[k]` the unknown
/// eliminated `k`-th, `inv` its inverse), or `None` when METIS cannot order it (a size beyond
/// its 32-bit indices, or an internal failure: the caller keeps AMD).
pub(crate) fn nested_dissection(
    col_ptr: &[usize],
    row_idx: &[usize],
) -> Option<(Vec<usize>, Vec<usize>)> {
    let dim = col_ptr.len() - 1;
    // The adjacency of the full symmetric pattern without its diagonal, as METIS takes it.
    let mut degree = vec![0usize; dim];
    for c in 0..dim {
        for &r in &row_idx[col_ptr[c]..col_ptr[c + 1]] {
            if r != c {
                degree[r] += 1;
                degree[c] += 1;
            }
        }
    }
    let mut xadj = Vec::with_capacity(dim + 1);
    xadj.push(0usize);
    for d in &degree {
        xadj.push(xadj.last().copied().unwrap_or(0) + d);
    }
    let edges = *xadj.last()?;
    if idx_t::try_from(edges).is_err() {
        return None;
    }
    let mut next = xadj[..dim].to_vec();
    let mut adjncy = vec![0 as idx_t; edges];
    for c in 0..dim {
        for &r in &row_idx[col_ptr[c]..col_ptr[c + 1]] {
            if r != c {
                adjncy[next[r]] = c as idx_t;
                next[r] += 1;
                adjncy[next[c]] = r as idx_t;
                next[c] += 1;
            }
        }
    }
    let mut xadj: Vec<idx_t> = xadj.into_iter().map(|x| x as idx_t).collect();
    let mut nvtxs = dim as idx_t;
    let mut options = [0 as idx_t; METIS_NOPTIONS as usize];
    let mut perm = vec![0 as idx_t; dim];
    let mut iperm = vec![0 as idx_t; dim];
    // SAFETY: the arrays have the lengths METIS reads (`nvtxs + 1`, `xadj[nvtxs]`, `nvtxs`
    // twice for the outputs, `METIS_NOPTIONS`); a null `vwgt` means unit weights; METIS keeps
    // no pointer after it returns.
    #[allow(unsafe_code)]
    let status = unsafe {
        METIS_SetDefaultOptions(options.as_mut_ptr());
        options[moptions_et_METIS_OPTION_NUMBERING as usize] = 0;
        METIS_NodeND(
            &mut nvtxs,
            xadj.as_mut_ptr(),
            adjncy.as_mut_ptr(),
            std::ptr::null_mut(),
            options.as_mut_ptr(),
            perm.as_mut_ptr(),
            iperm.as_mut_ptr(),
        )
    };
    if status != rstatus_et_METIS_OK {
        return None;
    }
    // METIS' `perm[k]` is the unknown eliminated `k`-th (row `k` of the permuted matrix is row
    // `perm[k]` of the original), faer's forward array; `iperm` its inverse.
    let index = |v: Vec<idx_t>| v.into_iter().map(|p| p as usize).collect();
    Some((index(perm), index(iperm)))
}
