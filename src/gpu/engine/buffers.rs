//! The problem's buffers on the device: created for its sizes ([`Shared::new`]), filled
//! ([`Shared::upload`]) and found by binding name ([`Shared::get`]).

use crate::error::{Error, Result};
use crate::gpu::data::{Apply, Monitor, OperatorData, Params, Partial, ProblemData, SLOTS};
use crate::gpu::kernels::{Access, WORKGROUP};

/// Usage of a storage buffer: bound, written from the host, copied for readbacks.
const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// The usage of a buffer bound with `access`.
pub(crate) fn usage(access: Access) -> wgpu::BufferUsages {
    match access {
        Access::Uniform => wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        Access::Read | Access::Write => STORAGE,
    }
}

/// A new buffer of `size` bytes.
pub(crate) fn create(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage,
        mapped_at_creation: false,
    })
}

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

/// A storage buffer of `bytes` bytes (at least 4) named `label`, checked against `limit`.
pub(crate) fn storage(
    device: &wgpu::Device,
    label: &str,
    bytes: usize,
    limit: u64,
) -> Result<wgpu::Buffer> {
    let bytes = bytes.max(4) as u64;
    check_binding(label, bytes, limit)?;
    Ok(create(device, label, bytes.next_multiple_of(4), STORAGE))
}

/// The lengths of every array of a problem: two problems of the same shape share buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) bodies: u32,
    pub(crate) blocks: u32,
    pub(crate) rows: u32,
    /// The operator's arrays: name and bytes.
    op: Vec<(&'static str, usize)>,
}

impl Shape {
    /// Whether a problem of shape `need` fits buffers of this shape (the same operator
    /// arrays, no size above this one's).
    pub(crate) fn holds(&self, need: &Shape) -> bool {
        need.bodies <= self.bodies
            && need.blocks <= self.blocks
            && need.rows <= self.rows
            && self.op.len() == need.op.len()
            && self
                .op
                .iter()
                .zip(&need.op)
                .all(|((a, x), (b, y))| a == b && y <= x)
    }

    /// This shape with every size multiplied by `room` (at least 1).
    pub(crate) fn grown(&self, room: f64) -> Self {
        let room = room.max(1.0);
        let u = |n: u32| (f64::from(n) * room).ceil().min(f64::from(u32::MAX)) as u32;
        Shape {
            bodies: u(self.bodies),
            blocks: u(self.blocks),
            rows: u(self.rows),
            op: self
                .op
                .iter()
                .map(|&(name, bytes)| {
                    (
                        name,
                        ((bytes as f64 * room).ceil() as usize).next_multiple_of(4),
                    )
                })
                .collect(),
        }
    }

    /// The shape of `data`.
    pub(crate) fn of(data: &ProblemData) -> Self {
        Shape {
            bodies: data.params.n_bodies,
            blocks: data.params.n_blocks,
            rows: data.params.n_rows,
            op: data
                .op
                .arrays()
                .iter()
                .map(|(name, bytes)| (*name, bytes.len()))
                .collect(),
        }
    }
}

