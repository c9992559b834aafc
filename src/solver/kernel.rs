//! The CPU kernel of projected Jacobi and of the coloured Gauss–Seidel on a factored system
//! (issue 16), written for the memory system: the blocks are stored in groups of
//! [`L`] consecutive blocks (structure of arrays within a group: one lane per block), each
//! group one contiguous record, read in order by rayon tasks over contiguous chunks, in
//! `f32` or `f64` ([`Lane`], `--precision`), and moved [`L`] at a time in SIMD lanes
//! ([`super::lanes`]; the gathers of `w̃` and the stores of the products by in-register
//! transposes, [`super::moves`], under the run-time dispatch of [`Isa`]).
//!
//! The rows are stored scaled by the bodies' masses, `J̃ = J M^{-1/2}` ([`super::rows`]),
//! so that `J M⁻¹ Jᵀ = J̃ J̃ᵀ` and the body velocities the kernel keeps are `w̃ = M^{1/2} w =
//! J̃ᵀ γ`: no loop reads `M⁻¹`.
//!
//! - Per group (blocks in sweep order: for the coloured sweep stage by stage, tile by tile,
//!   colour by colour, [`super::colored::Tiling`], each colour padded to whole groups with
//!   zero blocks on the ground): the scaled Jacobian rows
//!   padded to 3 rows × 2 bodies, full (36 values per block) or, when every block is a
//!   sphere contact, compact (frame and scaled tangent rows' angular parts, 21 values,
//!   expanded in registers with the bodies' linear scales: [`super::rows`]) or, when
//!   moreover the frames follow the tangent rule and each body's angular rows are those of
//!   one sphere, the normal alone (3 values, the rows rebuilt in registers with the bodies'
//!   linear and lever scales: [`super::spheres`]); the two body
//!   indices (a missing body is the "ground", a body whose velocity stays zero), `r`,
//!   `η_k` and the cone's coefficient (`μ_k`; 0 for a unilateral block; −1 for a bilateral
//!   one: no projection), and per side the accumulator cell of its product ([`Spread`]).
//!   The compliance, when the problem has some, is a stream of its own.
//! - Per body (numbered by its first accumulator cell, [`Spread`]): with compact rows, its
//!   linear scale `σ = √m⁻¹`; its velocities `w̃`, 6 values padded to 8 (one cache line in
//!   `f64`): for Jacobi the accumulator cells themselves, at each body's first cell once
//!   the fold has added its others (two sets of cells, those the pass reads and those it
//!   fills, swapped after each pass); for the coloured sweep two sets of records too, those
//!   at the sweep's start, which it only reads, and those it moves, which the blocks of
//!   one colour update in place in parallel (no two share a body: [`Disjoint`]), each
//!   block reading a body from the first set where it is the sweep's first to reach it
//!   (its target marked [`FIRST`]) and from the second after.
//!
//! A pass writes the next iterate in `f64` by stores that bypass the caches ([`Streamed`]):
//! it does not read those lines back, and a plain store would first read each from DRAM.
//!
//! `M⁻¹ Jᵀ` is not stored, nor are the products. Jacobi's pass over the groups computes,
//! with the rows already in registers, the new `γ_k` and its products `J̃_{k,s}ᵀ γ_k` (one
//! 6-vector per side, transposed from the lanes in registers) and adds them into the
//! accumulator cells of its part ([`Spread`]: one cell per body and part, mostly in the
//! caches); the fold then adds into each body's first cell its cells of later parts, in
//! part order, and the next pass reads `w̃` there: no pass over the bodies. So an
//! iteration reads the Jacobian once; so
//! does a coloured sweep, whose blocks measure the residual of the iterate they start from
//! with the records of the sweep's start before their step reads the moved ones. Every loop the dispatched
//! functions run is an `#[inline(always)]` function or a plain loop: a closure there may
//! be left out of line by LLVM and compiled for the baseline (SSE2), which halved the
//! `f64` pass's speed before. The residual of an iterate is accumulated by the pass that
//! reads its velocity, lane-wise in `T` within a chunk of [`CHUNK`] groups and in `f64`
//! across chunks
//! (in the coloured sweep, chunk by chunk within a colour, colour by colour); the reported
//! residual of the returned iterate is recomputed in `f64` on the system
//! ([`merit::residual`]). The kernel's quantities (`γ`, `u`, the coloured sweep's `w̃`, the
//! residual's terms) are flushed to zero below 2⁻⁶³ in `f32` (2⁻⁵¹¹ in `f64`), where their
//! squares would be subnormal ([`lanes::flushed`]: the iterates of a packing at rest pass
//! through that range, and on x86 every subnormal operation is a microcode assist).
//! Jacobi's `w̃`, sums of the products of a flushed `γ` with the rows, is not flushed: no
//! square of it is taken, and its products with the rows are summed into `u` before
//! `u`'s flush.

use std::any::Any;
use std::ops::Range;

use rayon::prelude::*;

use super::disjoint::Disjoint;
use super::lanes::{self, Cones, Impulses, L, Lanes};
use super::moves::{FIRST, Isa, Lane, Moves, Record, Task, W};
use super::progress::{Progress, initial_iterate, norm_inf};
use super::rows::{Compact, Full, Operands, Rows, Velocities, block_scales, padded_rows};
use super::spheres::{self, Sphere};
use super::stream::Streamed;
use super::traffic::{Term, Traffic};
use super::{Criterion, Precision, Report, Session, Settings, Status, block_steps};
use crate::error::Result;
use crate::par::{copy_into, grow_for_overwrite};
use crate::problem::merit::{self, Residual};
use crate::problem::operator::FactoredOperator;
use crate::problem::{Cone, FrictionModel, System};

/// Groups per rayon task of the group passes: fixed, so that the residual's sums do not
/// depend on the number of threads.
const CHUNK: usize = 128;

/// How many groups ahead a group pass asks the cache for the bodies' records of `w`
/// (and for the groups' own records twice as far ahead, so that the bodies' indices are
/// there when their prefetch reads them). Past the caches (~1e6 contacts) the pass
/// stalled on its own record stream, which the hardware prefetcher does not keep ahead
/// of (a `perf` annotation of the prefetch of the bodies alone put a third of the pass's
/// samples on the load of the indices four groups ahead), and on the random gathers.
const AHEAD: usize = 4;

/// Parts of the group passes that spread `J_{k,s}ᵀ γ_k` into accumulator cells
/// ([`Spread`]): a fixed number, so that the sums do not depend on the threads, and few,
/// since a body that two parts touch has a cell in each.
const PARTS: usize = 16;

/// How the iterate moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sweep {
    /// Every block from the previous iterate (projected Jacobi).
    Jacobi,
    /// Colours in sequence, blocks of a colour in parallel (coloured Gauss–Seidel).
    Colored,
}

impl Sweep {
    /// The parts of the sweep's spread ([`Spread`]): Jacobi spreads every iterate's
    /// products, in [`PARTS`] parts; the coloured sweep only its first iterate's, in one
    /// part, so that each body has one cell (over the colours' order nearly every body
    /// would have a cell in most parts) and the cells have no gaps.
    fn parts(self) -> usize {
        match self {
            Sweep::Jacobi => PARTS,
            Sweep::Colored => 1,
        }
    }
}

/// The sums of a residual pass, in `f64`.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    /// `Σ ‖γ_k − Π(γ_k − û_k)‖²`.
    e2: f64,
    /// `max |γ_k − Π(γ_k − û_k)|`.
    e_inf: f64,
    /// `max |γ_k − Π(γ_k − η_k û_k)| / η_k`.
    velocity: f64,
    /// `‖γ‖²`, `‖u‖²`, `‖γ‖∞`.
    g2: f64,
    u2: f64,
    g_inf: f64,
}

impl Sums {
    fn merge(self, o: Sums) -> Sums {
        Sums {
            e2: self.e2 + o.e2,
            e_inf: self.e_inf.max(o.e_inf),
            velocity: self.velocity.max(o.velocity),
            g2: self.g2 + o.g2,
            u2: self.u2 + o.u2,
            g_inf: self.g_inf.max(o.g_inf),
        }
    }

    /// The residual, as [`merit::residual`] normalizes it.
    fn residual(&self, r_norm: f64) -> Residual {
        let two = self.e2.sqrt();
        let scale = r_norm.max(self.g2.sqrt()).max(self.u2.sqrt());
        Residual {
            inf: self.e_inf,
            two,
            relative: if scale > 0.0 { two / scale } else { two },
            velocity: self.velocity,
        }
    }
}

/// The terms of [`Sums`] per lane, in `T`, over one task's chunk of groups (at most
/// `CHUNK · L / L` terms per lane; the sums of squares are then added in `f64`).
#[derive(Clone, Copy)]
struct LaneSums<T: Lane> {
    e2: Lanes<T>,
    e_inf: Lanes<T>,
    velocity: Lanes<T>,
    g2: Lanes<T>,
    u2: Lanes<T>,
    g_inf: Lanes<T>,
}

impl<T: Lane> LaneSums<T> {
    const ZERO: Self = LaneSums {
        e2: [T::ZERO; L],
        e_inf: [T::ZERO; L],
        velocity: [T::ZERO; L],
        g2: [T::ZERO; L],
        u2: [T::ZERO; L],
        g_inf: [T::ZERO; L],
    };

