//! The device's memory bandwidth, measured by a copy kernel (`shaders/copy.wgsl`): the bound
//! the throughput benchmark compares the solver kernels with.

use std::time::Instant;

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::kernels::{WORKGROUP, grid};
use crate::error::{Error, Result};

const COPY: &str = include_str!("../../shaders/copy.wgsl");

/// A bandwidth measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth {
    /// Bytes of the buffer copied (each copy reads and writes it once).
    pub buffer_bytes: u64,
    /// Copies timed.
    pub copies: usize,
    /// Bytes read plus bytes written per second, best of the repetitions.
    pub bytes_per_s: f64,
}

/// Copies a buffer of `bytes` (rounded down to 16 bytes, capped by the device's binding
/// limit) `copies` times per submission, `repeats` submissions, and returns the best rate of
/// bytes read + written. The buffer holds non-zero data so that nothing is special-cased.
pub fn measure(ctx: &GpuContext, bytes: u64, copies: usize, repeats: usize) -> Result<Bandwidth> {
    let limit = ctx.device.limits().max_storage_buffer_binding_size;
    let bytes = bytes.min(limit) / 16 * 16;
    if bytes == 0 || copies == 0 || repeats == 0 {
        return Err(Error::Gpu(
            "bandwidth: the buffer, copies and repeats must be non-zero".into(),
        ));
    }
    let device = &ctx.device;
    let data: Vec<f32> = (0..bytes / 4).map(|i| (i % 1021) as f32 + 0.5).collect();
    let src = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("copy src"),
        contents: bytemuck::cast_slice(&data),
        usage: wgpu::BufferUsages::STORAGE,
    });
    drop(data);
    let dst = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("copy dst"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let pipeline = ctx.compile("copy", COPY);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("copy"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: src.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: dst.as_entire_binding(),
            },
        ],
    });
    let [gx, gy, _] = grid((bytes / 16).div_ceil(u64::from(WORKGROUP)) as u32);
    let submit = |n: usize| -> Result<f64> {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            for _ in 0..n {
                pass.dispatch_workgroups(gx, gy, 1);
            }
        }
        let start = Instant::now();
        ctx.queue.submit([encoder.finish()]);
        ctx.wait()?;
        Ok(start.elapsed().as_secs_f64())
    };
    // Warm-up: first use of the pipeline and of the pages of `dst`.
    submit(1)?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        best = best.min(submit(copies)?);
    }
    Ok(Bandwidth {
        buffer_bytes: bytes,
        copies,
        bytes_per_s: (2 * bytes) as f64 * copies as f64 / best,
    })
}
