//! Projected Gauss–Seidel in parallel by colours (issue 16): the blocks are coloured so that
//! no two blocks of one colour are coupled (share a dynamic body in the factored form, a
//! non-zero of `N` in an explicit one); a sweep visits the colours in sequence and moves the
//! blocks of a colour in parallel, each with the latest impulses of the colours before it.
//! It is Gauss–Seidel in the order "colour by colour" ([`super::GaussSeidel`] is the order
//! of the blocks), so it converges to the same solutions; the colouring is a deterministic
//! greedy one, so the iterates are the same whatever the number of threads. A factored
//! problem runs on the CPU kernel (the `kernel` module, `f32` or `f64`) in the order of a
//! [`Tiling`]: tiles of consecutive blocks, each coloured on its own, the tiles that share
//! no body run in parallel, so that a tile's bodies stay in the caches through its
//! colours; an explicit `N` on the operator's block rows, in `f64`, colour by colour
//! ([`Colouring::of`]).

use super::gauss_seidel::sweeps;
use super::kernel::{self, KernelSession, OnKernel, Spare};
use super::{Report, Session, Settings, Solver};
use crate::error::Result;
use crate::problem::System;
use crate::problem::operator::FactoredOperator;
use std::ops::Range;

/// Projected Gauss–Seidel with over-relaxation, blocks of a colour in parallel; registry
/// name `pgs-colored`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColoredGaussSeidel;

impl ColoredGaussSeidel {
    /// Default relaxation (plain Gauss–Seidel), as [`super::GaussSeidel`].
    pub const DEFAULT_OMEGA: f64 = super::GaussSeidel::DEFAULT_OMEGA;
}

impl Solver for ColoredGaussSeidel {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        Ok(Box::new(KernelSession::new(*self)))
    }
}

impl OnKernel for ColoredGaussSeidel {
    const NAME: &'static str = "pgs-colored";

    fn solve_in(&self, sys: &System, settings: &Settings, spare: &mut Spare) -> Result<Report> {
        settings.validate(sys.rows())?;
        let omega = settings.omega.unwrap_or(Self::DEFAULT_OMEGA);
        if let Some(f) = sys.factored() {
            let tiling = Tiling::of(sys, f);
            let colours: Vec<&[usize]> = tiling.colouring().colours().collect();
            let job = kernel::Job {
                name: Self::NAME,
                sys,
                f,
                settings,
                omega,
                sweep: kernel::Sweep::Colored,
                groups: &colours,
                tiles: (&tiling.tiles(), &tiling.stages()),
            };
            return Ok(kernel::solve(&job, spare));
        }
        Ok(sweeps(
            Self::NAME,
            sys,
            settings,
            omega,
            &Colouring::of(sys),
        ))
    }
}

/// A colouring of the blocks: colour `c` holds `blocks[starts[c]..starts[c + 1]]`, in
/// increasing order, and no two of them are coupled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Colouring {
    blocks: Vec<usize>,
    starts: Vec<usize>,
}

impl Colouring {
    /// The greedy colouring of the blocks of `sys` in block order: each block takes the
    /// smallest colour that none of the blocks coupled to it and coloured before it has.
    /// Two blocks are coupled when they act on a common dynamic body (factored form; fixed
    /// bodies are absent from it) or when `N` couples them either way (explicit `N`).
    pub fn of(sys: &System) -> Colouring {
        let n = sys.blocks();
        let Some(neighbours) = Neighbours::of(sys) else {
            // An operator of unknown pattern: the sequential order.
            return Colouring::sequential(n);
        };
        let mut colour = vec![usize::MAX; n];
        let colours = greedy(&neighbours, 0..n, &mut colour);
        Colouring::from_colours(&colour, colours)
    }

    /// The colouring whose colour `c` holds the blocks `k` with `colour[k] == c`, of
    /// `colours` colours.
    fn from_colours(colour: &[usize], colours: usize) -> Colouring {
        let mut starts = vec![0; colours + 1];
        for &c in colour {
            starts[c + 1] += 1;
        }
        for c in 0..colours {
            starts[c + 1] += starts[c];
        }
        let mut fill = starts.clone();
        let mut blocks = vec![0; colour.len()];
        for (k, &c) in colour.iter().enumerate() {
            blocks[fill[c]] = k;
            fill[c] += 1;
        }
        Colouring { blocks, starts }
    }

