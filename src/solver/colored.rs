//! Projected Gauss–Seidel in parallel by colours (issue 16): the blocks are coloured so that
//! no two blocks of one colour are coupled (share a dynamic body in the factored form, a
//! non-zero of `N` in an explicit one); a sweep visits the colours in sequence and moves the
//! blocks of a colour in parallel, each with the latest impulses of the colours before it.
//! It is Gauss–Seidel in the order "colour by colour" ([`super::GaussSeidel`] is the order
//! of the blocks), so it converges to the same solutions; the colouring is a deterministic
//! greedy one, so the iterates are the same whatever the number of threads. A factored
//! problem runs on the CPU kernel (the `kernel` module, `f32` or `f64`, blocks stored colour
//! by colour); an explicit `N` on the operator's block rows, in `f64`.

use super::gauss_seidel::sweeps;
use super::kernel::{self, KernelSession, OnKernel, Spare};
use super::{Report, Session, Settings, Solver};
use crate::error::Result;
use crate::problem::System;

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
        let colouring = Colouring::of(sys);
        if let Some(f) = sys.factored() {
            let colours: Vec<&[usize]> = colouring.colours().collect();
            let job = kernel::Job {
                name: Self::NAME,
                sys,
                f,
                settings,
                omega,
                sweep: kernel::Sweep::Colored,
                groups: &colours,
            };
            return Ok(kernel::solve(&job, spare));
        }
        Ok(sweeps(Self::NAME, sys, settings, omega, &colouring))
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
        // stamp[c] == k: colour c is taken by a neighbour of block k.
        let mut stamp: Vec<usize> = Vec::new();
        for k in 0..n {
            neighbours.each(k, |l| {
                if l != k && colour[l] != usize::MAX {
                    stamp[colour[l]] = k;
                }
            });
            let c = (0..stamp.len())
                .find(|&c| stamp[c] != k)
                .unwrap_or(stamp.len());
            if c == stamp.len() {
                stamp.push(usize::MAX);
            }
            colour[k] = c;
        }
        let mut starts = vec![0; stamp.len() + 1];
        for &c in &colour {
            starts[c + 1] += 1;
        }
        for c in 0..stamp.len() {
            starts[c + 1] += starts[c];
        }
        let mut fill = starts.clone();
        let mut blocks = vec![0; n];
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

/// The blocks coupled to each block.
enum Neighbours<'a> {
    /// Through the bodies of the factored form.
    Bodies(&'a crate::problem::operator::FactoredOperator),
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
