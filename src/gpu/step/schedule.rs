//! The time step as a [`Schedule`]: the buffers it needs (sizes, initial contents) and the
//! operations of a step (clears, copies, dispatches of registered kernels) in order, over
//! buffer handles. An [`super::Executor`] realizes it: on the device, or on the CPU through
//! the kernels' mirrors (the `f32` reference of the whole step, and the recorded inputs of
//! the kernels' parity test).

use super::data::{GpuBody, Span, StepGate, StepParams};
use crate::error::{Error, Result};
use crate::gpu::data::{
    ApgdState, Apply, Monitor, Params, Partial, Reduce, SLOT_A, SLOT_B, SLOT_C, SLOT_RESIDUAL,
    SLOTS, SpgState,
};
use crate::gpu::kernels::{
    APGD_CURVATURE, APGD_SCALARS, APGD_TRIAL, APGD_UPDATE, COPY_IF, Kernel, MEASURE, REDUCE,
    SPG_CURVATURE, SPG_DIRECTION, SPG_SCALARS, SPG_UPDATE, STEP_APGD_START, STEP_BLOCKS,
    STEP_CONTACT_ROWS, STEP_COULOMB, STEP_GATE, STEP_GATHER, STEP_GRID, STEP_INTEGRATE,
    STEP_JACOBI, STEP_JACOBI_NEXT, STEP_KEEP, STEP_LINK_KEYS, STEP_NARROW, STEP_PRECOND,
    STEP_RESIDUAL, STEP_ROWS, STEP_SCAN_ADD, STEP_SCAN_LOCAL, STEP_SCAN_TOTALS, STEP_SOLVER_PARAMS,
    STEP_SORT_COUNT, STEP_SORT_SCATTER, STEP_SORT_SEGMENTS, STEP_STATS, STEP_WARM_START, WORKGROUP,
};
use crate::gpu::spg;
use crate::solver::coulomb::STALL_ROUNDS;
use crate::solver::{Apgd, Spg, SpgParams};

/// Iterations between two convergence tests of a step's solve (counted back from its last
/// iteration, so that a stop leaves the answer where the last iterate would be).
pub const CHECK_EVERY: usize = 10;

/// A buffer of a [`Schedule`], by its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Buf(pub(crate) usize);

/// One buffer of a schedule.
#[derive(Debug, Clone)]
pub struct BufferSpec {
    /// Label (in errors and debuggers).
    pub label: &'static str,
    /// Size in bytes (a multiple of 16).
    pub bytes: u64,
    /// A uniform buffer (else storage).
    pub uniform: bool,
    /// Initial contents (zeros otherwise).
    pub init: Option<Vec<u8>>,
    /// Read as the arguments of indirect dispatches.
    pub indirect: bool,
}

/// One operation of a step.
#[derive(Debug, Clone)]
pub enum Op {
    /// Zeroes a buffer.
    Clear(Buf),
    /// One dispatch of `kernel` over `items` invocations of its domain, `buffers` bound in
    /// binding order; with `gate`, its workgroup counts are read at run time from that
    /// buffer at that byte offset (x, y, z: none when x is 0), `items` giving the most.
    Dispatch {
        /// The registered kernel.
        kernel: &'static Kernel,
        /// Its buffers, in binding order.
        buffers: Vec<Buf>,
        /// Invocations.
        items: u32,
        /// Indirect arguments: buffer and byte offset.
        gate: Option<(Buf, u64)>,
    },
    /// Copies `bytes` bytes from `src` at `from` to `dst` at `to`.
    Copy {
        /// Source.
        src: Buf,
        /// Byte offset in the source.
        from: u64,
        /// Destination.
        dst: Buf,
        /// Byte offset in the destination.
        to: u64,
        /// Bytes.
        bytes: u64,
    },
}

/// What one step leaves in a slot of the statistics ring: the reduced statistics, the
/// contact count and the solver's monitor. Keep in sync with the copies of
/// [`Schedule::new`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct StatsSlot {
    /// Sums: kinetic energy, heights, non-finite entries; maxes: penetration.
    pub stats: Partial,
    /// The solver's residual of the step's answer.
    pub monitor: Monitor,
    /// Contacts found (more than the capacity: none were kept and nothing moved).
    pub contacts: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 3],
    /// Where the step's iterations stopped.
    pub gate: StepGate,
}

/// Bytes of one [`StatsSlot`].
pub const SLOT_BYTES: u64 = std::mem::size_of::<StatsSlot>() as u64;

/// The buffers the host writes or reads.
#[derive(Debug, Clone, Copy)]
pub struct Named {
    /// The spheres ([`GpuBody`]).
    pub bodies: Buf,
    /// The planes, written before each step.
    pub planes: Buf,
    /// Contact offsets per sphere (`n + 1`, the count last).
    pub offsets: Buf,
    /// The contacts, sorted by `(owner, other)`.
    pub contacts: Buf,
    /// `r = J v_free + b`.
    pub r: Buf,
    /// The warm-started impulses of the step.
    pub gamma: Buf,
    /// The ring of [`StatsSlot`]s.
    pub ring: Buf,
    /// Where the step's iterations stand ([`StepGate`]).
    pub gate: Buf,
    /// The last step's offsets, its contacts' other sides (with the offsets, their keys
    /// `(owner, other)`) and impulses, for the warm start (a step whose contacts overflowed
    /// keeps the one before).
    pub prev_offsets: Buf,
    /// See [`Named::prev_offsets`].
    pub prev_others: Buf,
    /// See [`Named::prev_offsets`].
    pub prev_gamma: Buf,
}

