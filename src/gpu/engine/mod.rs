//! What the three GPU solvers share: the problem's buffers ([`buffers`]), products with
//! `N + E` in either form, reductions into scalar slots, the residual with the best-iterate
//! bookkeeping, the dispatch machinery ([`bind`]) and readbacks ([`readback`], counted).
//!
//! A solver is a fixed schedule of [`Step`]s (one dispatch each) recorded for many
//! iterations per command buffer; the host reads back a [`Monitor`] (a few scalars) after
//! each submission and the impulses once at the end.

mod bind;
mod buffers;
mod readback;

pub use bind::dispatch_once;
pub(crate) use bind::{Step, record, record_timed};
pub(crate) use buffers::{create, usage};
pub(crate) use readback::Staging;

use buffers::{MONITOR_BYTES, Shape, Shared};

use super::context::GpuContext;
use super::data::{Monitor, ProblemData, Reduce, SLOT_RESIDUAL};
use super::kernels::{
    Access, COPY_IF, CSR_ROWS, Domain, FACTORED_BODIES, FACTORED_ROWS, Kernel, MEASURE, REDUCE,
    RESIDUAL, WORKGROUP,
};
use crate::error::{Error, Result};

/// Counters of the host–GPU traffic of a solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuStats {
    /// Command buffers of iterations submitted.
    pub submissions: usize,
    /// Buffers read back to the host.
    pub readbacks: usize,
    /// Whether the solve reused the buffers and kernels of the previous one (same sizes):
    /// only the data was uploaded again.
    pub reused: bool,
}

/// The shared buffers and machinery of a solve on one device.
pub(crate) struct Engine {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// `max_storage_buffer_binding_size` of the device.
    limit: u64,
    /// The sizes of the uploaded problem.
    shape: Shape,
    /// The sizes the buffers hold (the dispatches cover them; the kernels skip the items
    /// past the problem's counts in [`Params`](super::data::Params)).
    capacity: Shape,
    shared: Shared,
    /// Where the monitors and vectors read back land.
    staging: Staging,
    pub(crate) stats: GpuStats,
}

impl Engine {
    /// Creates the buffers of `data`, with `room` times its sizes (at least 1: later
    /// problems up to that size reuse them, [`Engine::fits`]), and uploads it. A buffer larger
    /// than one storage binding, or a domain past `u32` indices, is an [`Error::Gpu`] naming
    /// the limit.
    pub(crate) fn new(ctx: &GpuContext, data: &ProblemData, room: f64) -> Result<Self> {
        let device = ctx.device.clone();
        let limit = device.limits().max_storage_buffer_binding_size;
        let shape = Shape::of(data);
        // A dispatch's grid is two-dimensional past `MAX_WORKGROUPS` workgroups: what bounds
        // a domain is its `u32` indices.
        let most = u64::from(u32::MAX);
        let mut capacity = shape.grown(room);
        for (what, n) in [
            ("body components (6 per body)", 6 * u64::from(shape.bodies)),
            ("blocks", u64::from(shape.blocks)),
            ("rows", u64::from(shape.rows)),
        ] {
            if n > most {
                return Err(Error::Gpu(format!(
                    "{n} {what} exceed the GPU kernels' u32 indices ({most} at most)"
                )));
            }
        }
        // The room never takes a domain past the indices.
        capacity.bodies = capacity.bodies.min((most / 6) as u32).max(shape.bodies);
        let staging = Staging::new(
            &device,
            (4 * u64::from(capacity.rows)).max(2 * MONITOR_BYTES),
        );
        let mut engine = Engine {
            shared: Shared::new(&device, &ctx.queue, data, &capacity, limit)?,
            shape,
            capacity,
            staging,
            limit,
            device,
            queue: ctx.queue.clone(),
            stats: GpuStats::default(),
        };
        engine.upload(data);
        Ok(engine)
    }

    /// Whether the buffers hold a problem of `data`'s sizes (then [`Engine::upload`] may
    /// replace the problem without new buffers) and the dispatches over them are not more
    /// than twice what it needs.
    pub(crate) fn fits(&self, data: &ProblemData) -> bool {
        let need = Shape::of(data);
        self.capacity.holds(&need) && self.capacity.rows <= 2 * need.rows.max(1)
    }

    /// Writes the arrays of `data` (of a shape that [`Engine::fits`]) and resets the monitor.
    pub(crate) fn upload(&mut self, data: &ProblemData) {
        self.shared.upload(&self.queue, data);
        self.shape = Shape::of(data);
    }

    /// Number of rows of the uploaded problem.
    pub(crate) fn rows(&self) -> usize {
        self.shape.rows as usize
    }

    /// A new row vector (`f32`, one entry per row the buffers hold) named `label`.
    pub(crate) fn vector(&self, label: &str) -> Result<wgpu::Buffer> {
        buffers::storage(
            &self.device,
            label,
            4 * self.capacity.rows as usize,
            self.limit,
        )
    }

    /// A new buffer bound with `access` holding `value` (a solver's scalar state or
    /// configuration).
    pub(crate) fn buffer(&self, label: &str, access: Access, value: &[u8]) -> wgpu::Buffer {
        let buffer = create(&self.device, label, value.len() as u64, usage(access));
        self.write(&buffer, value);
        buffer
    }

