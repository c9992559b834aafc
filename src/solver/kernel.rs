//! The CPU kernel of projected Jacobi and of the coloured Gauss–Seidel on a factored system
//! (issue 16), written for the memory system: every block's data is one contiguous record
//! of the streams below, read in order by rayon tasks over contiguous chunks, in `f32` or
//! `f64` ([`Real`], `--precision`).
//!
//! - Per block (in sweep order: colour by colour for the coloured sweep): its Jacobian
//!   padded to 3 rows × 2 bodies, stored full (`[T; 36]`) or, when every block is a sphere
//!   contact, compact (frame and tangent rows' angular parts, `[T; 21]`, expanded in
//!   registers: [`super::rows`]); its two body indices (a missing body is the "ground", a
//!   body whose velocity stays zero), `r`, the compliance (only when the problem has some),
//!   `η_k`, `μ_k` and the cone's kind. Padded rows are zero, so they stay zero.
//! - Per body: the diagonal of `M⁻¹` and the list of its (block, side) pairs; the body
//!   velocities `w = M⁻¹ Jᵀ γ` in atomic cells, which the blocks of one colour update in
//!   parallel (no two share a body).
//!
//! `M⁻¹ Jᵀ` is not stored: the gather `w_b = M⁻¹_b Σ J_{k,s}ᵀ γ_k` reads the rows of `J`
//! and scales by the body's `M⁻¹`, so each iteration reads the Jacobian twice and nothing
//! else of its size. The residual of an iterate is accumulated (in `f64`) by the same pass
//! that reads its velocity; the reported residual of the returned iterate is recomputed in
//! `f64` on the system ([`merit::residual`]).
//!
//! The loops are plain Rust over fixed-size arrays, without explicit SIMD (`pulp`/`wide`):
//! a block's work is a gather of two body velocities, short dot products and a cone
//! projection, which do not map onto lanes without storing blocks across lanes
//! (array-of-structures-of-arrays) and gathering by lane. Measured on the 2-core machine
//! (benches/RESULTS.md, issue 16) the pass reaches about a quarter of the copy bandwidth,
//! so it is not yet memory-bound: that layout is the next step.

use std::ops::Range;

use rayon::prelude::*;

use super::progress::{Progress, initial_iterate};
use super::rows::{Compact, Full, Rows};
use super::traffic::{Term, Traffic};
use super::{Precision, Report, Settings, Status, block_steps};
use crate::problem::cone::project_circular;
use crate::problem::merit::{self, Residual};
use crate::problem::operator::FactoredOperator;
use crate::problem::real::Real;
use crate::problem::{Cone, FrictionModel, System};

/// Blocks per rayon task of the block passes: fixed, so that the residual's sums do not
/// depend on the number of threads.
const CHUNK: usize = 1024;

/// A block's cone, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Bilateral,
    Unilateral,
    Coulomb,
}

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

/// The kernel's data for one system, in precision `T`, rows encoded by `J`.
pub(crate) struct Kernel<T: Real, J: Rows<T>> {
    /// System block of each kernel block.
    order: Vec<usize>,
    /// Kernel blocks of each colour (one range for Jacobi).
    groups: Vec<Range<usize>>,
    /// The Jacobian rows of each block.
    jac: Vec<J::Block>,
    bodies: Vec<[u32; 2]>,
    r: Vec<[T; 3]>,
    compliance: Option<Vec<[T; 3]>>,
    eta: Vec<T>,
    mu: Vec<T>,
    kind: Vec<Kind>,
    /// The diagonal of `M⁻¹` per body, the ground (zero) last.
    inv_mass: Vec<[T; 6]>,
    /// CSR over bodies of `2 · kernel block + side`.
    link_ptr: Vec<u32>,
    links: Vec<u32>,
    r_norm: f64,
    friction: FrictionModel,
}