    /// Adds the group's blocks at `γ` (`g`), velocity `u` and `unit = Π(γ − û)`.
    #[inline(always)]
    fn add<M: Moves>(
        &mut self,
        moves: M,
        g: &[Lanes<T>; 3],
        u: &[Lanes<T>; 3],
        unit: &[Lanes<T>; 3],
    ) {
        // Rows written out (no loop over them: see [`Sphere::times`]).
        self.add_row(moves, &g[0], &u[0], &unit[0]);
        self.add_row(moves, &g[1], &u[1], &unit[1]);
        self.add_row(moves, &g[2], &u[2], &unit[2]);
    }

    /// [`LaneSums::add`] for one row of the group's blocks.
    #[inline(always)]
    fn add_row<M: Moves>(&mut self, moves: M, g: &Lanes<T>, u: &Lanes<T>, unit: &Lanes<T>) {
        let e = T::flush(moves, lanes::sub(*g, *unit));
        self.e2 = T::mul_add(moves, self.e2, e, e);
        self.e_inf = T::larger(moves, self.e_inf, lanes::abs(e));
        self.g2 = T::mul_add(moves, self.g2, *g, *g);
        self.u2 = T::mul_add(moves, self.u2, *u, *u);
        self.g_inf = T::larger(moves, self.g_inf, lanes::abs(*g));
    }

    /// Adds the velocity residual of the group's blocks at `γ` (`g`) with `scaled =
    /// Π(γ − η û)` and `1/η` per lane (`inv_eta`).
    #[inline(always)]
    fn add_velocity<M: Moves>(
        &mut self,
        moves: M,
        g: &[Lanes<T>; 3],
        scaled: &[Lanes<T>; 3],
        inv_eta: &Lanes<T>,
    ) {
        // Rows written out (see [`Sphere::times`]), in the rows' order.
        self.add_velocity_row(moves, &g[0], &scaled[0], inv_eta);
        self.add_velocity_row(moves, &g[1], &scaled[1], inv_eta);
        self.add_velocity_row(moves, &g[2], &scaled[2], inv_eta);
    }

    /// [`LaneSums::add_velocity`] for one row of the group's blocks.
    #[inline(always)]
    fn add_velocity_row<M: Moves>(
        &mut self,
        moves: M,
        g: &Lanes<T>,
        scaled: &Lanes<T>,
        inv_eta: &Lanes<T>,
    ) {
        let v = lanes::mul(lanes::abs(lanes::sub(*g, *scaled)), *inv_eta);
        self.velocity = T::larger(moves, self.velocity, v);
    }

    /// The lanes' sums, in `f64`.
    fn total(&self) -> Sums {
        let sum = |v: &Lanes<T>| v.iter().map(|x| x.to_f64()).sum::<f64>();
        let max = |v: &Lanes<T>| v.iter().fold(0.0, |m: f64, x| m.max(x.to_f64()));
        Sums {
            e2: sum(&self.e2),
            e_inf: max(&self.e_inf),
            velocity: max(&self.velocity),
            g2: sum(&self.g2),
            u2: sum(&self.u2),
            g_inf: max(&self.g_inf),
        }
    }
}

/// One group's record: lane `l` is block `L · group + l`.
struct Group<T: Lane, J: Rows<T>> {
    jac: J::Group,
    r: [Lanes<T>; 3],
    /// `η_k`, 0 on padding.
    eta: Lanes<T>,
    /// `μ_k` of a Coulomb cone, 0 for a unilateral block, −1 for a bilateral one.
    mu: Lanes<T>,
    bodies: [[u32; L]; 2],
    /// Per side and lane, the accumulator cell that receives `J_{k,s}ᵀ γ_k`, relative to
    /// the first cell of the group's part ([`Spread`]); for the ground, the part's sink.
    targets: [[u32; L]; 2],
}

impl<T: Lane, J: Rows<T>> Clone for Group<T, J> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Lane, J: Rows<T>> Copy for Group<T, J> {}

/// A group's bodies as its blocks read them: their velocities `w̃`, with the operands of
/// the group's products ([`Kernel::operands`]).
#[derive(Clone, Copy)]
struct Bodies<T: Lane, R> {
    w: Velocities<T>,
    sigma: Operands<T, R>,
}

/// Where the Jacobi pass writes: the next iterate and the accumulator cells of its
/// products `J_{k,s}ᵀ γ_k` ([`Spread`]).
type JacobiOut<'a, T> = (&'a mut [Impulses<T>], &'a mut [Record<T>]);

/// Where the group passes sum the products `J̃_{k,s}ᵀ γ_k` into the body velocities `w̃`,
/// with no array of products: the groups are cut into parts of `part` consecutive groups
/// (at most [`PARTS`] parts, fixed by the problem, not the threads), one rayon task each. A
/// body that the blocks of one part alone touch has one accumulator cell, which those
/// blocks add into in order; a body that several parts touch has a cell in each. A part's
/// cells are one contiguous range of the accumulator, which its task zeroes (in `f32`) and
/// fills (plain memory, in the caches while the part runs: the blocks of a body are near
/// one another in a packing's order). The fold then adds each body's later cells into its
/// first, in part order ([`Kernel::fold`]), and the accumulator holds `w̃` at each body's
/// first cell: the next pass reads it there, with no pass over the bodies. The first add
/// into each cell in the pass's order is marked on its target ([`FIRST`]): in `f64` it
/// replaces the cell's record instead of the zeroing ([`Lane::REPLACES`]).
///
/// The kernel numbers each body by its first cell. A part's cells are first those of the
/// bodies it is the first to reach, in the order it reaches them (so the gathers of nearby
/// blocks read nearby records), then those of the bodies that earlier parts reached too
/// (its extras), then its sink, which the sides on the ground (and the padding) add into
/// and no body reads: the adds need no test. The ground is the record one past the cells,
/// zero: no part writes it.
struct Spread {
    /// Groups per part: a multiple of [`CHUNK`].
    part: usize,
    /// The first cell of each part, in part order, then the number of cells.
    starts: Vec<usize>,
    /// The number of each part's own bodies, whose first cells begin the part's range.
    own: Vec<usize>,
    /// The cells of bodies after their first, by body (each body's in part order).
    extras: Vec<Extra>,
    /// Per part, the range of `extras` that belong to its own bodies.
    folds: Vec<Range<usize>>,
}

/// A body's cell after its first ([`Spread`]).
#[derive(Debug, Clone, Copy)]
struct Extra {
    /// The body: its first cell.
    body: u32,
    /// The part whose range holds the cell.
    part: u32,
    /// The cell among that part's extras.
    at: u32,
}

impl Spread {
    /// The cells of groups on the bodies `bodies` (per group, side and lane; `n_bodies`
    /// bodies, the ground body `n_bodies`) in at most `parts` parts, the bodies renumbered
    /// in place by their first cells (the ground by the record past the cells); returns
    /// the spread, each group's targets and the first cell of each input body
    /// (`u32::MAX` for a body that no group reaches).
    fn new(
        bodies: &mut [[[u32; L]; 2]],
        n_bodies: usize,
        parts: usize,
    ) -> (Spread, Vec<[[u32; L]; 2]>, Vec<u32>) {
        let part = bodies.len().div_ceil(parts).div_ceil(CHUNK).max(1) * CHUNK;
        let ground = n_bodies as u32;
        // Per body its first cell, and the last part that gave it an extra cell with that
        // cell among the part's extras.
        let mut number = vec![u32::MAX; n_bodies];
        let mut latest = vec![(usize::MAX, 0u32); n_bodies];
        let mut all_targets = vec![[[0; L]; 2]; bodies.len()];
        let (mut starts, mut owns, mut extras) = (vec![0usize], Vec::new(), Vec::new());
        let parts = all_targets.chunks_mut(part).zip(bodies.chunks(part));
        for (p, (part_targets, part_bodies)) in parts.enumerate() {
            let base = starts[p] as u32;
            let mut own = 0u32;
            for &b in part_bodies.iter().flatten().flatten() {
                if b != ground && number[b as usize] == u32::MAX {
                    number[b as usize] = base + own;
                    own += 1;
                }
            }
            let mut part_extras = 0u32;
            for (targets, bodies) in part_targets.iter_mut().zip(part_bodies) {
                for (targets, bodies) in targets.iter_mut().zip(bodies) {
                    for (target, &b) in targets.iter_mut().zip(bodies) {
                        if b == ground {
                            continue;
                        }
                        let first = number[b as usize];
                        *target = if first >= base {
                            first - base
                        } else {
                            let cell = &mut latest[b as usize];
                            if cell.0 != p {
                                *cell = (p, part_extras);
                                extras.push(Extra {
                                    body: first,
                                    part: p as u32,
                                    at: part_extras,
                                });
                                part_extras += 1;
                            }
                            own + cell.1
                        };
                    }
                }
            }
            // The sink, the ground's cell.
            let sink = own + part_extras;
            for (targets, bodies) in part_targets.iter_mut().zip(part_bodies) {
                for (targets, bodies) in targets.iter_mut().zip(bodies) {
                    for (target, &b) in targets.iter_mut().zip(bodies) {
                        if b == ground {
                            *target = sink;
                        }
                    }
                }
            }
            // The first add into each cell in the pass's order (groups, then sides, then
            // lanes: [`Moves::add_f32`]).
            let mut reached = vec![false; sink as usize + 1];
            for target in part_targets.iter_mut().flatten().flatten() {
                if !std::mem::replace(&mut reached[*target as usize], true) {
                    *target |= FIRST;
                }
            }
            owns.push(own as usize);
            starts.push(starts[p] + sink as usize + 1);
        }
        let cells = starts[starts.len() - 1] as u32;
        for b in bodies.iter_mut().flatten().flatten() {
            *b = if *b == ground {
                cells
            } else {
                number[*b as usize]
            };
        }
        // By body; a stable sort keeps each body's in part order.
        extras.sort_by_key(|e| e.body);
        let folds = owns
            .iter()
            .zip(&starts)
            .map(|(&own, &start)| {
                let from = |b: usize| extras.partition_point(|e| (e.body as usize) < b);
                from(start)..from(start + own)
            })
            .collect();
        let spread = Spread {
            part,
            starts,
            own: owns,
            extras,
            folds,
        };
        (spread, all_targets, number)
    }

