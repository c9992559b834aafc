//! Readbacks: copies of device buffers recorded into a staging buffer, then mapped once
//! after their submission (the one map-and-read of the GPU path).

use crate::error::{Error, Result};

/// A host-visible buffer that receives copies recorded one after the other, read back
/// together by [`Staging::read`].
pub(crate) struct Staging {
    buffer: wgpu::Buffer,
    /// `(offset, length)` of each copy recorded since the last read.
    copies: Vec<(u64, u64)>,
    /// Bytes in use (each copy starts at a multiple of 8, as mapping requires).
    used: u64,
}

fn staging_buffer(device: &wgpu::Device, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging"),
        size: bytes.max(8).next_multiple_of(8),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

impl Staging {
    /// A staging buffer of `bytes` bytes to begin with.
    pub(crate) fn new(device: &wgpu::Device, bytes: u64) -> Self {
        Staging {
            buffer: staging_buffer(device, bytes),
            copies: Vec::new(),
            used: 0,
        }
    }

    /// Records into `encoder` a copy of the first `bytes` bytes of `source` after the copies
    /// recorded so far. When nothing is recorded yet the buffer grows as needed; otherwise a
    /// copy that does not fit is an [`Error::Gpu`].
    pub(crate) fn copy(
        &mut self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        source: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<()> {
        self.copy_from(device, encoder, source, 0, bytes)
    }

    /// [`Staging::copy`] of `bytes` bytes of `source` from byte `from` (a multiple of 4).
    pub(crate) fn copy_from(
        &mut self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        source: &wgpu::Buffer,
        from: u64,
        bytes: u64,
    ) -> Result<()> {
        let size = bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let end = self.used + size;
        if end > self.buffer.size() {
            if !self.copies.is_empty() {
                return Err(Error::Gpu(format!(
                    "readback of {bytes} bytes after {} bytes: the staging buffer holds {}",
                    self.used,
                    self.buffer.size()
                )));
            }
            self.buffer = staging_buffer(device, size);
        }
        if size > 0 {
            encoder.copy_buffer_to_buffer(source, from, &self.buffer, self.used, size);
        }
        self.copies.push((self.used, bytes));
        self.used = end.next_multiple_of(wgpu::MAP_ALIGNMENT);
        Ok(())
    }

    /// Maps the copies recorded since the last read (their command buffer submitted), waits
    /// for them and returns each copy's bytes, in order.
    pub(crate) fn read(&mut self, device: &wgpu::Device) -> Result<Vec<Vec<u8>>> {
        let copies = std::mem::take(&mut self.copies);
        let used = std::mem::take(&mut self.used);
        if used == 0 {
            return Ok(copies.iter().map(|_| Vec::new()).collect());
        }
        let slice = self.buffer.slice(..used);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let gpu = |e: &dyn std::fmt::Display| Error::Gpu(format!("readback failed: {e}"));
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu(&e))?;
        rx.recv().map_err(|e| gpu(&e))?.map_err(|e| gpu(&e))?;
        let out = {
            let mapped = slice.get_mapped_range().map_err(|e| gpu(&e))?;
            copies
                .iter()
                .map(|&(offset, len)| mapped[offset as usize..(offset + len) as usize].to_vec())
                .collect()
        };
        self.buffer.unmap();
        Ok(out)
    }
}