    /// One block per colour, in block order: the order of [`super::GaussSeidel`].
    pub fn sequential(blocks: usize) -> Colouring {
        Colouring {
            blocks: (0..blocks).collect(),
            starts: (0..=blocks).collect(),
        }
    }

    /// Number of colours.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether there is no block at all.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The blocks of each colour, colour by colour.
    pub fn colours(&self) -> impl Iterator<Item = &[usize]> {
        self.starts.windows(2).map(|w| &self.blocks[w[0]..w[1]])
    }

    /// Blocks of the largest colour.
    pub fn largest(&self) -> usize {
        self.colours().map(<[usize]>::len).max().unwrap_or(0)
    }
}

/// Blocks per tile of the kernel's coloured sweep ([`Tiling`]).
pub const TILE: usize = 16_384;

/// The order of the coloured sweep on the CPU kernel (a factored system): the blocks in
/// tiles of [`TILE`] consecutive blocks, each tile coloured on its own (greedily, as
/// [`Colouring::of`] colours the whole system), and the tiles coloured greedily so that no
/// two tiles of one colour (a *stage*) share a dynamic body. A sweep runs the stages in
/// sequence, the tiles of a stage in parallel, and the colours of a tile in sequence, each
/// colour's blocks in parallel. So a tile's bodies stay in the caches through its colours,
/// where a sweep colour by colour over the whole system reads every body's velocities
/// from memory once per colour past the caches (~1e6 contacts). It is Gauss–Seidel in that
/// order, the same whatever the number of threads. A system of at most two tiles' blocks
/// is one tile, in [`Colouring::of`]'s order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiling {
    /// The tiles' colours in sweep order: stage by stage, tile by tile.
    colouring: Colouring,
    /// Tile `t` (in sweep order) holds colours `tiles[t]..tiles[t + 1]`.
    tiles: Vec<usize>,
    /// Stage `s` holds tiles `stages[s]..stages[s + 1]`.
    stages: Vec<usize>,
}

impl Tiling {
    /// The tiling of the blocks of `sys`, whose operator is `f`.
    pub fn of(sys: &System, f: &FactoredOperator) -> Tiling {
        let n = sys.blocks();
        let count = if n <= 2 * TILE {
            usize::from(n > 0)
        } else {
            n.div_ceil(TILE)
        };
        let range = |t: usize| {
            if count == 1 {
                0..n
            } else {
                t * TILE..n.min((t + 1) * TILE)
            }
        };
        let tile_of = |k: usize| if count == 1 { 0 } else { k / TILE };
        // Each tile's stage: the smallest that no tile before it sharing a body has
        // (stamp[s] == t: stage s is taken by such a tile of tile t).
        let mut stage = vec![usize::MAX; count];
        let mut stamp: Vec<usize> = Vec::new();
        for t in 0..count {
            for k in range(t) {
                for &body in f.block_bodies(k) {
                    let links = &f.links()[f.links_ptr()[body]..f.links_ptr()[body + 1]];
                    for &(l, _) in links {
                        let u = tile_of(l);
                        if u != t && stage[u] != usize::MAX {
                            stamp[stage[u]] = t;
                        }
                    }
                }
            }
            stage[t] = smallest_free(&mut stamp, t);
        }
        let neighbours = Neighbours::Bodies(f);
        let mut colour = vec![usize::MAX; n];
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_by_key(|&t| stage[t]);
        let (mut blocks, mut starts) = (Vec::with_capacity(n), vec![0]);
        let (mut tiles, mut stages) = (vec![0], vec![0]);
        for (i, &t) in order.iter().enumerate() {
            let r = range(t);
            let colours = greedy(&neighbours, r.clone(), &mut colour);
            let local = Colouring::from_colours(&colour[r.clone()], colours);
            for c in local.colours() {
                blocks.extend(c.iter().map(|&k| r.start + k));
                starts.push(blocks.len());
            }
            tiles.push(starts.len() - 1);
            if order.get(i + 1).is_none_or(|&u| stage[u] != stage[t]) {
                stages.push(tiles.len() - 1);
            }
        }
        Tiling {
            colouring: Colouring { blocks, starts },
            tiles,
            stages,
        }
    }

