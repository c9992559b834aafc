//! The CPU kernel of projected Jacobi and of the coloured Gauss–Seidel on a factored system
//! (issue 16), written for the memory system: the blocks are stored in groups of
//! [`L`] consecutive blocks (structure of arrays within a group: one lane per block), each
//! group one contiguous record, read in order by rayon tasks over contiguous chunks, in
//! `f32` or `f64` ([`Lane`], `--precision`), and moved [`L`] at a time in SIMD lanes
//! ([`super::lanes`]; the gathers of `w` and the stores of the products by in-register
//! transposes, [`super::moves`], under the run-time dispatch of [`Isa`]).
//!
//! - Per group (blocks in sweep order: colour by colour for the coloured sweep, each colour
//!   padded to whole groups with zero blocks on the ground): the Jacobian rows padded to
//!   3 rows × 2 bodies, full (36 values per block) or, when every block is a sphere
//!   contact, compact (frame and tangent rows' angular parts, 21 values, expanded in
//!   registers: [`super::rows`]); the two body indices (a missing body is the "ground", a
//!   body whose velocity stays zero), `r`, `η_k` and the cone's coefficient (`μ_k`; 0 for a
//!   unilateral block; −1 for a bilateral one: no projection). The compliance, when the
//!   problem has some, is a stream of its own.
//! - Per body: the diagonal of `M⁻¹` and the list of its (block, side) pairs; the body
//!   velocities `w = M⁻¹ Jᵀ γ`, 6 values padded to 8 (one cache line in `f64`), plain
//!   values for Jacobi, atomic cells for the coloured sweep, whose blocks of one colour
//!   update them in parallel (no two share a body), with a plain copy of their values at
//!   the sweep's start.
//!
//! `M⁻¹ Jᵀ` is not stored. Jacobi's pass over the groups computes, with the rows already in
//! registers, the new `γ_k` and its products `J_{k,s}ᵀ γ_k` (one 6-vector per side), stored
//! per block (12 contiguous values, transposed from the lanes in registers); the body pass
//! then sums each body's products, 6 contiguous values per link, and scales by its `M⁻¹`.
//! So an iteration reads the Jacobian once; so
//! does a coloured sweep, whose blocks measure the residual of the iterate they start from
//! with the plain copy of `w` before their step reads the cells. Every loop the dispatched
//! functions run is an `#[inline(always)]` function or a plain loop: a closure there may
//! be left out of line by LLVM and compiled for the baseline (SSE2), which halved the
//! `f64` pass's speed before. The residual of an iterate is accumulated by the pass that
//! reads its velocity, lane-wise in `T` within a task's chunk and in `f64` across chunks
//! (in the coloured sweep, chunk by chunk within a colour, colour by colour); the reported
//! residual of the returned iterate is recomputed in `f64` on the system
//! ([`merit::residual`]). The kernel's quantities (`γ`, `u`, `w`, the residual's terms)
//! are flushed to zero below 2⁻⁶³ in `f32` (2⁻⁵¹¹ in `f64`), where their squares would be
//! subnormal ([`lanes::flushed`]: the iterates of a packing at rest pass through that
//! range, and on x86 every subnormal operation is a microcode assist).

use std::ops::Range;

use rayon::prelude::*;

use super::lanes::{self, Cones, L, Lanes};
use super::moves::{Isa, Lane, Moves, Portable, Products, Record, Task, W};
use super::progress::{Progress, initial_iterate};
use super::rows::{Compact, Full, Rows, Velocities};
use super::traffic::{Term, Traffic};
use super::{Precision, Report, Settings, Status, block_steps};
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

/// How many bodies ahead the body pass asks the cache for the products of a body's links
/// (random reads of the products' buffer).
const AHEAD_BODIES: usize = 8;

