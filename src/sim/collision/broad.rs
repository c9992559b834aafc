//! Broad phase: a hierarchical uniform grid over the axis-aligned bounding boxes (AABBs) of
//! the non-plane shapes.
//!
//! Level `k` has cubic cells of side `base·2^k`, `base` being the median AABB size; a body is
//! put in the finest level whose cells are at least its size, in the one cell that holds
//! the center of its AABB. The (level, cell, body) entries are counting-sorted into hashed
//! buckets. Two bodies of sizes at most `s` that overlap have centers less than `s` apart
//! along each axis, so each body finds its partners in the 27 cells around its center: at
//! its own level those of larger index, at each coarser level all (the finer body of a
//! pair looks up the coarser one). A pair is a candidate when the AABBs overlap and the
//! bounding spheres come within the envelope. Each body does a bounded number of look-ups
//! per level, so the work is linear in the number of bodies plus the number of pairs, and
//! the pairs come out sorted: those of one level by body, in parallel, merged with the
//! (few) pairs across levels. Planes (infinite) are paired with every non-plane body whose
//! AABB reaches them.

use nalgebra::Vector3;
use rayon::prelude::*;

use crate::sim::{Pose, Shape};

/// Levels above this are clamped (absurd size ratios only).
const MAX_LEVEL: u32 = 2048;

/// An axis-aligned bounding box, world frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Aabb {
    min: Vector3<f64>,
    max: Vector3<f64>,
}

impl Aabb {
    /// The AABB of a shape at a pose, inflated by `margin` on every side; `None` for planes.
    pub(crate) fn of(shape: &Shape, pose: &Pose, margin: f64) -> Option<Aabb> {
        let half = shape
            .world_half_extents(&pose.orientation)?
            .add_scalar(margin);
        Some(Aabb {
            min: pose.position - half,
            max: pose.position + half,
        })
    }

    /// Whether the two boxes intersect (touching counts).
    pub(crate) fn overlaps(&self, other: &Aabb) -> bool {
        (0..3).all(|i| self.min[i] <= other.max[i] && other.min[i] <= self.max[i])
    }

    /// The center.
    fn center(&self) -> Vector3<f64> {
        (self.min + self.max) / 2.0
    }

    /// Largest side length.
    fn size(&self) -> f64 {
        (self.max - self.min).max()
    }

    /// Whether all bounds are finite numbers.
    fn is_finite(&self) -> bool {
        self.min
            .iter()
            .chain(self.max.iter())
            .all(|x| x.is_finite())
    }
}

/// A grid cell: its level and integer coordinates within the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    level: u32,
    cell: [i64; 3],
}

/// The hierarchical grid geometry: cell `c` of level `k` spans `[c·s, (c+1)·s)`,
/// `s = base·2^k`.
struct Grid {
    base: f64,
}

impl Grid {
    /// The finest level whose cell side is at least the size of `b`.
    fn level_of(&self, b: &Aabb) -> u32 {
        let k = (b.size() / self.base).log2().ceil();
        // `as` saturates (NaN ↦ 0).
        if k > 0.0 {
            (k as u32).min(MAX_LEVEL)
        } else {
            0
        }
    }

    /// The cell of `level` holding point `p`.
    fn key_of(&self, level: u32, p: &Vector3<f64>) -> Key {
        let side = self.base * 2f64.powi(level as i32);
        Key {
            level,
            // `as` saturates: no overflow on far-away positions.
            cell: [0, 1, 2].map(|i| (p[i] / side).floor() as i64),
        }
    }
}

/// Hash of a cell into a table of `mask + 1` buckets (a power of two).
fn bucket(k: &Key, mask: usize) -> usize {
    let c = k.cell;
    let h = (c[0] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c[1] as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (c[2] as u64).wrapping_mul(0x1656_67B1_9E37_79F9)
        ^ u64::from(k.level).wrapping_mul(0x27D4_EB2F_1656_67C5);
    ((h ^ (h >> 29)) as usize) & mask
}

/// One body in one cell.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: Key,
    body: usize,
}

/// Where the occupied cells of every level fill boxes of at most this many cells per entry,
/// the cells are numbered densely (no hashing).
const DENSE_CELLS_PER_ENTRY: usize = 4;

/// The cells of one level numbered densely: those of the box `min..min + dims` (cells),
/// `x` fastest, from `first` on.
#[derive(Debug, Clone, Copy)]
struct LevelBox {
    level: u32,
    min: [i64; 3],
    dims: [i64; 3],
    first: usize,
}

