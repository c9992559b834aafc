//! The dispatch machinery: a kernel bound to its buffers ([`Step`], the one place a bind
//! group is made), recorded into compute passes, and [`dispatch_once`] for the parity tests.

use super::buffers::{create, usage};
use super::readback::Staging;
use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::kernels::{Access, Kernel};

/// One dispatch: a kernel with its bind group.
#[derive(Clone)]
pub(crate) struct Step {
    /// The kernel's name.
    name: &'static str,
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
    /// The workgroup grid (`x`, `y`, `z`).
    workgroups: [u32; 3],
    /// Where the workgroup counts are read at run time instead (buffer, byte offset): an
    /// indirect dispatch.
    indirect: Option<(wgpu::Buffer, u64)>,
    /// Bytes of the storage buffers it binds: what one dispatch moves at least, when the
    /// kernel reads (or writes) each of them once.
    bytes: u64,
}

impl Step {
    /// `kernel` over `items` invocations of its domain, with `buffers` bound in binding
    /// order (group 0).
    pub(crate) fn new(
        ctx: &GpuContext,
        kernel: &Kernel,
        buffers: &[&wgpu::Buffer],
        items: u32,
    ) -> Result<Self> {
        let pipeline = ctx.pipeline(kernel)?;
        let entries: Vec<_> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(kernel.name),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let bytes = kernel
            .bindings
            .iter()
            .zip(buffers)
            .filter(|(binding, _)| binding.access != Access::Uniform)
            .map(|(_, b)| b.size())
            .sum();
        Ok(Step {
            name: kernel.name,
            pipeline,
            group,
            workgroups: kernel.workgroups(items),
            indirect: None,
            bytes,
        })
    }

    /// This dispatch with its workgroup counts read at run time from `args` at byte
    /// `offset` (three `u32`: x, y, z; a buffer with `INDIRECT` usage).
    pub(crate) fn indirect(self, args: &wgpu::Buffer, offset: u64) -> Self {
        Step {
            indirect: Some((args.clone(), offset)),
            ..self
        }
    }

    /// Bytes of the storage buffers it binds.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The kernel's name.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }
}

/// Records `steps` in order in one compute pass.
pub(crate) fn record<'s>(
    encoder: &mut wgpu::CommandEncoder,
    steps: impl IntoIterator<Item = &'s Step>,
) {
    record_timed(encoder, steps, None);
}

/// Records `steps` in order in one compute pass, with the GPU's timestamps at its beginning
/// and end written into `timestamps` when given.
pub(crate) fn record_timed<'s>(
    encoder: &mut wgpu::CommandEncoder,
    steps: impl IntoIterator<Item = &'s Step>,
    timestamps: Option<wgpu::ComputePassTimestampWrites<'_>>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: timestamps,
    });
    for step in steps {
        let [x, y, z] = step.workgroups;
        if x > 0 {
            pass.set_pipeline(&step.pipeline);
            pass.set_bind_group(0, &step.group, &[]);
            match &step.indirect {
                Some((args, offset)) => pass.dispatch_workgroups_indirect(args, *offset),
                None => pass.dispatch_workgroups(x, y, z),
            }
        }
    }
}

/// Runs one dispatch of `kernel` over `items` invocations of its domain with the given
/// binding contents (in binding order) and returns the contents of every binding after it,
/// for the parity tests against the mirrors of [`crate::gpu::cpu`]
/// ([`Kernel::mirror_once`]).
pub fn dispatch_once(
    ctx: &GpuContext,
    kernel: &Kernel,
    items: u32,
    contents: &[&[u8]],
) -> Result<Vec<Vec<u8>>> {
    kernel.check_bindings(contents.len())?;
    let buffers: Vec<wgpu::Buffer> = kernel
        .bindings
        .iter()
        .zip(contents)
        .map(|(binding, bytes)| {
            // Uniform bindings are read in 16-byte units.
            let size = (bytes.len().max(4) as u64).next_multiple_of(16);
            let buffer = create(&ctx.device, binding.name, size, usage(binding.access));
            ctx.queue.write_buffer(&buffer, 0, bytes);
            buffer
        })
        .collect();
    let refs: Vec<&wgpu::Buffer> = buffers.iter().collect();
    let step = Step::new(ctx, kernel, &refs, items)?;
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    record(&mut encoder, [&step]);
    let total = buffers.iter().map(wgpu::Buffer::size).sum();
    let mut staging = Staging::new(&ctx.device, total);
    let stored = kernel.bindings.iter().map(|b| b.access != Access::Uniform);
    for ((buffer, bytes), stored) in buffers.iter().zip(contents).zip(stored.clone()) {
        if stored {
            staging.copy(&ctx.device, &mut encoder, buffer, bytes.len() as u64)?;
        }
    }
    ctx.queue.submit([encoder.finish()]);
    let mut read = staging.read(&ctx.device)?.into_iter();
    Ok(contents
        .iter()
        .zip(stored)
        .map(|(bytes, stored)| {
            if stored {
                read.next().unwrap_or_default()
            } else {
                bytes.to_vec()
            }
        })
        .collect())
}
