//! Broad phase: a uniform grid over the axis-aligned bounding boxes (AABBs) of the non-plane
//! shapes. Bodies are counting-sorted into hashed cells; two bodies are a candidate pair when
//! their AABBs overlap, and the pair is emitted once, from the cell that holds the min corner
//! of the intersection of the two AABBs. Bodies covering too many cells are kept out of the
//! grid and tested against every body directly; planes (infinite) are paired with every
//! other non-plane body.

use nalgebra::Vector3;
use rayon::prelude::*;

use crate::sim::{Pose, Shape};

/// A body covering more cells than this is "large": it is tested against all bodies instead
/// of being inserted in the grid (keeps the grid linear in the number of bodies).
const MAX_CELLS_PER_BODY: i64 = 216;

/// An axis-aligned bounding box, world frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Aabb {
    min: Vector3<f64>,
    max: Vector3<f64>,
}

impl Aabb {
    /// The AABB of a shape at a pose, inflated by `margin` on every side; `None` for planes.
    pub(crate) fn of(shape: &Shape, pose: &Pose, margin: f64) -> Option<Aabb> {
        let half = match *shape {
            Shape::Sphere { radius } => Vector3::repeat(radius),
            // Extent of an oriented box along world axis i: Σ_j |R_ij| h_j.
            Shape::Box { half_extents } => {
                pose.orientation.to_rotation_matrix().matrix().abs() * Vector3::from(half_extents)
            }
            Shape::Plane => return None,
        };
        let half = half.add_scalar(margin);
        Some(Aabb {
            min: pose.position - half,
            max: pose.position + half,
        })
    }

    /// Whether the two boxes intersect (touching counts).
    pub(crate) fn overlaps(&self, other: &Aabb) -> bool {
        (0..3).all(|i| self.min[i] <= other.max[i] && other.min[i] <= self.max[i])
    }

    /// Largest side length.
    fn size(&self) -> f64 {
        (self.max - self.min).max()
    }
}

/// Integer coordinates of a grid cell.
type Cell = [i64; 3];

/// The uniform grid: cells are cubes of side `cell`, cell `c` spans `[c·cell, (c+1)·cell)`.
struct Grid {
    cell: f64,
}

impl Grid {
    /// The cell holding point `p`.
    fn cell_of(&self, p: &Vector3<f64>) -> Cell {
        // `as` saturates (and maps NaN to 0): no overflow on wild positions.
        [0, 1, 2].map(|i| (p[i] / self.cell).floor() as i64)
    }

    /// First and last cells covered by `b`, and their number (saturating).
    fn range(&self, b: &Aabb) -> (Cell, Cell, i64) {
        let (lo, hi) = (self.cell_of(&b.min), self.cell_of(&b.max));
        let count = (0..3).fold(1i64, |n, i| {
            n.saturating_mul(hi[i].saturating_sub(lo[i]).saturating_add(1))
        });
        (lo, hi, count)
    }
}