/// How the iterate moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sweep {
    /// Every block from the previous iterate (projected Jacobi).
    Jacobi,
    /// Colours in sequence, blocks of a colour in parallel (coloured Gauss–Seidel).
    Colored,
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

    /// Adds the group's blocks at `γ` (`g`), velocity `u`, `unit = Π(γ − û)` and
    /// `scaled = Π(γ − η û)` with `1/η` per lane (`inv_eta`).
    #[inline(always)]
    fn add(
        &mut self,
        g: &[Lanes<T>; 3],
        u: &[Lanes<T>; 3],
        unit: &[Lanes<T>; 3],
        scaled: &[Lanes<T>; 3],
        inv_eta: &Lanes<T>,
    ) {
        for i in 0..3 {
            let e = lanes::flush(lanes::sub(g[i], unit[i]));
            self.e2 = lanes::mul_add(self.e2, e, e);
            self.e_inf = lanes::max(self.e_inf, lanes::abs(e));
            let v = lanes::mul(lanes::abs(lanes::sub(g[i], scaled[i])), *inv_eta);
            self.velocity = lanes::max(self.velocity, v);
            self.g2 = lanes::mul_add(self.g2, g[i], g[i]);
            self.u2 = lanes::mul_add(self.u2, u[i], u[i]);
            self.g_inf = lanes::max(self.g_inf, lanes::abs(g[i]));
        }
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
}

impl<T: Lane, J: Rows<T>> Clone for Group<T, J> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Lane, J: Rows<T>> Copy for Group<T, J> {}

/// A group's iterate: `γ` rows × lanes.
type Impulses<T> = [Lanes<T>; 3];

/// Where the Jacobi pass writes: the next iterate and its products `J_{k,s}ᵀ γ_k`.
type JacobiOut<'a, T> = (&'a mut [Impulses<T>], &'a mut [Products<T>]);

/// The body velocities `w` as the block passes read them: plain values (Jacobi's, written
/// by the body pass only; the coloured sweep's copy of its cells at the sweep's start, for
/// the residual), atomic cells for the coloured sweep's steps ([`Shared`]).
trait Cells<T: Lane>: Sync {
    /// The velocities of the bodies `bodies` in lanes.
    fn gather<M: Moves>(&self, moves: M, bodies: &[u32; L]) -> [Lanes<T>; 6];
    /// Asks the cache for the records of `bodies` ([`Moves::prefetch`]).
    fn prefetch<M: Moves>(&self, moves: M, bodies: &[u32; L]);
}

impl<T: Lane> Cells<T> for [Record<T>] {
    #[inline(always)]
    fn gather<M: Moves>(&self, moves: M, bodies: &[u32; L]) -> [Lanes<T>; 6] {
        let mut rows = [&self[0].v; L];
        for (row, &b) in rows.iter_mut().zip(bodies) {
            *row = &self[b as usize].v;
        }
        T::gather(moves, rows)
    }

    #[inline(always)]
    fn prefetch<M: Moves>(&self, moves: M, bodies: &[u32; L]) {
        for &b in bodies {
            moves.prefetch(&self[b as usize]);
        }
    }
}

/// Body velocities in atomic cells, which the blocks of one colour update in parallel.
struct Shared<T: Lane>(Vec<[T::Atomic; W]>);

impl<T: Lane> Cells<T> for Shared<T> {
    /// One scalar load per value: atomic loads never merge into vector loads.
    #[inline(always)]
    fn gather<M: Moves>(&self, _: M, bodies: &[u32; L]) -> [Lanes<T>; 6] {
        let mut v = [[T::ZERO; L]; 6];
        for (l, &b) in bodies.iter().enumerate() {
            let cell = load_cells::<T>(&self.0[b as usize]);
            for c in 0..6 {
                v[c][l] = cell[c];
            }
        }
        v
    }

    #[inline(always)]
    fn prefetch<M: Moves>(&self, moves: M, bodies: &[u32; L]) {
        for &b in bodies {
            moves.prefetch(&self.0[b as usize]);
        }
    }
}

/// The values of a body's atomic cells (the padding zero).
#[inline(always)]
fn load_cells<T: Lane>(cell: &[T::Atomic; W]) -> [T; W] {
    let mut v = [T::ZERO; W];
    for c in 0..6 {
        v[c] = T::load(&cell[c]);
    }
    v
}

/// The kernel's data for one system, in precision `T`, rows encoded by `J`.
pub(crate) struct Kernel<T: Lane, J: Rows<T>> {
    /// System block of each kernel block, `None` for padding.
    order: Vec<Option<usize>>,
    /// Groups of each colour (one range for Jacobi).
    colours: Vec<Range<usize>>,
    groups: Vec<Group<T, J>>,
    compliance: Option<Vec<[Lanes<T>; 3]>>,
    /// The diagonal of `M⁻¹` per body, the ground (zero) last.
    inv_mass: Vec<[T; 6]>,
    /// CSR over bodies of `2 · kernel block + side`.
    link_ptr: Vec<u32>,
    links: Vec<u32>,
    r_norm: f64,
    /// De Saxcé's shift of the model velocity (the Coulomb friction model).
    shift: bool,
    isa: Isa,
}