/// The buffers every solver shares: the problem's arrays, the reduction's partials and
/// scalars, and the monitor.
pub(crate) struct Shared {
    params: wgpu::Buffer,
    blocks: wgpu::Buffer,
    r: wgpu::Buffer,
    compliance: wgpu::Buffer,
    precond: wgpu::Buffer,
    /// The operator's arrays, by binding name ([`OperatorData::arrays`]).
    op: Vec<(&'static str, wgpu::Buffer)>,
    /// `w = M⁻¹ Jᵀ x` of the last product, 6 per body (factored form only).
    w: Option<wgpu::Buffer>,
    /// `Apply { add_r: 0 }` and `Apply { add_r: 1 }`.
    pub(crate) apply: [wgpu::Buffer; 2],
    /// Workgroup partials of the last reduction.
    parts: wgpu::Buffer,
    /// [`SLOTS`] reduced [`Partial`]s.
    scalars: wgpu::Buffer,
    pub(crate) monitor: wgpu::Buffer,
}

/// Bytes of one [`Monitor`].
pub(crate) const MONITOR_BYTES: u64 = std::mem::size_of::<Monitor>() as u64;

impl Shared {
    /// The buffers of a problem of shape `shape` (the sizes of `data` or more), not yet
    /// filled (but for the two `apply` uniforms).
    pub(crate) fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        data: &ProblemData,
        shape: &Shape,
        limit: u64,
    ) -> Result<Self> {
        let storage = |label: &str, bytes: usize| storage(device, label, bytes, limit);
        let uniform =
            |label: &str, bytes: usize| create(device, label, bytes as u64, usage(Access::Uniform));
        let rows = 4 * shape.rows as usize;
        let op = shape
            .op
            .iter()
            .map(|&(name, bytes)| Ok((name, storage(name, bytes)?)))
            .collect::<Result<Vec<_>>>()?;
        let w = match data.op {
            OperatorData::Factored { .. } => Some(storage("w", 24 * shape.bodies as usize)?),
            OperatorData::Csr { .. } => None,
        };
        let partial = std::mem::size_of::<Partial>();
        let groups = shape.rows.max(shape.blocks).div_ceil(WORKGROUP) as usize;
        let apply = [0, 1].map(|add_r| {
            let buffer = uniform("apply", std::mem::size_of::<Apply>());
            queue.write_buffer(
                &buffer,
                0,
                bytemuck::bytes_of(&Apply { add_r, pad: [0; 3] }),
            );
            buffer
        });
        Ok(Shared {
            params: uniform("params", std::mem::size_of::<Params>()),
            blocks: storage(
                "blocks",
                shape.blocks as usize * std::mem::size_of::<crate::gpu::data::GpuBlock>(),
            )?,
            r: storage("r", rows)?,
            compliance: storage("compliance", rows)?,
            precond: storage("precond", rows)?,
            op,
            w,
            apply,
            parts: storage("parts", partial * groups)?,
            scalars: storage("scalars", partial * SLOTS)?,
            monitor: storage("monitor", MONITOR_BYTES as usize)?,
        })
    }

    /// Writes the arrays of `data` (of a shape the buffers hold) at their starts and resets
    /// the monitor (its divergence reference to [`ProblemData::gamma_scale`]).
    pub(crate) fn upload(&self, queue: &wgpu::Queue, data: &ProblemData) {
        let write = |buffer: &wgpu::Buffer, bytes: &[u8]| {
            if !bytes.is_empty() {
                queue.write_buffer(buffer, 0, bytes);
            }
        };
        let cast = bytemuck::cast_slice::<f32, u8>;
        write(&self.params, bytemuck::bytes_of(&data.params));
        write(&self.blocks, bytemuck::cast_slice(&data.blocks));
        write(&self.r, cast(&data.r));
        write(&self.compliance, cast(&data.compliance));
        write(&self.precond, cast(&data.precond));
        for ((_, buffer), (_, bytes)) in self.op.iter().zip(data.op.arrays()) {
            write(buffer, bytes);
        }
        let monitor = Monitor {
            gamma_scale: data.gamma_scale as f32,
            ..Monitor::default()
        };
        write(&self.monitor, bytemuck::bytes_of(&monitor));
    }

    /// The shared buffer a kernel binds by `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<&wgpu::Buffer> {
        Some(match name {
            "params" => &self.params,
            "blocks" => &self.blocks,
            "r" => &self.r,
            "compliance" => &self.compliance,
            "precond" => &self.precond,
            "parts" => &self.parts,
            "scalars" => &self.scalars,
            "monitor" => &self.monitor,
            "w" => self.w.as_ref()?,
            _ => return self.op.iter().find(|(n, _)| *n == name).map(|(_, b)| b),
        })
    }

    /// `w = M⁻¹ Jᵀ x` of the last factored product (none when assembled): the factored
    /// form's products take two dispatches.
    pub(crate) fn w(&self) -> Option<&wgpu::Buffer> {
        self.w.as_ref()
    }
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
