//! What the three GPU solvers share: the problem's buffers, products with `N + E` in either
//! form, reductions into scalar slots, the residual with the best-iterate bookkeeping, and
//! readbacks (counted).
//!
//! A solver is a fixed schedule of [`Step`]s (one dispatch each) recorded for many
//! iterations per command buffer; the host reads back a [`Monitor`] (a few scalars) after
//! each submission and the impulses once at the end.

use super::context::GpuContext;
use super::data::{
    Apply, Monitor, OperatorData, Params, Partial, ProblemData, Reduce, SLOT_RESIDUAL, SLOTS,
};
use super::kernels::{
    Access, COPY_IF, CSR_ROWS, Domain, FACTORED_BODIES, FACTORED_ROWS, Kernel, MAX_WORKGROUPS,
    MEASURE, REDUCE, RESIDUAL, WORKGROUP,
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

/// One dispatch: a kernel with its bind group.
pub(crate) struct Step {
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
    workgroups: u32,
    /// Bytes of the storage buffers it binds: what one dispatch moves at least, when the
    /// kernel reads (or writes) each of them once.
    bytes: u64,
}

/// The operator's buffers.
enum OpBuffers {
    Factored {
        links_ptr: wgpu::Buffer,
        links: wgpu::Buffer,
        jac: wgpu::Buffer,
        minv_jac: wgpu::Buffer,
        /// `w = M⁻¹ Jᵀ x` of the last product, 6 per body.
        w: wgpu::Buffer,
    },
    Csr {
        indptr: wgpu::Buffer,
        indices: wgpu::Buffer,
        values: wgpu::Buffer,
    },
}

/// The lengths of every array of a problem: two problems of the same shape share buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    bodies: u32,
    blocks: u32,
    rows: u32,
    factored: bool,
    op: [usize; 4],
}

fn shape(data: &ProblemData) -> Shape {
    let op = match &data.op {
        OperatorData::Factored {
            links_ptr,
            links,
            jac,
            minv_jac,
        } => [links_ptr.len(), links.len(), jac.len(), minv_jac.len()],
        OperatorData::Csr {
            indptr,
            indices,
            values,
        } => [indptr.len(), indices.len(), values.len(), 0],
    };
    Shape {
        bodies: data.params.n_bodies,
        blocks: data.params.n_blocks,
        rows: data.params.n_rows,
        factored: matches!(data.op, OperatorData::Factored { .. }),
        op,
    }
}

