//! The wgpu side of the renderer: three render pipelines (sphere impostors; opaque and
//! translucent meshes) into a 4× multisampled sRGB target with a depth buffer, resolved and
//! read back as RGBA.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use nalgebra::Vector3;
use wgpu::util::DeviceExt;

use super::camera::Camera;
use super::color::VIRIDIS;
use super::geometry::{Geometry, MeshVertex, SphereInstance, scene_bounds};
use super::{Image, SceneFrame, Style, overlay};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;

/// WGSL shared by every stage: the view uniform and the shading.
const COMMON: &str = include_str!("../../shaders/render/common.wgsl");
const SPHERE_VERT: &str = include_str!("../../shaders/render/sphere.vert.wgsl");
const SPHERE_STATE_VERT: &str = include_str!("../../shaders/render/sphere_state.vert.wgsl");
/// The time step's structs (`GpuBody`), which the state's sphere stage reads.
const STEP_COMMON: &str = include_str!("../../shaders/step/step_common.wgsl");

/// The source of the vertex stage of the spheres drawn from the time step's state: the time
/// step's declarations before it.
fn sphere_state_vert() -> String {
    format!("{STEP_COMMON}\n{SPHERE_STATE_VERT}")
}
const SPHERE_FRAG: &str = include_str!("../../shaders/render/sphere.frag.wgsl");
const MESH_VERT: &str = include_str!("../../shaders/render/mesh.vert.wgsl");
const MESH_FRAG: &str = include_str!("../../shaders/render/mesh.frag.wgsl");

/// Samples per pixel (MSAA).
const SAMPLES: u32 = 4;
const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Background color (sRGB).
pub(crate) const BACKGROUND: [u8; 3] = [246, 246, 248];
/// Fraction of the light that is ambient.
const AMBIENT: f32 = 0.3;
/// Bytes of one body of the time step's state (`GpuBody`).
const BODY_BYTES: u64 = size_of::<crate::gpu::step::GpuBody>() as u64;
/// Smallest and largest image side, pixels.
const MIN_SIDE: u32 = 16;

/// The view uniform (`View` in `shaders/render/common.wgsl`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct ViewUniform {
    view_proj: [f32; 16],
    eye: [f32; 4],
    light: [f32; 4],
}

/// The coloring of the spheres drawn from the time step's state (`Tint` in
/// `shaders/render/sphere_state.vert.wgsl`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct TintUniform {
    origin: [f32; 4],
    scale: [f32; 4],
    viridis: [[f32; 4]; 9],
}

/// The spheres of a GPU-resident time step, drawn from its state buffer on the renderer's
/// device (no readback): `count` bodies laid out as `GpuBody` (`src/gpu/step/data.rs`), colored
/// by speed on the style's color scale.
#[derive(Debug, Clone, Copy)]
pub struct StateSpheres<'a> {
    /// The state buffer (a storage buffer of the renderer's device).
    pub buffer: &'a wgpu::Buffer,
    /// The number of spheres in it.
    pub count: u32,
}

/// The render targets of one image size, and the buffer they are read back through.
struct Targets {
    width: u32,
    height: u32,
    msaa: wgpu::TextureView,
    depth: wgpu::TextureView,
    resolve: wgpu::Texture,
    readback: wgpu::Buffer,
    /// Bytes per row of `readback` (a multiple of 256).
    row_bytes: u32,
}

/// Renders frames of scenes offscreen on a [`GpuContext`]'s device.
pub struct Renderer {
    ctx: Arc<GpuContext>,
    sphere: wgpu::RenderPipeline,
    /// Spheres from a time step's state buffer, and the layout of its bind group.
    state_sphere: wgpu::RenderPipeline,
    state_layout: wgpu::BindGroupLayout,
    tint: wgpu::Buffer,
    opaque: wgpu::RenderPipeline,
    translucent: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    targets: Option<Targets>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("adapter", &self.ctx.adapter_name())
            .finish()
    }
}

/// How a pipeline writes its fragments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blend {
    /// Opaque, depth written.
    Opaque,
    /// Opaque, alpha is the MSAA coverage (alpha to coverage), depth written.
    Coverage,
    /// Alpha blended over what is drawn, depth tested but not written.
    Alpha,
}