impl<T: Lane, J: Rows<T>> Kernel<T, J> {
    /// The kernel of `sys` (factored, operator `f`) with the blocks in the order of
    /// `colours` (each a list of system blocks; one list for Jacobi), block steps `eta`.
    pub(crate) fn new(
        sys: &System,
        f: &FactoredOperator,
        colours: &[&[usize]],
        eta: &[f64],
        friction: FrictionModel,
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
        };
        let mut groups = vec![empty; order.len() / L];
        let rigid = sys.compliance().iter().all(|&e| e == 0.0);
        let mut compliance = (!rigid).then(|| vec![[[T::ZERO; L]; 3]; groups.len()]);
        let mut link_count = vec![0u32; n_bodies + 1];
        for (kk, k) in order.iter().enumerate() {
            let Some(k) = *k else { continue };
            let (grp, l) = (&mut groups[kk / L], kk % L);
            for (s, &body) in f.block_bodies(k).iter().enumerate() {
                grp.bodies[s][l] = body as u32;
                link_count[body + 1] += 1;
            }
            J::encode(&padded_rows(f, k), &mut grp.jac, l);
            row3(sys.r(), k, &mut grp.r, l);
            if let Some(e) = &mut compliance {
                row3(sys.compliance(), k, &mut e[kk / L], l);
            }
            grp.eta[l] = t(eta[k]);
            grp.mu[l] = match sys.cones()[k] {
                Cone::Bilateral { .. } => -T::ONE,
                Cone::Unilateral => T::ZERO,
                Cone::Coulomb { mu } => t(mu),
            };
        }
        for i in 0..n_bodies {
            link_count[i + 1] += link_count[i];
        }
        let mut fill = link_count.clone();
        let mut links = vec![0; link_count[n_bodies] as usize];
        for (kk, k) in order.iter().enumerate() {
            if k.is_none() {
                continue;
            }
            for s in 0..2 {
                let body = groups[kk / L].bodies[s][kk % L];
                if body != ground {
                    links[fill[body as usize] as usize] = (2 * kk + s) as u32;
                    fill[body as usize] += 1;
                }
            }
        }
        let mut inv_mass: Vec<[T; 6]> = f.inv_mass().iter().map(|m| m.map(t)).collect();
        inv_mass.push([T::ZERO; 6]);
        Kernel {
            order,
            colours: ranges,
            groups,
            compliance,
            inv_mass,
            link_ptr: link_count,
            links,
            r_norm: sys.r().iter().map(|x| x * x).sum::<f64>().sqrt(),
            shift: friction == FrictionModel::Coulomb,
            isa: Isa::detect(),
        }
    }

    /// `γ` of the system (`f64`, rows in system order) in kernel order, a group per `L`
    /// blocks (padding zero), flushed as the kernel's iterates are ([`lanes::flushed`]).
    fn gather(&self, sys: &System, gamma: &[f64]) -> Vec<Impulses<T>> {
        let mut out = vec![[[T::ZERO; L]; 3]; self.groups.len()];
        for (kk, k) in self.order.iter().enumerate() {
            if let Some(k) = *k {
                for (i, x) in gamma[sys.block_range(k)].iter().enumerate() {
                    out[kk / L][i][kk % L] = lanes::flushed(T::from_f64(*x));
                }
            }
        }
        out
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

    /// `J_{k,s}ᵀ γ_k` of every block at `gamma`, in `products` (per kernel block).
    fn products(&self, gamma: &[Impulses<T>], products: &mut [Products<T>]) {
        let blocks = products.chunks_exact_mut(L);
        for ((grp, g), out) in self.groups.iter().zip(gamma).zip(blocks) {
            let out = out.try_into().expect("a group's blocks");
            T::store_products(Portable, &J::transpose_times(&grp.jac, g), out);
        }
    }

    /// `w = M⁻¹ Jᵀ γ` from the groups' `products` ([`Kernel::products`]), bodies in
    /// parallel (each a sum over its links); `w` holds every body but the ground.
    fn body_velocities(&self, products: &[Products<T>], w: &mut [Record<T>]) {
        w.par_chunks_mut(CHUNK * L).enumerate().for_each(|(c, ws)| {
            self.isa.run(BodyChunk {
                kernel: self,
                first: c * CHUNK * L,
                ws,
                products,
            })
        });
    }

    /// The bodies `ws` (from body `first`) of [`Kernel::body_velocities`].
    #[inline(always)]
    fn body_chunk<M: Moves>(
        &self,
        moves: M,
        first: usize,
        ws: &mut [Record<T>],
        products: &[Products<T>],
    ) {
        for (i, wb) in ws.iter_mut().enumerate() {
            let b = first + i;
            if let Some(ahead) = self.links_of(b + AHEAD_BODIES) {
                for &link in ahead {
                    moves.prefetch(&products[link as usize / 2][link as usize % 2]);
                }
            }
            let mut acc = [T::ZERO; 6];
            let links = self.links_of(b).expect("a body of the pass");
            for &link in links {
                // `2 · kernel block + side`.
                let p = &products[link as usize / 2][link as usize % 2];
                for c in 0..6 {
                    acc[c] += p[c];
                }
            }
            let m = &self.inv_mass[b];
            for c in 0..6 {
                wb.v[c] = lanes::flushed(acc[c] * m[c]);
            }
        }
    }

    /// The links (`2 · kernel block + side`) of body `b`, if there is such a body (the
    /// ground has none).
    #[inline(always)]
    fn links_of(&self, b: usize) -> Option<&[u32]> {
        let end = *self.link_ptr.get(b + 1)?;
        Some(&self.links[self.link_ptr[b] as usize..end as usize])
    }

    /// The velocities `u` and model velocities `û` of group `gi` at `γ` = `g`:
    /// `u_k = J_k w + E_k γ_k + r_k`, `û_k = u_k + μ_k ‖u_t‖ e_n` under the Coulomb model
    /// (De Saxcé's shift; zero for unilateral and bilateral blocks).
    #[inline(always)]
    fn velocity<C: Cells<T> + ?Sized, M: Moves>(
        &self,
        moves: M,
        gi: usize,
        g: &Impulses<T>,
        w: &C,
    ) -> ([Lanes<T>; 3], [Lanes<T>; 3]) {
        let grp = &self.groups[gi];
        let wb: Velocities<T> = [
            w.gather(moves, &grp.bodies[0]),
            w.gather(moves, &grp.bodies[1]),
        ];
        let jw = J::times(&grp.jac, &wb);
        let mut u = [
            lanes::add(grp.r[0], jw[0]),
            lanes::add(grp.r[1], jw[1]),
            lanes::add(grp.r[2], jw[2]),
        ];
        if let Some(e) = &self.compliance {
            for i in 0..3 {
                u[i] = lanes::mul_add(u[i], e[gi][i], g[i]);
            }
        }
        for ui in &mut u {
            *ui = lanes::flush(*ui);
        }
        let mut u_hat = u;
        if self.shift {
            for l in 0..L {
                let mu = if grp.mu[l] > T::ZERO {
                    grp.mu[l]
                } else {
                    T::ZERO
                };
                u_hat[0][l] += mu * (u[1][l] * u[1][l] + u[2][l] * u[2][l]).sqrt();
            }
        }
        (u, u_hat)
    }

    /// Asks the cache for the record of group `gi + 2 AHEAD` and for the records in `w`
    /// of group `gi + AHEAD`'s bodies, where there are such groups ([`Moves::prefetch`]).
    #[inline(always)]
    fn prefetch<C: Cells<T> + ?Sized, M: Moves>(&self, moves: M, gi: usize, w: &C) {
        if let Some(grp) = self.groups.get(gi + 2 * AHEAD) {
            moves.prefetch(grp);
        }
        self.prefetch_bodies(moves, gi + AHEAD, w);
    }

    /// Asks the cache for the records in `w` of group `gi`'s bodies, if there is such a
    /// group.
    #[inline(always)]
    fn prefetch_bodies<C: Cells<T> + ?Sized, M: Moves>(&self, moves: M, gi: usize, w: &C) {
        if let Some(grp) = self.groups.get(gi) {
            for bodies in &grp.bodies {
                w.prefetch(moves, bodies);
            }
        }
    }

    /// `Π_K(γ_k − s_k û_k)` per lane, flushed ([`lanes::flush`]).
    #[inline(always)]
    fn step(cone: &Cones<T>, g: &Impulses<T>, u_hat: &[Lanes<T>; 3], s: &Lanes<T>) -> Impulses<T> {
        let mut x = *g;
        for i in 0..3 {
            for l in 0..L {
                x[i][l] = g[i][l] - s[l] * u_hat[i][l];
            }
        }
        lanes::project(&mut x, cone);
        for xi in &mut x {
            *xi = lanes::flush(*xi);
        }
        x
    }

    /// Adds the residual terms of group `gi` (cones `cone`) at `γ` = `g` to `sums`;
    /// returns `û`.
    #[inline(always)]
    fn measure<C: Cells<T> + ?Sized, M: Moves>(
        &self,
        moves: M,
        gi: usize,
        cone: &Cones<T>,
        g: &Impulses<T>,
        w: &C,
        sums: &mut LaneSums<T>,
    ) -> [Lanes<T>; 3] {
        let grp = &self.groups[gi];
        let (u, u_hat) = self.velocity(moves, gi, g, w);
        let unit = Self::step(cone, g, &u_hat, &[T::ONE; L]);
        let mut eta = grp.eta;
        let mut inv_eta = [T::ONE; L];
        for l in 0..L {
            eta[l] = if eta[l] > T::ZERO { eta[l] } else { T::ONE };
            inv_eta[l] = T::ONE / eta[l];
        }
        let scaled = Self::step(cone, g, &u_hat, &eta);
        sums.add(g, &u, &unit, &scaled, &inv_eta);
        u_hat
    }

    /// The Jacobi step of the groups `gs` (from group `first`) into `out`, their products
    /// into `prods`; returns the residual sums at `gs`.
    #[inline(always)]
    fn jacobi_chunk<M: Moves>(&self, moves: M, task: JacobiChunk<'_, T, J>) -> Sums {
        let JacobiChunk {
            first,
            gs,
            out,
            prods,
            w,
            omega,
            ..
        } = task;
        let mut sums = LaneSums::ZERO;
        let groups = out.iter_mut().zip(prods.chunks_exact_mut(L)).zip(gs);
        for (i, ((o, p), g)) in groups.enumerate() {
            let gi = first + i;
            self.prefetch(moves, gi, w);
            let grp = &self.groups[gi];
            let cone = Cones::of(&grp.mu);
            let u_hat = self.measure(moves, gi, &cone, g, w, &mut sums);
            let s = lanes::mul([omega; L], grp.eta);
            *o = Self::step(&cone, g, &u_hat, &s);
            let p = p.try_into().expect("a group's blocks");
            T::store_products(moves, &J::transpose_times(&grp.jac, o), p);
        }
        sums.total()
    }

    /// The coloured Gauss–Seidel step of the groups `gs` (from group `first`, one colour,
    /// the first colour of the sweep when `first_colour`) into `out`, each followed by its
    /// update of the cells `w`; returns the residual sums at `gs`, measured with `plain`,
    /// the velocities `w` had before the sweep (on the group's record already loaded for
    /// the step: no pass of its own).
    #[inline(always)]
    fn sweep_chunk<M: Moves>(&self, moves: M, task: SweepChunk<'_, T, J>) -> Sums {
        let SweepChunk {
            first,
            first_colour,
            gs,
            out,
            plain,
            w,
            omega,
            ..
        } = task;
        let ground = (self.inv_mass.len() - 1) as u32;
        let mut sums = LaneSums::ZERO;
        for (i, (g, o)) in gs.iter().zip(out).enumerate() {
            let gi = first + i;
            self.prefetch(moves, gi, plain);
            self.prefetch_bodies(moves, gi + AHEAD, w);
            let grp = &self.groups[gi];
            // `M⁻¹` of the group's bodies in lanes, loaded ahead of the arithmetic that
            // needs it last (its random reads then overlap the work before).
            let mut inv_mass: Velocities<T> = [[[T::ZERO; L]; 6]; 2];
            for (side, bodies) in inv_mass.iter_mut().zip(&grp.bodies) {
                for (l, &b) in bodies.iter().enumerate() {
                    let m = &self.inv_mass[b as usize];
                    for c in 0..6 {
                        side[c][l] = m[c];
                    }
                }
            }
            let cone = Cones::of(&grp.mu);
            let before = self.measure(moves, gi, &cone, g, plain, &mut sums);
            // The colours before this one have moved `w` since the sweep began.
            let u_hat = if first_colour {
                before
            } else {
                self.velocity(moves, gi, g, w).1
            };
            let s = lanes::mul([omega; L], grp.eta);
            *o = Self::step(&cone, g, &u_hat, &s);
            let delta = [
                lanes::sub(o[0], g[0]),
                lanes::sub(o[1], g[1]),
                lanes::sub(o[2], g[2]),
            ];
            let mut d = J::transpose_times(&grp.jac, &delta);
            for (side, m) in d.iter_mut().zip(&inv_mass) {
                for c in 0..6 {
                    side[c] = lanes::mul(side[c], m[c]);
                }
            }
            for (side, bodies) in d.iter().zip(&grp.bodies) {
                for (l, &b) in bodies.iter().enumerate() {
                    if b == ground {
                        continue;
                    }
                    let wb = &w.0[b as usize];
                    for c in 0..6 {
                        T::store(&wb[c], lanes::flushed(T::load(&wb[c]) + side[c][l]));
                    }
                }
            }
        }
        sums.total()
    }

    /// One pass over the groups at `gamma` with body velocities `w = M⁻¹ Jᵀ γ`: the
    /// residual sums, the Jacobi step `next_k = Π(γ_k − ω η_k û_k)` and its products
    /// `J_{k,s}ᵀ next_k` (at `2 k + s`).
    fn jacobi_pass(
        &self,
        gamma: &[Impulses<T>],
        w: &[Record<T>],
        omega: T,
        (next, products): JacobiOut<'_, T>,
    ) -> Sums {
        let parts: Vec<Sums> = next
            .par_chunks_mut(CHUNK)
            .zip(products.par_chunks_mut(CHUNK * L))
            .zip(gamma.par_chunks(CHUNK))
            .enumerate()
            .map(|(c, ((out, prods), gs))| {
                self.isa.run(JacobiChunk {
                    kernel: self,
                    first: c * CHUNK,
                    gs,
                    out,
                    prods,
                    w,
                    omega,
                })
            })
            .collect();
        parts.into_iter().fold(Sums::default(), Sums::merge)
    }

    /// The values of the cells `shared` in `w` (every body but the ground), for the
    /// residual measured in the next coloured sweep: its gathers are then vector loads,
    /// which atomic loads never are (`T::load` is one scalar load per value).
    fn unshare(&self, shared: &Shared<T>, w: &mut [Record<T>]) {
        w.par_chunks_mut(CHUNK * L)
            .zip(shared.0.par_chunks(CHUNK * L))
            .for_each(|(ws, cells)| {
                for (wb, cell) in ws.iter_mut().zip(cells) {
                    wb.v = load_cells::<T>(cell);
                }
            });
    }

    /// One coloured Gauss–Seidel sweep from `gamma` into `next`: each colour's groups in
    /// parallel, each moved with the current cells `w`, which it then updates,
    /// `w_b += M⁻¹_b J_{k,s}ᵀ Δγ_k` (no two blocks of a colour share a body, so no two
    /// lanes either). `plain` holds `w = M⁻¹ Jᵀ γ` at `gamma`, the cells' values before
    /// the sweep: each block measures its residual at `gamma` with it (as Jacobi's pass
    /// does), so the residual needs no pass of its own. Returns the residual sums at
    /// `gamma`, added colour by colour.
    fn colored_pass(
        &self,
        gamma: &[Impulses<T>],
        plain: &[Record<T>],
        w: &Shared<T>,
        omega: T,
        next: &mut [Impulses<T>],
    ) -> Sums {
        let mut sums = Sums::default();
        for (colour, range) in self.colours.iter().enumerate() {
            let start = range.start;
            let parts: Vec<Sums> = next[range.clone()]
                .par_chunks_mut(CHUNK)
                .zip(gamma[range.clone()].par_chunks(CHUNK))
                .enumerate()
                .map(|(c, (out, gs))| {
                    self.isa.run(SweepChunk {
                        kernel: self,
                        first: start + c * CHUNK,
                        first_colour: colour == 0,
                        gs,
                        out,
                        plain,
                        w,
                        omega,
                    })
                })
                .collect();
            sums = parts.into_iter().fold(sums, Sums::merge);
        }
        sums
    }
}

