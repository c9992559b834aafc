//! The wgpu instance, adapter, device and queue of the GPU solvers.

use std::sync::OnceLock;

use super::kernels::{ALL, Kernel};
use crate::error::{Error, Result};

/// Environment variable that picks the adapter: a case-insensitive substring of its name
/// (see `signorini info`). Unset or empty: wgpu's high-performance default.
pub const ADAPTER_ENV: &str = "SIGNORINI_ADAPTER";

/// What `signorini info` shows of one adapter.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AdapterSummary {
    /// Adapter name (e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub name: String,
    /// Backend (Vulkan, ...).
    pub backend: String,
    /// Driver name and version.
    pub driver: String,
    /// Discrete GPU, integrated GPU, CPU, ...
    pub device_type: String,
    /// `max_storage_buffer_binding_size`, bytes.
    pub max_storage_binding_size: u64,
}

/// A device and its queue, with the adapter's buffer limits, and the compute pipelines
/// compiled on it so far: one slot per kernel of [`super::kernels::ALL`], filled at the
/// kernel's first use (each kernel is compiled once per device, not once per solve).
#[derive(Debug)]
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    pipelines: Box<[OnceLock<wgpu::ComputePipeline>]>,
}

/// WGSL shared by every kernel (structs), prepended to each kernel's source.
pub(crate) const COMMON: &str = include_str!("../../shaders/common.wgsl");

fn instance() -> wgpu::Instance {
    // wgpu validates each indirect dispatch with a dispatch of its own (and a bind group)
    // before it, release builds included. Our indirect arguments are the schedule's own
    // workgroup counts (checked against the limit when it is built) or zero (the
    // convergence gate): off, unless `WGPU_VALIDATION_INDIRECT_CALL` asks for it.
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor
        .flags
        .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    wgpu::Instance::new(descriptor.with_env())
}

fn summary(adapter: &wgpu::Adapter) -> AdapterSummary {
    summary_of(
        &adapter.get_info(),
        adapter.limits().max_storage_buffer_binding_size,
    )
}

fn summary_of(info: &wgpu::AdapterInfo, max_storage_binding_size: u64) -> AdapterSummary {
    let info = info.clone();
    AdapterSummary {
        name: info.name,
        backend: format!("{:?}", info.backend),
        driver: format!("{} {}", info.driver, info.driver_info)
            .trim()
            .to_string(),
        device_type: format!("{:?}", info.device_type),
        max_storage_binding_size,
    }
}

/// The adapter named by [`ADAPTER_ENV`], else the high-performance default; one that can
/// present to `surface` when it is given.
fn pick_adapter(
    instance: &wgpu::Instance,
    surface: Option<&wgpu::Surface<'_>>,
) -> Result<wgpu::Adapter> {
    let wanted = std::env::var(ADAPTER_ENV).unwrap_or_default();
    if wanted.is_empty() {
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            compatible_surface: surface,
            ..Default::default()
        }))
        .map_err(|e| {
            Error::Gpu(format!(
                "no adapter found ({e}); without a GPU, install Mesa's software Vulkan \
                 driver (Debian: mesa-vulkan-drivers)"
            ))
        })
    } else {
        let all = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
        let needle = wanted.to_lowercase();
        all.into_iter()
            .find(|a| {
                a.get_info().name.to_lowercase().contains(&needle)
                    && surface.is_none_or(|s| a.is_surface_supported(s))
            })
            .ok_or_else(|| {
                Error::Gpu(format!(
                    "no adapter matches {ADAPTER_ENV}={wanted}; found: [{}]",
                    names.join(", ")
                ))
            })
    }
}

/// Every adapter wgpu finds, on every backend compiled in.
pub fn adapters() -> Vec<AdapterSummary> {
    pollster::block_on(instance().enumerate_adapters(wgpu::Backends::all()))
        .iter()
        .map(summary)
        .collect()
}

impl GpuContext {
    /// Picks an adapter ([`ADAPTER_ENV`], else the high-performance default) and opens a
    /// device whose storage-buffer limits are the adapter's. No adapter, or a device that
    /// cannot be opened, is an [`Error::Gpu`].
    pub fn new() -> Result<Self> {
        Self::on(&pick_adapter(&instance(), None)?)
    }

    /// As [`GpuContext::new`], on an adapter that can present to a surface of `window`
    /// (the window of `signorini view`): the context, the surface and what it supports.
    pub fn with_surface(
        window: impl Into<wgpu::SurfaceTarget<'static>>,
    ) -> Result<(Self, wgpu::Surface<'static>, wgpu::SurfaceCapabilities)> {
        let instance = instance();
        let surface = instance
            .create_surface(window)
            .map_err(|e| Error::Gpu(format!("cannot make a surface of the window: {e}")))?;
        let adapter = pick_adapter(&instance, Some(&surface))?;
        let capabilities = surface.get_capabilities(&adapter);
        Ok((Self::on(&adapter)?, surface, capabilities))
    }

    /// Opens a device on `adapter`.
    fn on(adapter: &wgpu::Adapter) -> Result<Self> {
        let supported = adapter.limits();
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: supported.max_storage_buffer_binding_size,
            max_buffer_size: supported.max_buffer_size,
            max_storage_buffers_per_shader_stage: supported.max_storage_buffers_per_shader_stage,
            ..wgpu::Limits::default()
        };
        // Timestamps (the GPU time of each kernel, `bench scaling`) where the adapter has them.
        let features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("signorini"),
            required_features: features,
            required_limits: limits,
            ..Default::default()
        }))
        .map_err(|e| {
            Error::Gpu(format!(
                "cannot open a device on {}: {e}",
                adapter.get_info().name
            ))
        })?;
        Ok(GpuContext {
            device,
            queue,
            info: adapter.get_info(),
            pipelines: ALL.iter().map(|_| OnceLock::new()).collect(),
        })
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// The adapter's description, as `signorini info` shows it.
    pub fn adapter_summary(&self) -> AdapterSummary {
        summary_of(
            &self.info,
            self.device.limits().max_storage_buffer_binding_size,
        )
    }

    /// Blocks until the work submitted so far has finished.
    pub fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| Error::Gpu(format!("waiting for the device failed: {e}")))
    }
}

impl GpuContext {
    /// The compute pipeline of `kernel`, compiled at its first use on this device; a kernel
    /// missing from [`super::kernels::ALL`] is an [`Error::Gpu`].
    pub(crate) fn pipeline(&self, kernel: &Kernel) -> Result<wgpu::ComputePipeline> {
        let slot = kernel
            .index()
            .and_then(|i| self.pipelines.get(i))
            .ok_or_else(|| {
                Error::Gpu(format!(
                    "kernel `{}` is not registered in gpu::kernels::ALL",
                    kernel.name
                ))
            })?;
        Ok(slot
            .get_or_init(|| self.compile(kernel.name, &kernel.source()))
            .clone())
    }

    /// Compiles the compute pipeline `label` (entry point `main`, WGSL `source` after the
    /// common structs), without caching it.
    pub(crate) fn compile(&self, label: &str, source: &str) -> wgpu::ComputePipeline {
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(format!("{COMMON}\n{source}").into()),
            });
        self.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
    }
}
