//! The time step as a [`Schedule`]: the buffers it needs (sizes, initial contents) and the
//! operations of a step (clears, copies, dispatches of registered kernels) in order, over
//! buffer handles. An [`super::Executor`] realizes it: on the device, or on the CPU through
//! the kernels' mirrors (the `f32` reference of the whole step, and the recorded inputs of
//! the kernels' parity test).

use super::data::{GpuBody, Span, StepGate, StepParams};
use crate::error::{Error, Result};
use crate::gpu::data::{Monitor, Params, Partial, Reduce, SLOT_RESIDUAL};
use crate::gpu::kernels::{
    Kernel, MAX_WORKGROUPS, MEASURE, REDUCE, RESIDUAL, STEP_CONTACT_ROWS, STEP_GATE, STEP_GATHER,
    STEP_GRID, STEP_INTEGRATE, STEP_JACOBI, STEP_KEEP, STEP_LINK_KEYS, STEP_NARROW, STEP_SCAN_ADD,
    STEP_SCAN_LOCAL, STEP_SCAN_TOTALS, STEP_SOLVER_PARAMS, STEP_SORT_COUNT, STEP_SORT_SCATTER,
    STEP_SORT_SEGMENTS, STEP_STATS, STEP_WARM_START, WORKGROUP,
};

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
    /// One block per contact.
    pub blocks: Buf,
    /// `r = J v_free + b`.
    pub r: Buf,
    /// The warm-started impulses of the step.
    pub gamma: Buf,
    /// The ring of [`StatsSlot`]s.
    pub ring: Buf,
    /// Where the step's iterations stand ([`StepGate`]).
    pub gate: Buf,
    /// The last step's offsets, contacts and impulses, for the warm start (a step whose
    /// contacts overflowed keeps the one before).
    pub prev_offsets: Buf,
    /// See [`Named::prev_offsets`].
    pub prev_contacts: Buf,
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