/// A render pipeline of the renderer: 4× MSAA sRGB color, 32-bit depth (less), the vertex
/// buffers `buffers`.
fn render_pipeline(
    device: &wgpu::Device,
    layout: &wgpu::PipelineLayout,
    label: &str,
    (vert, frag): &(wgpu::ShaderModule, wgpu::ShaderModule),
    buffers: &[Option<wgpu::VertexBufferLayout<'_>>],
    blend: Blend,
) -> wgpu::RenderPipeline {
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module: vert,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            buffers,
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: DEPTH_FORMAT,
            depth_write_enabled: Some(blend != Blend::Alpha),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: wgpu::MultisampleState {
            count: SAMPLES,
            mask: !0,
            alpha_to_coverage_enabled: blend == Blend::Coverage,
        },
        fragment: Some(wgpu::FragmentState {
            module: frag,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: COLOR_FORMAT,
                blend: (blend == Blend::Alpha).then_some(wgpu::BlendState::ALPHA_BLENDING),
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

fn vertex_layout(
    stride: u64,
    step_mode: wgpu::VertexStepMode,
    attributes: &[wgpu::VertexAttribute],
) -> wgpu::VertexBufferLayout<'_> {
    wgpu::VertexBufferLayout {
        array_stride: stride,
        step_mode,
        attributes,
    }
}

impl Renderer {
    /// Compiles the shaders and pipelines on `ctx`'s device.
    pub fn new(ctx: Arc<GpuContext>) -> Renderer {
        let device = &ctx.device;
        let module = |label: &str, source: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(format!("{COMMON}\n{source}").into()),
            })
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render view"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let sphere_modules = (
            module("sphere.vert", SPHERE_VERT),
            module("sphere.frag", SPHERE_FRAG),
        );
        let mesh_modules = (
            module("mesh.vert", MESH_VERT),
            module("mesh.frag", MESH_FRAG),
        );
        let sphere_attributes = wgpu::vertex_attr_array![0 => Float32x4, 1 => Float32x4];
        let mesh_attributes =
            wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x4];
        let sphere_layout = || {
            vertex_layout(
                size_of::<SphereInstance>() as u64,
                wgpu::VertexStepMode::Instance,
                &sphere_attributes,
            )
        };
        let mesh_layout = || {
            vertex_layout(
                size_of::<MeshVertex>() as u64,
                wgpu::VertexStepMode::Vertex,
                &mesh_attributes,
            )
        };
        let pipeline = |label, modules, buffer, blend| {
            render_pipeline(
                device,
                &pipeline_layout,
                label,
                modules,
                &[Some(buffer)],
                blend,
            )
        };
        let sphere = pipeline("spheres", &sphere_modules, sphere_layout(), Blend::Coverage);
        let opaque = pipeline("opaque meshes", &mesh_modules, mesh_layout(), Blend::Opaque);
        let translucent = pipeline(
            "translucent meshes",
            &mesh_modules,
            mesh_layout(),
            Blend::Alpha,
        );
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let state_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render state spheres"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Storage { read_only: true }),
                entry(1, wgpu::BufferBindingType::Uniform),
            ],
        });
        let state_sphere = render_pipeline(
            device,
            &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("render state spheres"),
                bind_group_layouts: &[Some(&layout), Some(&state_layout)],
                immediate_size: 0,
            }),
            "state spheres",
            &(
                module("sphere_state.vert", &sphere_state_vert()),
                module("sphere.frag", SPHERE_FRAG),
            ),
            &[],
            Blend::Coverage,
        );
        let tint = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render tint"),
            size: size_of::<TintUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render view"),
            size: size_of::<ViewUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("render view"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform.as_entire_binding(),
            }],
        });
        Renderer {
            ctx,
            sphere,
            state_sphere,
            state_layout,
            tint,
            opaque,
            translucent,
            uniform,
            bind_group,
            targets: None,
        }
    }

    /// The device it renders on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Makes the render targets for `width × height` unless they are made already.
    fn make_targets(&mut self, width: u32, height: u32) {
        if !matches!(&self.targets, Some(t) if t.width == width && t.height == height) {
            let device = &self.ctx.device;
            let texture = |label: &str, format, samples, usage| {
                device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: wgpu::Extent3d {
                        width,
                        height,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: samples,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage,
                    view_formats: &[],
                })
            };
            let attachment = wgpu::TextureUsages::RENDER_ATTACHMENT;
            let view = |t: wgpu::Texture| t.create_view(&Default::default());
            let row_bytes = (4 * width).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
                * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
            self.targets = Some(Targets {
                width,
                height,
                msaa: view(texture("msaa color", COLOR_FORMAT, SAMPLES, attachment)),
                depth: view(texture("depth", DEPTH_FORMAT, SAMPLES, attachment)),
                resolve: texture(
                    "resolved color",
                    COLOR_FORMAT,
                    1,
                    attachment | wgpu::TextureUsages::COPY_SRC,
                ),
                readback: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("frame readback"),
                    size: u64::from(row_bytes) * u64::from(height),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                row_bytes,
            });
        }
    }

    /// Renders `frame` under `style` into an RGBA image (top row first), with the overlay
    /// when `style.overlay` is set. An image side outside `[16, max texture side]` or a frame
    /// whose slices disagree in length is an error.
    pub fn render(&mut self, frame: &SceneFrame, style: &Style) -> Result<Image> {
        self.draw(frame, style, None)
    }

    /// [`Renderer::render`] with the spheres of a GPU-resident time step drawn from its
    /// state buffer besides `frame`'s bodies (its planes), colored by speed on
    /// `style.scale`. A buffer of another device, or smaller than `count` bodies, is an
    /// error.
    pub fn render_state(
        &mut self,
        frame: &SceneFrame,
        style: &Style,
        spheres: StateSpheres<'_>,
    ) -> Result<Image> {
        let need = u64::from(spheres.count) * BODY_BYTES;
        if spheres.buffer.size() < need {
            return Err(Error::Gpu(format!(
                "the state buffer holds {} bytes, not the {need} of {} spheres",
                spheres.buffer.size(),
                spheres.count
            )));
        }
        self.draw(frame, style, Some(spheres))
    }

    fn draw(
        &mut self,
        frame: &SceneFrame,
        style: &Style,
        state: Option<StateSpheres<'_>>,
    ) -> Result<Image> {
        frame.check()?;
        let max = self.ctx.device.limits().max_texture_dimension_2d;
        for (name, side) in [("frame width", style.width), ("frame height", style.height)] {
            if !(MIN_SIDE..=max).contains(&side) {
                return Err(Error::InvalidSetting {
                    name,
                    value: side.to_string(),
                    message: format!("between {MIN_SIDE} and {max} pixels"),
                });
            }
        }
        let (width, height) = (style.width, style.height);
        let aspect = f64::from(width) / f64::from(height);
        let bounds = style.bounds.unwrap_or_else(|| scene_bounds(frame));
        let camera = Camera::new(&style.camera, &bounds, aspect);
        let origin = camera.target;
        let geometry = Geometry::build(frame, style, &bounds, &origin, &camera.eye);
        // Depth range: everything drawn (the current bodies and the planes' box).
        let now = scene_bounds(frame);
        let grow = 0.2 * (Vector3::from(bounds.1) - Vector3::from(bounds.0)).max();
        let all = (
            std::array::from_fn(|k| bounds.0[k].min(now.0[k]) - grow),
            std::array::from_fn(|k| bounds.1[k].max(now.1[k]) + grow),
        );
        let (near, far) = camera.depth_range(&all);
        let f = camera.frame();
        let light = (-0.45 * f.right + 0.8 * f.up - 0.4 * f.forward).normalize();
        let eye = camera.eye - origin;
        let view_proj = camera.view_projection(aspect, near, far, &origin);
        let uniform = ViewUniform {
            view_proj: std::array::from_fn(|k| view_proj.as_slice()[k] as f32),
            eye: [eye.x as f32, eye.y as f32, eye.z as f32, 1.0],
            light: [light.x as f32, light.y as f32, light.z as f32, AMBIENT],
        };
        self.ctx
            .queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
        let buffer = |label: &str, contents: &[u8]| {
            (!contents.is_empty()).then(|| {
                self.ctx
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some(label),
                        contents,
                        usage: wgpu::BufferUsages::VERTEX,
                    })
            })
        };
        let spheres = buffer("spheres", bytemuck::cast_slice(&geometry.spheres));
        let state_group = state.filter(|s| s.count > 0).map(|s| {
            let scale = &style.scale;
            let tint = TintUniform {
                origin: [origin.x as f32, origin.y as f32, origin.z as f32, 0.0],
                scale: [
                    scale.lo as f32,
                    (1.0 / (scale.hi - scale.lo)) as f32,
                    0.0,
                    0.0,
                ],
                viridis: VIRIDIS.map(|[r, g, b]| [f32::from(r), f32::from(g), f32::from(b), 0.0]),
            };
            self.ctx
                .queue
                .write_buffer(&self.tint, 0, bytemuck::bytes_of(&tint));
            let group = self
                .ctx
                .device
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("render state spheres"),
                    layout: &self.state_layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: s.buffer.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: self.tint.as_entire_binding(),
                        },
                    ],
                });
            (group, s.count)
        });
        let opaque = buffer("opaque meshes", bytemuck::cast_slice(&geometry.opaque));
        let translucent = buffer(
            "translucent meshes",
            bytemuck::cast_slice(&geometry.translucent),
        );
        self.make_targets(width, height);
        let targets = self.targets.as_ref().expect("made above");
        let resolve = targets.resolve.create_view(&Default::default());
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        {
            let [r, g, b] = BACKGROUND.map(|c| f64::from(super::geometry::linear(c)));
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("frame"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &targets.msaa,
                    depth_slice: None,
                    resolve_target: Some(&resolve),
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a: 1.0 }),
                        store: wgpu::StoreOp::Discard,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &targets.depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Discard,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &self.bind_group, &[]);
            if let Some(b) = &spheres {
                pass.set_pipeline(&self.sphere);
                pass.set_vertex_buffer(0, b.slice(..));
                pass.draw(0..6, 0..geometry.spheres.len() as u32);
            }
            if let Some((group, count)) = &state_group {
                pass.set_pipeline(&self.state_sphere);
                pass.set_bind_group(1, group, &[]);
                pass.draw(0..6, 0..*count);
            }
            for (pipeline, b, count) in [
                (&self.opaque, &opaque, geometry.opaque.len()),
                (&self.translucent, &translucent, geometry.translucent.len()),
            ] {
                if let Some(b) = b {
                    pass.set_pipeline(pipeline);
                    pass.set_vertex_buffer(0, b.slice(..));
                    pass.draw(0..count as u32, 0..1);
                }
            }
        }
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &targets.resolve,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &targets.readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(targets.row_bytes),
                    rows_per_image: Some(height),
                },
            },
            wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
        );
        self.ctx.queue.submit([encoder.finish()]);
        let mut image = Image {
            width,
            height,
            rgba: self.read_back()?,
        };
        if style.overlay {
            let caption = style.caption.as_deref();
            overlay::draw(
                &mut image,
                caption,
                &style.scale,
                camera.pixels_per_meter(height),
            )?;
        }
        Ok(image)
    }

    /// Maps the readback buffer and returns its rows without padding, alpha opaque.
    fn read_back(&self) -> Result<Vec<u8>> {
        let targets = self.targets.as_ref().expect("rendered before");
        let slice = targets.readback.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let fail = |e: &dyn std::fmt::Display| Error::Gpu(format!("reading the frame back: {e}"));
        self.ctx.wait()?;
        rx.recv().map_err(|e| fail(&e))?.map_err(|e| fail(&e))?;
        let row = 4 * targets.width as usize;
        let mut rgba = Vec::with_capacity(row * targets.height as usize);
        {
            let mapped = slice.get_mapped_range().map_err(|e| fail(&e))?;
            for padded in mapped.chunks_exact(targets.row_bytes as usize) {
                rgba.extend_from_slice(&padded[..row]);
            }
        }
        targets.readback.unmap();
        // The spheres' alpha carries their coverage: the image itself is opaque.
        for p in rgba.chunks_exact_mut(4) {
            p[3] = 255;
        }
        Ok(rgba)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stage parses and validates (no device needed), and the view uniform has the
    /// size of its WGSL twin.
    #[test]
    fn shaders_validate_and_the_uniform_matches() {
        for (name, stage) in [
            ("sphere.vert", SPHERE_VERT),
            ("sphere_state.vert", &sphere_state_vert()),
            ("sphere.frag", SPHERE_FRAG),
            ("mesh.vert", MESH_VERT),
            ("mesh.frag", MESH_FRAG),
        ] {
            let source = format!("{COMMON}\n{stage}");
            let module = naga::front::wgsl::parse_str(&source)
                .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
            naga::valid::Validator::new(Default::default(), naga::valid::Capabilities::all())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
            let mut layouter = naga::proc::Layouter::default();
            layouter.update(module.to_ctx()).unwrap();
            let twins = [
                ("View", size_of::<ViewUniform>()),
                ("Tint", size_of::<TintUniform>()),
                ("GpuBody", BODY_BYTES as usize),
            ];
            let named = |n: &str| {
                module
                    .types
                    .iter()
                    .any(|(_, t)| t.name.as_deref() == Some(n))
            };
            assert!(named("View"), "{name}");
            for (ty, _) in module.types.iter() {
                let name_of = module.types[ty].name.as_deref();
                if let Some((_, size)) = twins.iter().find(|(n, _)| Some(*n) == name_of) {
                    assert_eq!(layouter[ty].size as usize, *size, "{name}: {name_of:?}");
                }
            }
        }
    }
}