    /// The number of cells, the sinks included: the ground's record.
    fn cells(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// The cells of body `b` (its first cell), in part order.
    #[cfg(test)]
    fn cells_of(&self, b: u32) -> Vec<u32> {
        let mut cells = vec![b];
        cells.extend(self.extras.iter().filter(|e| e.body == b).map(|e| {
            let p = e.part as usize;
            (self.starts[p] + self.own[p]) as u32 + e.at
        }));
        cells
    }

    /// The accumulator `acc` cut into the parts' ranges.
    fn parts<'a, R>(&self, mut acc: &'a mut [R]) -> Vec<&'a mut [R]> {
        let mut parts = Vec::with_capacity(self.own.len());
        for range in self.starts.windows(2) {
            let (head, tail) = acc.split_at_mut(range[1] - range[0]);
            parts.push(head);
            acc = tail;
        }
        parts
    }
}

/// Sets every value of `cells` to zero.
#[inline(always)]
fn zero<T: Lane>(cells: &mut [Record<T>]) {
    for cell in cells {
        cell.v = [T::ZERO; W];
    }
}

/// Where the body velocities `w̃` lie, for the prefetches: Jacobi's folded cells and the
/// coloured sweep's records of the sweep's start (slices), the records the coloured sweep
/// moves ([`Disjoint`]).
trait Place<T: Lane>: Sync {
    /// The address of body `b`'s record (not read: an address past the records is a hint
    /// too).
    fn at(&self, b: u32) -> *const Record<T>;
}

impl<T: Lane> Place<T> for [Record<T>] {
    #[inline(always)]
    fn at(&self, b: u32) -> *const Record<T> {
        self.as_ptr().wrapping_add(b as usize)
    }
}

impl<T: Lane> Place<T> for Disjoint<'_, T> {
    #[inline(always)]
    fn at(&self, b: u32) -> *const Record<T> {
        self.address(b as usize)
    }
}

/// The velocities `w` of the bodies `bodies` in lanes.
#[inline(always)]
fn gather<T: Lane, M: Moves>(moves: M, w: &[Record<T>], bodies: &[u32; L]) -> [Lanes<T>; 6] {
    let mut rows = [&w[0].v; L];
    for (row, &b) in rows.iter_mut().zip(bodies) {
        *row = &w[b as usize].v;
    }
    T::gather(moves, rows)
}

/// The kernel's data for one system, in precision `T`, rows encoded by `J`.
pub(crate) struct Kernel<T: Lane, J: Rows<T>> {
    /// System block of each kernel block, `None` for padding.
    order: Vec<Option<usize>>,
    /// Groups of each colour (one range for Jacobi).
    colours: Vec<Range<usize>>,
    /// The colours of each tile, and the tiles of each stage, of the coloured sweep
    /// ([`super::colored::Tiling`]; one tile of one colour for Jacobi).
    tiles: Vec<Range<usize>>,
    stages: Vec<Range<usize>>,
    groups: Vec<Group<T, J>>,
    compliance: Option<Vec<[Lanes<T>; 3]>>,
    /// Per body (by its first cell, the ground's zero last), its linear scale `σ = √m⁻¹`
    /// where the rows need it ([`Rows::LINEAR`]; else empty).
    linear: Vec<T>,
    /// Per body as `linear`, its lever scale `ρ` where the rows need it ([`Rows::LEVERS`],
    /// [`super::spheres`]; else empty).
    levers: Vec<T>,
    /// Where the groups' products `J̃_{k,s}ᵀ γ_k` are summed.
    spread: Spread,
    r_norm: f64,
    /// De Saxcé's shift of the model velocity (the Coulomb friction model).
    shift: bool,
    /// Whether the passes measure the velocity residual `max |γ_k − Π(γ_k − η_k û_k)| /
    /// η_k` (one projection more per block): only when the solve stops on it; otherwise
    /// the iterates' velocity residuals are not reported (that of the returned iterate
    /// is measured on the system, as every other of its residuals).
    velocity_residual: bool,
    isa: Isa,
    sweep: Sweep,
    /// Whether the coloured sweep's schedule is disjoint ([`Kernel::schedule_is_disjoint`]),
    /// which its in-place updates need ([`Disjoint`]).
    disjoint: bool,
}

impl<T: Lane, J: Rows<T>> Kernel<T, J> {
    /// The kernel of `sweep` on `sys` (factored, operator `f`) with the blocks in the order
    /// of `colours` (each a list of system blocks; one list for Jacobi), run in the tiles and
    /// stages `tiles` ([`Job::tiles`]), block steps `eta`, the bodies' lever scales `rho`
    /// ([`Rows::LEVERS`]; else empty). The groups are written in `groups` (any contents,
    /// its memory reused).
    fn new(
        sys: &System,
        f: &FactoredOperator,
        (sweep, colours, tiles): (Sweep, &[&[usize]], Tiles<'_>),
        (eta, rho): (&[f64], &[f64]),
        settings: &Settings,
        mut groups: Vec<Group<T, J>>,
    ) -> Self {
        let mut order = Vec::with_capacity(sys.blocks() + colours.len() * L);
        let mut ranges = Vec::new();
        for c in colours {
            let start = order.len() / L;
            order.extend(c.iter().map(|&k| Some(k)));
            order.resize(order.len().div_ceil(L) * L, None);
            ranges.push(start..order.len() / L);
        }
        let n_bodies = f.bodies();
        let ground = n_bodies as u32;
        let t = T::from_f64;
        let row3 = |v: &[f64], k: usize, out: &mut [Lanes<T>; 3], l: usize| {
            let range = sys.block_range(k);
            for (i, x) in v[range].iter().enumerate() {
                out[i][l] = t(*x);
            }
        };
        let empty = Group {
            jac: J::ZERO,
            r: [[T::ZERO; L]; 3],
            eta: [T::ZERO; L],
            mu: [-T::ONE; L],
            bodies: [[ground; L]; 2],
            targets: [[0; L]; 2],
        };
        grow_for_overwrite(&mut groups, order.len() / L, empty);
        // Each group's lanes from their blocks, groups in parallel.
        let blocks = order.par_chunks(L).with_min_len(CHUNK);
        groups.par_iter_mut().zip(blocks).for_each(|(grp, blocks)| {
            *grp = empty;
            for (l, k) in blocks.iter().enumerate() {
                let Some(k) = *k else { continue };
                let full = padded_rows(f, k);
                let side = usize::from(J::flipped(&full));
                for (s, &body) in f.block_bodies(k).iter().enumerate() {
                    grp.bodies[s + side][l] = body as u32;
                }
                J::encode(&full, &block_scales(f, k), &mut grp.jac, l);
                row3(sys.r(), k, &mut grp.r, l);
                grp.eta[l] = t(eta[k]);
                grp.mu[l] = match sys.cones()[k] {
                    Cone::Bilateral { .. } => -T::ONE,
                    Cone::Unilateral => T::ZERO,
                    Cone::Coulomb { mu } => t(mu),
                };
            }
        });
        let rigid = sys.compliance().iter().all(|&e| e == 0.0);
        let compliance = (!rigid).then(|| {
            order
                .par_chunks(L)
                .with_min_len(CHUNK)
                .map(|blocks| {
                    let mut e = [[T::ZERO; L]; 3];
                    for (l, k) in blocks.iter().enumerate() {
                        if let Some(k) = *k {
                            row3(sys.compliance(), k, &mut e, l);
                        }
                    }
                    e
                })
                .collect()
        });
        let mut bodies: Vec<_> = groups.iter().map(|g| g.bodies).collect();
        let (spread, targets, first) = Spread::new(&mut bodies, n_bodies, sweep.parts());
        let (mut linear, mut levers) = (Vec::new(), Vec::new());
        if J::LINEAR {
            linear = vec![T::ZERO; spread.cells() + 1];
            for (m, &n) in f.inv_mass().iter().zip(&first) {
                if n != u32::MAX {
                    linear[n as usize] = t(m[0].sqrt());
                }
            }
        }
        if J::LEVERS {
            levers = vec![T::ZERO; spread.cells() + 1];
            for (&r, &n) in rho.iter().zip(&first) {
                if n != u32::MAX {
                    levers[n as usize] = t(r);
                }
            }
        }
        for ((grp, t), b) in groups.iter_mut().zip(targets).zip(bodies) {
            grp.targets = t;
            grp.bodies = b;
        }
        let mut kernel = Kernel {
            order,
            colours: ranges,
            tiles: tiles.0.to_vec(),
            stages: tiles.1.to_vec(),
            groups,
            compliance,
            linear,
            levers,
            spread,
            r_norm: sys.r().iter().map(|x| x * x).sum::<f64>().sqrt(),
            shift: settings.friction == FrictionModel::Coulomb,
            velocity_residual: settings.criterion == Criterion::Velocity,
            isa: Isa::detect::<T>(),
            sweep,
            disjoint: false,
        };
        kernel.disjoint = sweep == Sweep::Colored && kernel.schedule_is_disjoint();
        kernel
    }

    /// The operands of group `gi`'s products besides its rows ([`Operands`]): its bodies'
    /// `σ`, ones where the rows need none ([`Rows::LINEAR`]), and `ρ`, zeros where they need
    /// none ([`Rows::LEVERS`]), and what its rows rebuild ([`Rows::rebuild`]).
    #[inline(always)]
    fn operands(&self, gi: usize) -> Operands<T, J::Rebuilt> {
        let grp = &self.groups[gi];
        let mut sc = Operands {
            sigma: [[T::ONE; L]; 2],
            rho: [[T::ZERO; L]; 2],
            rebuilt: J::rebuild(&grp.jac),
        };
        let bodies = &grp.bodies;
        if J::LINEAR {
            for (side, bodies) in sc.sigma.iter_mut().zip(bodies) {
                for (x, &b) in side.iter_mut().zip(bodies) {
                    *x = self.linear[b as usize];
                }
            }
        }
        if J::LEVERS {
            for (side, bodies) in sc.rho.iter_mut().zip(bodies) {
                for (x, &b) in side.iter_mut().zip(bodies) {
                    *x = self.levers[b as usize];
                }
            }
        }
        sc
    }

    /// The ground's record in `w̃`, one past the cells ([`Spread`]): `w̃` has this many
    /// records and one more.
    fn ground(&self) -> usize {
        self.spread.cells()
    }

    /// `γ` of the system (`f64`, rows in system order) in kernel order, a group per `L`
    /// blocks (padding zero), flushed as the kernel's iterates are ([`lanes::flushed`]),
    /// written in `out` (its memory reused).
    fn gather(&self, sys: &System, gamma: &[f64], out: &mut Vec<Impulses<T>>) {
        grow_for_overwrite(out, self.groups.len(), [[T::ZERO; L]; 3]);
        let blocks = self.order.par_chunks(L).with_min_len(CHUNK);
        out.par_iter_mut().zip(blocks).for_each(|(out, blocks)| {
            *out = [[T::ZERO; L]; 3];
            for (l, k) in blocks.iter().enumerate() {
                if let Some(k) = *k {
                    for (i, x) in gamma[sys.block_range(k)].iter().enumerate() {
                        out[i][l] = lanes::flushed(T::from_f64(*x));
                    }
                }
            }
        });
    }

    /// The inverse of [`Kernel::gather`].
    fn scatter(&self, sys: &System, gamma: &[Impulses<T>]) -> Vec<f64> {
        let mut out = vec![0.0; sys.rows()];
        for (kk, k) in self.order.iter().enumerate() {
            if let Some(k) = *k {
                for (i, row) in sys.block_range(k).enumerate() {
                    out[row] = gamma[kk / L][i][kk % L].to_f64();
                }
            }
        }
        out
    }

    /// `w̃ = J̃ᵀ γ` at `gamma` in the cells `w` (at each body's first): the groups' products
    /// spread into the cells ([`Kernel::spread_part`]), then folded ([`Kernel::fold`]).
    fn velocities_at(&self, gamma: &[Impulses<T>], w: &mut [Record<T>]) {
        let part = self.spread.part;
        gamma
            .par_chunks(part)
            .zip(self.spread.parts(w).into_par_iter())
            .enumerate()
            .for_each(|(c, (gs, cells))| {
                self.isa.run(SpreadPart {
                    kernel: self,
                    first: c * part,
                    gs,
                    cells,
                })
            });
        self.fold(w);
    }

    /// The products `J_{k,s}ᵀ γ_k` of the groups `gs` (from group `first`, one part) added
    /// into the part's cells (zeroed first, unless the first add into a cell replaces its
    /// record: [`Lane::REPLACES`]).
    #[inline(always)]
    fn spread_part<M: Moves>(
        &self,
        moves: M,
        first: usize,
        gs: &[Impulses<T>],
        cells: &mut [Record<T>],
    ) {
        if !T::REPLACES {
            zero(cells);
        }
        for (i, g) in gs.iter().enumerate() {
            let gi = first + i;
            self.spread_group(moves, gi, g, &self.operands(gi), cells);
        }
    }

    /// Adds group `gi`'s products `J_{k,s}ᵀ γ_k` at `γ` = `g` into its targets among
    /// `cells` (its part's): transposed from the lanes in registers and added a side's
    /// record at a time ([`Moves`]).
    #[inline(always)]
    fn spread_group<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        g: &Impulses<T>,
        sigma: &Operands<T, J::Rebuilt>,
        cells: &mut [Record<T>],
    ) {
        let grp = &self.groups[gi];
        let products = J::transpose_times(&grp.jac, sigma, g);
        T::add_products(moves, &products, &grp.targets, cells);
    }