/// The shared buffers and machinery of a solve on one device.
pub(crate) struct Engine {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// `max_storage_buffer_binding_size` of the device.
    limit: u64,
    shape: Shape,
    params: wgpu::Buffer,
    blocks: wgpu::Buffer,
    r: wgpu::Buffer,
    compliance: wgpu::Buffer,
    precond: wgpu::Buffer,
    op: OpBuffers,
    /// `Apply { add_r: 0 }` and `Apply { add_r: 1 }`.
    apply: [wgpu::Buffer; 2],
    /// Workgroup partials of the last reduction.
    parts: wgpu::Buffer,
    /// [`SLOTS`] reduced [`Partial`]s.
    scalars: wgpu::Buffer,
    monitor: wgpu::Buffer,
    /// Room for two [`Monitor`]s (the initial measure and the chunk's).
    monitor_staging: wgpu::Buffer,
    /// Room for one row vector.
    staging: wgpu::Buffer,
    pub(crate) stats: GpuStats,
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// A buffer of `bytes` bytes named `label` must fit one storage binding of `limit` bytes
/// (`max_storage_buffer_binding_size`).
pub(crate) fn check_binding(label: &str, bytes: u64, limit: u64) -> Result<()> {
    if bytes > limit {
        return Err(Error::Gpu(format!(
            "the buffer `{label}` needs {bytes} bytes, more than one storage binding holds on \
             this device (max_storage_buffer_binding_size = {limit} bytes): the problem is too \
             large for the GPU solvers"
        )));
    }
    Ok(())
}

const MONITOR_BYTES: u64 = std::mem::size_of::<Monitor>() as u64;

impl Engine {
    /// Creates the buffers of `data` (not yet filled: see [`Engine::upload`]). A buffer
    /// larger than one storage binding, or a domain larger than one dispatch, is an
    /// [`Error::Gpu`] naming the limit.
    pub(crate) fn new(ctx: &GpuContext, data: &ProblemData) -> Result<Self> {
        let device = ctx.device.clone();
        let limit = device.limits().max_storage_buffer_binding_size;
        let p = &data.params;
        let most = u64::from(MAX_WORKGROUPS) * u64::from(WORKGROUP);
        for (what, n) in [
            ("body components (6 per body)", 6 * u64::from(p.n_bodies)),
            ("blocks", u64::from(p.n_blocks)),
            ("rows", u64::from(p.n_rows)),
        ] {
            if n > most {
                return Err(Error::Gpu(format!(
                    "{n} {what} exceed one dispatch of the GPU kernels ({MAX_WORKGROUPS} \
                     workgroups of {WORKGROUP} invocations = {most})"
                )));
            }
        }
        let storage = |label: &str, bytes: usize| -> Result<wgpu::Buffer> {
            let bytes = bytes.max(4) as u64;
            check_binding(label, bytes, limit)?;
            Ok(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.next_multiple_of(4),
                usage: STORAGE,
                mapped_at_creation: false,
            }))
        };
        let uniform = |label: &str, bytes: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let rows = 4 * p.n_rows as usize;
        let op = match &data.op {
            OperatorData::Factored {
                links_ptr,
                links,
                jac,
                minv_jac,
            } => OpBuffers::Factored {
                links_ptr: storage("links_ptr", 4 * links_ptr.len())?,
                links: storage("links", std::mem::size_of_val(links.as_slice()))?,
                jac: storage("jac", 4 * jac.len())?,
                minv_jac: storage("minv_jac", 4 * minv_jac.len())?,
                w: storage("w", 24 * p.n_bodies as usize)?,
            },
            OperatorData::Csr {
                indptr,
                indices,
                values,
            } => OpBuffers::Csr {
                indptr: storage("indptr", 4 * indptr.len())?,
                indices: storage("indices", 4 * indices.len())?,
                values: storage("values", 4 * values.len())?,
            },
        };
        let partial = std::mem::size_of::<Partial>();
        let groups = p.n_rows.max(p.n_blocks).div_ceil(WORKGROUP) as usize;
        let apply = [0, 1].map(|add_r| {
            let buffer = uniform("apply", std::mem::size_of::<Apply>() as u64);
            ctx.queue.write_buffer(
                &buffer,
                0,
                bytemuck::bytes_of(&Apply { add_r, pad: [0; 3] }),
            );
            buffer
        });
        let engine = Engine {
            limit,
            shape: shape(data),
            params: uniform("params", std::mem::size_of::<Params>() as u64),
            blocks: storage("blocks", std::mem::size_of_val(data.blocks.as_slice()))?,
            r: storage("r", rows)?,
            compliance: storage("compliance", rows)?,
            precond: storage("precond", rows)?,
            op,
            apply,
            parts: storage("parts", partial * groups)?,
            scalars: storage("scalars", partial * SLOTS)?,
            monitor: storage("monitor", MONITOR_BYTES as usize)?,
            monitor_staging: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("monitor staging"),
                size: 2 * MONITOR_BYTES,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            staging: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: rows.max(4) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            device,
            queue: ctx.queue.clone(),
            stats: GpuStats::default(),
        };
        engine.upload(data);
        Ok(engine)
    }

    /// Whether `data` has the sizes of the uploaded problem (then [`Engine::upload`] may
    /// replace it without new buffers).
    pub(crate) fn fits(&self, data: &ProblemData) -> bool {
        self.shape == shape(data)
    }

    /// Writes the arrays of `data` (of the same shape) and resets the monitor.
    pub(crate) fn upload(&self, data: &ProblemData) {
        let write = |buffer: &wgpu::Buffer, bytes: &[u8]| {
            if !bytes.is_empty() {
                self.queue.write_buffer(buffer, 0, bytes);
            }
        };
        let cast = bytemuck::cast_slice::<f32, u8>;
        write(&self.params, bytemuck::bytes_of(&data.params));
        write(&self.blocks, bytemuck::cast_slice(&data.blocks));
        write(&self.r, cast(&data.r));
        write(&self.compliance, cast(&data.compliance));
        write(&self.precond, cast(&data.precond));
        match (&self.op, &data.op) {
            (
                OpBuffers::Factored {
                    links_ptr,
                    links,
                    jac,
                    minv_jac,
                    ..
                },
                OperatorData::Factored {
                    links_ptr: lp,
                    links: l,
                    jac: j,
                    minv_jac: mj,
                },
            ) => {
                write(links_ptr, bytemuck::cast_slice(lp));
                write(links, bytemuck::cast_slice(l));
                write(jac, cast(j));
                write(minv_jac, cast(mj));
            }
            (
                OpBuffers::Csr {
                    indptr,
                    indices,
                    values,
                },
                OperatorData::Csr {
                    indptr: ip,
                    indices: ix,
                    values: v,
                },
            ) => {
                write(indptr, bytemuck::cast_slice(ip));
                write(indices, bytemuck::cast_slice(ix));
                write(values, cast(v));
            }
            _ => unreachable!("upload of a problem of another shape"),
        }
        write(&self.monitor, bytemuck::bytes_of(&Monitor::default()));
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.shape.rows as usize
    }

    /// A new row vector (`f32`, one entry per row) named `label`.
    pub(crate) fn vector(&self, label: &str) -> Result<wgpu::Buffer> {
        let bytes = (4 * self.rows()).max(4) as u64;
        check_binding(label, bytes, self.limit)?;
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: STORAGE,
            mapped_at_creation: false,
        }))
    }

    /// A small storage buffer holding `value` (a solver's scalar state).
    pub(crate) fn scalar_buffer(&self, label: &str, value: &[u8]) -> wgpu::Buffer {
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: value.len() as u64,
            usage: STORAGE,
            mapped_at_creation: false,
        });
        self.write(&buffer, value);
        buffer
    }

    /// A uniform buffer holding `value`.
    pub(crate) fn uniform_buffer(&self, label: &str, value: &[u8]) -> wgpu::Buffer {
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: value.len() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.write(&buffer, value);
        buffer
    }

    /// Queues a write of `bytes` at the start of `buffer`.
    pub(crate) fn write(&self, buffer: &wgpu::Buffer, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.queue.write_buffer(buffer, 0, bytes);
        }
    }

    /// The shared buffers a kernel may bind by name.
    fn shared(&self, name: &str) -> Option<&wgpu::Buffer> {
        Some(match name {
            "params" => &self.params,
            "blocks" => &self.blocks,
            "r" => &self.r,
            "compliance" => &self.compliance,
            "precond" => &self.precond,
            "parts" => &self.parts,
            "scalars" => &self.scalars,
            "monitor" => &self.monitor,
            _ => match (&self.op, name) {
                (OpBuffers::Factored { links_ptr, .. }, "links_ptr") => links_ptr,
                (OpBuffers::Factored { links, .. }, "links") => links,
                (OpBuffers::Factored { jac, .. }, "jac") => jac,
                (OpBuffers::Factored { minv_jac, .. }, "minv_jac") => minv_jac,
                (OpBuffers::Factored { w, .. }, "w") => w,
                (OpBuffers::Csr { indptr, .. }, "indptr") => indptr,
                (OpBuffers::Csr { indices, .. }, "indices") => indices,
                (OpBuffers::Csr { values, .. }, "values") => values,
                _ => return None,
            },
        })
    }

    /// One dispatch of `kernel`. Its bindings are taken by name from the shared buffers
    /// (`params`, `blocks`, `r`, the operator's, ...) or from `own` (the solver's vectors
    /// and state, matched by binding name).
    pub(crate) fn step(
        &self,
        ctx: &GpuContext,
        kernel: &Kernel,
        own: &[(&str, &wgpu::Buffer)],
    ) -> Result<Step> {
        let buffers = kernel
            .bindings
            .iter()
            .map(|(name, _)| {
                own.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, b)| *b)
                    .or_else(|| self.shared(name))
                    .ok_or_else(|| {
                        Error::Gpu(format!("kernel `{}`: no buffer for `{name}`", kernel.name))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(self.bind(ctx, kernel, &buffers))
    }

    fn bind(&self, ctx: &GpuContext, kernel: &Kernel, buffers: &[&wgpu::Buffer]) -> Step {
        let pipeline = ctx.pipeline(kernel.name, &kernel.source());
        let entries: Vec<_> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(kernel.name),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let bytes = kernel
            .bindings
            .iter()
            .zip(buffers)
            .filter(|((_, access), _)| *access != Access::Uniform)
            .map(|(_, b)| b.size())
            .sum();
        let items = match kernel.domain {
            Domain::BodyComponents => 6 * self.shape.bodies,
            Domain::Blocks => self.shape.blocks,
            Domain::Rows => self.shape.rows,
            Domain::Single => 1,
        };
        Step {
            pipeline,
            group,
            workgroups: kernel.workgroups(items),
            bytes,
        }
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
        let apply = &self.apply[usize::from(add_r)];
        let own = [("x", x), ("y", y), ("apply", apply)];
        Ok(match self.op {
            OpBuffers::Factored { .. } => vec![
                self.step(ctx, &FACTORED_BODIES, &own)?,
                self.step(ctx, &FACTORED_ROWS, &own)?,
            ],
            OpBuffers::Csr { .. } => vec![self.step(ctx, &CSR_ROWS, &own)?],
        })
    }

    /// Reduces the partials of a `domain`-wide kernel into `scalars[slot]`.
    pub(crate) fn reduce(&self, ctx: &GpuContext, domain: Domain, slot: u32) -> Result<Step> {
        let items = match domain {
            Domain::Blocks => self.shape.blocks,
            _ => self.shape.rows,
        };
        let cfg = Reduce {
            count: items.div_ceil(WORKGROUP),
            slot,
            pad: [0; 2],
        };
        let cfg = self.uniform_buffer("reduce", bytemuck::bytes_of(&cfg));
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

    /// Records `steps` in order in one compute pass.
    pub(crate) fn record<'s>(
        encoder: &mut wgpu::CommandEncoder,
        steps: impl IntoIterator<Item = &'s Step>,
    ) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        for step in steps {
            if step.workgroups > 0 {
                pass.set_pipeline(&step.pipeline);
                pass.set_bind_group(0, &step.group, &[]);
                pass.dispatch_workgroups(step.workgroups, 1, 1);
            }
        }
    }

    /// Records a copy of the monitor into slot `slot` (0 or 1) of the monitor staging
    /// buffer.
    pub(crate) fn record_monitor(&self, encoder: &mut wgpu::CommandEncoder, slot: u64) {
        encoder.copy_buffer_to_buffer(
            &self.monitor,
            0,
            &self.monitor_staging,
            slot * MONITOR_BYTES,
            MONITOR_BYTES,
        );
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

    /// Maps `size` bytes of `staging` and returns them (one readback).
    fn map(&mut self, staging: &wgpu::Buffer, size: u64) -> Result<Vec<u8>> {
        self.stats.readbacks += 1;
        let slice = staging.slice(..size);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let gpu = |e: &dyn std::fmt::Display| Error::Gpu(format!("readback failed: {e}"));
        self.wait()?;
        rx.recv().map_err(|e| gpu(&e))?.map_err(|e| gpu(&e))?;
        let out = slice.get_mapped_range().map_err(|e| gpu(&e))?.to_vec();
        staging.unmap();
        Ok(out)
    }

    /// Reads back the first `count` (1 or 2) monitors recorded by
    /// [`Engine::record_monitor`] (one readback).
    pub(crate) fn read_monitors(&mut self, count: u64) -> Result<Vec<Monitor>> {
        let staging = self.monitor_staging.clone();
        let bytes = self.map(&staging, count * MONITOR_BYTES)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Reads a row vector back (one readback).
    pub(crate) fn read_vector(&mut self, buffer: &wgpu::Buffer) -> Result<Vec<f32>> {
        self.read(buffer, self.rows())
    }

    /// Reads the first `len` floats of `buffer` back (one readback).
    pub(crate) fn read(&mut self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        if len == 0 {
            self.stats.readbacks += 1;
            return Ok(Vec::new());
        }
        let size = 4 * len as u64;
        if size > self.staging.size() {
            self.staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
        }
        let mut encoder = self.encoder();
        encoder.copy_buffer_to_buffer(buffer, 0, &self.staging, 0, size);
        self.queue.submit([encoder.finish()]);
        let staging = self.staging.clone();
        Ok(bytemuck::pod_collect_to_vec(&self.map(&staging, size)?))
    }

    /// `w = M⁻¹ Jᵀ x` of the last factored product (6 per body; empty when assembled).
    pub(crate) fn w(&self) -> Option<&wgpu::Buffer> {
        match &self.op {
            OpBuffers::Factored { w, .. } => Some(w),
            OpBuffers::Csr { .. } => None,
        }
    }

    /// Number of dynamic bodies.
    pub(crate) fn bodies(&self) -> usize {
        self.shape.bodies as usize
    }
}

impl Step {
    /// Bytes of the storage buffers it binds.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Runs one dispatch of `kernel` over `items` invocations of its domain with the given
/// binding contents (in binding order) and returns the contents of every binding after it,
/// for the parity tests against the mirrors of [`super::cpu`].
pub fn dispatch_once(
    ctx: &GpuContext,
    kernel: &Kernel,
    items: u32,
    contents: &[&[u8]],
) -> Result<Vec<Vec<u8>>> {
    if contents.len() != kernel.bindings.len() {
        return Err(Error::Gpu(format!(
            "kernel `{}` has {} bindings, {} given",
            kernel.name,
            kernel.bindings.len(),
            contents.len()
        )));
    }
    let device = &ctx.device;
    let buffers: Vec<wgpu::Buffer> = kernel
        .bindings
        .iter()
        .zip(contents)
        .map(|((name, access), bytes)| {
            let usage = match access {
                Access::Uniform => wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                _ => STORAGE,
            };
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(name),
                size: (bytes.len().max(4) as u64).next_multiple_of(16),
                usage,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&buffer, 0, bytes);
            buffer
        })
        .collect();
    let pipeline = ctx.pipeline(kernel.name, &kernel.source());
    let entries: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(kernel.name),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(kernel.workgroups(items), 1, 1);
    }
    let total: u64 = buffers.iter().map(wgpu::Buffer::size).sum();
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging"),
        size: total,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut offset = 0;
    for (b, (_, access)) in buffers.iter().zip(kernel.bindings) {
        if *access != Access::Uniform {
            encoder.copy_buffer_to_buffer(b, 0, &staging, offset, b.size());
        }
        offset += b.size();
    }
    ctx.queue.submit([encoder.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    let gpu = |e: &dyn std::fmt::Display| Error::Gpu(format!("dispatch failed: {e}"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| gpu(&e))?;
    rx.recv().map_err(|e| gpu(&e))?.map_err(|e| gpu(&e))?;
    let all = slice.get_mapped_range().map_err(|e| gpu(&e))?.to_vec();
    let mut offset = 0;
    Ok(buffers
        .iter()
        .zip(contents)
        .zip(kernel.bindings)
        .map(|((b, bytes), (_, access))| {
            let out = if *access == Access::Uniform {
                bytes.to_vec()
            } else {
                all[offset as usize..offset as usize + bytes.len()].to_vec()
            };
            offset += b.size();
            out
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_larger_than_a_binding_is_rejected_by_name() {
        assert!(check_binding("jac", 128, 128).is_ok());
        let err = check_binding("jac", 129, 128).unwrap_err().to_string();
        assert!(
            err.contains("`jac` needs 129 bytes")
                && err.contains("max_storage_buffer_binding_size = 128 bytes"),
            "{err}"
        );
    }
}
