//! Rendered frames ([`crate::render`]) to files: PNG frames, and animations assembled from
//! them: GIF (the `gif` crate, 256 colors per frame), APNG (the `png` crate, lossless) or MP4
//! (piped to `ffmpeg` when it is on `PATH`; without it the animation is written as APNG next
//! to the requested path).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;

use super::{temp_path, write_via_temp};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::render::{
    CameraSpec, ColorField, ColorScale, Image, Renderer, SceneFrame, StateSpheres, Style, caption,
    scene_bounds,
};
use crate::sim::{Shape, World};

/// Writes `image` to `path` as an RGB PNG (the frame is opaque: no alpha channel).
pub fn write_frame_png(path: &Path, image: &Image) -> Result<()> {
    write_via_temp(path, |temp| {
        let mut out = BufWriter::new(File::create(temp)?);
        let mut encoder = png::Encoder::new(&mut out, image.width, image.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Best);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&rgb(image))
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()
    })
}

/// The RGB bytes of an RGBA image.
fn rgb(image: &Image) -> Vec<u8> {
    image
        .rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect()
}

/// The encoder behind an [`Animation`].
enum Sink {
    Gif(gif::Encoder<BufWriter<File>>),
    Apng(png::Writer<BufWriter<File>>),
    Ffmpeg(Child, ChildStdin),
}

/// An animation being written, one frame at a time, to a temporary file that [`finish`]
/// renames over the target.
///
/// [`finish`]: Animation::finish
pub struct Animation {
    sink: Sink,
    path: PathBuf,
    temp: PathBuf,
    size: (u32, u32),
    fps: u16,
    frames: u32,
}

impl std::fmt::Debug for Animation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Animation")
            .field("path", &self.path)
            .field("frames", &self.frames)
            .finish()
    }
}