impl LevelBox {
    /// The number of cell `c` (inside the box).
    fn slot(&self, c: [i64; 3]) -> usize {
        let [x, y, z] = [0, 1, 2].map(|i| (c[i] - self.min[i]) as usize);
        let [nx, ny, _] = self.dims.map(|d| d as usize);
        self.first + (z * ny + y) * nx + x
    }
}

/// How cells are found in the sorted entries.
enum Layout {
    /// Each used level's box of cells numbered densely: the cells `x − 1..=x + 1` of a row
    /// are one run of entries.
    Dense(Vec<LevelBox>),
    /// Cells hashed into `mask + 1` buckets (bodies spread too far for dense boxes): each
    /// cell's bucket is filtered by key.
    Hashed { mask: usize },
}

/// The entries counting-sorted by slot (dense cell number or hash bucket): slot `b` is
/// `sorted[starts[b]..starts[b + 1]]`.
struct Table {
    sorted: Vec<Entry>,
    starts: Vec<usize>,
    layout: Layout,
}

impl Table {
    /// The table of `entries`, whose levels are all in `used` (sorted, distinct): dense
    /// where the cells fit, else hashed.
    fn new(entries: &[Entry], used: &[u32]) -> Table {
        let layout = dense_boxes(entries, used).map_or_else(|| hashed(entries), Layout::Dense);
        Table::with_layout(entries, layout)
    }

    /// The table of `entries` in `layout`.
    fn with_layout(entries: &[Entry], layout: Layout) -> Table {
        let slots = match &layout {
            Layout::Dense(boxes) => boxes.last().map_or(0, |b| {
                b.first + b.dims.iter().map(|&d| d as usize).product::<usize>()
            }),
            Layout::Hashed { mask } => mask + 1,
        };
        let slot_of: Vec<usize> = entries
            .par_iter()
            .map(|e| match &layout {
                Layout::Dense(boxes) => level_box(boxes, e.key.level).slot(e.key.cell),
                Layout::Hashed { mask } => bucket(&e.key, *mask),
            })
            .collect();
        let mut starts = vec![0; slots + 1];
        for &b in &slot_of {
            starts[b + 1] += 1;
        }
        for b in 0..slots {
            starts[b + 1] += starts[b];
        }
        let mut next = starts.clone();
        let mut sorted = entries.to_vec();
        for (e, &b) in entries.iter().zip(&slot_of) {
            sorted[next[b]] = *e;
            next[b] += 1;
        }
        Table {
            sorted,
            starts,
            layout,
        }
    }

    /// Calls `f` with each body in the cells `(x − 1..=x + 1, y, z)` of `level`, `c` being
    /// `(x, y, z)`.
    fn row(&self, level: u32, c: [i64; 3], mut f: impl FnMut(usize)) {
        let xs = c[0].saturating_sub(1)..=c[0].saturating_add(1);
        match &self.layout {
            Layout::Dense(boxes) => {
                let Some(b) = boxes.iter().find(|b| b.level == level) else {
                    return;
                };
                let inside = |i: usize| (b.min[i]..b.min[i] + b.dims[i]).contains(&c[i]);
                if !(inside(1) && inside(2)) {
                    return;
                }
                let lo = (*xs.start()).max(b.min[0]);
                let hi = (*xs.end()).min(b.min[0] + b.dims[0] - 1);
                if lo > hi {
                    return;
                }
                let (first, last) = (b.slot([lo, c[1], c[2]]), b.slot([hi, c[1], c[2]]));
                let run = &self.sorted[self.starts[first]..self.starts[last + 1]];
                run.iter().for_each(|e| f(e.body));
            }
            Layout::Hashed { mask } => {
                for x in xs {
                    let key = Key {
                        level,
                        cell: [x, c[1], c[2]],
                    };
                    let b = bucket(&key, *mask);
                    self.sorted[self.starts[b]..self.starts[b + 1]]
                        .iter()
                        .filter(|e| e.key == key)
                        .for_each(|e| f(e.body));
                }
            }
        }
    }

    /// Calls `f` with each body in the 27 cells of `level` around cell `c` (itself included).
    fn around(&self, level: u32, c: [i64; 3], mut f: impl FnMut(usize)) {
        for dz in -1..=1 {
            for dy in -1..=1 {
                let cell = [c[0], c[1].saturating_add(dy), c[2].saturating_add(dz)];
                self.row(level, cell, &mut f);
            }
        }
    }
}