// The tasks of a rayon chunk, run by `Isa::run`: their `run` is inlined into the function
// that `pulp` compiles with the CPU's instruction set (a closure would not be: its `FnOnce`
// shim is a function of its own, compiled for the baseline; nor is a large closure called
// from inside it always inlined, so the hot code below has none).

/// A chunk of the body pass ([`Kernel::body_chunk`]).
struct BodyChunk<'a, T: Lane, J: Rows<T>> {
    kernel: &'a Kernel<T, J>,
    first: usize,
    ws: &'a mut [Record<T>],
    products: &'a [Products<T>],
}

impl<T: Lane, J: Rows<T>> Task for BodyChunk<'_, T, J> {
    type Output = ();

    #[inline(always)]
    fn run<M: Moves>(self, moves: M) {
        self.kernel
            .body_chunk(moves, self.first, self.ws, self.products)
    }
}

/// A chunk of the Jacobi pass ([`Kernel::jacobi_chunk`]).
struct JacobiChunk<'a, T: Lane, J: Rows<T>> {
    kernel: &'a Kernel<T, J>,
    first: usize,
    gs: &'a [Impulses<T>],
    out: &'a mut [Impulses<T>],
    prods: &'a mut [Products<T>],
    w: &'a [Record<T>],
    omega: T,
}

