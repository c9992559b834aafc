//! The mirrors of the deterministic tree reductions: a workgroup's tree
//! (`shaders/tree.wgsl`), and the reduction of workgroup partials into a slot of `scalars`.

use crate::gpu::data::{Partial, Reduce};
use crate::gpu::kernels::WORKGROUP;

const WG: usize = WORKGROUP as usize;

pub(super) fn add(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    std::array::from_fn(|i| a[i] + b[i])
}

pub(super) fn max4(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    std::array::from_fn(|i| a[i].max(b[i]))
}

/// `workgroup_reduce` of `shaders/tree.wgsl` over one workgroup's values (at most
/// [`WORKGROUP`], the rest zero).
pub fn workgroup_tree(values: &[Partial]) -> Partial {
    let mut t = [Partial::default(); WG];
    t[..values.len()].copy_from_slice(values);
    let mut s = WG / 2;
    while s > 0 {
        for lid in 0..s {
            t[lid] = Partial {
                sums: add(t[lid].sums, t[lid + s].sums),
                maxes: max4(t[lid].maxes, t[lid + s].maxes),
            };
        }
        s /= 2;
    }
    t[0]
}

/// The workgroup partials of a kernel whose invocation `i` contributes `values[i]`.
pub(super) fn partials(values: &[Partial], parts: &mut [Partial]) {
    for (p, chunk) in parts.iter_mut().zip(values.chunks(WG)) {
        *p = workgroup_tree(chunk);
    }
}

/// `shaders/reduce.wgsl`: `scalars[slot]` from `count` partials.
pub fn reduce(cfg: &Reduce, parts: &[Partial], scalars: &mut [Partial]) {
    let mut lanes = [Partial::default(); WG];
    for (t, lane) in lanes.iter_mut().enumerate() {
        for p in parts[..cfg.count as usize].iter().skip(t).step_by(WG) {
            lane.sums = add(lane.sums, p.sums);
            lane.maxes = max4(lane.maxes, p.maxes);
        }
    }
    scalars[cfg.slot as usize] = workgroup_tree(&lanes);
}