impl<T: Real, J: Rows<T>> Kernel<T, J> {
    /// The kernel of `sys` (factored, operator `f`) with the blocks in the order of
    /// `groups` (each a list of system blocks; one list for Jacobi), block steps `eta`.
    pub(crate) fn new(
        sys: &System,
        f: &FactoredOperator,
        groups: &[&[usize]],
        eta: &[f64],
        friction: FrictionModel,
    ) -> Self {
        let mut order = Vec::with_capacity(sys.blocks());
        let mut ranges = Vec::new();
        for g in groups {
            ranges.push(order.len()..order.len() + g.len());
            order.extend_from_slice(g);
        }
        let n_bodies = f.bodies();
        let ground = n_bodies as u32;
        let t = T::from_f64;
        let row3 = |v: &[f64], k: usize| {
            let range = sys.block_range(k);
            std::array::from_fn(|i| {
                if i < range.len() {
                    t(v[range.start + i])
                } else {
                    T::ZERO
                }
            })
        };
        let mut jac = Vec::with_capacity(order.len());
        let mut bodies = Vec::with_capacity(order.len());
        let (mut kind, mut mu) = (Vec::new(), Vec::new());
        let mut link_count = vec![0u32; n_bodies + 1];
        for &k in &order {
            let mut b = [ground; 2];
            for (s, &body) in f.block_bodies(k).iter().enumerate() {
                b[s] = body as u32;
                link_count[body + 1] += 1;
            }
            jac.push(J::encode(&padded_rows(f, k)));
            bodies.push(b);
            let cone = sys.cones()[k];
            kind.push(match cone {
                Cone::Bilateral { .. } => Kind::Bilateral,
                Cone::Unilateral => Kind::Unilateral,
                Cone::Coulomb { .. } => Kind::Coulomb,
            });
            mu.push(t(cone.mu().unwrap_or(0.0)));
        }
        for i in 0..n_bodies {
            link_count[i + 1] += link_count[i];
        }
        let mut fill = link_count.clone();
        let mut links = vec![0; link_count[n_bodies] as usize];
        for (kk, b) in bodies.iter().enumerate() {
            for (s, &body) in b.iter().enumerate().filter(|(_, b)| **b != ground) {
                links[fill[body as usize] as usize] = (2 * kk + s) as u32;
                fill[body as usize] += 1;
            }
        }
        let mut inv_mass: Vec<[T; 6]> = f.inv_mass().iter().map(|m| m.map(t)).collect();
        inv_mass.push([T::ZERO; 6]);
        let rigid = sys.compliance().iter().all(|&e| e == 0.0);
        Kernel {
            jac,
            bodies,
            r: order.iter().map(|&k| row3(sys.r(), k)).collect(),
            compliance: (!rigid)
                .then(|| order.iter().map(|&k| row3(sys.compliance(), k)).collect()),
            eta: order.iter().map(|&k| t(eta[k])).collect(),
            mu,
            kind,
            inv_mass,
            link_ptr: link_count,
            links,
            r_norm: sys.r().iter().map(|x| x * x).sum::<f64>().sqrt(),
            friction,
            order,
            groups: ranges,
        }
    }

    /// `γ` of the system (`f64`, rows in system order) in kernel order, 3 per block.
    fn gather(&self, sys: &System, gamma: &[f64]) -> Vec<[T; 3]> {
        self.order
            .iter()
            .map(|&k| {
                let range = sys.block_range(k);
                std::array::from_fn(|i| {
                    if i < range.len() {
                        T::from_f64(gamma[range.start + i])
                    } else {
                        T::ZERO
                    }
                })
            })
            .collect()
    }

    /// The inverse of [`Kernel::gather`].
    fn scatter(&self, sys: &System, gamma: &[[T; 3]]) -> Vec<f64> {
        let mut out = vec![0.0; sys.rows()];
        for (g, &k) in gamma.iter().zip(&self.order) {
            let range = sys.block_range(k);
            for (i, row) in range.enumerate() {
                out[row] = g[i].to_f64();
            }
        }
        out
    }

    /// `w = M⁻¹ Jᵀ γ`, bodies in parallel (each a gather over its links).
    fn body_velocities(&self, gamma: &[[T; 3]], w: &[[T::Atomic; 6]]) {
        let n = self.inv_mass.len() - 1;
        w[..n]
            .par_iter()
            .with_min_len(CHUNK)
            .enumerate()
            .for_each(|(b, wb)| {
                let mut acc = [T::ZERO; 6];
                let links = &self.links[self.link_ptr[b] as usize..self.link_ptr[b + 1] as usize];
                for &l in links {
                    let (k, s) = ((l / 2) as usize, (l % 2) as usize);
                    let jt_g = J::transpose_times(&self.jac[k], s, &gamma[k]);
                    for c in 0..6 {
                        acc[c] += jt_g[c];
                    }
                }
                for c in 0..6 {
                    T::store(&wb[c], acc[c] * self.inv_mass[b][c]);
                }
            });
    }

    /// `u_k = J_k w + E_k γ_k + r_k` of kernel block `k`.
    fn velocity(&self, k: usize, g: &[T; 3], w: &[[T::Atomic; 6]]) -> [T; 3] {
        let mut u = self.r[k];
        for (s, &b) in self.bodies[k].iter().enumerate() {
            let wb: [T; 6] = std::array::from_fn(|c| T::load(&w[b as usize][c]));
            let jw = J::times(&self.jac[k], s, &wb);
            for i in 0..3 {
                u[i] += jw[i];
            }
        }
        if let Some(e) = &self.compliance {
            for i in 0..3 {
                u[i] += e[k][i] * g[i];
            }
        }
        u
    }