impl<T: Lane, J: Rows<T>> Task for JacobiChunk<'_, T, J> {
    type Output = Sums;

    #[inline(always)]
    fn run<M: Moves>(self, moves: M) -> Sums {
        self.kernel.jacobi_chunk(moves, self)
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
    w: &'a Shared<T>,
    omega: T,
}

impl<T: Lane, J: Rows<T>> Task for SweepChunk<'_, T, J> {
    type Output = Sums;

    #[inline(always)]
    fn run<M: Moves>(self, moves: M) -> Sums {
        self.kernel.sweep_chunk(moves, self)
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
}

/// Runs `job` in the precision of its settings. The returned iterate (the last one if
/// converged, else the best) carries its `f64` residual.
pub(crate) fn solve(job: &Job) -> Report {
    match job.settings.precision {
        Precision::F32 => solve_in::<f32>(job),
        Precision::F64 => solve_in::<f64>(job),
    }
}

/// Whether every block of `sys` (factored, operator `f`) is a sphere contact that the
/// compact rows encode ([`Compact::fits`]): the kernel then stores them so.
fn compact(sys: &System, f: &FactoredOperator) -> bool {
    (0..sys.blocks()).all(|k| Compact::fits(&padded_rows(f, k), f.block_bodies(k).len()))
}

