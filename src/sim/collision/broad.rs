//! Broad phase: a hierarchical uniform grid over the axis-aligned bounding boxes (AABBs) of
//! the non-plane shapes.
//!
//! Level `k` has cubic cells of side `base·2^k`, `base` being the median AABB size (of an
//! even sample of at most [`SIZE_SAMPLE`] bodies); a body is put in the finest level whose
//! cells are at least its size, in the one cell that holds the center of its AABB. The
//! (level, cell, body) entries are counting-sorted by cell (cells numbered densely within
//! each level's box, hashed buckets when the boxes would be sparse). Two bodies of sizes at
//! most `s` that overlap have centers less than `s` apart along each axis, so each body
//! finds its partners in the 27 cells around its center: at its own level those of larger
//! index, at each coarser level all (the finer body of a pair looks up the coarser one). A
//! pair is a candidate when the AABBs overlap and the bounding spheres come within the
//! envelope. Each body does a bounded number of look-ups per level, so the work is linear
//! in the number of bodies plus the number of pairs. [`Broad::pairs_of`] gives one body's
//! pairs already sorted, so that the caller can run bodies in parallel and keep the order;
//! only the pairs with a coarser body of smaller index sort elsewhere. Planes (infinite)
//! are paired with every non-plane body whose AABB reaches them. The buffers are kept
//! between calls ([`Broad`]).

use nalgebra::Vector3;
use rayon::prelude::*;
use smallvec::SmallVec;

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
#[derive(Debug, Default)]
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
#[derive(Debug)]
enum Layout {
    /// Each used level's box of cells numbered densely: the cells `x − 1..=x + 1` of a row
    /// are one run of entries.
    Dense(Vec<LevelBox>),
    /// Cells hashed into `mask + 1` buckets (bodies spread too far for dense boxes): each
    /// cell's bucket is filtered by key.
    Hashed { mask: usize },
}

impl Default for Layout {
    fn default() -> Self {
        Layout::Dense(Vec::new())
    }
}

/// The entries counting-sorted by slot (dense cell number or hash bucket): slot `b` is
/// `sorted[starts[b]..starts[b + 1]]`. Its buffers are kept from one fill to the next.
#[derive(Debug, Default)]
struct Table {
    sorted: Vec<Entry>,
    /// The body of each entry of `sorted`: what a look-up in a dense box reads (8 bytes
    /// an entry instead of 40).
    bodies: Vec<usize>,
    starts: Vec<usize>,
    /// The slot of each entry.
    slot_of: Vec<usize>,
    layout: Layout,
}

impl Table {
    /// Fills the table with `entries`, whose levels are all in `used` (sorted, distinct):
    /// dense where the cells fit, else hashed.
    fn fill(&mut self, entries: &[Entry], used: &[u32]) {
        let layout = dense_boxes(entries, used).map_or_else(|| hashed(entries), Layout::Dense);
        self.fill_with_layout(entries, layout);
    }

    /// Fills the table with `entries` in `layout`.
    fn fill_with_layout(&mut self, entries: &[Entry], layout: Layout) {
        let slots = match &layout {
            Layout::Dense(boxes) => boxes.last().map_or(0, |b| {
                b.first + b.dims.iter().map(|&d| d as usize).product::<usize>()
            }),
            Layout::Hashed { mask } => mask + 1,
        };
        self.slot_of.clear();
        self.slot_of
            .par_extend(entries.par_iter().map(|e| match &layout {
                Layout::Dense(boxes) => level_box(boxes, e.key.level).slot(e.key.cell),
                Layout::Hashed { mask } => bucket(&e.key, *mask),
            }));
        // Counts shifted by one place, so that the cursors of the placement end as the
        // ends of the slots.
        let starts = &mut self.starts;
        starts.clear();
        starts.resize(slots + 2, 0);
        for &b in &self.slot_of {
            starts[b + 2] += 1;
        }
        for b in 0..slots {
            starts[b + 2] += starts[b + 1];
        }
        // Only grown: every entry is overwritten below.
        let filler = Entry {
            key: Key {
                level: 0,
                cell: [0; 3],
            },
            body: 0,
        };
        self.sorted.resize(entries.len(), filler);
        self.bodies.resize(entries.len(), 0);
        for (e, &b) in entries.iter().zip(&self.slot_of) {
            self.sorted[starts[b + 1]] = *e;
            self.bodies[starts[b + 1]] = e.body;
            starts[b + 1] += 1;
        }
        starts.pop();
        self.layout = layout;
    }