/// The hashed layout for `entries`: twice as many buckets, rounded up to a power of two.
fn hashed(entries: &[Entry]) -> Layout {
    Layout::Hashed {
        mask: (2 * entries.len()).next_power_of_two() - 1,
    }
}

/// The box of `level` among `boxes`.
fn level_box(boxes: &[LevelBox], level: u32) -> &LevelBox {
    let at = boxes.partition_point(|b| b.level < level);
    &boxes[at]
}

/// The dense boxes of the levels `used` by `entries`, `None` when they would hold more
/// than [`DENSE_CELLS_PER_ENTRY`] cells per entry.
fn dense_boxes(entries: &[Entry], used: &[u32]) -> Option<Vec<LevelBox>> {
    let mut bounds = vec![([i64::MAX; 3], [i64::MIN; 3]); used.len()];
    for e in entries {
        let (lo, hi) = &mut bounds[used.partition_point(|&l| l < e.key.level)];
        for i in 0..3 {
            lo[i] = lo[i].min(e.key.cell[i]);
            hi[i] = hi[i].max(e.key.cell[i]);
        }
    }
    let room = DENSE_CELLS_PER_ENTRY.saturating_mul(entries.len()).max(64) as u128;
    let mut first = 0u128;
    let mut boxes = Vec::with_capacity(used.len());
    for (&level, (lo, hi)) in used.iter().zip(&bounds) {
        let dims = [0, 1, 2].map(|i| (i128::from(hi[i]) - i128::from(lo[i]) + 1) as u128);
        let cells = dims.iter().try_fold(1u128, |n, &d| n.checked_mul(d))?;
        boxes.push(LevelBox {
            level,
            min: *lo,
            dims: dims.map(|d| d as i64),
            first: first as usize,
        });
        first += cells;
        if first > room {
            return None;
        }
    }
    Some(boxes)
}

/// Candidate pairs for the narrow phase, sorted, into `out` (cleared first): `(plane,
/// other)` for planes, `(i, j)` with `i < j` otherwise; pairs of two static bodies and
/// plane–plane pairs are left out, and so are bodies with a non-finite pose.
pub(crate) fn candidate_pairs(
    shapes: &[Shape],
    poses: &[Pose],
    is_static: &[bool],
    envelope: f64,
    out: &mut Vec<(usize, usize)>,
) {
    let aabbs: Vec<Option<Aabb>> = shapes
        .par_iter()
        .zip(poses.par_iter())
        .map(|(s, p)| Aabb::of(s, p, envelope).filter(Aabb::is_finite))
        .collect();
    let spheres: Vec<[f64; 4]> = shapes
        .par_iter()
        .zip(poses.par_iter())
        .map(|(s, p)| {
            let r = s.bounding_radius().unwrap_or(f64::INFINITY);
            [p.position.x, p.position.y, p.position.z, r]
        })
        .collect();
    let grid = Grid {
        base: base_cell(&aabbs),
    };
    let levels: Vec<Option<u32>> = aabbs
        .par_iter()
        .map(|b| b.as_ref().map(|b| grid.level_of(b)))
        .collect();
    let scene = Scene {
        aabbs: &aabbs,
        spheres: &spheres,
        envelope,
        is_static,
        grid,
    };
    let entries: Vec<Entry> = (0..aabbs.len())
        .into_par_iter()
        .filter_map(|body| {
            let key = scene.grid.key_of(levels[body]?, &aabbs[body]?.center());
            Some(Entry { key, body })
        })
        .collect();
    let mut used: Vec<u32> = levels.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let table = Table::new(&entries, &used);
    // Each thread appends to its own vectors; they come back in body order.
    let parts: Vec<(Pairs, Pairs)> = (0..aabbs.len())
        .into_par_iter()
        .fold(
            || (Vec::new(), Vec::new()),
            |(mut same, mut across), i| {
                if let (Some(b), Some(k)) = (aabbs[i], levels[i]) {
                    let first = same.len();
                    scene.same_level_pairs(i, k, &b, &table, &mut same);
                    same[first..].sort_unstable();
                    let coarser = &used[used.partition_point(|&m| m <= k)..];
                    scene.cross_level_pairs(i, coarser, &b, &table, &mut across);
                }
                (same, across)
            },
        )
        .collect();
    let mut same = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    parts.iter().for_each(|p| same.extend_from_slice(&p.0));
    // A cell clamped at the end of the coordinate range can appear twice among the 27.
    same.dedup();
    let mut across: Vec<(usize, usize)> = parts.into_iter().flat_map(|p| p.1).collect();
    across.par_sort_unstable();
    across.dedup();
    let planes: Vec<(usize, usize)> =
        plane_pairs(shapes, poses, &aabbs, is_static, envelope).collect();
    if across.is_empty() {
        merge(&same, &planes, out);
    } else {
        let mut both = Vec::new();
        merge(&same, &across, &mut both);
        merge(&both, &planes, out);
    }
}