    /// Adds each body's later cells in `cells` into its first, in part order ([`Spread`]):
    /// then every body's first cell holds its `w̃`. Parts in parallel, each over its own
    /// bodies (the first cells of its range), reading the extras of later parts.
    fn fold(&self, cells: &mut [Record<T>]) {
        let spread = &self.spread;
        let mut owns = Vec::with_capacity(spread.own.len());
        let mut extras: Vec<&[Record<T>]> = Vec::with_capacity(spread.own.len());
        for (part, &own) in spread.parts(cells).into_iter().zip(&spread.own) {
            let (own, rest) = part.split_at_mut(own);
            owns.push(own);
            extras.push(rest);
        }
        owns.into_par_iter()
            .zip(&spread.folds)
            .zip(&spread.starts)
            .for_each(|((own, fold), &start)| {
                for e in &spread.extras[fold.clone()] {
                    let cell = &mut own[e.body as usize - start];
                    cell.v = lanes::add(cell.v, extras[e.part as usize][e.at as usize].v);
                }
            });
    }

    /// The velocities `u` and model velocities `û` of group `gi` at `γ` = `g`:
    /// `u_k = J̃_k w̃ + E_k γ_k + r_k`, `û_k = u_k + μ_k ‖u_t‖ e_n` under the Coulomb model
    /// (De Saxcé's shift; zero for unilateral and bilateral blocks).
    #[inline(always)]
    fn velocity<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        g: &Impulses<T>,
        (w, sigma): (&[Record<T>], &Operands<T, J::Rebuilt>),
    ) -> ([Lanes<T>; 3], [Lanes<T>; 3]) {
        self.velocity_at(moves, gi, g, &self.gather_bodies(moves, gi, w, sigma))
    }

    /// Group `gi`'s bodies in lanes: their velocities in `w`, with their linear scales
    /// `sigma` ([`Kernel::operands`]).
    #[inline(always)]
    fn gather_bodies<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        w: &[Record<T>],
        sigma: &Operands<T, J::Rebuilt>,
    ) -> Bodies<T, J::Rebuilt> {
        let grp = &self.groups[gi];
        Bodies {
            w: [
                gather(moves, w, &grp.bodies[0]),
                gather(moves, w, &grp.bodies[1]),
            ],
            sigma: *sigma,
        }
    }

    /// Group `gi`'s bodies in lanes for its step in the coloured sweep: a side's lane from
    /// `plain` (the velocities at the sweep's start) where the block is the first of the
    /// sweep to reach the body (its target marked [`FIRST`], [`Spread`]), else from
    /// `moved`, where an earlier colour left it; with their scales `sigma`.
    #[inline(always)]
    fn gather_moved<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        (plain, moved): (&[Record<T>], &Disjoint<'_, T>),
        sigma: &Operands<T, J::Rebuilt>,
    ) -> Bodies<T, J::Rebuilt> {
        let grp = &self.groups[gi];
        let mut w = [[[T::ZERO; L]; 6]; 2];
        for ((w, bodies), targets) in w.iter_mut().zip(&grp.bodies).zip(&grp.targets) {
            let mut rows = [&plain[0].v; L];
            for ((row, &b), &target) in rows.iter_mut().zip(bodies).zip(targets) {
                *row = if target & FIRST != 0 {
                    &plain[b as usize].v
                } else {
                    // SAFETY: the sweep's schedule is disjoint (`Kernel::schedule_is_disjoint`): no
                    // other block that runs now has body `b` (nor writes the ground's
                    // record), and this block writes it only after its step.
                    #[allow(unsafe_code)]
                    unsafe {
                        &moved.get(b as usize).v
                    }
                };
            }
            *w = T::gather(moves, rows);
        }
        Bodies { w, sigma: *sigma }
    }

    /// [`Kernel::velocity`] with the bodies `wb` already gathered.
    #[inline(always)]
    fn velocity_at<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        g: &Impulses<T>,
        wb: &Bodies<T, J::Rebuilt>,
    ) -> ([Lanes<T>; 3], [Lanes<T>; 3]) {
        let grp = &self.groups[gi];
        let jw = J::times(&grp.jac, &wb.sigma, &wb.w);
        let mut u = [
            lanes::add(grp.r[0], jw[0]),
            lanes::add(grp.r[1], jw[1]),
            lanes::add(grp.r[2], jw[2]),
        ];
        if let Some(e) = &self.compliance {
            let e = &e[gi];
            u = [
                lanes::mul_add(u[0], e[0], g[0]),
                lanes::mul_add(u[1], e[1], g[1]),
                lanes::mul_add(u[2], e[2], g[2]),
            ];
        }
        let u = [
            T::flush(moves, u[0]),
            T::flush(moves, u[1]),
            T::flush(moves, u[2]),
        ];
        let mut u_hat = u;
        if self.shift {
            // Lane operations, not a loop over the lanes: LLVM would share the loop's
            // scalar squares with the residual's sums of `u²` and scalarize those.
            let mu = T::larger(moves, grp.mu, [T::ZERO; L]);
            let norm = lanes::sqrt(lanes::mul_add(lanes::mul(u[1], u[1]), u[2], u[2]));
            u_hat[0] = lanes::mul_add(u_hat[0], mu, norm);
        }
        (u, u_hat)
    }

    /// Asks the cache for the record of group `gi + 2 AHEAD` and for the records in `w`
    /// of group `gi + AHEAD`'s bodies, where there are such groups ([`Moves::prefetch`]).
    #[inline(always)]
    fn prefetch<C: Place<T> + ?Sized, M: Moves>(&self, moves: M, gi: usize, w: &C) {
        if let Some(grp) = self.groups.get(gi + 2 * AHEAD) {
            moves.prefetch(grp);
        }
        self.prefetch_bodies(moves, gi + AHEAD, w);
    }

    /// Asks the cache for the records in `w` of group `gi`'s bodies, if there is such a
    /// group.
    #[inline(always)]
    fn prefetch_bodies<C: Place<T> + ?Sized, M: Moves>(&self, moves: M, gi: usize, w: &C) {
        if let Some(grp) = self.groups.get(gi) {
            for bodies in &grp.bodies {
                for &b in bodies {
                    moves.prefetch_at(w.at(b));
                }
            }
        }
    }

    /// `Π_K(γ_k − s_k û_k)` per lane, flushed ([`lanes::flush`]).
    #[inline(always)]
    fn step<M: Moves>(
        moves: M,
        cone: &Cones<T>,
        g: &Impulses<T>,
        u_hat: &[Lanes<T>; 3],
        s: &Lanes<T>,
    ) -> Impulses<T> {
        // Rows written out (see [`Sphere::times`]).
        let mut x = [
            lanes::sub(g[0], lanes::mul(*s, u_hat[0])),
            lanes::sub(g[1], lanes::mul(*s, u_hat[1])),
            lanes::sub(g[2], lanes::mul(*s, u_hat[2])),
        ];
        T::project(moves, &mut x, cone);
        [
            T::flush(moves, x[0]),
            T::flush(moves, x[1]),
            T::flush(moves, x[2]),
        ]
    }

    /// Adds the residual terms of group `gi` (cones `cone`) at `γ` = `g` to `sums`;
    /// returns `û`.
    #[inline(always)]
    fn measure<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        cone: &Cones<T>,
        g: &Impulses<T>,
        (w, sigma): (&[Record<T>], &Operands<T, J::Rebuilt>),
        sums: &mut LaneSums<T>,
    ) -> [Lanes<T>; 3] {
        let wb = self.gather_bodies(moves, gi, w, sigma);
        self.measure_at(moves, gi, cone, g, &wb, sums)
    }

    /// [`Kernel::measure`] with the bodies `wb` already gathered.
    #[inline(always)]
    fn measure_at<M: Moves>(
        &self,
        moves: M,
        gi: usize,
        cone: &Cones<T>,
        g: &Impulses<T>,
        wb: &Bodies<T, J::Rebuilt>,
        sums: &mut LaneSums<T>,
    ) -> [Lanes<T>; 3] {
        let grp = &self.groups[gi];
        let (u, u_hat) = self.velocity_at(moves, gi, g, wb);
        let unit = Self::step(moves, cone, g, &u_hat, &[T::ONE; L]);
        sums.add(moves, g, &u, &unit);
        if self.velocity_residual {
            let mut eta = grp.eta;
            let mut inv_eta = [T::ONE; L];
            for l in 0..L {
                eta[l] = if eta[l] > T::ZERO { eta[l] } else { T::ONE };
                inv_eta[l] = T::ONE / eta[l];
            }
            let scaled = Self::step(moves, cone, g, &u_hat, &eta);
            sums.add_velocity(moves, g, &scaled, &inv_eta);
        }
        u_hat
    }

    /// The Jacobi step of the groups `gs` (from group `first`, one part) into `out`, their
    /// products spread into the part's `cells` ([`Kernel::spread_group`]; zeroed first
    /// unless [`Lane::REPLACES`]); returns the residual sums at `gs`, added in `f64` every
    /// [`CHUNK`] groups, when `MEASURE` (else zero sums; a constant, so that each case
    /// compiles to its own loop).
    #[inline(always)]
    fn jacobi_part<M: Moves, const MEASURE: bool>(
        &self,
        moves: M,
        task: JacobiPart<'_, T, J>,
    ) -> Sums {
        let JacobiPart {
            first,
            gs,
            out,
            cells,
            w,
            omega,
            ..
        } = task;
        if !T::REPLACES {
            zero(cells);
        }
        let mut total = Sums::default();
        let mut sums = LaneSums::ZERO;
        let mut out = Streamed::new(out);
        for (i, g) in gs.iter().enumerate() {
            let gi = first + i;
            self.prefetch(moves, gi, w);
            let grp = &self.groups[gi];
            let cone = Cones::of(&grp.mu);
            let sigma = self.operands(gi);
            let u_hat = if MEASURE {
                self.measure(moves, gi, &cone, g, (w, &sigma), &mut sums)
            } else {
                self.velocity(moves, gi, g, (w, &sigma)).1
            };
            let s = lanes::mul([omega; L], grp.eta);
            let next = Self::step(moves, &cone, g, &u_hat, &s);
            out.put(i, &next);
            self.spread_group(moves, gi, &next, &sigma, cells);
            if (i + 1) % CHUNK == 0 {
                total = total.merge(sums.total());
                sums = LaneSums::ZERO;
            }
        }
        total.merge(sums.total())
    }

    /// The coloured Gauss–Seidel step of the groups `gs` (from group `first`, one colour;
    /// when `first_colour`, one whose bodies no block has moved in this sweep) into `out`,
    /// each followed by the update of its bodies' records in `moved`; its velocities those
    /// of `moved` where an earlier block of the sweep moved them, else those of `plain`,
    /// the velocities at the sweep's start ([`Kernel::gather_moved`]). Returns the residual
    /// sums at `gs` when `MEASURE` (else zero sums, as [`Kernel::jacobi_part`]), measured
    /// with `plain` (on the group's record already loaded for the step: no pass of its
    /// own).
    #[inline(always)]
    fn sweep_chunk<M: Moves, const MEASURE: bool>(
        &self,
        moves: M,
        task: SweepChunk<'_, T, J>,
    ) -> Sums {
        let SweepChunk {
            first,
            first_colour,
            gs,
            out,
            plain,
            moved,
            omega,
            ..
        } = task;
        let ground = self.ground() as u32;
        let mut sums = LaneSums::ZERO;
        let mut out = Streamed::new(out);
        for (i, g) in gs.iter().enumerate() {
            let gi = first + i;
            if MEASURE {
                self.prefetch(moves, gi, plain);
            } else {
                self.prefetch(moves, gi, moved);
            }
            if MEASURE && !first_colour {
                self.prefetch_bodies(moves, gi + AHEAD, moved);
            }
            let grp = &self.groups[gi];
            let cone = Cones::of(&grp.mu);
            // In the first colour of a tile of the first stage every body is at the
            // sweep's start: the velocities the residual is measured with.
            let sigma = self.operands(gi);
            let (wb, u_hat) = if MEASURE && first_colour {
                let wb = self.gather_bodies(moves, gi, plain, &sigma);
                (wb, self.measure_at(moves, gi, &cone, g, &wb, &mut sums))
            } else {
                if MEASURE {
                    self.measure(moves, gi, &cone, g, (plain, &sigma), &mut sums);
                }
                let wb = self.gather_moved(moves, gi, (plain, moved), &sigma);
                (wb, self.velocity_at(moves, gi, g, &wb).1)
            };
            let s = lanes::mul([omega; L], grp.eta);
            let next = Self::step(moves, &cone, g, &u_hat, &s);
            out.put(i, &next);
            let delta = [
                lanes::sub(next[0], g[0]),
                lanes::sub(next[1], g[1]),
                lanes::sub(next[2], g[2]),
            ];
            // The new velocities from the gathered ones: no other block of the colour
            // touches these bodies.
            let mut d = J::transpose_times(&grp.jac, &sigma, &delta);
            for (side, old) in d.iter_mut().zip(&wb.w) {
                for c in 0..6 {
                    side[c] = T::flush(moves, lanes::add(old[c], side[c]));
                }
            }
            for (side, bodies) in d.iter().zip(&grp.bodies) {
                let records = T::records(moves, side);
                for (record, &b) in records.iter().zip(bodies) {
                    if b != ground {
                        // SAFETY: the sweep's schedule is disjoint (`Kernel::schedule_is_disjoint`):
                        // no other block that runs now has body `b`, and the borrows of
                        // this block's gather have ended.
                        #[allow(unsafe_code)]
                        unsafe {
                            moved.set(b as usize, Record::new(*record))
                        };
                    }
                }
            }
        }
        sums.total()
    }

    /// One pass over the groups at `gamma` with body velocities `w̃ = J̃ᵀ γ`: the residual
    /// sums (when `measure`), the Jacobi step `next_k = Π(γ_k − ω η_k û_k)` and its
    /// products `J̃_{k,s}ᵀ next_k` spread into the cells `acc` ([`Spread`]).
    fn jacobi_pass(
        &self,
        gamma: &[Impulses<T>],
        w: &[Record<T>],
        (omega, measure): (T, bool),
        (next, acc): JacobiOut<'_, T>,
    ) -> Sums {
        let part = self.spread.part;
        let parts: Vec<Sums> = next
            .par_chunks_mut(part)
            .zip(gamma.par_chunks(part))
            .zip(self.spread.parts(acc).into_par_iter())
            .enumerate()
            .map(|(c, ((out, gs), cells))| {
                self.isa.run(JacobiPart {
                    kernel: self,
                    first: c * part,
                    gs,
                    out,
                    cells,
                    w,
                    omega,
                    measure,
                })
            })
            .collect();
        parts.into_iter().fold(Sums::default(), Sums::merge)
    }

    /// One pass at `gamma` into `next`, by the kernel's sweep, `step` = (`ω`, whether it
    /// measures): the residual sums at `gamma` when it measures, else zero sums. `w` holds
    /// `w̃` at `gamma`, and after the pass at `next`, swapped in from `acc`: Jacobi's
    /// cells, folded, or the records the coloured sweep moved (the ground's record of
    /// either zero).
    fn pass(
        &self,
        gamma: &[Impulses<T>],
        next: &mut [Impulses<T>],
        (w, acc): (&mut Vec<Record<T>>, &mut Vec<Record<T>>),
        step: (T, bool),
    ) -> Sums {
        let sums = match self.sweep {
            Sweep::Jacobi => {
                let sums = self.jacobi_pass(gamma, w, step, (next, acc));
                self.fold(acc);
                sums
            }
            Sweep::Colored => {
                assert!(self.disjoint, "the coloured sweep's schedule shares a body");
                self.colored_pass(gamma, w, &Disjoint::new(acc), step, next)
            }
        };
        std::mem::swap(w, acc);
        sums
    }

    /// Whether no two blocks that the coloured sweep may move at once share a body: none
    /// two of a colour, nor two of different tiles of a stage (so that the sweep's
    /// [`Disjoint`] accesses never overlap).
    fn schedule_is_disjoint(&self) -> bool {
        let ground = self.ground() as u32;
        // Per body, the colour and the tile that reached it last.
        let (mut colour_of, mut tile_of) =
            (vec![usize::MAX; self.ground()], vec![0; self.ground()]);
        for stage in &self.stages {
            for t in stage.clone() {
                for c in self.tiles[t].clone() {
                    for grp in &self.groups[self.colours[c].clone()] {
                        for &b in grp.bodies.iter().flatten().filter(|&&b| b != ground) {
                            let b = b as usize;
                            let elsewhere = tile_of[b] != t && stage.contains(&tile_of[b]);
                            if colour_of[b] == c || (colour_of[b] != usize::MAX && elsewhere) {
                                return false;
                            }
                            (colour_of[b], tile_of[b]) = (c, t);
                        }
                    }
                }
            }
        }
        true
    }

    /// One coloured Gauss–Seidel sweep from `gamma` into `next`: stage by stage, the tiles
    /// of a stage in parallel, each tile's colours in sequence, each colour's groups in
    /// parallel ([`super::colored::Tiling`]), each group moved with the current cells `w`,
    /// which it then updates, `w̃_b += J̃_{k,s}ᵀ Δγ_k` (no two blocks of a colour share a
    /// body, so no two lanes either; nor do two tiles of a stage). `plain` holds `w̃ = J̃ᵀ γ`
    /// at `gamma`, the cells' values before the sweep: each block measures its residual at
    /// `gamma` with it (as Jacobi's pass does), so the residual needs no pass of its own.
    /// Returns the residual sums at `gamma` when `measure` (else zero sums), added chunk by
    /// chunk, colour by colour, tile by tile.
    fn colored_pass(
        &self,
        gamma: &[Impulses<T>],
        plain: &[Record<T>],
        moved: &Disjoint<'_, T>,
        step: (T, bool),
        next: &mut [Impulses<T>],
    ) -> Sums {
        let mut sums = Sums::default();
        let mut rest = next;
        for (s, stage) in self.stages.iter().enumerate() {
            // Each tile's part of `next`: the tiles of a stage are consecutive.
            let mut outs = Vec::with_capacity(stage.len());
            for tile in &self.tiles[stage.clone()] {
                let (out, tail) = std::mem::take(&mut rest).split_at_mut(self.span(tile));
                outs.push(out);
                rest = tail;
            }
            let tiles: Vec<Sums> = outs
                .into_par_iter()
                .zip(&self.tiles[stage.clone()])
                .map(|(mut out, tile)| {
                    let mut sums = Sums::default();
                    for c in tile.clone() {
                        let range = self.colours[c].clone();
                        let (o, tail) = std::mem::take(&mut out).split_at_mut(range.len());
                        out = tail;
                        // A tile of the first stage starts on bodies no block has moved.
                        let first = s == 0 && c == tile.start;
                        let from = (gamma, plain, moved);
                        sums = self.colour_pass(range, first, from, step, o, sums);
                    }
                    sums
                })
                .collect();
            sums = tiles.into_iter().fold(sums, Sums::merge);
        }
        sums
    }

    /// The number of groups of the colours `tile`.
    fn span(&self, tile: &Range<usize>) -> usize {
        self.colours[tile.clone()].iter().map(Range::len).sum()
    }

    /// The groups `range` of one colour (its first to move its bodies when `first`) in
    /// parallel chunks into `next` ([`Kernel::sweep_chunk`]); returns `sums` with the
    /// chunks' residual sums added.
    fn colour_pass(
        &self,
        range: Range<usize>,
        first_colour: bool,
        (gamma, plain, moved): (&[Impulses<T>], &[Record<T>], &Disjoint<'_, T>),
        (omega, measure): (T, bool),
        next: &mut [Impulses<T>],
        sums: Sums,
    ) -> Sums {
        let start = range.start;
        let parts: Vec<Sums> = next
            .par_chunks_mut(CHUNK)
            .zip(gamma[range].par_chunks(CHUNK))
            .enumerate()
            .map(|(c, (out, gs))| {
                self.isa.run(SweepChunk {
                    kernel: self,
                    first: start + c * CHUNK,
                    first_colour,
                    gs,
                    out,
                    plain,
                    moved,
                    omega,
                    measure,
                })
            })
            .collect();
        parts.into_iter().fold(sums, Sums::merge)
    }
}