    /// `Π_K(x)` on block `k`'s cone (padded rows are zero and stay zero).
    fn project(&self, k: usize, x: &mut [T; 3]) {
        match self.kind[k] {
            Kind::Bilateral => {}
            Kind::Unilateral => x[0] = x[0].max(T::ZERO),
            Kind::Coulomb => project_circular(x, self.mu[k]),
        }
    }

    /// `Π_K(γ_k − s û_k)` of block `k`.
    fn step(&self, k: usize, g: &[T; 3], u_hat: &[T; 3], s: T) -> [T; 3] {
        let mut x = std::array::from_fn(|i| g[i] - s * u_hat[i]);
        self.project(k, &mut x);
        x
    }

    /// The model velocity `û_k` of `u_k` (De Saxcé's shift under the Coulomb model).
    fn model_velocity(&self, k: usize, mut u: [T; 3]) -> [T; 3] {
        if self.friction == FrictionModel::Coulomb && self.kind[k] == Kind::Coulomb {
            u[0] += self.mu[k] * u[1].hypot(u[2]);
        }
        u
    }

    /// The residual sums of block `k` at `γ_k` with model velocity `û_k`.
    fn sums(&self, k: usize, g: &[T; 3], u: &[T; 3], u_hat: &[T; 3]) -> Sums {
        let unit = self.step(k, g, u_hat, T::ONE);
        let eta = if self.eta[k] > T::ZERO {
            self.eta[k]
        } else {
            T::ONE
        };
        let scaled = self.step(k, g, u_hat, eta);
        let mut s = Sums::default();
        for i in 0..3 {
            let (gi, e) = (g[i].to_f64(), (g[i] - unit[i]).to_f64());
            s.e2 += e * e;
            s.e_inf = s.e_inf.max(e.abs());
            s.velocity = s
                .velocity
                .max(((g[i] - scaled[i]).to_f64() / eta.to_f64()).abs());
            s.g2 += gi * gi;
            s.u2 += u[i].to_f64() * u[i].to_f64();
            s.g_inf = s.g_inf.max(gi.abs());
        }
        s
    }

    /// One pass over the blocks at `gamma` with body velocities `w = M⁻¹ Jᵀ γ`: the
    /// residual sums, and with `next` the Jacobi step `next_k = Π(γ_k − ω η_k û_k)`.
    fn pass(
        &self,
        gamma: &[[T; 3]],
        w: &[[T::Atomic; 6]],
        omega: T,
        next: Option<&mut [[T; 3]]>,
    ) -> Sums {
        let block = |k: usize, g: &[T; 3]| {
            let u = self.velocity(k, g, w);
            let u_hat = self.model_velocity(k, u);
            (self.sums(k, g, &u, &u_hat), u_hat)
        };
        let parts: Vec<Sums> = match next {
            Some(next) => next
                .par_chunks_mut(CHUNK)
                .zip(gamma.par_chunks(CHUNK))
                .enumerate()
                .map(|(c, (out, gs))| {
                    let mut sums = Sums::default();
                    for (i, (o, g)) in out.iter_mut().zip(gs).enumerate() {
                        let k = c * CHUNK + i;
                        let (s, u_hat) = block(k, g);
                        *o = self.step(k, g, &u_hat, omega * self.eta[k]);
                        sums = sums.merge(s);
                    }
                    sums
                })
                .collect(),
            None => gamma
                .par_chunks(CHUNK)
                .enumerate()
                .map(|(c, gs)| {
                    gs.iter().enumerate().fold(Sums::default(), |sums, (i, g)| {
                        sums.merge(block(c * CHUNK + i, g).0)
                    })
                })
                .collect(),
        };
        parts.into_iter().fold(Sums::default(), Sums::merge)
    }