/// The rows of block `k` padded to 3 rows × 2 bodies: side `s`, row `i`, column `c` at
/// `(3 s + i) · 6 + c`.
fn padded_rows(f: &FactoredOperator, k: usize) -> [f64; 36] {
    let d = f.offsets()[k + 1] - f.offsets()[k];
    let mut full = [0.0; 36];
    for s in 0..f.block_bodies(k).len() {
        let start = f.jac_start()[k] + s * d;
        for (i, row) in f.jac()[start..start + d].iter().enumerate() {
            full[(3 * s + i) * 6..][..6].copy_from_slice(row);
        }
    }
    full
}

/// [`solve`] in precision `T`, on compact rows where every block fits them.
fn solve_in<T: Lane>(job: &Job) -> Report {
    if compact(job.sys, job.f) {
        run::<T, Compact>(job)
    } else {
        run::<T, Full>(job)
    }
}

/// [`solve`] in precision `T` with rows encoded by `J`.
fn run<T: Lane, J: Rows<T>>(job: &Job) -> Report {
    let &Job {
        name,
        sys,
        f,
        settings,
        omega,
        sweep,
        groups,
    } = job;
    let eta = block_steps(sys, settings.block_step);
    let kernel = Kernel::<T, J>::new(sys, f, groups, &eta, settings.friction);
    let omega = T::from_f64(omega);
    let gamma0 = initial_iterate(sys, settings);
    let mut cur = kernel.gather(sys, &gamma0);
    let mut next = cur.clone();
    let mut w = vec![Record::new([T::ZERO; W]); kernel.inv_mass.len()];
    let bodies = w.len() - 1;
    let mut products = vec![[[T::ZERO; 6]; 2]; cur.len() * L];
    kernel.products(&cur, &mut products);
    kernel.body_velocities(&products, &mut w[..bodies]);
    let jacobi = sweep == Sweep::Jacobi;
    // The coloured sweep updates `w` in place, block by block: atomic cells.
    let shared = (!jacobi).then(|| Shared::<T>(w.iter().map(|r| r.v.map(T::atomic)).collect()));
    // A pass measures the residual at `cur` and writes the next iterate into `next`.
    let pass = |cur: &[Impulses<T>],
                next: &mut [Impulses<T>],
                products: &mut [Products<T>],
                w: &[Record<T>]| match &shared {
        None => kernel.jacobi_pass(cur, w, omega, (next, products)),
        Some(shared) => kernel.colored_pass(cur, w, shared, omega, next),
    };
    let sums = pass(&cur, &mut next, &mut products, &w);
    let (mut progress, mut status) = Progress::new(settings, &gamma0, sums.residual(kernel.r_norm));
    if settings.max_iter == 0 && status.is_none() {
        status = Some(Status::MaxIterations);
    }
    let mut best = cur.clone();
    let status = loop {
        if let Some(status) = status {
            break status;
        }
        std::mem::swap(&mut cur, &mut next);
        match &shared {
            // The last pass left `J_{k,s}ᵀ next_k` in `products`.
            None => kernel.body_velocities(&products, &mut w[..bodies]),
            // And the cells hold `w` at `next`.
            Some(shared) => kernel.unshare(shared, &mut w[..bodies]),
        }
        let sums = pass(&cur, &mut next, &mut products, &w);
        let passes = if jacobi { 1 } else { 2 };
        let res = sums.residual(kernel.r_norm);
        let improved;
        (status, improved) = progress.observe(res, sums.g_inf, 1, passes);
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
    progress.report(name, sys, status, gamma, residual)
}

/// The bytes one iteration of the kernel moves on `sys` in `precision`, with the rows'
/// encoding (`compact` or `full`) ([`super::traffic`]), `None` for a system that is not
/// factored. Blocks are counted in whole groups (padding included). Jacobi: the body pass
/// (per body its link range, `M⁻¹` and `w` written; per link its entry and the block's
/// product `J_{k,s}ᵀ γ_k`), then per block its record, the gathers of `w` (the 6 values
/// of a body's 8 in 16-byte pieces, [`super::moves`]: 8 values in `f32`, 6 in `f64`), the
/// new `γ_k` and its two products written. The minimum of the
/// encoding, for comparison: the record, `γ_k` read and written, and per body `M⁻¹` and
/// `w` written once and read once (`8 + (VALUES + 11) t` per block plus `18 t` per body:
/// 312 B in `f64` and 160 B in `f32` on the compact rows of a cubic packing, 3 contacts
/// per body); the model adds the gathers (2 bodies per block, mostly cache hits) and
/// the products (12 written per block, 6 read per link). The coloured sweep: the copy of
/// the cells `w` into plain values (per body 6 read, 6 written); per block its record,
/// the gathers of `w` twice (the plain values for the residual in pieces, the cells for
/// the step value by value) and the new `γ_k`; per link `M⁻¹` and `w` read and `w`
/// written.
pub(crate) fn traffic(
    sys: &System,
    sweep: Sweep,
    colours: &[&[usize]],
    precision: Precision,
) -> Option<Traffic> {
    let f = sys.factored()?;
    let t = match precision {
        Precision::F32 => 4,
        Precision::F64 => 8,
    };
    let blocks: u64 = colours
        .iter()
        .map(|c| c.len().div_ceil(L) * L)
        .sum::<usize>() as u64;
    let (bodies, links) = (f.bodies() as u64, f.links().len() as u64);
    let rigid = sys.compliance().iter().all(|&e| e == 0.0);
    let comp = if rigid { 0 } else { 3 * t };
    let (encoding, values) = if compact(sys, f) {
        ("compact", <Compact as Rows<f64>>::VALUES)
    } else {
        ("full", <Full as Rows<f64>>::VALUES)
    };
    // Per block: bodies (8), J, r, γ, η, μ, compliance, the w gathers of both sides (the
    // 6 values of a body in 16-byte pieces).
    let gathers = 2 * u64::div_ceil(6 * t, 16) * 16;
    let record = 8 + values * t + 3 * t + 3 * t + 2 * t + comp + gathers;
    let terms = match sweep {
        Sweep::Jacobi => vec![
            Term {
                what: "M⁻¹Jᵀγ",
                bytes: bodies * (4 + 12 * t) + links * (4 + 6 * t),
            },
            Term {
                what: "Jw, residual, projection, Jᵀγ",
                bytes: blocks * (record + 3 * t + 12 * t),
            },
        ],
        Sweep::Colored => vec![
            Term {
                what: "w copy",
                bytes: bodies * 12 * t,
            },
            Term {
                what: "residual, sweep",
                bytes: blocks * (record + 12 * t + 3 * t) + links * 18 * t,
            },
        ],
    };
    Some(Traffic {
        encoding: Some(encoding),
        terms,
    })
}