/// The buffers and operations of the time step of one scene.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Every buffer, by [`Buf`] index.
    pub buffers: Vec<BufferSpec>,
    /// Broad phase, narrow phase, assembly, warm start and links (no state change).
    pub detect: Vec<Op>,
    /// The Jacobi iterations, the residual, integration and statistics.
    pub solve: Vec<Op>,
    /// Copies the step's statistics into slot `k` of the ring: one op list per slot.
    pub record: Vec<Vec<Op>>,
    /// The buffers the host uses.
    pub named: Named,
    /// Whether the solve runs the outer De Saxcé fixed point of the Coulomb model
    /// (`spg-gpu`, `apgd-gpu`): each convergence test but the last ends an outer round.
    pub outer_rounds: bool,
}

/// Collects the buffers of a schedule, each checked against the storage binding limit.
struct Builder {
    buffers: Vec<BufferSpec>,
    limit: u64,
}

impl Builder {
    fn add(
        &mut self,
        label: &'static str,
        bytes: u64,
        uniform: bool,
        init: Option<Vec<u8>>,
    ) -> Buf {
        self.buffers.push(BufferSpec {
            label,
            bytes: bytes.max(16).next_multiple_of(16),
            uniform,
            init,
            indirect: false,
        });
        Buf(self.buffers.len() - 1)
    }

    /// A storage buffer of `bytes`: more than one binding holds is an [`Error::Gpu`] naming
    /// the buffer, its size and the limit.
    fn storage(&mut self, label: &'static str, bytes: u64) -> Result<Buf> {
        if bytes > self.limit {
            return Err(Error::Gpu(format!(
                "the time step's buffer `{label}` needs {bytes} bytes, more than one storage \
                 binding holds on this device (max_storage_buffer_binding_size = {} bytes)",
                self.limit
            )));
        }
        Ok(self.add(label, bytes, false, None))
    }

    fn filled(&mut self, label: &'static str, bytes: Vec<u8>) -> Result<Buf> {
        let buf = self.storage(label, bytes.len() as u64)?;
        self.buffers[buf.0].init = Some(bytes);
        Ok(buf)
    }

    fn uniform<T: bytemuck::Pod>(&mut self, label: &'static str, value: &T) -> Buf {
        let bytes = bytemuck::bytes_of(value).to_vec();
        self.add(label, bytes.len() as u64, true, Some(bytes))
    }

    /// The uniform of a `reduce` of `count` partials into `scalars[slot]`.
    fn reduce(&mut self, count: u32, slot: u32) -> Buf {
        let pad = [0; 2];
        self.uniform("reduce", &Reduce { count, slot, pad })
    }

    fn span(&mut self, count: u32, keys: u32, mode: u32) -> Buf {
        let span = Span {
            count,
            keys,
            mode,
            pad: 0,
        };
        self.uniform("span", &span)
    }

    /// Exclusive prefix sums of the first `n` words of `counts` into `starts` (`n + 1`
    /// words, the total last).
    fn scan(&mut self, counts: Buf, n: u32, starts: Buf) -> Result<Vec<Op>> {
        let groups = n.div_ceil(WORKGROUP);
        let totals = self.storage("totals", 4 * u64::from(groups))?;
        let span = self.span(n, 0, 0);
        let total_span = self.span(groups, 0, 0);
        Ok(vec![
            dispatch(&STEP_SCAN_LOCAL, &[span, counts, starts, totals], n),
            dispatch(&STEP_SCAN_TOTALS, &[total_span, totals], 1),
            dispatch(&STEP_SCAN_ADD, &[span, totals, starts], n),
        ])
    }

    /// The deterministic counting sort of the `items` keys of `keys` (each below `n_keys`):
    /// the operations, the segment starts (`n_keys + 1` words) and the sorted item indices.
    /// Only the first `ordered` segments are put in item order (the others keep the order
    /// the atomics gave).
    fn counting_sort(
        &mut self,
        keys: Buf,
        items: u32,
        n_keys: u32,
        ordered: u32,
    ) -> Result<(Vec<Op>, Buf, Buf)> {
        let counts = self.storage("counts", 4 * u64::from(n_keys))?;
        let fill = self.storage("fill", 4 * u64::from(n_keys))?;
        let starts = self.storage("starts", 4 * (u64::from(n_keys) + 1))?;
        let sorted = self.storage("sorted", 4 * u64::from(items))?;
        let span = self.span(items, ordered, 0);
        let mut ops = vec![
            Op::Clear(counts),
            Op::Clear(fill),
            dispatch(&STEP_SORT_COUNT, &[span, keys, counts], items),
        ];
        ops.extend(self.scan(counts, n_keys, starts)?);
        ops.push(dispatch(
            &STEP_SORT_SCATTER,
            &[span, keys, starts, fill, sorted],
            items,
        ));
        ops.push(dispatch(
            &STEP_SORT_SEGMENTS,
            &[span, starts, sorted],
            ordered,
        ));
        Ok((ops, starts, sorted))
    }
}