    /// One coloured Gauss–Seidel sweep in place: each colour's blocks in parallel, each
    /// moved with the current `w`, which it then updates, `w_b += M⁻¹_b J_{k,s}ᵀ Δγ_k`
    /// (no two blocks of a colour share a body).
    fn colored_sweep(&self, gamma: &mut [[T; 3]], w: &[[T::Atomic; 6]], omega: T) {
        let ground = (self.inv_mass.len() - 1) as u32;
        for range in &self.groups {
            let start = range.start;
            gamma[range.clone()]
                .par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(chunk, gs)| {
                    for (i, g) in gs.iter_mut().enumerate() {
                        let k = start + chunk * CHUNK + i;
                        let u_hat = self.model_velocity(k, self.velocity(k, g, w));
                        let next = self.step(k, g, &u_hat, omega * self.eta[k]);
                        let delta: [T; 3] = std::array::from_fn(|i| next[i] - g[i]);
                        *g = next;
                        for (s, &b) in self.bodies[k].iter().enumerate() {
                            if b == ground {
                                continue;
                            }
                            let (wb, m) = (&w[b as usize], &self.inv_mass[b as usize]);
                            let jt_d = J::transpose_times(&self.jac[k], s, &delta);
                            for c in 0..6 {
                                T::store(&wb[c], T::load(&wb[c]) + m[c] * jt_d[c]);
                            }
                        }
                    }
                });
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
fn solve_in<T: Real>(job: &Job) -> Report {
    if compact(job.sys, job.f) {
        run::<T, Compact>(job)
    } else {
        run::<T, Full>(job)
    }
}

/// [`solve`] in precision `T` with rows encoded by `J`.
fn run<T: Real, J: Rows<T>>(job: &Job) -> Report {
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
    let w: Vec<[T::Atomic; 6]> = (0..kernel.inv_mass.len())
        .map(|_| std::array::from_fn(|_| T::atomic(T::ZERO)))
        .collect();
    kernel.body_velocities(&cur, &w);
    let jacobi = sweep == Sweep::Jacobi;
    let measure =
        |cur: &[[T; 3]], next: &mut [[T; 3]]| kernel.pass(cur, &w, omega, jacobi.then_some(next));
    let sums = measure(&cur, &mut next);
    let (mut progress, mut status) = Progress::new(settings, &gamma0, sums.residual(kernel.r_norm));
    if settings.max_iter == 0 && status.is_none() {
        status = Some(Status::MaxIterations);
    }
    let mut best = cur.clone();
    let status = loop {
        if let Some(status) = status {
            break status;
        }
        if jacobi {
            std::mem::swap(&mut cur, &mut next);
            kernel.body_velocities(&cur, &w);
        } else {
            kernel.colored_sweep(&mut cur, &w, omega);
        }
        let sums = measure(&cur, &mut next);
        let products = if jacobi { 1 } else { 2 };
        let res = sums.residual(kernel.r_norm);
        let improved;
        (status, improved) = progress.observe(res, sums.g_inf, 1, products);
        if improved && jacobi {
            // The next iterate is already in `next`: `cur` can be kept without a copy.
            std::mem::swap(&mut best, &mut cur);
        } else if improved {
            best.copy_from_slice(&cur);
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
/// encoding (`compact` or `full`)
/// ([`super::traffic`]), `None` for a system that is not factored. Jacobi: the gather of `w` (per
/// body its link range, `M⁻¹` and `w`; per link its entry, `γ_k` and the side's rows of
/// `J`), then per block its record, the gathers of `w` and the new `γ_k`. The coloured
/// sweep: per block its record, the new `γ_k`, `M⁻¹` and `w` of its bodies read and
/// written, then the residual pass (the record again) and the copy of the best iterate
/// when the residual improves (counted every iteration; Jacobi keeps it by swapping
/// buffers).
pub(crate) fn traffic(sys: &System, sweep: Sweep, precision: Precision) -> Option<Traffic> {
    let f = sys.factored()?;
    let t = match precision {
        Precision::F32 => 4,
        Precision::F64 => 8,
    };
    let (blocks, bodies) = (sys.blocks() as u64, f.bodies() as u64);
    let links = f.links().len() as u64;
    let rigid = sys.compliance().iter().all(|&e| e == 0.0);
    let comp = if rigid { 0 } else { 3 * t };
    let (encoding, values, side) = if compact(sys, f) {
        (
            "compact",
            <Compact as Rows<f64>>::VALUES,
            <Compact as Rows<f64>>::SIDE_VALUES,
        )
    } else {
        (
            "full",
            <Full as Rows<f64>>::VALUES,
            <Full as Rows<f64>>::SIDE_VALUES,
        )
    };
    // Per block: bodies (8), J, r, γ, η, μ, kind (1), compliance, the w gathers.
    let record = 8 + values * t + 3 * t + 3 * t + 2 * t + 1 + comp + 12 * t;
    let terms = match sweep {
        Sweep::Jacobi => vec![
            Term {
                what: "M⁻¹Jᵀγ",
                bytes: bodies * (4 + 12 * t) + links * (4 + (3 + side) * t),
            },
            Term {
                what: "Jw, residual, projection",
                bytes: blocks * (record + 3 * t),
            },
        ],
        // The sweep writes γ, reads M⁻¹ of both bodies, reads and writes their w.
        Sweep::Colored => vec![
            Term {
                what: "sweep",
                bytes: blocks * (record + 3 * t + 12 * t + 24 * t),
            },
            Term {
                what: "Jw, residual",
                bytes: blocks * record,
            },
            Term {
                what: "best copy",
                bytes: blocks * 6 * t,
            },
        ],
    };
    Some(Traffic {
        encoding: Some(encoding),
        terms,
    })
}