/// Whether `ffmpeg` can be started.
fn has_ffmpeg() -> bool {
    Command::new("ffmpeg")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Animation {
    /// Starts the animation `path` of `frames` frames (the count an APNG announces) of
    /// `width × height` at `fps` frames per second; the format is chosen by the extension: `.gif`, `.apng` or `.png`, `.mp4`.
    /// An `.mp4` without `ffmpeg` on `PATH` becomes an `.apng` beside it (see
    /// [`Animation::path`]).
    pub fn create(path: &Path, width: u32, height: u32, frames: u32, fps: u16) -> Result<Self> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default()
            .to_lowercase();
        let (ext, path) = match ext.as_str() {
            "mp4" if !has_ffmpeg() => {
                eprintln!(
                    "note: ffmpeg is not on PATH: writing the animation as {} instead",
                    path.with_extension("apng").display()
                );
                ("apng".to_string(), path.with_extension("apng"))
            }
            _ => (ext.clone(), path.to_path_buf()),
        };
        let temp = temp_path(&path);
        let io = |source: std::io::Error| Error::Io {
            path: path.clone(),
            source,
        };
        let to_io = |e: &dyn std::fmt::Display| io(std::io::Error::other(e.to_string()));
        let file = || File::create(&temp).map(BufWriter::new).map_err(io);
        let sink = match ext.as_str() {
            "gif" => {
                let (w, h) = (gif_side(width, &path)?, gif_side(height, &path)?);
                let mut encoder = gif::Encoder::new(file()?, w, h, &[]).map_err(|e| to_io(&e))?;
                encoder
                    .set_repeat(gif::Repeat::Infinite)
                    .map_err(|e| to_io(&e))?;
                Sink::Gif(encoder)
            }
            "apng" | "png" => {
                let mut encoder = png::Encoder::new(file()?, width, height);
                encoder.set_color(png::ColorType::Rgb);
                encoder.set_depth(png::BitDepth::Eight);
                let set = |r: std::result::Result<(), png::EncodingError>| r.map_err(|e| to_io(&e));
                set(encoder.set_animated(frames.max(1), 0))?;
                set(encoder.set_frame_delay(1, fps))?;
                Sink::Apng(encoder.write_header().map_err(|e| to_io(&e))?)
            }
            "mp4" => {
                let mut child = Command::new("ffmpeg")
                    .args([
                        "-y",
                        "-loglevel",
                        "error",
                        "-f",
                        "rawvideo",
                        "-pix_fmt",
                        "rgb24",
                    ])
                    .args([
                        "-s",
                        &format!("{width}x{height}"),
                        "-framerate",
                        &fps.to_string(),
                    ])
                    .args([
                        "-i",
                        "-",
                        "-vf",
                        "pad=ceil(iw/2)*2:ceil(ih/2)*2",
                        "-pix_fmt",
                    ])
                    .args(["yuv420p", "-f", "mp4"])
                    .arg(&temp)
                    .stdin(Stdio::piped())
                    .spawn()
                    .map_err(io)?;
                let stdin = child.stdin.take().expect("stdin is piped");
                Sink::Ffmpeg(child, stdin)
            }
            _ => {
                return Err(Error::InvalidSetting {
                    name: "--animation",
                    value: path.display().to_string(),
                    message: "the extension must be .gif, .apng (or .png) or .mp4".into(),
                });
            }
        };
        Ok(Animation {
            sink,
            path,
            temp,
            size: (width, height),
            fps: fps.max(1),
            frames: 0,
        })
    }

    /// The file the animation is written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one frame (the same size as the animation's).
    pub fn push(&mut self, image: &Image) -> Result<()> {
        if (image.width, image.height) != self.size {
            return Err(Error::invalid(
                "animation frame",
                format!(
                    "{}×{} for an animation of {}×{}",
                    image.width, image.height, self.size.0, self.size.1
                ),
            ));
        }
        let path = self.path.clone();
        let io = |e: &dyn std::fmt::Display| Error::Io {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        };
        match &mut self.sink {
            Sink::Gif(encoder) => {
                let mut rgba = image.rgba.clone();
                // Speed 10 of NeuQuant's 1 (best) to 30 (fastest).
                // The sides were checked to fit a u16 when the animation was created.
                let (w, h) = (self.size.0 as u16, self.size.1 as u16);
                let mut frame = gif::Frame::from_rgba_speed(w, h, &mut rgba, 10);
                frame.delay = (100 / self.fps).max(2);
                encoder.write_frame(&frame).map_err(|e| io(&e))?;
            }
            Sink::Apng(writer) => writer.write_image_data(&rgb(image)).map_err(|e| io(&e))?,
            Sink::Ffmpeg(_, stdin) => stdin.write_all(&rgb(image)).map_err(|e| io(&e))?,
        }
        self.frames += 1;
        Ok(())
    }

    /// Closes the file and renames it over the target; the number of frames pushed must be
    /// the number announced for an APNG.
    pub fn finish(self) -> Result<PathBuf> {
        let Animation {
            sink, path, temp, ..
        } = self;
        let result = (|| -> std::io::Result<()> {
            let file = match sink {
                Sink::Gif(encoder) => Some(encoder.into_inner()?),
                Sink::Apng(writer) => {
                    writer.finish().map_err(std::io::Error::other)?;
                    None
                }
                Sink::Ffmpeg(mut child, stdin) => {
                    drop(stdin);
                    let status = child.wait()?;
                    if !status.success() {
                        return Err(std::io::Error::other(format!("ffmpeg failed: {status}")));
                    }
                    None
                }
            };
            if let Some(file) = file {
                file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            }
            std::fs::rename(&temp, &path)
        })();
        result.map_err(|source| {
            let _ = std::fs::remove_file(&temp);
            Error::Io {
                path: path.clone(),
                source,
            }
        })?;
        Ok(path)
    }
}

/// A side of a GIF frame: at most 65535 pixels.
fn gif_side(side: u32, path: &Path) -> Result<u16> {
    u16::try_from(side).map_err(|_| Error::InvalidSetting {
        name: "--animation",
        value: path.display().to_string(),
        message: format!("a GIF side is at most 65535 pixels, not {side}"),
    })
}

/// How the frames of a run are drawn (`simulate --camera`, `--color-by`, `--frame-size`).
#[derive(Debug, Clone, PartialEq)]
pub struct FrameOptions {
    /// Where the camera is.
    pub camera: CameraSpec,
    /// What colors the bodies.
    pub color_by: ColorField,
    /// Image width, pixels.
    pub width: u32,
    /// Image height, pixels.
    pub height: u32,
    /// Also assemble the frames into this animation (`.gif`, `.apng`, `.mp4`).
    pub animation: Option<PathBuf>,
    /// Frames per second of the animation.
    pub fps: u16,
}