fn dispatch(kernel: &'static Kernel, buffers: &[Buf], items: u32) -> Op {
    op(kernel, buffers, items, None)
}

fn op(kernel: &'static Kernel, buffers: &[Buf], items: u32, gate: Option<(Buf, u64)>) -> Op {
    debug_assert_eq!(buffers.len(), kernel.bindings.len(), "{}", kernel.name);
    Op::Dispatch {
        kernel,
        buffers: buffers.to_vec(),
        items,
        gate,
    }
}

fn copy(src: Buf, dst: Buf, bytes: u64) -> Op {
    Op::Copy {
        src,
        from: 0,
        dst,
        to: 0,
        bytes,
    }
}

/// The method of a time step's solve: one of the GPU solvers, on the step's own rows.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum StepSolver {
    /// Projected Jacobi (`jacobi-gpu`): `step_gather` and the fused `step_jacobi`.
    #[default]
    Jacobi,
    /// P-SPG-FB (`spg-gpu`) with its parameters: the kernels of [`crate::gpu::SpgGpu`].
    Spg(SpgParams),
    /// APGD (`apgd-gpu`): the kernels of [`crate::gpu::ApgdGpu`].
    Apgd,
}

impl StepSolver {
    /// The method of the GPU solver `name` (`jacobi-gpu`, `spg-gpu` with its default
    /// parameters, `apgd-gpu`); `None` for any other.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "jacobi-gpu" => Some(StepSolver::Jacobi),
            "spg-gpu" => Some(StepSolver::Spg(SpgParams::default())),
            "apgd-gpu" => Some(StepSolver::Apgd),
            _ => None,
        }
    }

    /// Its registry name.
    pub fn name(&self) -> &'static str {
        match self {
            StepSolver::Jacobi => "jacobi-gpu",
            StepSolver::Spg(_) => "spg-gpu",
            StepSolver::Apgd => "apgd-gpu",
        }
    }
}

/// The buffers the iterations of a step's solve share, and the dispatches they repeat.
struct Iterations {
    step_params: Buf,
    /// The solver's [`Params`] of the step (uniform).
    solver: Buf,
    contacts: Buf,
    /// The `r` of the products: the assembled one, or its copy shifted by the De Saxcé term.
    r: Buf,
    /// Under the Coulomb model with `spg-gpu` or `apgd-gpu`: the assembled `r`, from which
    /// `step_coulomb` writes the shifted `r` of each outer round.
    assembled: Option<Buf>,
    link_starts: Buf,
    link_sorted: Buf,
    consts: Buf,
    /// `M⁻¹ Jᵀ x` of the last gather.
    w: Buf,
    /// The velocity `u = A γ + r` of the answer (SPG's gradient `g`, APGD's `u`).
    u: Buf,
    /// The indirect arguments: bodies, blocks, one workgroup, rows (byte offsets 0, 12,
    /// 24, 36).
    args: Buf,
    scalars: Buf,
    monitor: Buf,
    gate: Buf,
    capacity: u32,
    bodies: u32,
    /// Rows of the room (`dim` per contact).
    rows: u32,
    iterations: usize,
}

/// Byte offsets of the workgroup counts in [`Iterations::args`].
const BODIES_ARGS: u64 = 0;
const BLOCKS_ARGS: u64 = 12;
const SINGLE_ARGS: u64 = 24;
const ROWS_ARGS: u64 = 36;

impl Iterations {
    /// `w = M⁻¹ Jᵀ x`, through the indirect arguments when `gated`.
    fn gather(&self, x: Buf, gated: bool) -> Op {
        let buffers = [
            self.step_params,
            self.link_starts,
            self.link_sorted,
            self.contacts,
            self.consts,
            x,
            self.w,
        ];
        self.on(&STEP_GATHER, &buffers, self.bodies, BODIES_ARGS, gated)
    }

    /// `y = A x (+ r)`: the gather, then `step_rows` (`apply` selects `r`).
    fn product(&self, x: Buf, apply: Buf, y: Buf, gated: bool) -> [Op; 2] {
        let buffers = [
            self.solver,
            self.step_params,
            apply,
            self.contacts,
            self.w,
            self.r,
            x,
            y,
        ];
        [
            self.gather(x, gated),
            self.on(&STEP_ROWS, &buffers, self.capacity, BLOCKS_ARGS, gated),
        ]
    }

    /// A dispatch of `kernel` over `items`, gated at `offset` of the arguments when `gated`.
    fn on(&self, kernel: &'static Kernel, buffers: &[Buf], items: u32, at: u64, gated: bool) -> Op {
        op(kernel, buffers, items, gated.then_some((self.args, at)))
    }

    /// A gated dispatch of a kernel over the rows.
    fn rows_op(&self, kernel: &'static Kernel, buffers: &[Buf]) -> Op {
        self.on(kernel, buffers, self.rows, ROWS_ARGS, true)
    }

    /// A gated dispatch of a kernel over the contact blocks.
    fn blocks_op(&self, kernel: &'static Kernel, buffers: &[Buf]) -> Op {
        self.on(kernel, buffers, self.capacity, BLOCKS_ARGS, true)
    }

    /// A gated dispatch of a single-workgroup kernel.
    fn single_op(&self, kernel: &'static Kernel, buffers: &[Buf]) -> Op {
        self.on(kernel, buffers, 1, SINGLE_ARGS, true)
    }