// The tasks of a rayon chunk, run by `Isa::run`: their `run` is inlined into the function
// that `pulp` compiles with the CPU's instruction set (a closure would not be: its `FnOnce`
// shim is a function of its own, compiled for the baseline; nor is a large closure called
// from inside it always inlined, so the hot code below has none).

/// A part of the spread of an iterate's products ([`Kernel::spread_part`]).
struct SpreadPart<'a, T: Lane, J: Rows<T>> {
    kernel: &'a Kernel<T, J>,
    first: usize,
    gs: &'a [Impulses<T>],
    cells: &'a mut [Record<T>],
}

impl<T: Lane, J: Rows<T>> Task for SpreadPart<'_, T, J> {
    type Output = ();

    #[inline(always)]
    fn run<M: Moves>(self, moves: M) {
        self.kernel
            .spread_part(moves, self.first, self.gs, self.cells)
    }
}

/// A part of the Jacobi pass ([`Kernel::jacobi_part`]).
struct JacobiPart<'a, T: Lane, J: Rows<T>> {
    kernel: &'a Kernel<T, J>,
    first: usize,
    gs: &'a [Impulses<T>],
    out: &'a mut [Impulses<T>],
    cells: &'a mut [Record<T>],
    w: &'a [Record<T>],
    omega: T,
    /// Whether the pass measures the residual.
    measure: bool,
}