    /// The colours in sweep order.
    pub fn colouring(&self) -> &Colouring {
        &self.colouring
    }

    /// The colours of each tile (indices into [`Tiling::colouring`]'s), in sweep order.
    pub fn tiles(&self) -> Vec<Range<usize>> {
        self.tiles.windows(2).map(|w| w[0]..w[1]).collect()
    }

    /// The tiles of each stage (indices into [`Tiling::tiles`]).
    pub fn stages(&self) -> Vec<Range<usize>> {
        self.stages.windows(2).map(|w| w[0]..w[1]).collect()
    }
}

/// Colours the blocks `range` greedily in block order (each the smallest colour that none
/// of the blocks of `range` coupled to it and coloured before it has) into `colour`;
/// returns the number of colours. Blocks outside `range` are not looked at.
fn greedy(neighbours: &Neighbours, range: Range<usize>, colour: &mut [usize]) -> usize {
    // stamp[c] == k: colour c is taken by a neighbour of block k.
    let mut stamp: Vec<usize> = Vec::new();
    for k in range.clone() {
        neighbours.each(k, |l| {
            if l != k && range.contains(&l) && colour[l] != usize::MAX {
                stamp[colour[l]] = k;
            }
        });
        colour[k] = smallest_free(&mut stamp, k);
    }
    stamp.len()
}

/// The smallest colour `c` with `stamp[c] != k` (not taken by a neighbour of item `k`), a
/// new one if every colour is taken.
fn smallest_free(stamp: &mut Vec<usize>, k: usize) -> usize {
    let c = (0..stamp.len())
        .find(|&c| stamp[c] != k)
        .unwrap_or(stamp.len());
    if c == stamp.len() {
        stamp.push(usize::MAX);
    }
    c
}

/// The blocks coupled to each block.
enum Neighbours<'a> {
    /// Through the bodies of the factored form.
    Bodies(&'a FactoredOperator),
    /// A symmetric block adjacency in CSR, from the pattern of an explicit `N`.
    Pattern { ptr: Vec<usize>, adj: Vec<usize> },
}