    /// The De Saxcé term of the iterate of velocity `u` into the shifted `r` (`u` and
    /// `other` moved alike), under the Coulomb model with a descent method: the start of an
    /// outer round of `solver::coulomb`'s fixed point, whose inner CCP solve is the next
    /// [`CHECK_EVERY`] iterations from the current iterate and state. `u` is then the
    /// modified velocity of the iterate, whose CCP residual (the check's) is its Coulomb one.
    fn shift(&self, d: &Descent, u: Buf, other: Buf, gated: bool) -> Option<Op> {
        let assembled = self.assembled?;
        let buffers = [self.solver, d.step_blocks, assembled, self.r, u, other];
        Some(self.on(&STEP_COULOMB, &buffers, self.capacity, BLOCKS_ARGS, gated))
    }

    /// The convergence test of the iterate `x` (velocity `u`) before iteration `k`: the
    /// residual's partials into `parts`, reduced by `reduce`, measured (with `best`, the
    /// best measured iterate kept as the standalone solvers do), then the gate.
    fn check(
        &self,
        b: &mut Builder,
        k: usize,
        [x, u, parts, reduce]: [Buf; 4],
        best: Option<Buf>,
    ) -> Vec<Op> {
        let mut ops = vec![
            self.blocks_op(
                &STEP_RESIDUAL,
                &[self.solver, self.step_params, self.contacts, x, u, parts],
            ),
            self.single_op(&REDUCE, &[reduce, parts, self.scalars]),
            // The gate reads only the measure's `value`: no clear of the monitor here, no
            // split of the pass.
            self.single_op(&MEASURE, &[self.solver, self.scalars, self.monitor]),
        ];
        if let Some(best) = best {
            ops.push(self.rows_op(&COPY_IF, &[self.solver, self.monitor, x, best]));
        }
        // The stall rule of the outer rounds (`solver::coulomb`): each check ends a round.
        let stall = if self.assembled.is_some() {
            STALL_ROUNDS as u32
        } else {
            0
        };
        let at = b.span(k as u32, stall, 0);
        ops.push(dispatch(
            &STEP_GATE,
            &[self.step_params, at, self.monitor, self.gate, self.args],
            1,
        ));
        ops
    }

    /// Projected Jacobi (the method of `jacobi-gpu`) in the ping-pong buffers `gamma`
    /// (`gamma[0]` warm-started): the answer's buffer.
    fn jacobi(
        &self,
        b: &mut Builder,
        solve: &mut Vec<Op>,
        gamma: [Buf; 2],
        parts: Buf,
        reduce: Buf,
    ) -> Buf {
        // The next iterate `to` of `x`, with `u = J w + E x + r` of `x` when a residual
        // reads it (`step_jacobi`; `step_jacobi_next` without).
        let jacobi = |x: Buf, to: Buf, gated: bool, velocity: bool| {
            let kernel = if velocity {
                &STEP_JACOBI
            } else {
                &STEP_JACOBI_NEXT
            };
            let rows = [
                self.solver,
                self.step_params,
                self.contacts,
                self.w,
                self.r,
                x,
            ];
            let buffers: Vec<Buf> = rows
                .into_iter()
                .chain(velocity.then_some(self.u))
                .chain([to])
                .collect();
            self.on(kernel, &buffers, self.capacity, BLOCKS_ARGS, gated)
        };
        let iterations = self.iterations;
        for k in 0..iterations {
            let (from, to) = (gamma[k % 2], gamma[1 - k % 2]);
            let checked = k > 0 && (iterations - k).is_multiple_of(CHECK_EVERY);
            solve.push(self.gather(from, true));
            solve.push(jacobi(from, to, true, checked));
            if checked {
                // The residual of γ_k (`from`, with its `u`): the gate stops here when it
                // meets the tolerance, leaving γ_k where the last iterate lands (k has the
                // parity of `iterations`; `to` is not read again).
                solve.extend(self.check(b, k, [from, self.u, parts, reduce], None));
            }
        }
        // The answer's `u` and `w` (the step it also takes lands in the other buffer, not
        // read again).
        let last = gamma[iterations % 2];
        solve.push(self.gather(last, false));
        solve.push(jacobi(last, gamma[1 - iterations % 2], false, true));
        last
    }

    /// The buffers of a descent method: the contacts' blocks its generic kernels read
    /// (written first), a row vector, the partials of the blocks' and the rows' kernels
    /// (cleared at the start of each solve: their dispatches cover the room, the mirrors
    /// write the contacts' partials only) with their reductions into `SLOT_A` .. `SLOT_C`
    /// and `SLOT_RESIDUAL`, and `Apply` uniforms without and with `r`.
    fn descent_buffers(&self, b: &mut Builder, solve: &mut Vec<Op>) -> Result<Descent> {
        let (blocks_wg, rows_wg) = (
            self.capacity.div_ceil(WORKGROUP),
            self.rows.div_ceil(WORKGROUP),
        );
        let step_blocks = b.storage("blocks", 32 * u64::from(self.capacity))?;
        let parts_blocks = b.storage("parts_blocks", 32 * u64::from(blocks_wg))?;
        let parts_rows = b.storage("parts_rows", 32 * u64::from(rows_wg))?;
        solve.extend([
            dispatch(
                &STEP_BLOCKS,
                &[self.solver, self.step_params, self.contacts, step_blocks],
                self.capacity,
            ),
            Op::Clear(self.monitor),
            Op::Clear(parts_blocks),
            Op::Clear(parts_rows),
        ]);
        let plain = b.uniform(
            "apply",
            &Apply {
                add_r: 0,
                pad: [0; 3],
            },
        );
        let with_r = b.uniform(
            "apply",
            &Apply {
                add_r: 1,
                pad: [0; 3],
            },
        );
        Ok(Descent {
            step_blocks,
            parts_blocks,
            parts_rows,
            blocks: [SLOT_A, SLOT_B, SLOT_RESIDUAL].map(|slot| b.reduce(blocks_wg, slot)),
            rows: [SLOT_A, SLOT_B, SLOT_C].map(|slot| b.reduce(rows_wg, slot)),
            plain,
            with_r,
            vector: 4 * u64::from(self.rows),
        })
    }