/// A list of body pairs.
type Pairs = Vec<(usize, usize)>;

/// The union of two sorted lists, sorted, into `out` (cleared first).
fn merge(a: &[(usize, usize)], b: &[(usize, usize)], out: &mut Vec<(usize, usize)>) {
    out.clear();
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// Side of the level-0 cells: the median AABB size.
fn base_cell(aabbs: &[Option<Aabb>]) -> f64 {
    let mut sizes: Vec<f64> = aabbs.iter().flatten().map(Aabb::size).collect();
    if sizes.is_empty() {
        return 1.0;
    }
    let mid = sizes.len() / 2;
    let (_, median, _) = sizes.select_nth_unstable_by(mid, f64::total_cmp);
    if *median > 0.0 { *median } else { 1.0 }
}

/// The bounding boxes (`None` = plane or non-finite), bounding spheres and static flags of
/// all bodies, and the grid.
struct Scene<'a> {
    aabbs: &'a [Option<Aabb>],
    /// Center and radius of each body's bounding sphere ([`Shape::bounding_radius`]).
    spheres: &'a [[f64; 4]],
    envelope: f64,
    is_static: &'a [bool],
    grid: Grid,
}

impl Scene<'_> {
    /// Whether bodies `i` and `j` must go to the narrow phase: not both static, AABBs
    /// overlap, bounding spheres within the envelope.
    fn is_candidate(&self, i: usize, j: usize) -> bool {
        let (Some(a), Some(b)) = (&self.aabbs[i], &self.aabbs[j]) else {
            return false;
        };
        !(self.is_static[i] && self.is_static[j]) && a.overlaps(b) && self.spheres_meet(i, j)
    }

    /// Whether the bounding spheres of `i` and `j` come within the envelope of each other
    /// (a relative slack of 1e-9 covers rounding): the shapes cannot otherwise. In a
    /// packing of spheres this leaves out the diagonal neighbours, whose AABBs overlap.
    fn spheres_meet(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.spheres[i], &self.spheres[j]);
        let reach = (a[3] + b[3] + self.envelope) * (1.0 + 1e-9);
        let d2: f64 = (0..3).map(|c| (a[c] - b[c]) * (a[c] - b[c])).sum();
        d2 <= reach * reach
    }

    /// Appends the pairs `(i, j)`, `j > i`, of body `i` (AABB `b`) with the bodies of its
    /// own level `k`.
    fn same_level_pairs(
        &self,
        i: usize,
        k: u32,
        b: &Aabb,
        table: &Table,
        out: &mut Vec<(usize, usize)>,
    ) {
        let c = self.grid.key_of(k, &b.center()).cell;
        table.around(k, c, |j| {
            if j > i && self.is_candidate(i, j) {
                out.push((i, j));
            }
        });
    }

    /// Appends the pairs `(min, max)` of body `i` (AABB `b`) with the bodies of the coarser
    /// `levels`.
    fn cross_level_pairs(
        &self,
        i: usize,
        levels: &[u32],
        b: &Aabb,
        table: &Table,
        out: &mut Vec<(usize, usize)>,
    ) {
        for &m in levels {
            let c = self.grid.key_of(m, &b.center()).cell;
            table.around(m, c, |j| {
                if self.is_candidate(i, j) {
                    out.push((i.min(j), i.max(j)));
                }
            });
        }
    }
}