impl Default for FrameOptions {
    fn default() -> Self {
        FrameOptions {
            camera: CameraSpec::default(),
            color_by: ColorField::default(),
            width: 960,
            height: 600,
            animation: None,
            fps: 10,
        }
    }
}

/// The frames of a run: each one rendered once, written as `DIR/frame_XXXX.png` and appended
/// to the animation. The camera frames the scene as it is at the start, and the color scale
/// only widens from frame to frame (its colors keep their meaning along the animation).
#[derive(Debug)]
pub struct RunFrames {
    renderer: Renderer,
    style: Style,
    color_by: ColorField,
    scene: String,
    solver: String,
    animation: Option<Animation>,
}

impl RunFrames {
    /// Opens a device (lavapipe without a GPU) and starts the animation, if any, of
    /// `frames` frames, for the run of `scene` (its name and world at the start) with
    /// `solver`.
    pub fn new(
        scene: &str,
        world: &World,
        solver: &str,
        options: &FrameOptions,
        frames: usize,
    ) -> Result<Self> {
        let renderer = Renderer::new(Arc::new(GpuContext::new()?));
        let start = SceneFrame::from_world(world, options.color_by);
        let style = Style {
            width: options.width,
            height: options.height,
            camera: options.camera,
            bounds: Some(scene_bounds(&start)),
            scale: ColorScale::spanning(start.values, options.color_by.label()),
            ..Style::default()
        };
        let animation = options
            .animation
            .as_deref()
            .map(|path| {
                let count = u32::try_from(frames).unwrap_or(u32::MAX);
                Animation::create(path, options.width, options.height, count, options.fps)
            })
            .transpose()?;
        Ok(RunFrames {
            renderer,
            style,
            color_by: options.color_by,
            scene: scene.to_string(),
            solver: solver.to_string(),
            animation,
        })
    }

    /// The device the frames are rendered on (a GPU-resident step shares it, so that its
    /// state can be drawn without a readback).
    pub fn context(&self) -> Arc<GpuContext> {
        self.renderer.context().clone()
    }

    /// Whether the bodies are colored by speed: what [`RunFrames::write_state`] draws.
    pub fn colors_by_speed(&self) -> bool {
        self.color_by == ColorField::Speed
    }

    /// Renders `world` as `path` (a PNG) and appends it to the animation.
    pub fn write(&mut self, world: &World, path: &Path) -> Result<()> {
        let frame = SceneFrame::from_world(world, self.color_by);
        let now = ColorScale::spanning(frame.values.iter().copied(), self.color_by.label());
        self.style.scale = self.style.scale.union(&now);
        self.style.caption = Some(caption(&self.scene, world.steps, world.time, &self.solver));
        let image = self.renderer.render(&frame, &self.style)?;
        self.keep(&image, path)
    }

    /// Renders the spheres of a GPU-resident step from its state on the device (`spheres`,
    /// on [`RunFrames::context`]'s device) with `world`'s other bodies (its spheres, not
    /// read back, are left out) as `path`, and appends it to the animation. Colored by
    /// speed on the scale as it stands (the speeds are not read back to widen it).
    pub fn write_state(
        &mut self,
        world: &World,
        spheres: StateSpheres<'_>,
        path: &Path,
    ) -> Result<()> {
        let all = SceneFrame::from_world(world, ColorField::Speed);
        let others: Vec<usize> = (0..all.shapes.len())
            .filter(|&i| !matches!(all.shapes[i], Shape::Sphere { .. }))
            .collect();
        let frame = SceneFrame {
            shapes: others.iter().map(|&i| all.shapes[i]).collect(),
            poses: others.iter().map(|&i| all.poses[i]).collect(),
            values: others.iter().map(|&i| all.values[i]).collect(),
            links: all.links,
        };
        self.style.caption = Some(caption(&self.scene, world.steps, world.time, &self.solver));
        let image = self.renderer.render_state(&frame, &self.style, spheres)?;
        self.keep(&image, path)
    }

    /// Writes `image` as `path` (a PNG) and appends it to the animation.
    fn keep(&mut self, image: &Image, path: &Path) -> Result<()> {
        write_frame_png(path, image)?;
        if let Some(animation) = &mut self.animation {
            animation.push(image)?;
        }
        Ok(())
    }

    /// Finishes the animation; returns its path (`None` without one).
    pub fn finish(self) -> Result<Option<PathBuf>> {
        self.animation.map(Animation::finish).transpose()
    }
}