    /// The end of a descent method's solve from the last iterate `x` (velocity `u`): its
    /// measure, which keeps it in `best` when it improves; then `w` and `u` of the best
    /// measured iterate, the answer (where a check stopped the iterations that is the
    /// iterate it measured: each earlier check had a larger residual). Under the Coulomb
    /// model the measures follow a [`Iterations::shift`] (`other` moved with `u`), and the
    /// answer's `u` is its modified velocity.
    fn finish(
        &self,
        b: &mut Builder,
        solve: &mut Vec<Op>,
        d: &Descent,
        [x, best, other]: [Buf; 3],
    ) {
        let [.., residual] = d.blocks;
        solve.extend(self.shift(d, self.u, other, true));
        solve.extend(self.check(
            b,
            self.iterations,
            [x, self.u, d.parts_blocks, residual],
            Some(best),
        ));
        solve.extend(self.product(best, d.with_r, self.u, false));
        solve.extend(self.shift(d, self.u, other, false));
    }

    /// P-SPG-FB (the kernels of `spg-gpu`, paper 004) from `x` (warm-started; the iterate
    /// in place), the gradient `g = A x + r` in `u`: the answer's buffer.
    fn spg(&self, b: &mut Builder, solve: &mut Vec<Op>, x: Buf, p: &SpgParams) -> Result<Buf> {
        let d = self.descent_buffers(b, solve)?;
        let [dir, ad, best, precond] =
            ["d", "ad", "best", "precond"].map(|l| b.storage(l, d.vector));
        let (dir, ad, best, precond) = (dir?, ad?, best?, precond?);
        let [cfg, cfg_fallback] =
            [0, 1].map(|fallback| spg::config(p, fallback).map(|c| b.uniform("spg_config", &c)));
        let (cfg, cfg_fallback) = (cfg?, cfg_fallback?);
        let state = b.storage("spg_state", std::mem::size_of::<SpgState>() as u64)?;
        let initial = b.filled(
            "spg_initial",
            bytemuck::bytes_of(&spg::initial_state(p)).to_vec(),
        )?;
        let g = self.u;
        solve.push(copy(initial, state, std::mem::size_of::<SpgState>() as u64));
        solve.extend(self.product(x, d.with_r, g, false));
        solve.push(dispatch(
            &STEP_PRECOND,
            &[
                self.solver,
                self.step_params,
                self.contacts,
                self.consts,
                precond,
            ],
            self.capacity,
        ));
        let [reduce_a, reduce_b, residual] = d.blocks;
        let [.., reduce_c] = d.rows;
        for k in 0..self.iterations {
            if k % CHECK_EVERY == 0 {
                solve.extend(self.shift(&d, g, dir, true));
                solve.extend(self.check(b, k, [x, g, d.parts_blocks, residual], Some(best)));
            }
            for (cfg, reduce) in [(cfg, reduce_a), (cfg_fallback, reduce_b)] {
                let buffers = [
                    self.solver,
                    cfg,
                    d.step_blocks,
                    self.scalars,
                    state,
                    x,
                    g,
                    precond,
                    dir,
                    d.parts_blocks,
                ];
                solve.push(self.blocks_op(&SPG_DIRECTION, &buffers));
                solve.push(self.single_op(&REDUCE, &[reduce, d.parts_blocks, self.scalars]));
            }
            solve.extend(self.product(dir, d.plain, ad, true));
            solve.push(self.rows_op(
                &SPG_CURVATURE,
                &[self.solver, precond, dir, ad, d.parts_rows],
            ));
            solve.push(self.single_op(&REDUCE, &[reduce_c, d.parts_rows, self.scalars]));
            solve.push(self.single_op(&SPG_SCALARS, &[cfg, self.scalars, state]));
            solve.push(self.rows_op(&SPG_UPDATE, &[self.solver, state, dir, ad, x, g]));
            if (k + 1) % Spg::REFRESH == 0 {
                solve.extend(self.product(x, d.with_r, g, true));
            }
        }
        self.finish(b, solve, &d, [x, best, dir]);
        Ok(best)
    }