impl<T: Lane, J: Rows<T>> Task for JacobiPart<'_, T, J> {
    type Output = Sums;

    #[inline(always)]
    fn run<M: Moves>(self, moves: M) -> Sums {
        if self.measure {
            self.kernel.jacobi_part::<M, true>(moves, self)
        } else {
            self.kernel.jacobi_part::<M, false>(moves, self)
        }
    }
}

/// A chunk of one colour of the coloured sweep ([`Kernel::sweep_chunk`]).
struct SweepChunk<'a, T: Lane, J: Rows<T>> {
    kernel: &'a Kernel<T, J>,
    first: usize,
    first_colour: bool,
    gs: &'a [Impulses<T>],
    out: &'a mut [Impulses<T>],
    plain: &'a [Record<T>],
    moved: &'a Disjoint<'a, T>,
    omega: T,
    /// Whether the sweep measures the residual.
    measure: bool,
}

impl<T: Lane, J: Rows<T>> Task for SweepChunk<'_, T, J> {
    type Output = Sums;

    #[inline(always)]
    fn run<M: Moves>(self, moves: M) -> Sums {
        if self.measure {
            self.kernel.sweep_chunk::<M, true>(moves, self)
        } else {
            self.kernel.sweep_chunk::<M, false>(moves, self)
        }
    }
}

/// A solve on the kernel: projected Jacobi (`groups` one list of every block) or the
/// coloured Gauss–Seidel over the colours `groups`, on `sys` (factored, operator `f`).
pub(crate) struct Job<'a> {
    /// The solver's registry name.
    pub name: &'static str,
    pub sys: &'a System,
    pub f: &'a FactoredOperator,
    pub settings: &'a Settings,
    /// Relaxation `ω`.
    pub omega: f64,
    pub sweep: Sweep,
    pub groups: &'a [&'a [usize]],
    /// The colours of each tile and the tiles of each stage ([`super::colored::Tiling`]);
    /// one tile of one colour for Jacobi.
    pub tiles: Tiles<'a>,
}

/// The colours of each tile and the tiles of each stage of a kernel's sweep
/// ([`super::colored::Tiling`]).
pub(crate) type Tiles<'a> = (&'a [Range<usize>], &'a [Range<usize>]);