    /// Calls `f` with each body in the cells `(x − 1..=x + 1, y, z)` of `level`, `c` being
    /// `(x, y, z)`, hashed into `mask + 1` buckets.
    fn hashed_row(&self, mask: usize, level: u32, c: [i64; 3], mut f: impl FnMut(usize)) {
        for x in c[0].saturating_sub(1)..=c[0].saturating_add(1) {
            let key = Key {
                level,
                cell: [x, c[1], c[2]],
            };
            let b = bucket(&key, mask);
            self.sorted[self.starts[b]..self.starts[b + 1]]
                .iter()
                .filter(|e| e.key == key)
                .for_each(|e| f(e.body));
        }
    }

    /// Calls `f` with each body in the 27 cells of `level` around cell `c` (itself included),
    /// row by row (`z`, then `y`, then `x`).
    fn around(&self, level: u32, c: [i64; 3], mut f: impl FnMut(usize)) {
        let boxes = match &self.layout {
            Layout::Dense(boxes) => boxes,
            &Layout::Hashed { mask } => {
                for dz in -1..=1 {
                    for dy in -1..=1 {
                        let cell = [c[0], c[1].saturating_add(dy), c[2].saturating_add(dz)];
                        self.hashed_row(mask, level, cell, &mut f);
                    }
                }
                return;
            }
        };
        // The dense box looked up and the rows' `x` range clamped once for the 9 rows.
        let Some(b) = boxes.iter().find(|b| b.level == level) else {
            return;
        };
        let lo = c[0].saturating_sub(1).max(b.min[0]);
        let hi = c[0].saturating_add(1).min(b.min[0] + b.dims[0] - 1);
        if lo > hi {
            return;
        }
        let inside = |i: usize, x: i64| (b.min[i]..b.min[i] + b.dims[i]).contains(&x);
        for dz in -1..=1 {
            let z = c[2].saturating_add(dz);
            if !inside(2, z) {
                continue;
            }
            for dy in -1..=1 {
                let y = c[1].saturating_add(dy);
                if !inside(1, y) {
                    continue;
                }
                let (first, last) = (b.slot([lo, y, z]), b.slot([hi, y, z]));
                let run = &self.bodies[self.starts[first]..self.starts[last + 1]];
                run.iter().for_each(|&j| f(j));
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

/// The bodies collision detection works on: shapes, poses and static flags, one each per
/// body, and the envelope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bodies<'a> {
    /// The shapes.
    pub shapes: &'a [Shape],
    /// The poses.
    pub poses: &'a [Pose],
    /// Whether each body is static (pairs of two static bodies are left out).
    pub is_static: &'a [bool],
    /// Contacts are reported up to this gap.
    pub envelope: f64,
}

/// The broad phase over one set of bodies: their bounds and the grid, in buffers kept from
/// one [`Broad::prepare`] to the next (a time stepper maps no fresh pages per step).
#[derive(Debug, Default)]
pub(crate) struct Broad {
    /// AABB of each body inflated by the envelope (`None` = plane or non-finite).
    aabbs: Vec<Option<Aabb>>,
    /// Center and radius of each body's bounding sphere ([`Shape::bounding_radius`]).
    spheres: Vec<[f64; 4]>,
    /// Grid level of each body with an AABB.
    levels: Vec<Option<u32>>,
    /// The levels in use, sorted.
    used: Vec<u32>,
    /// Scratch of the median size.
    sizes: Vec<f64>,
    entries: Vec<Entry>,
    table: Table,
    grid: Grid,
    envelope: f64,
}

impl Broad {
    /// Bounds, levels and the grid table of `bodies`.
    pub(crate) fn prepare(&mut self, bodies: &Bodies) {
        let Bodies {
            shapes,
            poses,
            envelope,
            ..
        } = *bodies;
        self.envelope = envelope;
        let n = shapes.len();
        self.aabbs.resize(n, None);
        self.spheres.resize(n, [0.0; 4]);
        (
            self.aabbs.par_iter_mut(),
            self.spheres.par_iter_mut(),
            shapes,
            poses,
        )
            .into_par_iter()
            .with_min_len(crate::PAR_MIN_ITEMS)
            .for_each(|(aabb, sphere, s, p)| {
                *aabb = Aabb::of(s, p, envelope).filter(Aabb::is_finite);
                let r = s.bounding_radius().unwrap_or(f64::INFINITY);
                *sphere = [p.position.x, p.position.y, p.position.z, r];
            });
        self.grid = Grid {
            base: base_cell(&self.aabbs, &mut self.sizes),
        };
        let grid = &self.grid;
        let aabbs = &self.aabbs;
        self.levels.resize(n, None);
        self.levels
            .par_iter_mut()
            .zip(aabbs)
            .with_min_len(crate::PAR_MIN_ITEMS)
            .for_each(|(level, b)| *level = b.as_ref().map(|b| grid.level_of(b)));
        // The levels in use, sorted: a parallel union of small sorted sets.
        let used = self
            .levels
            .par_iter()
            .with_min_len(crate::PAR_MIN_ITEMS)
            .fold(SmallVec::<[u32; 4]>::new, |mut used, level| {
                if let Some(k) = *level
                    && let Err(at) = used.binary_search(&k)
                {
                    used.insert(at, k);
                }
                used
            })
            .reduce(SmallVec::new, |mut a, b| {
                for k in b {
                    if let Err(at) = a.binary_search(&k) {
                        a.insert(at, k);
                    }
                }
                a
            });
        self.used.clear();
        self.used.extend_from_slice(&used);
        self.entries.clear();
        self.entries.par_extend(
            self.levels
                .par_iter()
                .enumerate()
                .with_min_len(crate::PAR_MIN_ITEMS)
                .filter_map(|(body, level)| {
                    let key = grid.key_of((*level)?, &aabbs[body]?.center());
                    Some(Entry { key, body })
                }),
        );
        self.table.fill(&self.entries, &self.used);
    }

    /// The candidate pairs of body `i` (after [`Broad::prepare`] of `bodies`): those that
    /// sort at `i`'s place, `(i, j)`, appended to `own` in the order of `j`, and those with
    /// a coarser body `j < i`, `(j, i)`, to `late`. A plane's pairs are `(plane, other)`
    /// with every non-plane body whose AABB reaches it; a pair of bodies, `(i, j)` with
    /// `i < j`, when not both are static, their AABBs overlap and their bounding spheres
    /// come within the envelope. Each body finds its partners in the 27 cells around its
    /// center: at its own level those of larger index, at each coarser level all (the finer
    /// body of a pair looks up the coarser one), so each pair is found once.
    pub(crate) fn pairs_of(
        &self,
        i: usize,
        bodies: &Bodies,
        own: &mut Vec<(usize, usize)>,
        late: &mut Vec<(usize, usize)>,
    ) {
        if matches!(bodies.shapes[i], Shape::Plane) {
            self.plane_pairs(i, bodies, own);
            return;
        }
        let (Some(b), Some(k)) = (self.aabbs[i], self.levels[i]) else {
            return;
        };
        // Body i's bounds stay in registers while its neighbours are tested.
        let (sphere, is_static) = (self.spheres[i], bodies.is_static[i]);
        let envelope = self.envelope;
        // The bounding spheres first: in a packing they leave out the diagonal neighbours,
        // whose boxes overlap, with one record read.
        let candidate = |j: usize| {
            spheres_meet(&sphere, &self.spheres[j], envelope)
                && !(is_static && bodies.is_static[j])
                && self.aabbs[j]
                    .as_ref()
                    .is_some_and(|other| b.overlaps(other))
        };
        let mut mine: SmallVec<[(usize, usize); 32]> = SmallVec::new();
        let center = b.center();
        let c = self.grid.key_of(k, &center).cell;
        self.table.around(k, c, |j| {
            if j > i && candidate(j) {
                mine.push((i, j));
            }
        });
        for &m in &self.used[self.used.partition_point(|&m| m <= k)..] {
            let c = self.grid.key_of(m, &center).cell;
            self.table.around(m, c, |j| {
                if candidate(j) {
                    if j > i {
                        mine.push((i, j));
                    } else {
                        late.push((j, i));
                    }
                }
            });
        }
        mine.sort_unstable();
        // A cell clamped at the end of the coordinate range can appear twice among the 27.
        mine.dedup();
        own.extend_from_slice(&mine);
    }

    /// Appends `(p, j)` for plane `p` and every non-plane body `j` whose AABB (inflated by
    /// the envelope) reaches below `envelope` above the plane, unless both are static. A
    /// body farther away cannot have a point within the envelope of the plane; one with a
    /// non-finite AABB is paired (the narrow phase decides).
    fn plane_pairs(&self, p: usize, bodies: &Bodies, out: &mut Vec<(usize, usize)>) {
        let (n, o) = (
            bodies.poses[p].orientation * Vector3::z(),
            bodies.poses[p].position,
        );
        let near = |b: &Aabb| {
            let (center, half) = (b.center(), (b.max - b.min) / 2.0);
            n.dot(&(center - o)) - n.abs().dot(&half) <= self.envelope
        };
        let static_plane = bodies.is_static[p];
        out.extend(
            (0..bodies.shapes.len())
                .filter(|&j| !matches!(bodies.shapes[j], Shape::Plane))
                .filter(|&j| !(static_plane && bodies.is_static[j]))
                .filter(|&j| self.aabbs[j].as_ref().is_none_or(near))
                .map(|j| (p, j)),
        );
    }
}

/// Whether bounding spheres `a` and `b` (center, radius) come within `envelope` of each
/// other (a relative slack of 1e-9 covers rounding): the shapes cannot otherwise. In a
/// packing of spheres this leaves out the diagonal neighbours, whose AABBs overlap.
fn spheres_meet(a: &[f64; 4], b: &[f64; 4], envelope: f64) -> bool {
    let reach = (a[3] + b[3] + envelope) * (1.0 + 1e-9);
    let d2: f64 = (0..3).map(|c| (a[c] - b[c]) * (a[c] - b[c])).sum();
    d2 <= reach * reach
}

/// Bodies whose sizes set the level-0 cell: all of a smaller scene, else this many spread
/// evenly over the bodies.
const SIZE_SAMPLE: usize = 1024;

/// Side of the level-0 cells: the median AABB size of [`SIZE_SAMPLE`] bodies spread evenly
/// over the bodies (of all of them when they are fewer, or when the sample has no AABB;
/// `sizes` is scratch). Any side finds the same pairs: the median only keeps the levels
/// few and the cells fitted to most bodies.
fn base_cell(aabbs: &[Option<Aabb>], sizes: &mut Vec<f64>) -> f64 {
    let n = aabbs.len();
    let step = n.div_ceil(SIZE_SAMPLE).max(1);
    sizes.clear();
    sizes.extend(aabbs.iter().step_by(step).flatten().map(Aabb::size));
    if sizes.is_empty() {
        sizes.extend(aabbs.iter().flatten().map(Aabb::size));
    }
    if sizes.is_empty() {
        return 1.0;
    }
    let mid = sizes.len() / 2;
    let (_, median, _) = sizes.select_nth_unstable_by(mid, f64::total_cmp);
    if *median > 0.0 { *median } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ball(r: f64) -> Shape {
        Shape::Sphere { radius: r }
    }

    /// All candidate pairs of `bodies`, sorted; each body's own pairs come out sorted.
    fn candidate_pairs(bodies: &Bodies) -> Vec<(usize, usize)> {
        let mut broad = Broad::default();
        broad.prepare(bodies);
        let (mut own, mut late) = (Vec::new(), Vec::new());
        for i in 0..bodies.shapes.len() {
            broad.pairs_of(i, bodies, &mut own, &mut late);
        }
        assert!(own.windows(2).all(|w| w[0] < w[1]), "{own:?}");
        own.extend(late);
        own.sort_unstable();
        assert!(
            own.windows(2).all(|w| w[0] < w[1]),
            "each pair once: {own:?}"
        );
        own
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
        let pairs = candidate_pairs(&Bodies {
            shapes: &shapes,
            poses: &poses,
            is_static: &is_static,
            envelope: 0.01,
        });
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
        let mut dense = Table::default();
        dense.fill(&entries, &used);
        assert!(matches!(dense.layout, Layout::Dense(_)));
        let mut hashed_table = Table::default();
        hashed_table.fill_with_layout(&entries, hashed(&entries));
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
                assert_eq!(found, bodies(&hashed_table), "level {level}, cell {c:?}");
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