impl<'a> Neighbours<'a> {
    /// The coupling of the blocks of `sys`, `None` for an operator that is neither factored
    /// nor explicit.
    fn of(sys: &'a System) -> Option<Self> {
        if let Some(f) = sys.factored() {
            return Some(Neighbours::Bodies(f));
        }
        let n = sys.operator().as_matrix()?;
        let mut row_block = Vec::with_capacity(sys.rows());
        for k in 0..sys.blocks() {
            row_block.extend(std::iter::repeat_n(k, sys.block_range(k).len()));
        }
        let mut pairs = Vec::new();
        for (i, &k) in row_block.iter().enumerate() {
            for &j in n.row(i).0 {
                let l = row_block[j];
                if l != k {
                    pairs.push((k, l));
                    pairs.push((l, k));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut ptr = vec![0; sys.blocks() + 1];
        for &(k, _) in &pairs {
            ptr[k + 1] += 1;
        }
        for k in 0..sys.blocks() {
            ptr[k + 1] += ptr[k];
        }
        Some(Neighbours::Pattern {
            ptr,
            adj: pairs.into_iter().map(|(_, l)| l).collect(),
        })
    }

    /// Calls `f` on every block coupled to block `k` (possibly `k` itself, possibly twice).
    fn each(&self, k: usize, mut f: impl FnMut(usize)) {
        match self {
            Neighbours::Bodies(op) => {
                for &body in op.block_bodies(k) {
                    let links = &op.links()[op.links_ptr()[body]..op.links_ptr()[body + 1]];
                    links.iter().for_each(|&(l, _)| f(l));
                }
            }
            Neighbours::Pattern { ptr, adj } => adj[ptr[k]..ptr[k + 1]].iter().for_each(|&l| f(l)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::bench::problems::granular_packing;

    /// Asserts that no two of the blocks `blocks` of `f` share a body.
    fn disjoint(f: &FactoredOperator, blocks: impl Iterator<Item = usize>, what: &str) {
        let mut owner = std::collections::HashMap::new();
        for k in blocks {
            for &b in f.block_bodies(k) {
                if let Some(&l) = owner.get(&b) {
                    assert!(l == k, "{what}: body {b} in blocks {l} and {k}");
                }
                owner.insert(b, k);
            }
        }
    }

    #[test]
    fn tiles_of_a_stage_share_no_body_and_the_kernel_sweeps_in_their_order() {
        let sys = System::new(&granular_packing(5 * TILE).unwrap()).unwrap();
        let f = sys.factored().unwrap();
        let tiling = Tiling::of(&sys, f);
        assert_eq!(tiling, Tiling::of(&sys, f), "deterministic");
        let (colours, tiles, stages) = (
            tiling.colouring().colours().collect::<Vec<_>>(),
            tiling.tiles(),
            tiling.stages(),
        );
        // Stages partition the tiles, tiles the colours, colours the blocks.
        assert_eq!(tiles.len(), sys.blocks().div_ceil(TILE));
        assert_eq!(stages.first().unwrap().start, 0);
        assert_eq!(stages.last().unwrap().end, tiles.len());
        assert!(stages.windows(2).all(|w| w[0].end == w[1].start));
        assert!(tiles.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(tiles.last().unwrap().end, colours.len());
        let mut seen = vec![false; sys.blocks()];
        for &k in colours.iter().copied().flatten() {
            assert!(!std::mem::replace(&mut seen[k], true), "block {k} twice");
        }
        assert!(seen.iter().all(|&s| s), "every block");
        for c in &colours {
            disjoint(f, c.iter().copied(), "a colour");
        }
        for stage in &stages {
            // Within a tile, blocks of different colours share bodies; no two tiles of a
            // stage do.
            let mut tile_of = std::collections::HashMap::new();
            for (i, t) in tiles[stage.clone()].iter().enumerate() {
                for &k in colours[t.clone()].iter().copied().flatten() {
                    for &b in f.block_bodies(k) {
                        let at = *tile_of.entry(b).or_insert(i);
                        assert_eq!(at, i, "body {b} in two tiles of a stage");
                    }
                }
            }
        }
        assert!(
            stages.iter().any(|s| s.len() >= 2),
            "some tiles run in parallel: {stages:?}"
        );
        // A system of at most two tiles is one, coloured as a whole.
        let small = System::new(&granular_packing(3000).unwrap()).unwrap();
        let one = Tiling::of(&small, small.factored().unwrap());
        let whole = 0..one.colouring().len();
        assert_eq!(one.tiles(), [whole]);
        let tiles = 0..one.tiles().len();
        assert_eq!(one.stages(), [tiles]);
        assert_eq!(one.colouring(), &Colouring::of(&small));

        // The kernel's sweeps (tiles of a stage in parallel) are Gauss–Seidel in the
        // tiling's order: the iterates of the operator's sweeps in that order, to rounding.
        let settings = Settings {
            tol: 0.0,
            max_iter: 4,
            stall_iterations: usize::MAX,
            ..Settings::default()
        };
        let omega = ColoredGaussSeidel::DEFAULT_OMEGA;
        let kernel = ColoredGaussSeidel
            .prepare(&sys, &settings)
            .unwrap()
            .solve(&sys, &settings)
            .unwrap();
        let ordered = sweeps("pgs", &sys, &settings, omega, tiling.colouring());
        let scale = ordered.gamma.iter().fold(1e-12f64, |m, g| m.max(g.abs()));
        let mut worst = 0.0f64;
        for (x, y) in kernel.gamma.iter().zip(&ordered.gamma) {
            worst = worst.max((x - y).abs());
        }
        assert!(worst <= 1e-9 * scale, "{worst:e} against {scale:e}");
    }
}