/// Hash of a cell into a table of `mask + 1` buckets (a power of two).
fn bucket(c: &Cell, mask: usize) -> usize {
    let h = (c[0] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c[1] as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (c[2] as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    ((h ^ (h >> 29)) as usize) & mask
}

/// One body in one cell.
#[derive(Debug, Clone, Copy)]
struct Entry {
    cell: Cell,
    body: usize,
}

/// Candidate pairs for the narrow phase, sorted: `(plane, other)` for planes, `(i, j)` with
/// `i < j` otherwise; pairs of two static bodies and plane–plane pairs are left out.
pub(crate) fn candidate_pairs(
    shapes: &[Shape],
    poses: &[Pose],
    is_static: &[bool],
    envelope: f64,
) -> Vec<(usize, usize)> {
    let aabbs: Vec<Option<Aabb>> = shapes
        .par_iter()
        .zip(poses.par_iter())
        .map(|(s, p)| Aabb::of(s, p, envelope))
        .collect();
    let scene = Scene {
        aabbs: &aabbs,
        is_static,
    };
    let grid = Grid {
        cell: cell_size(&aabbs),
    };
    let (entries, large): (Vec<Entry>, Vec<usize>) = scene.entries(&grid);
    let mut pairs = scene.grid_pairs(&grid, &entries);
    pairs.par_extend(scene.large_pairs(&large));
    pairs.par_extend(plane_pairs(shapes, is_static));
    pairs.par_sort_unstable();
    pairs
}

/// Cell side: the median AABB size, so that a typical body covers at most 8 cells.
fn cell_size(aabbs: &[Option<Aabb>]) -> f64 {
    let mut sizes: Vec<f64> = aabbs.iter().flatten().map(Aabb::size).collect();
    if sizes.is_empty() {
        return 1.0;
    }
    let mid = sizes.len() / 2;
    let (_, median, _) = sizes.select_nth_unstable_by(mid, f64::total_cmp);
    if median.is_finite() && *median > 0.0 {
        *median
    } else {
        1.0
    }
}

/// The bounding boxes (`None` = plane) and static flags of all bodies.
struct Scene<'a> {
    aabbs: &'a [Option<Aabb>],
    is_static: &'a [bool],
}

impl Scene<'_> {
    /// Whether `i` and `j` (both non-planes) must be tested: not both static, AABBs overlap.
    fn candidate(&self, i: usize, j: usize, a: &Aabb, b: &Aabb) -> bool {
        !(self.is_static[i] && self.is_static[j]) && a.overlaps(b)
    }

    /// The (cell, body) entries of the bodies that fit the grid, and the large bodies.
    fn entries(&self, grid: &Grid) -> (Vec<Entry>, Vec<usize>) {
        let ranges: Vec<Option<(Cell, Cell, i64)>> = self
            .aabbs
            .par_iter()
            .map(|b| b.as_ref().map(|b| grid.range(b)))
            .collect();
        let large = (0..ranges.len())
            .filter(|&i| matches!(ranges[i], Some((_, _, n)) if n > MAX_CELLS_PER_BODY))
            .collect();
        let entries = ranges
            .par_iter()
            .enumerate()
            .filter_map(|(body, r)| r.filter(|r| r.2 <= MAX_CELLS_PER_BODY).map(|r| (body, r)))
            .flat_map_iter(|(body, (lo, hi, _))| {
                let cells = (lo[0]..=hi[0]).flat_map(move |x| {
                    (lo[1]..=hi[1]).flat_map(move |y| (lo[2]..=hi[2]).map(move |z| [x, y, z]))
                });
                cells.map(move |cell| Entry { cell, body })
            })
            .collect();
        (entries, large)
    }

    /// Pairs found in the grid: entries counting-sorted by bucket, then every two entries of
    /// the same cell whose AABBs overlap, emitted only from the cell holding the min corner
    /// of the intersection (exactly one cell per overlapping pair).
    fn grid_pairs(&self, grid: &Grid, entries: &[Entry]) -> Vec<(usize, usize)> {
        let mask = (2 * entries.len()).next_power_of_two().max(1) - 1;
        let keys: Vec<usize> = entries.par_iter().map(|e| bucket(&e.cell, mask)).collect();
        let starts = bucket_starts(&keys, mask + 1);
        let mut next = starts.clone();
        let mut sorted = vec![
            Entry {
                cell: [0; 3],
                body: 0
            };
            entries.len()
        ];
        for (e, &k) in entries.iter().zip(&keys) {
            sorted[next[k]] = *e;
            next[k] += 1;
        }
        (0..=mask)
            .into_par_iter()
            .flat_map_iter(|k| self.pairs_in_bucket(grid, &sorted[starts[k]..starts[k + 1]]))
            .collect()
    }

    /// Pairs among the entries of one bucket (which may hold several cells).
    fn pairs_in_bucket(&self, grid: &Grid, es: &[Entry]) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for (x, ex) in es.iter().enumerate() {
            for ey in &es[x + 1..] {
                if ex.cell != ey.cell {
                    continue;
                }
                let (i, j) = (ex.body.min(ey.body), ex.body.max(ey.body));
                let (a, b) = (self.aabb(i), self.aabb(j));
                if self.candidate(i, j, &a, &b) && grid.cell_of(&a.min.sup(&b.min)) == ex.cell {
                    pairs.push((i, j));
                }
            }
        }
        pairs
    }

    /// Pairs of a large body with every other non-plane body (a pair of two large bodies
    /// once, from the smaller index).
    fn large_pairs<'s>(
        &'s self,
        large: &'s [usize],
    ) -> impl ParallelIterator<Item = (usize, usize)> + 's {
        large.par_iter().flat_map_iter(move |&l| {
            let a = self.aabb(l);
            (0..self.aabbs.len()).filter_map(move |j| {
                let b = self.aabbs[j]?;
                let other_large = large.binary_search(&j).is_ok();
                let fresh = j != l && (!other_large || l < j);
                (fresh && self.candidate(l, j, &a, &b)).then(|| (l.min(j), l.max(j)))
            })
        })
    }

    /// The AABB of a non-plane body.
    fn aabb(&self, i: usize) -> Aabb {
        self.aabbs[i].expect("planes are not in the grid")
    }
}

/// Exclusive prefix sums of the bucket counts: bucket `k` holds `starts[k]..starts[k + 1]`.
fn bucket_starts(keys: &[usize], buckets: usize) -> Vec<usize> {
    let mut starts = vec![0; buckets + 1];
    for &k in keys {
        starts[k + 1] += 1;
    }
    for k in 0..buckets {
        starts[k + 1] += starts[k];
    }
    starts
}

/// Every plane with every non-plane body, unless both are static.
fn plane_pairs<'s>(
    shapes: &'s [Shape],
    is_static: &'s [bool],
) -> impl ParallelIterator<Item = (usize, usize)> + 's {
    let is_plane = |i: usize| matches!(shapes[i], Shape::Plane);
    (0..shapes.len())
        .into_par_iter()
        .filter(move |&p| is_plane(p))
        .flat_map_iter(move |p| {
            (0..shapes.len())
                .filter(move |&j| !is_plane(j))
                .filter(move |&j| !(is_static[p] && is_static[j]))
                .map(move |j| (p, j))
        })
}