/// [`dispatch`] through the indirect arguments at byte `offset` of `args`.
fn gated(kernel: &'static Kernel, buffers: &[Buf], items: u32, args: Buf, offset: u64) -> Op {
    op(kernel, buffers, items, Some((args, offset)))
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

impl Schedule {
    /// The schedule of `params` with the initial sphere state `bodies`: up to
    /// `params.max_iter` projected Jacobi iterations per step (warm-started from the
    /// previous step's impulses by contact key when `warm_start`), stopped on the GPU when a
    /// check every [`CHECK_EVERY`] iterations meets the tolerance, then the residual of the
    /// answer, integration and statistics, recorded into a ring of `ring` [`StatsSlot`]s.
    /// `limit` is the device's `max_storage_buffer_binding_size`.
    pub fn new(
        params: &StepParams,
        bodies: &[GpuBody],
        warm_start: bool,
        ring: u32,
        limit: u64,
    ) -> Result<Self> {
        let iterations = params.max_iter as usize;
        let n = params.n_bodies;
        let capacity = params.capacity;
        let most = u64::from(MAX_WORKGROUPS) * u64::from(WORKGROUP);
        for (what, items) in [
            ("link entries (2 per contact)", 2 * u64::from(capacity)),
            ("spheres", u64::from(n) + 1),
            ("grid buckets", u64::from(params.mask) + 1),
        ] {
            if items > most {
                return Err(Error::Gpu(format!(
                    "{items} {what} exceed one dispatch of the time step's kernels \
                     ({MAX_WORKGROUPS} workgroups of {WORKGROUP} invocations = {most})"
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
            bodies: b.filled("bodies", bytemuck::cast_slice(bodies).to_vec())?,
            planes: b.storage("planes", 48 * u64::from(params.n_planes))?,
            offsets: b.storage("offsets", 4 * (n64 + 1))?,
            contacts: b.storage("contacts", 32 * cap)?,
            blocks: b.storage("blocks", 32 * cap)?,
            r: b.storage("r", 4 * rows)?,
            gamma: b.storage("gamma0", 4 * rows)?,
            ring: b.storage("stats_ring", SLOT_BYTES * u64::from(ring))?,
            gate: b.storage("gate", 16)?,
            prev_offsets: b.storage("prev_offsets", 4 * (n64 + 1))?,
            prev_contacts: b.storage("prev_contacts", 32 * cap)?,
            prev_gamma: b.storage("prev_gamma", 4 * rows)?,
        };
        let gamma = [named.gamma, b.storage("gamma1", 4 * rows)?];
        let cells = b.storage("cells", 16 * n64)?;
        let grid_keys = b.storage("grid_keys", 4 * n64)?;
        let counts = b.storage("contact_counts", 4 * n64)?;
        let consts = b.storage("sphere_consts", 8 * n64)?;
        let link_keys = b.storage("link_keys", 8 * cap)?;
        let solver_storage = b.storage("solver_params", 32)?;
        let solver = b.uniform("solver_params", &<Params as bytemuck::Zeroable>::zeroed());
        let u = b.storage("u", 4 * rows)?;
        let w = b.storage("w", 24 * n64)?;
        let groups = n.max(capacity).div_ceil(WORKGROUP);
        let parts = b.storage("parts", 32 * u64::from(groups))?;
        let scalars = b.storage("scalars", 32 * u64::from(SLOT_RESIDUAL + 1))?;
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
                named.blocks,
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
                    named.blocks,
                    named.prev_offsets,
                    named.prev_contacts,
                    named.prev_gamma,
                    gamma[0],
                ],
                capacity,
            )
        } else {
            Op::Clear(gamma[0])
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
        detect.push(dispatch(
            &STEP_SOLVER_PARAMS,
            &[step_params, named.offsets, solver_storage],
            1,
        ));
        detect.push(copy(solver_storage, solver, 32));

        // The solve: projected Jacobi (the method of `jacobi-gpu`) on the sphere rows without
        // stored blocks (`step_gather`, `step_jacobi`), ping-pong impulses.
        // The iterations' dispatches read their workgroup counts from `args` (bodies,
        // blocks, one workgroup), reset before each step; the gate zeroes them when a check
        // finds the tolerance met.
        let full = [
            STEP_GATHER.workgroups(n),
            1,
            1,
            STEP_JACOBI.workgroups(capacity),
            1,
            1,
            1,
            1,
            1,
        ];
        let args_full = b.filled("args_full", bytemuck::cast_slice(&full).to_vec())?;
        let args = b.storage("args", 36)?;
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
        let residual_reduce = b.uniform(
            "reduce",
            &Reduce {
                count: capacity.div_ceil(WORKGROUP),
                slot: SLOT_RESIDUAL,
                pad: [0; 2],
            },
        );
        let (bodies_args, blocks_args, single_args) = (0, 12, 24);
        // `w = M⁻¹ Jᵀ x`, then `u = J w + E x + r` of `x` and the next iterate `to`, through
        // the indirect arguments when gated.
        let gather = |x: Buf, gate: Option<u64>| {
            op(
                &STEP_GATHER,
                &[
                    step_params,
                    link_starts,
                    link_sorted,
                    named.contacts,
                    consts,
                    x,
                    w,
                ],
                n,
                gate.map(|at| (args, at)),
            )
        };
        let jacobi = |x: Buf, to: Buf, gate: Option<u64>| {
            op(
                &STEP_JACOBI,
                &[solver, step_params, named.contacts, w, named.r, x, u, to],
                capacity,
                gate.map(|at| (args, at)),
            )
        };
        let mut solve = vec![copy(args_full, args, 36), copy(gate_init, gate, 16)];
        for k in 0..iterations {
            let (from, to) = (gamma[k % 2], gamma[1 - k % 2]);
            solve.push(gather(from, Some(bodies_args)));
            solve.push(jacobi(from, to, Some(blocks_args)));
            if k > 0 && (iterations - k) % CHECK_EVERY == 0 {
                // The residual of γ_k (`from`, with its `u`): the gate stops here when it
                // meets the tolerance, leaving γ_k where the last iterate lands (k has the
                // parity of `iterations`; `to` is not read again).
                solve.push(Op::Clear(parts));
                solve.push(gated(
                    &RESIDUAL,
                    &[solver, named.blocks, from, u, parts],
                    capacity,
                    args,
                    blocks_args,
                ));
                solve.push(gated(
                    &REDUCE,
                    &[residual_reduce, parts, scalars],
                    1,
                    args,
                    single_args,
                ));
                // The gate reads only the measure's `value` (the monitor is cleared once,
                // before the answer's measure): no clear here, no split of the pass.
                solve.push(gated(
                    &MEASURE,
                    &[solver, scalars, monitor],
                    1,
                    args,
                    single_args,
                ));
                let at = b.span(k as u32, 0, 0);
                solve.push(dispatch(
                    &STEP_GATE,
                    &[step_params, at, monitor, gate, args],
                    1,
                ));
            }
        }
        // The answer's velocity `u` and natural-map residual (the monitor), then the
        // velocity update from `w = M⁻¹ Jᵀ γ` of the same gather (the step it also takes
        // lands in the other buffer, not read again).
        let last = gamma[iterations % 2];
        solve.push(gather(last, None));
        solve.push(jacobi(last, gamma[1 - iterations % 2], None));
        // The residual's workgroups cover the room; those past the contacts write zero
        // partials on the device and none in the mirror: start from zeros.
        solve.push(Op::Clear(parts));
        solve.push(dispatch(
            &RESIDUAL,
            &[solver, named.blocks, last, u, parts],
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
        let stats_reduce = b.uniform(
            "reduce",
            &Reduce {
                count: n.div_ceil(WORKGROUP),
                slot: 0,
                pad: [0; 2],
            },
        );
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
                last,
                named.prev_offsets,
                named.prev_contacts,
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
        })
    }

    /// Bytes of all the buffers: the device memory of the step.
    pub fn bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.bytes).sum()
    }
}
