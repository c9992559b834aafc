//! Projected Jacobi on the GPU: the kernels with their buffers ([`JacobiKernels`]) and the
//! solver ([`JacobiGpu`]) that drives them and measures the residual in `f64` on the CPU.

use std::sync::{Arc, OnceLock};

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::data::JacobiData;
use crate::error::{Error, Result};
use crate::problem::System;
use crate::problem::merit;
use crate::solver::progress::{Progress, biased_velocity};
use crate::solver::{Report, Settings, Solver, Status};

/// Iterations recorded per command buffer; `γ` is read back (and the residual measured)
/// after each submission only.
pub const READBACK_EVERY: usize = 10;

const BODIES: &str = include_str!("../../shaders/jacobi_bodies.wgsl");
const BLOCKS: &str = include_str!("../../shaders/jacobi_blocks.wgsl");
/// Invocations per workgroup of the body kernel (six per body).
const BODIES_WORKGROUP: u64 = 256;
/// Invocations per workgroup of the block kernel (one per block).
const BLOCKS_WORKGROUP: u64 = 64;

/// Workgroups per grid dimension (WebGPU's `max_compute_workgroups_per_dimension`).
pub(crate) const MAX_GROUPS: u64 = 65_535;

/// A two-dimensional grid of workgroups of `size` invocations covering `threads`
/// invocations (the kernels recover the linear index with `linear_index` of
/// `shaders/common.wgsl`).
pub(crate) fn grid(threads: u64, size: u64) -> (u32, u32) {
    let groups = threads.div_ceil(size).max(1);
    let x = groups.min(MAX_GROUPS);
    (x as u32, groups.div_ceil(x) as u32)
}

/// Counters of the host–GPU traffic of a solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuStats {
    /// Command buffers of iterations submitted.
    pub submissions: usize,
    /// Buffers read back to the host.
    pub readbacks: usize,
}

/// The two projected Jacobi kernels with their buffers uploaded, `γ` in two ping-pong
/// buffers.
pub struct JacobiKernels<'a> {
    ctx: &'a GpuContext,
    bodies: wgpu::ComputePipeline,
    blocks: wgpu::ComputePipeline,
    /// Bind group `i` of the body kernel reads `gamma[i]`.
    bodies_groups: [wgpu::BindGroup; 2],
    /// Bind group `i` of the block kernel reads `gamma[i]` and writes `gamma[1 − i]`.
    blocks_groups: [wgpu::BindGroup; 2],
    gamma: [wgpu::Buffer; 2],
    w: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// Which of the `gamma` buffers holds the current iterate.
    current: usize,
    n_bodies: u32,
    n_blocks: u32,
    rows: usize,
    stats: GpuStats,
}

/// A storage buffer holding `bytes` (at least 4 bytes: empty bindings are not allowed).
fn storage(
    device: &wgpu::Device,
    label: &str,
    bytes: &[u8],
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    let mut contents = bytes.to_vec();
    contents.resize(bytes.len().max(4), 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &contents,
        usage: wgpu::BufferUsages::STORAGE | usage,
    })
}