    /// Queues a write of `bytes` at the start of `buffer`.
    pub(crate) fn write(&self, buffer: &wgpu::Buffer, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.queue.write_buffer(buffer, 0, bytes);
        }
    }

    /// One dispatch of `kernel`. Its bindings are taken by name from `own` (the solver's
    /// vectors and state) or else from the shared buffers (`params`, `blocks`, `r`, the
    /// operator's, ...).
    pub(crate) fn step(
        &self,
        ctx: &GpuContext,
        kernel: &Kernel,
        own: &[(&str, &wgpu::Buffer)],
    ) -> Result<Step> {
        let buffers = kernel
            .bindings
            .iter()
            .map(|binding| {
                own.iter()
                    .find(|(n, _)| *n == binding.name)
                    .map(|(_, b)| *b)
                    .or_else(|| self.shared.get(binding.name))
                    .ok_or_else(|| {
                        Error::Gpu(format!(
                            "kernel `{}`: no buffer for `{}`",
                            kernel.name, binding.name
                        ))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let items = match kernel.domain {
            Domain::BodyComponents => 6 * self.capacity.bodies,
            Domain::Blocks => self.capacity.blocks,
            Domain::Rows => self.capacity.rows,
            Domain::Single => 1,
            Domain::Items => {
                return Err(Error::Gpu(format!(
                    "kernel `{}` belongs to the time step, not to a solver",
                    kernel.name
                )));
            }
        };
        Step::new(ctx, kernel, &buffers, items)
    }

    /// `y = (N + E) x`, plus `r` when `add_r`: two dispatches on the factored form, one on
    /// the assembled form.
    pub(crate) fn apply(
        &self,
        ctx: &GpuContext,
        x: &wgpu::Buffer,
        y: &wgpu::Buffer,
        add_r: bool,
    ) -> Result<Vec<Step>> {
        let apply = &self.shared.apply[usize::from(add_r)];
        let own = [("x", x), ("y", y), ("apply", apply)];
        let kernels: &[&Kernel] = if self.shared.w().is_some() {
            &[&FACTORED_BODIES, &FACTORED_ROWS]
        } else {
            &[&CSR_ROWS]
        };
        kernels.iter().map(|k| self.step(ctx, k, &own)).collect()
    }

    /// Reduces the partials of a `domain`-wide kernel into `scalars[slot]`.
    pub(crate) fn reduce(&self, ctx: &GpuContext, domain: Domain, slot: u32) -> Result<Step> {
        let items = match domain {
            Domain::Blocks => self.capacity.blocks,
            _ => self.capacity.rows,
        };
        let cfg = Reduce {
            count: items.div_ceil(WORKGROUP),
            slot,
            pad: [0; 2],
        };
        let cfg = self.buffer("reduce", Access::Uniform, bytemuck::bytes_of(&cfg));
        self.step(ctx, &REDUCE, &[("cfg", &cfg)])
    }

    /// The residual of `gamma` with velocity `u` into the monitor, and `best = gamma` when it
    /// improved: four dispatches.
    pub(crate) fn measure(
        &self,
        ctx: &GpuContext,
        gamma: &wgpu::Buffer,
        u: &wgpu::Buffer,
        best: &wgpu::Buffer,
    ) -> Result<Vec<Step>> {
        Ok(vec![
            self.step(ctx, &RESIDUAL, &[("gamma", gamma), ("u", u)])?,
            self.reduce(ctx, Domain::Blocks, SLOT_RESIDUAL)?,
            self.step(ctx, &MEASURE, &[])?,
            self.step(ctx, &COPY_IF, &[("src", gamma), ("dst", best)])?,
        ])
    }

    /// A command encoder.
    pub(crate) fn encoder(&self) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default())
    }

    /// Records a copy of the monitor for the next [`Engine::read_monitors`].
    pub(crate) fn record_monitor(&mut self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        self.staging
            .copy(&self.device, encoder, &self.shared.monitor, MONITOR_BYTES)
    }

    /// Submits `encoder` (one submission).
    pub(crate) fn submit(&mut self, encoder: wgpu::CommandEncoder) {
        self.queue.submit([encoder.finish()]);
        self.stats.submissions += 1;
    }

    /// Blocks until the submitted work is done.
    pub(crate) fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| Error::Gpu(format!("waiting for the device failed: {e}")))
    }

    /// Reads back the monitors recorded by [`Engine::record_monitor`] since the last
    /// readback, in order (one readback).
    pub(crate) fn read_monitors(&mut self) -> Result<Vec<Monitor>> {
        self.stats.readbacks += 1;
        Ok(self
            .staging
            .read(&self.device)?
            .iter()
            .map(|bytes| bytemuck::pod_read_unaligned(bytes))
            .collect())
    }

    /// Reads the first `len` floats of `buffer` back (one readback).
    pub(crate) fn read(&mut self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        self.stats.readbacks += 1;
        let mut encoder = self.encoder();
        self.staging
            .copy(&self.device, &mut encoder, buffer, 4 * len as u64)?;
        self.queue.submit([encoder.finish()]);
        let bytes = self.staging.read(&self.device)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes[0]))
    }

    /// `w = M⁻¹ Jᵀ x` of the last factored product (6 per body; none when assembled).
    pub(crate) fn w(&self) -> Option<&wgpu::Buffer> {
        self.shared.w()
    }

    /// Number of dynamic bodies.
    pub(crate) fn bodies(&self) -> usize {
        self.shape.bodies as usize
    }
}