/// The tiles of Jacobi's kernel: one of one colour, in one stage.
pub(crate) const ONE_TILE: Tiles<'static> = (&[ONE], &[ONE]);

/// The range of one colour (of one tile).
const ONE: Range<usize> = 0..1;

/// Runs `job` in the precision of its settings, in the buffers of `spare`. The returned
/// iterate (the last one if converged, else the best) carries its `f64` residual.
pub(crate) fn solve(job: &Job, spare: &mut Spare) -> Report {
    match job.settings.precision {
        Precision::F32 => solve_in::<f32>(job, spare),
        Precision::F64 => solve_in::<f64>(job, spare),
    }
}

/// A solver on the kernel, whose session keeps the kernel's buffers ([`KernelSession`]).
pub(crate) trait OnKernel: Copy + Send + 'static {
    /// The registry name.
    const NAME: &'static str;
    /// Solves `sys` under `settings`, the kernel in the buffers of `spare`.
    fn solve_in(&self, sys: &System, settings: &Settings, spare: &mut Spare) -> Result<Report>;
}

/// The session of an [`OnKernel`] solver: the solver and its kernel's buffers.
pub(crate) struct KernelSession<S> {
    solver: S,
    spare: Spare,
}

impl<S> KernelSession<S> {
    /// The session of `solver`, with no buffers yet.
    pub(crate) fn new(solver: S) -> Self {
        KernelSession {
            solver,
            spare: Spare::default(),
        }
    }
}

impl<S: OnKernel> Session for KernelSession<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        self.solver.solve_in(sys, settings, &mut self.spare)
    }

    fn analyses(&self) -> usize {
        0
    }
}

/// The kernel's largest buffers, kept from one solve to the next: a time stepper's
/// problems keep about their size from step to step, and a fresh buffer's pages cost a
/// fault each (the system zeroes them), about 1 GB of them per solve at 1e6 spheres.
#[derive(Default)]
pub(crate) struct Spare(Option<Box<dyn Any + Send>>);

impl Spare {
    /// The buffers kept for precision `T` and rows `J`, or empty ones.
    fn take<T: Lane, J: Rows<T>>(&mut self) -> Buffers<T, J> {
        match self.0.take().map(|b| b.downcast::<Buffers<T, J>>()) {
            Some(Ok(buffers)) => *buffers,
            _ => Buffers {
                groups: Vec::new(),
                iterates: [Vec::new(), Vec::new(), Vec::new()],
                w: Vec::new(),
                acc: Vec::new(),
            },
        }
    }
}

/// The buffers of a [`Spare`]: their contents are overwritten by the next solve.
struct Buffers<T: Lane, J: Rows<T>> {
    groups: Vec<Group<T, J>>,
    /// The current, next and best iterates.
    iterates: [Vec<Impulses<T>>; 3],
    /// The body velocities `w̃` (Jacobi's cells the pass reads).
    w: Vec<Record<T>>,
    /// Jacobi's accumulator cells the pass fills ([`Spread`]).
    acc: Vec<Record<T>>,
}

/// Whether every block of `sys` (factored, operator `f`) is a sphere contact that the
/// compact rows encode ([`Compact::fits`]): the kernel then stores them so.
fn compact(sys: &System, f: &FactoredOperator) -> bool {
    (0..sys.blocks())
        .into_par_iter()
        .with_min_len(crate::PAR_MIN_ITEMS)
        .all(|k| {
            Compact::fits(
                &padded_rows(f, k),
                &block_scales(f, k),
                f.block_bodies(k).len(),
            )
        })
}

/// [`solve`] in precision `T`, on the rows of spheres by their normals where every block
/// is one ([`spheres::levers`]), else on compact rows where every block fits them, else on
/// full rows.
fn solve_in<T: Lane>(job: &Job, spare: &mut Spare) -> Report {
    if let Some(rho) = spheres::levers(job.f) {
        run::<T, Sphere>(job, spare, &rho)
    } else if compact(job.sys, job.f) {
        run::<T, Compact>(job, spare, &[])
    } else {
        run::<T, Full>(job, spare, &[])
    }
}

/// [`solve`] in precision `T` with rows encoded by `J`.
fn run<T: Lane, J: Rows<T>>(job: &Job, spare: &mut Spare, rho: &[f64]) -> Report {
    let &Job {
        name,
        sys,
        f,
        settings,
        omega,
        sweep,
        groups,
        tiles,
    } = job;
    let Buffers {
        groups: memory,
        iterates: [mut cur, mut next, mut best],
        mut w,
        mut acc,
    } = spare.take::<T, J>();
    let eta = block_steps(sys, settings.block_step);
    let kernel = Kernel::<T, J>::new(
        sys,
        f,
        (sweep, groups, tiles),
        (&eta, rho),
        settings,
        memory,
    );
    let omega = T::from_f64(omega);
    let gamma0 = initial_iterate(sys, settings);
    kernel.gather(sys, &gamma0, &mut cur);
    copy_into(&cur, &mut next);
    // `w̃` at `cur`, as the passes read it; the ground's record (last) zero.
    let zero = Record::new([T::ZERO; W]);
    let ground = kernel.ground();
    grow_for_overwrite(&mut w, ground + 1, zero);
    w[ground] = zero;
    kernel.velocities_at(&cur, &mut w);
    // Jacobi's pass leaves `J̃_{k,s}ᵀ next_k` in the cells `acc`, the coloured sweep `w̃` at
    // `next` in the records it moves: the ground's record zero in both.
    grow_for_overwrite(&mut acc, ground + 1, zero);
    acc[ground] = zero;
    let sums = kernel.pass(&cur, &mut next, (&mut w, &mut acc), (omega, true));
    let (mut progress, mut status) =
        Progress::observing(settings, norm_inf(&gamma0), sums.residual(kernel.r_norm));
    if settings.max_iter == 0 && status.is_none() {
        status = Some(Status::MaxIterations);
    }
    copy_into(&cur, &mut best);
    // Products with `N` of a pass that measures (the coloured sweep's residual is one of
    // its own); one that does not spends one.
    let passes = match sweep {
        Sweep::Jacobi => 1,
        Sweep::Colored => 2,
    };
    // `cur` is iterate `done`; the passes since the last measured one and their products.
    let (mut done, mut unmeasured, mut products) = (0, 0, 0);
    let status = loop {
        if let Some(status) = status {
            break status;
        }
        std::mem::swap(&mut cur, &mut next);
        done += 1;
        unmeasured += 1;
        let measure = done % settings.check_every.max(1) == 0 || done >= settings.max_iter;
        let sums = kernel.pass(&cur, &mut next, (&mut w, &mut acc), (omega, measure));
        if !measure {
            products += 1;
            continue;
        }
        let res = sums.residual(kernel.r_norm);
        let improved;
        (status, improved) = progress.observe(res, sums.g_inf, unmeasured, products + passes);
        (unmeasured, products) = (0, 0);
        if improved {
            // The next iterate is already in `next`: `cur` can be kept without a copy.
            std::mem::swap(&mut best, &mut cur);
        }
    };
    let returned = if status == Status::Converged {
        &cur
    } else {
        &best
    };
    let gamma = kernel.scatter(sys, returned);
    let u = sys.velocity(&gamma);
    let residual = merit::residual(sys, &gamma, &u, settings.friction, &eta);
    spare.0 = Some(Box::new(Buffers {
        groups: kernel.groups,
        iterates: [cur, next, best],
        w,
        acc,
    }));
    progress.report(name, sys, status, gamma, residual, Some(&u))
}

/// The number of accumulator cells ([`Spread`]) of the kernel of `f` with the blocks in
/// the order of `colours` for `sweep`, and how many of them are a body's second or later
/// cell.
fn spread_cells(f: &FactoredOperator, sweep: Sweep, colours: &[&[usize]]) -> (usize, usize) {
    let ground = f.bodies() as u32;
    let mut bodies = Vec::new();
    for c in colours {
        for blocks in c.chunks(L) {
            let mut grp = [[ground; L]; 2];
            for (l, &k) in blocks.iter().enumerate() {
                for (s, &b) in f.block_bodies(k).iter().enumerate() {
                    grp[s][l] = b as u32;
                }
            }
            bodies.push(grp);
        }
    }
    let spread = Spread::new(&mut bodies, f.bodies(), sweep.parts()).0;
    (spread.cells(), spread.extras.len())
}