    /// APGD (the kernels of `apgd-gpu`) from `x` (warm-started; the iterate in place) and
    /// `y = x`, `u = A x + r`, `g_y = A y + r`, `L = ‖A 1‖ / √m`: the answer's buffer.
    fn apgd(&self, b: &mut Builder, solve: &mut Vec<Op>, x: Buf) -> Result<Buf> {
        let d = self.descent_buffers(b, solve)?;
        let [y, g_y, x_new, dir, ad, best] =
            ["y", "g_y", "x_new", "d", "ad", "best"].map(|l| b.storage(l, d.vector));
        let (y, g_y, x_new, dir, ad, best) = (y?, g_y?, x_new?, dir?, ad?, best?);
        let ones = b.filled(
            "ones",
            bytemuck::cast_slice(&vec![1.0f32; self.rows as usize]).to_vec(),
        )?;
        let state = b.storage("apgd_state", std::mem::size_of::<ApgdState>() as u64)?;
        let u = self.u;
        // L from ‖A 1‖² and 1 · 1 (`spg_curvature` with d = P = 1).
        let [reduce_a, reduce_b, _] = d.rows;
        solve.extend(self.product(ones, d.plain, ad, false));
        solve.push(dispatch(
            &SPG_CURVATURE,
            &[self.solver, ones, ones, ad, d.parts_rows],
            self.rows,
        ));
        solve.push(dispatch(
            &REDUCE,
            &[reduce_b, d.parts_rows, self.scalars],
            1,
        ));
        solve.push(dispatch(&STEP_APGD_START, &[self.scalars, state], 1));
        solve.push(copy(x, y, d.vector));
        solve.extend(self.product(x, d.with_r, u, false));
        solve.push(copy(u, g_y, d.vector));
        let [.., residual] = d.blocks;
        let own = [self.solver, d.step_blocks, state, y, g_y, x_new, dir];
        for k in 0..self.iterations {
            if k % CHECK_EVERY == 0 {
                solve.extend(self.shift(&d, u, g_y, true));
                solve.extend(self.check(b, k, [x, u, d.parts_blocks, residual], Some(best)));
            }
            solve.push(self.blocks_op(&APGD_TRIAL, &own));
            solve.extend(self.product(dir, d.plain, ad, true));
            solve.push(self.rows_op(
                &APGD_CURVATURE,
                &[self.solver, dir, ad, g_y, x, x_new, d.parts_rows],
            ));
            solve.push(self.single_op(&REDUCE, &[reduce_a, d.parts_rows, self.scalars]));
            solve.push(self.single_op(&APGD_SCALARS, &[self.scalars, state]));
            solve.push(self.rows_op(&APGD_UPDATE, &[self.solver, state, x_new, ad, x, u, y, g_y]));
            if (k + 1) % Apgd::REFRESH == 0 {
                solve.extend(self.product(x, d.with_r, u, true));
                solve.extend(self.product(y, d.with_r, g_y, true));
            }
        }
        self.finish(b, solve, &d, [x, best, g_y]);
        Ok(best)
    }
}

/// The buffers a descent method adds ([`Iterations::descent_buffers`]).
struct Descent {
    /// The contacts' blocks (`step_blocks`).
    step_blocks: Buf,
    parts_blocks: Buf,
    parts_rows: Buf,
    /// Reductions of the blocks' partials into `SLOT_A`, `SLOT_B`, `SLOT_RESIDUAL`.
    blocks: [Buf; 3],
    /// Reductions of the rows' partials into `SLOT_A`, `SLOT_B`, `SLOT_C`.
    rows: [Buf; 3],
    /// `Apply` without `r`.
    plain: Buf,
    /// `Apply` with `r`.
    with_r: Buf,
    /// Bytes of a row vector of the room.
    vector: u64,
}