/// Every plane with every non-plane body whose AABB (inflated by the envelope) reaches
/// below `envelope` above the plane, unless both are static. A body farther away cannot
/// have a point within the envelope of the plane; one with a non-finite AABB is paired
/// (the narrow phase decides).
fn plane_pairs<'s>(
    shapes: &'s [Shape],
    poses: &'s [Pose],
    aabbs: &'s [Option<Aabb>],
    is_static: &'s [bool],
    envelope: f64,
) -> impl ParallelIterator<Item = (usize, usize)> + 's {
    let is_plane = |i: usize| matches!(shapes[i], Shape::Plane);
    (0..shapes.len())
        .into_par_iter()
        .filter(move |&p| is_plane(p))
        .flat_map_iter(move |p| {
            let (n, o) = (poses[p].orientation * Vector3::z(), poses[p].position);
            let near = move |b: &Aabb| {
                let (center, half) = (b.center(), (b.max - b.min) / 2.0);
                n.dot(&(center - o)) - n.abs().dot(&half) <= envelope
            };
            (0..shapes.len())
                .filter(move |&j| !is_plane(j))
                .filter(move |&j| !(is_static[p] && is_static[j]))
                .filter(move |&j| aabbs[j].as_ref().is_none_or(near))
                .map(move |j| (p, j))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ball(r: f64) -> Shape {
        Shape::Sphere { radius: r }
    }

    #[test]
    fn huge_box_pairs_with_the_small_bodies_it_touches_once_each() {
        // A 2000-wide static floor box, small balls on it (one far off it), a medium box.
        let mut shapes = vec![Shape::Box {
            half_extents: [1000.0, 1000.0, 1.0],
        }];
        let mut poses = vec![Pose::at(Vector3::zeros())];
        for k in 0..50 {
            shapes.push(ball(0.1));
            let x = -990.0 + 40.0 * k as f64;
            poses.push(Pose::at(Vector3::new(x, 3.0 * x.sin(), 1.1)));
        }
        shapes.push(ball(0.1));
        poses.push(Pose::at(Vector3::new(0.0, 0.0, 50.0)));
        shapes.push(Shape::Box {
            half_extents: [5.0; 3],
        });
        poses.push(Pose::at(Vector3::new(25.0, 0.0, 6.0)));
        let mut is_static = vec![false; shapes.len()];
        is_static[0] = true;
        let mut pairs = Vec::new();
        candidate_pairs(&shapes, &poses, &is_static, 0.01, &mut pairs);
        let mut expected: Vec<(usize, usize)> = (1..=50).map(|j| (0, j)).collect();
        expected.push((0, 52));
        assert_eq!(pairs, expected);
    }

    #[test]
    fn dense_and_hashed_cells_hold_the_same_bodies() {
        // Bodies on three levels in a block of cells, several per cell, some cells empty.
        let entries: Vec<Entry> = (0..600)
            .map(|body| {
                let level = [0, 0, 0, 1, 3][body % 5];
                let cell = [body % 7, body / 7 % 5, body / 35 % 4].map(|c| c as i64 - 2);
                Entry {
                    key: Key { level, cell },
                    body,
                }
            })
            .collect();
        let used = [0, 1, 3];
        let dense = Table::new(&entries, &used);
        assert!(matches!(dense.layout, Layout::Dense(_)));
        let hashed = Table::with_layout(&entries, hashed(&entries));
        let mut cells = 0;
        for level in [0, 1, 2, 3] {
            for c in (0..9 * 8 * 7).map(|i| [i % 9, i / 9 % 8, i / 72].map(|c| c as i64 - 4)) {
                let bodies = |table: &Table| {
                    let mut found = Vec::new();
                    table.around(level, c, |j| found.push(j));
                    found.sort_unstable();
                    found
                };
                let found = bodies(&dense);
                assert_eq!(found, bodies(&hashed), "level {level}, cell {c:?}");
                cells += usize::from(!found.is_empty());
            }
        }
        assert!(cells > 500, "{cells}");
    }

    #[test]
    fn levels_fit_the_bodies_and_overlapping_bodies_are_in_neighbouring_cells() {
        let grid = Grid { base: 0.3 };
        for size in [0.01, 0.3, 0.31, 7.0, 1e6] {
            let b = Aabb {
                min: Vector3::repeat(-0.123),
                max: Vector3::repeat(size - 0.123),
            };
            let level = grid.level_of(&b);
            assert!(grid.base * 2f64.powi(level as i32) >= size);
            assert!(level == 0 || grid.base * 2f64.powi(level as i32 - 1) < size);
            // A body of the same size touching `b` at a corner, on either side.
            for shift in [-size, size] {
                let other = Vector3::repeat(shift) + b.center();
                let (key, center) = (grid.key_of(level, &other), grid.key_of(level, &b.center()));
                assert!((0..3).all(|i| (key.cell[i] - center.cell[i]).abs() <= 1));
            }
        }
    }
}