fn bind_group(
    device: &wgpu::Device,
    pipeline: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

impl<'a> JacobiKernels<'a> {
    /// Compiles the kernels and uploads `data`; the current iterate is `data.gamma`.
    pub fn new(ctx: &'a GpuContext, data: &JacobiData) -> Self {
        let device = &ctx.device;
        let none = wgpu::BufferUsages::empty();
        let copy = wgpu::BufferUsages::COPY_SRC;
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: bytemuck::bytes_of(&data.params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let links_ptr = storage(
            device,
            "links_ptr",
            bytemuck::cast_slice(&data.links_ptr),
            none,
        );
        let links = storage(device, "links", bytemuck::cast_slice(&data.links), none);
        let blocks = storage(device, "blocks", bytemuck::cast_slice(&data.blocks), none);
        let jac = storage(device, "jac", bytemuck::cast_slice(&data.jac), none);
        let minv_jac = storage(
            device,
            "minv_jac",
            bytemuck::cast_slice(&data.minv_jac),
            none,
        );
        let r = storage(device, "r", bytemuck::cast_slice(&data.r), none);
        let compliance = storage(
            device,
            "compliance",
            bytemuck::cast_slice(&data.compliance),
            none,
        );
        let gamma_bytes: &[u8] = bytemuck::cast_slice(&data.gamma);
        let gamma = [
            storage(device, "gamma0", gamma_bytes, copy),
            storage(device, "gamma1", gamma_bytes, copy),
        ];
        let w_len = 6 * data.params.n_bodies as usize;
        let w = storage(device, "w", &vec![0; 4 * w_len], copy);
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("staging"),
            size: (4 * w_len.max(data.gamma.len())).max(4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bodies_pipeline = ctx.pipeline("jacobi_bodies", BODIES);
        let blocks_pipeline = ctx.pipeline("jacobi_blocks", BLOCKS);
        let bodies_groups = [0, 1].map(|i| {
            bind_group(
                device,
                &bodies_pipeline,
                &[&params, &links_ptr, &links, &minv_jac, &gamma[i], &w],
            )
        });
        let blocks_groups = [0, 1].map(|i| {
            bind_group(
                device,
                &blocks_pipeline,
                &[
                    &params,
                    &blocks,
                    &jac,
                    &w,
                    &r,
                    &compliance,
                    &gamma[i],
                    &gamma[1 - i],
                ],
            )
        });
        JacobiKernels {
            ctx,
            bodies: bodies_pipeline,
            blocks: blocks_pipeline,
            bodies_groups,
            blocks_groups,
            gamma,
            w,
            staging,
            current: 0,
            n_bodies: data.params.n_bodies,
            n_blocks: data.params.n_blocks,
            rows: data.gamma.len(),
            stats: GpuStats::default(),
        }
    }

    /// Records `iterations` iterations (two dispatches each) in one command buffer and
    /// submits it; nothing is read back.
    pub fn run(&mut self, iterations: usize) {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for _ in 0..iterations {
                if self.n_bodies > 0 {
                    pass.set_pipeline(&self.bodies);
                    pass.set_bind_group(0, &self.bodies_groups[self.current], &[]);
                    let (x, y) = grid(6 * u64::from(self.n_bodies), BODIES_WORKGROUP);
                    pass.dispatch_workgroups(x, y, 1);
                }
                if self.n_blocks > 0 {
                    pass.set_pipeline(&self.blocks);
                    pass.set_bind_group(0, &self.blocks_groups[self.current], &[]);
                    let (x, y) = grid(u64::from(self.n_blocks), BLOCKS_WORKGROUP);
                    pass.dispatch_workgroups(x, y, 1);
                }
                self.current = 1 - self.current;
            }
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.stats.submissions += 1;
    }

    /// Reads the current iterate `γ` back.
    pub fn read_gamma(&mut self) -> Result<Vec<f32>> {
        let buffer = self.gamma[self.current].clone();
        self.read(&buffer, self.rows)
    }

    /// Reads `w = M⁻¹ Jᵀ γ` of the last body dispatch back (6 entries per body).
    pub fn read_w(&mut self) -> Result<Vec<f32>> {
        let buffer = self.w.clone();
        self.read(&buffer, 6 * self.n_bodies as usize)
    }

    /// Counters of the submissions and readbacks so far.
    pub fn stats(&self) -> GpuStats {
        self.stats
    }

    fn read(&mut self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        self.stats.readbacks += 1;
        if len == 0 {
            return Ok(Vec::new());
        }
        let size = 4 * len as u64;
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &self.staging, 0, size);
        self.ctx.queue.submit([encoder.finish()]);
        let slice = self.staging.slice(..size);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let gpu = |e: &dyn std::fmt::Display| Error::Gpu(format!("readback failed: {e}"));
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu(&e))?;
        rx.recv().map_err(|e| gpu(&e))?.map_err(|e| gpu(&e))?;
        let out = {
            let view = slice.get_mapped_range().map_err(|e| gpu(&e))?;
            bytemuck::pod_collect_to_vec(&view)
        };
        self.staging.unmap();
        Ok(out)
    }
}

/// Projected Jacobi on the GPU in `f32`; registry name `jacobi-gpu`.
///
/// Same iteration as [`crate::solver::Jacobi`] (`ω` default 0.3, `η_k` from the settings'
/// block step rule), on the factored form only for now: an assembled or global problem is an
/// [`Error::Gpu`]. The residual is measured in `f64` on the CPU every [`READBACK_EVERY`]
/// iterations, so the iteration count is a multiple of it (or `max_iter`). The device is
/// opened at the first solve; without an adapter every solve is an [`Error::Gpu`].
#[derive(Debug, Default)]
pub struct JacobiGpu {
    context: OnceLock<std::result::Result<Arc<GpuContext>, String>>,
}

impl JacobiGpu {
    /// A solver on an already opened device.
    pub fn with_context(context: Arc<GpuContext>) -> Self {
        JacobiGpu {
            context: OnceLock::from(Ok(context)),
        }
    }

    /// The device, opened at the first call.
    pub fn context(&self) -> Result<&GpuContext> {
        self.context
            .get_or_init(|| {
                GpuContext::new().map(Arc::new).map_err(|e| match e {
                    Error::Gpu(m) => m,
                    other => other.to_string(),
                })
            })
            .as_deref()
            .map_err(|m| Error::Gpu(format!("jacobi-gpu: {m}")))
    }

    /// [`Solver::solve`] that also returns the host–GPU traffic counters.
    pub fn solve_with_stats(
        &self,
        sys: &System,
        settings: &Settings,
    ) -> Result<(Report, GpuStats)> {
        settings.validate(sys.rows())?;
        let data = JacobiData::new(sys, settings)?;
        let ctx = self.context()?;
        let measure = |gamma: &[f64]| {
            let u = biased_velocity(sys, settings, gamma);
            merit::residual(sys, gamma, &u, settings.friction, &data.eta)
        };
        let widen = |g: &[f32]| g.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let mut gamma = widen(&data.gamma);
        let (mut progress, mut status) = Progress::new(settings, &gamma, measure(&gamma));
        if settings.max_iter == 0 && status.is_none() {
            status = Some(Status::MaxIterations);
        }
        let mut kernels = JacobiKernels::new(ctx, &data);
        let status = loop {
            if let Some(status) = status {
                break status;
            }
            let chunk = READBACK_EVERY.min(settings.max_iter - progress.iterations());
            kernels.run(chunk);
            gamma = widen(&kernels.read_gamma()?);
            // One product per iteration, and one for the residual.
            status = progress.record(&gamma, measure(&gamma), chunk, chunk + 1);
        };
        let report = progress.finish(self.name(), sys, status, gamma);
        Ok((report, kernels.stats()))
    }
}

impl Solver for JacobiGpu {
    fn name(&self) -> &'static str {
        "jacobi-gpu"
    }

    fn solve(&self, sys: &System, settings: &Settings) -> Result<Report> {
        self.solve_with_stats(sys, settings)
            .map(|(report, _)| report)
    }
}