impl Schedule {
    /// The schedule of `params` with the initial sphere state `bodies` (`None`: the
    /// buffer's contents come from elsewhere, as when a grown room carries them): up to
    /// `params.max_iter` iterations of `method` per step (warm-started from the previous
    /// step's impulses by contact key when `warm_start`), stopped on the GPU when a check
    /// every [`CHECK_EVERY`] iterations meets the tolerance, then the residual of the
    /// answer, integration and statistics, recorded into a ring of `ring` [`StatsSlot`]s.
    /// `limit` is the device's `max_storage_buffer_binding_size`.
    pub fn new(
        params: &StepParams,
        bodies: Option<&[GpuBody]>,
        method: StepSolver,
        warm_start: bool,
        ring: u32,
        limit: u64,
    ) -> Result<Self> {
        let iterations = params.max_iter as usize;
        let n = params.n_bodies;
        let capacity = params.capacity;
        // The rows' dispatches of `spg-gpu` and `apgd-gpu` (`dim` per contact).
        let rows_dispatched = match method {
            StepSolver::Jacobi => 0,
            _ => u64::from(params.dim) * u64::from(capacity),
        };
        // A dispatch's grid is two-dimensional past `MAX_WORKGROUPS` workgroups; what bounds a
        // domain is its `u32` indices.
        for (what, items) in [
            ("link entries (2 per contact)", 2 * u64::from(capacity)),
            ("contact rows", rows_dispatched),
            ("spheres", u64::from(n) + 1),
            ("grid buckets", u64::from(params.mask) + 1),
        ] {
            if items > u64::from(u32::MAX) {
                return Err(Error::Gpu(format!(
                    "{items} {what} exceed the time step's u32 indices ({} at most)",
                    u32::MAX
                )));
            }
        }
        let mut b = Builder {
            buffers: Vec::new(),
            limit,
        };
        let (cap, rows, n64) = (
            u64::from(capacity),
            u64::from(params.dim * capacity),
            u64::from(n),
        );
        let step_params = b.uniform("step_params", params);
        let named = Named {
            bodies: match bodies {
                Some(bodies) => b.filled("bodies", bytemuck::cast_slice(bodies).to_vec())?,
                None => b.storage("bodies", std::mem::size_of::<GpuBody>() as u64 * n64)?,
            },
            planes: b.storage("planes", 48 * u64::from(params.n_planes))?,
            offsets: b.storage("offsets", 4 * (n64 + 1))?,
            contacts: b.storage("contacts", 32 * cap)?,
            r: b.storage("r", 4 * rows)?,
            gamma: b.storage("gamma0", 4 * rows)?,
            ring: b.storage("stats_ring", SLOT_BYTES * u64::from(ring))?,
            gate: b.storage("gate", 16)?,
            prev_offsets: b.storage("prev_offsets", 4 * (n64 + 1))?,
            prev_others: b.storage("prev_others", 4 * cap)?,
            prev_gamma: b.storage("prev_gamma", 4 * rows)?,
        };
        // Two buffers each serve a detection-only array and a solve-only one, neither read
        // across steps: the spheres' cells (narrow phase) then `w = M⁻¹ Jᵀ x` (iterations,
        // integration; its 24 B per sphere hold a cell's 16); the body links' sort keys, then
        // the velocities `u` (written by each solve before it reads them).
        let w = b.storage("cells, w", 24 * n64)?;
        let cells = w;
        let u = b.storage("link_keys, u", (8 * cap).max(4 * rows))?;
        let link_keys = u;
        let grid_keys = b.storage("grid_keys", 4 * n64)?;
        let counts = b.storage("contact_counts", 4 * n64)?;
        let consts = b.storage("sphere_consts", 8 * n64)?;
        let solver_storage = b.storage("solver_params", 32)?;
        let solver = b.uniform("solver_params", &<Params as bytemuck::Zeroable>::zeroed());
        let groups = n.max(capacity).div_ceil(WORKGROUP);
        let parts = b.storage("parts", 32 * u64::from(groups))?;
        let scalars = b.storage("scalars", 32 * SLOTS as u64)?;
        let monitor = b.storage("monitor", std::mem::size_of::<Monitor>() as u64)?;
        let count = b.storage("contact_count", 16)?;

        // Broad phase: the grid, counting-sorted by hash bucket.
        let mut detect = vec![dispatch(
            &STEP_GRID,
            &[step_params, named.bodies, cells, grid_keys, consts],
            n,
        )];
        let buckets = params.mask + 1;
        let (ops, grid_starts, grid_sorted) = b.counting_sort(grid_keys, n, buckets, buckets)?;
        detect.extend(ops);
        // Narrow phase: count, offsets by prefix sums, write.
        for (mode, offsets) in [(0, counts), (1, named.offsets)] {
            let span = b.span(0, 0, mode);
            detect.push(dispatch(
                &STEP_NARROW,
                &[
                    step_params,
                    span,
                    named.bodies,
                    named.planes,
                    cells,
                    grid_starts,
                    grid_sorted,
                    offsets,
                    named.contacts,
                ],
                n,
            ));
            if mode == 0 {
                detect.extend(b.scan(counts, n, named.offsets)?);
            }
        }
        // Assembly and warm start.
        detect.push(dispatch(
            &STEP_CONTACT_ROWS,
            &[
                step_params,
                named.offsets,
                named.bodies,
                named.planes,
                named.contacts,
                named.r,
            ],
            capacity,
        ));
        detect.push(if warm_start {
            dispatch(
                &STEP_WARM_START,
                &[
                    step_params,
                    named.offsets,
                    named.contacts,
                    named.prev_offsets,
                    named.prev_others,
                    named.prev_gamma,
                    named.gamma,
                ],
                capacity,
            )
        } else {
            Op::Clear(named.gamma)
        });
        // Body links: entries e = 2k + side (2 per contact) counting-sorted by body, which
        // `step_gather` walks; key `n` collects the entries without a body, counted but
        // never put in order.
        let entries = 2 * capacity;
        detect.push(dispatch(
            &STEP_LINK_KEYS,
            &[step_params, named.offsets, named.contacts, link_keys],
            entries,
        ));
        let (ops, link_starts, link_sorted) = b.counting_sort(link_keys, entries, n + 1, n)?;
        detect.extend(ops);
        // Under the Coulomb model `spg-gpu` and `apgd-gpu` run the outer De Saxcé fixed point
        // of `solver::coulomb` (frictional blocks only: a frictionless scene has none): their
        // kernels, and the residual, see the CCP with the shifted `r`.
        let outer = method != StepSolver::Jacobi && params.coulomb == 1 && params.dim == 3;
        let solver_of = if outer {
            let ccp = StepParams {
                coulomb: 0,
                ..*params
            };
            b.uniform("step_params_ccp", &ccp)
        } else {
            step_params
        };
        detect.push(dispatch(
            &STEP_SOLVER_PARAMS,
            &[solver_of, named.offsets, solver_storage],
            1,
        ));
        detect.push(copy(solver_storage, solver, 32));

        // The solve, on the sphere rows without stored blocks (`step_gather`: w = M⁻¹Jᵀx;
        // then `step_jacobi`, or `step_rows`: the product). Its iterations' dispatches read
        // their workgroup counts from `args` (bodies, blocks, one workgroup, rows), reset
        // before each step; the gate zeroes them when a check finds the tolerance met.
        let rows_items = params.dim * capacity;
        let full = [
            STEP_GATHER.workgroups(n),
            STEP_JACOBI.workgroups(capacity),
            [1, 1, 1],
            SPG_CURVATURE.workgroups(rows_items),
        ];
        let args_full = b.filled("args_full", bytemuck::cast_slice(&full).to_vec())?;
        let args = b.storage("args", 48)?;
        b.buffers[args.0].indirect = true;
        let gate = named.gate;
        let gate_init = b.filled(
            "gate_init",
            bytemuck::bytes_of(&StepGate {
                iterations: params.max_iter,
                ..StepGate::default()
            })
            .to_vec(),
        )?;
        let residual_reduce = b.reduce(capacity.div_ceil(WORKGROUP), SLOT_RESIDUAL);
        // `parts` (the partials of the checks' and the answer's residuals) starts each solve
        // from zeros: the residual's workgroups cover the room, those past the contacts write
        // zero partials on the device and none in the mirror, and the statistics of the last
        // step wrote others. Once per solve: every residual of a step writes the same entries
        // (one contact count), and a clear before each check would end the compute pass there.
        let mut solve = vec![
            copy(args_full, args, 48),
            copy(gate_init, gate, 16),
            Op::Clear(parts),
        ];
        let (r, assembled) = if outer {
            let shifted = b.storage("r_shifted", 4 * rows)?;
            solve.push(copy(named.r, shifted, 4 * rows));
            (shifted, Some(named.r))
        } else {
            (named.r, None)
        };
        let it = Iterations {
            step_params,
            solver,
            contacts: named.contacts,
            r,
            assembled,
            link_starts,
            link_sorted,
            consts,
            w,
            u,
            args,
            scalars,
            monitor,
            gate,
            capacity,
            bodies: n,
            rows: rows_items,
            iterations,
        };
        // `solve` leaves `w = M⁻¹ Jᵀ γ` and `u = J w + E γ + r` of the answer `γ`.
        let answer = match method {
            StepSolver::Jacobi => {
                let other = b.storage("gamma1", 4 * rows)?;
                it.jacobi(
                    &mut b,
                    &mut solve,
                    [named.gamma, other],
                    parts,
                    residual_reduce,
                )
            }
            StepSolver::Spg(p) => it.spg(&mut b, &mut solve, named.gamma, &p)?,
            StepSolver::Apgd => it.apgd(&mut b, &mut solve, named.gamma)?,
        };
        // The answer's natural-map residual (the monitor), into `parts` cleared at the start.
        solve.push(dispatch(
            &STEP_RESIDUAL,
            &[solver, step_params, named.contacts, answer, u, parts],
            capacity,
        ));
        solve.push(dispatch(&REDUCE, &[residual_reduce, parts, scalars], 1));
        solve.push(Op::Clear(monitor));
        solve.push(dispatch(&MEASURE, &[solver, scalars, monitor], 1));
        solve.push(dispatch(
            &STEP_INTEGRATE,
            &[step_params, named.offsets, w, named.bodies],
            n,
        ));
        solve.push(dispatch(
            &STEP_STATS,
            &[
                step_params,
                named.offsets,
                named.bodies,
                named.contacts,
                parts,
            ],
            n,
        ));
        let stats_reduce = b.reduce(n.div_ceil(WORKGROUP), 0);
        solve.push(dispatch(&REDUCE, &[stats_reduce, parts, scalars], 1));
        solve.push(Op::Copy {
            src: named.offsets,
            from: 4 * n64,
            dst: count,
            to: 0,
            bytes: 4,
        });
        solve.push(dispatch(
            &STEP_KEEP,
            &[
                step_params,
                named.offsets,
                named.contacts,
                answer,
                named.prev_offsets,
                named.prev_others,
                named.prev_gamma,
            ],
            (n + 1).max(capacity),
        ));

        // Slot k of the ring: the statistics partial, the monitor, the count.
        let partial = std::mem::size_of::<Partial>() as u64;
        let monitor_bytes = std::mem::size_of::<Monitor>() as u64;
        let record = (0..u64::from(ring))
            .map(|k| {
                let at = k * SLOT_BYTES;
                vec![
                    Op::Copy {
                        src: scalars,
                        from: 0,
                        dst: named.ring,
                        to: at,
                        bytes: partial,
                    },
                    Op::Copy {
                        src: monitor,
                        from: 0,
                        dst: named.ring,
                        to: at + partial,
                        bytes: monitor_bytes,
                    },
                    Op::Copy {
                        src: count,
                        from: 0,
                        dst: named.ring,
                        to: at + partial + monitor_bytes,
                        bytes: 16,
                    },
                    Op::Copy {
                        src: gate,
                        from: 0,
                        dst: named.ring,
                        to: at + partial + monitor_bytes + 16,
                        bytes: 16,
                    },
                ]
            })
            .collect();
        Ok(Schedule {
            buffers: b.buffers,
            detect,
            solve,
            record,
            named,
            outer_rounds: outer,
        })
    }

    /// Bytes of all the buffers: the device memory of the step.
    pub fn bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.bytes).sum()
    }
}