/// The bytes one iteration of the kernel moves on `sys` in `precision`, with the rows'
/// encoding (`sphere`, `compact` or `full`) ([`super::traffic`]), `None` for a system that
/// is not factored. Blocks are counted in whole groups (padding included). Jacobi: the fold
/// (per extra cell its record and its body's first read, the first written, and its entry
/// in the list, [`Spread`]), then per block its record (with its 2 cell targets), the
/// scales of its 2 bodies (`σ` for compact rows, `σ` and `ρ` for a sphere's), the gathers
/// of `w̃` (the 6 values of a body's 8 in 16-byte pieces, [`super::moves`]: 8 values in
/// `f32`, 6 in `f64`) and the new `γ_k` written, per link (block and body) its product
/// added into a cell (its record read and written, the padding with it), per cell its 8
/// values zeroed (in `f32`: [`Lane::REPLACES`]). The minimum of the encoding, for
/// comparison: the record, `γ_k` read and written, and per body its scales and `w̃` written
/// once and read once (`8 + (VALUES + 11) t` per block plus `(12 + scales) t` per body: on
/// a cubic packing, 3 contacts per body, 299 B in `f64` and 153 B in `f32` with compact
/// rows, 157 B and 82 B with a sphere's); the model adds the gathers (2 bodies per block,
/// mostly cache hits) and the cells (mostly cache hits too). The coloured sweep: per block
/// its record with the gathers of its step (from the records of the sweep's start or the
/// moved ones) and the new `γ_k`; per link the body's new record written whole; on the
/// sweeps that measure (one in [`Settings::check_every`]), per block the gathers of the
/// records of the sweep's start for the residual.
pub(crate) fn traffic(
    sys: &System,
    sweep: Sweep,
    colours: &[&[usize]],
    settings: &Settings,
) -> Option<Traffic> {
    let f = sys.factored()?;
    let every = settings.check_every.max(1) as u64;
    let (t, replaces) = match settings.precision {
        Precision::F32 => (4, <f32 as Lane>::REPLACES),
        Precision::F64 => (8, <f64 as Lane>::REPLACES),
    };
    let blocks: u64 = colours
        .iter()
        .map(|c| c.len().div_ceil(L) * L)
        .sum::<usize>() as u64;
    let links = f.links().len() as u64;
    let rigid = sys.compliance().iter().all(|&e| e == 0.0);
    let comp = if rigid { 0 } else { 3 * t };
    // The encoding, its values per block and the scales of a block's 2 bodies (`σ`; and `ρ`).
    let (encoding, values, sigma) = if spheres::levers(f).is_some() {
        ("sphere", <Sphere as Rows<f64>>::VALUES, 4 * t)
    } else if compact(sys, f) {
        ("compact", <Compact as Rows<f64>>::VALUES, 2 * t)
    } else {
        ("full", <Full as Rows<f64>>::VALUES, 0)
    };
    // The 6 values of a body as its gathers and adds move them (8 in `f32`).
    let pieces = u64::div_ceil(6 * t, 16) * 16;
    let gathers = 2 * pieces;
    // Per block: bodies and targets (8 + 8), J, r, γ, η, μ, compliance, the w̃ gathers of
    // both sides, the scales.
    let record = 8 + 8 + values * t + 3 * t + 3 * t + 2 * t + comp + gathers + sigma;
    let (cells, extras) = spread_cells(f, sweep, colours);
    let (cells, extras) = (cells as u64, extras as u64);
    let terms = match sweep {
        Sweep::Jacobi => {
            vec![
                Term {
                    what: "fold",
                    bytes: extras * (3 * W as u64 * t + 12),
                },
                Term {
                    what: "Jw, residual, projection, Jᵀγ",
                    bytes: blocks * (record + 3 * t)
                        + links * 2 * W as u64 * t
                        + if replaces { 0 } else { cells * W as u64 * t },
                },
            ]
        }
        Sweep::Colored => vec![
            Term {
                what: "residual",
                bytes: blocks * gathers / every,
            },
            // The record with its step's gathers, the new `γ_k`; per link the new record.
            Term {
                what: "sweep",
                bytes: blocks * (record + 3 * t) + links * W as u64 * t,
            },
        ],
    };
    Some(Traffic {
        encoding: Some(encoding),
        terms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::bench::problems::granular_packing;
    use crate::solver::colored::{TILE, Tiling};

    #[test]
    fn the_coloured_sweeps_schedule_is_checked_disjoint() {
        // Five tiles, some of them in parallel stages.
        let sys = System::new(&granular_packing(5 * TILE).unwrap()).unwrap();
        let f = sys.factored().unwrap();
        let tiling = Tiling::of(&sys, f);
        let colours: Vec<&[usize]> = tiling.colouring().colours().collect();
        let (tiles, stages) = (tiling.tiles(), tiling.stages());
        let eta = block_steps(&sys, Settings::default().block_step);
        let mut kernel = Kernel::<f64, Full>::new(
            &sys,
            f,
            (Sweep::Colored, &colours, (&tiles, &stages)),
            (&eta, &[]),
            &Settings::default(),
            Vec::new(),
        );
        assert!(kernel.disjoint);
        let ground = kernel.ground() as u32;
        let body = |kernel: &Kernel<f64, Full>, g: usize| {
            kernel.groups[g].bodies[0]
                .into_iter()
                .find(|&b| b != ground)
        };
        // A body of one group put into another group of its colour.
        let colour = kernel.colours[1].clone();
        let (g, h) = (colour.start, colour.end - 1);
        let b = body(&kernel, g).unwrap();
        let saved = kernel.groups[h].bodies;
        kernel.groups[h].bodies[1][0] = b;
        assert!(!kernel.schedule_is_disjoint(), "two blocks of a colour");
        kernel.groups[h].bodies = saved;
        assert!(kernel.schedule_is_disjoint());
        // A body of a tile put into another tile of its stage.
        let stage = kernel.stages.iter().find(|s| s.len() >= 2).unwrap().clone();
        let (t, u) = (stage.start, stage.start + 1);
        let g = kernel.colours[kernel.tiles[t].start].start;
        let h = kernel.colours[kernel.tiles[u].start].start;
        kernel.groups[h].bodies[1][0] = body(&kernel, g).unwrap();
        assert!(!kernel.schedule_is_disjoint(), "two tiles of a stage");
    }

    #[test]
    fn every_link_reaches_one_cell_of_its_body_in_its_part() {
        // 700 groups (6 parts of 128) on 60 bodies (10 of them untouched), some sides on
        // the ground.
        let (n_bodies, ground) = (60usize, 60u32);
        let input: Vec<[[u32; L]; 2]> = (0..700)
            .map(|g| {
                std::array::from_fn(|s| {
                    std::array::from_fn(|l| {
                        let k = g * L + l;
                        if s == 1 && k.is_multiple_of(7) {
                            ground
                        } else {
                            ((k * (3 + 4 * s)) % 50 + 5) as u32
                        }
                    })
                })
            })
            .collect();
        let mut bodies = input.clone();
        let (spread, targets, first) = Spread::new(&mut bodies, n_bodies, PARTS);
        assert_eq!(spread.part, CHUNK);
        assert_eq!(spread.own.len(), 6);
        let cells = spread.cells() as u32;
        // The numbering: one number per input body, distinct, in the own range of the
        // first part that reaches it; the ground the record past the cells.
        let mut number = vec![None; n_bodies];
        let mut seen = std::collections::HashSet::new();
        for (g, (grp, orig)) in bodies.iter().zip(&input).enumerate() {
            let p = g / spread.part;
            for (side, orig) in grp.iter().zip(orig) {
                for (&b, &o) in side.iter().zip(orig) {
                    if o == ground {
                        assert_eq!(b, cells);
                        continue;
                    }
                    match number[o as usize] {
                        Some(n) => assert_eq!(n, b, "body {o}"),
                        None => {
                            let own = spread.starts[p]..spread.starts[p] + spread.own[p];
                            assert!(own.contains(&(b as usize)), "body {o}: {b} not in {own:?}");
                            assert!(seen.insert(b), "body {o}: {b} taken");
                            number[o as usize] = Some(b);
                        }
                    }
                }
            }
        }
        assert_eq!(number.iter().filter(|n| n.is_some()).count(), 50);
        let returned: Vec<Option<u32>> = first
            .iter()
            .map(|&n| (n != u32::MAX).then_some(n))
            .collect();
        assert_eq!(returned, number, "the first cells returned");
        // Spread one unit per link: each body's cells then sum to its number of links, and
        // the fold leaves that sum in its first cell.
        let mut acc = vec![0u32; spread.cells()];
        let mut links = vec![0u32; n_bodies];
        let mut reached = vec![false; spread.cells()];
        for (g, (orig, grp_targets)) in input.iter().zip(&targets).enumerate() {
            let p = g / spread.part;
            let (start, size) = (spread.starts[p], spread.starts[p + 1] - spread.starts[p]);
            for s in 0..2 {
                for l in 0..L {
                    let (o, t) = (orig[s][l], grp_targets[s][l]);
                    // The first link of each cell in the pass's order, and only that,
                    // replaces its record.
                    let first =
                        !std::mem::replace(&mut reached[start + (t & !FIRST) as usize], true);
                    assert_eq!(t & FIRST != 0, first, "group {g}, side {s}, lane {l}");
                    let t = t & !FIRST;
                    if o == ground {
                        assert_eq!(t as usize, size - 1, "the part's sink");
                        continue;
                    }
                    assert!((t as usize) < size - 1);
                    acc[start + t as usize] += 1;
                    links[o as usize] += 1;
                }
            }
        }
        let mut folded = acc.clone();
        for (p, fold) in spread.folds.iter().enumerate() {
            for e in &spread.extras[fold.clone()] {
                let q = e.part as usize;
                assert!(q > p, "an extra lies in a later part");
                folded[e.body as usize] += acc[spread.starts[q] + spread.own[q] + e.at as usize];
            }
        }
        for (o, n) in number.iter().enumerate() {
            let Some(b) = *n else { continue };
            let cells = spread.cells_of(b);
            let sum: u32 = cells.iter().map(|&c| acc[c as usize]).sum();
            assert_eq!(sum, links[o], "body {o}");
            assert_eq!(folded[b as usize], links[o], "body {o}, folded");
            // One cell per part that touches the body, in part order, none empty.
            assert!(cells.windows(2).all(|w| w[0] < w[1]), "body {o}: {cells:?}");
            assert!(cells.iter().all(|&c| acc[c as usize] > 0), "body {o}");
        }
        // In one part, no body has a second cell.
        let mut one = input.clone();
        let (single, ..) = Spread::new(&mut one, n_bodies, 1);
        assert!(single.extras.is_empty());
        assert_eq!(single.cells(), 50 + 1);
    }
}
