//! `signorini view`: a window (winit, X11) that replays a run from its trajectory file
//! ([`super::report::trajectory`]) or follows a simulation as it runs (`--live`: [`run`]
//! in a thread writing the trajectory, the window reading it as it grows).
//!
//! Each frame is drawn by the offscreen [`Renderer`] (with its caption, color bar and scale
//! bar) and copied into the window's surface texture on the same device. Mouse: left drag
//! orbits, right drag (or shift + left) pans, the wheel zooms. Keys: space plays or pauses,
//! the arrows step one frame, Home and End go to the first and last frame, `c` cycles the
//! color field (speed, contacts, body id), Escape or `q` quits.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use nalgebra::Vector3;
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{KeyCode, ModifiersState, PhysicalKey};
use winit::window::{Window, WindowId};

use super::report::frame::write_frame_png;
use super::report::trajectory::TrajectoryReader;
use super::run::{Outputs, run};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::render::{
    Bounds, Camera, CameraSpec, ColorField, ColorScale, Image, Renderer, Style, caption,
    scene_bounds,
};
use crate::sim::scene::Scene;
use crate::solver::Runner;

/// The color fields the `c` key cycles through (those a trajectory keeps).
const FIELDS: [ColorField; 3] = [ColorField::Speed, ColorField::Contacts, ColorField::BodyId];
/// The trajectory file a live run writes into its output folder.
pub const LIVE_TRAJECTORY: &str = "trajectory.traj";

/// A key of the viewer, as `--script` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `space`: play or pause.
    PlayPause,
    /// `right`: the next frame.
    Next,
    /// `left`: the previous frame.
    Previous,
    /// `home`: the first frame.
    First,
    /// `end`: the last frame.
    Last,
    /// `c`: the next color field.
    Color,
}

impl Key {
    /// The names `--script` takes.
    const NAMES: [(&'static str, Key); 6] = [
        ("space", Key::PlayPause),
        ("right", Key::Next),
        ("left", Key::Previous),
        ("home", Key::First),
        ("end", Key::Last),
        ("c", Key::Color),
    ];

    /// The key of a physical key code, if the viewer has one.
    fn of(code: KeyCode) -> Option<Key> {
        Some(match code {
            KeyCode::Space => Key::PlayPause,
            KeyCode::ArrowRight => Key::Next,
            KeyCode::ArrowLeft => Key::Previous,
            KeyCode::Home => Key::First,
            KeyCode::End => Key::Last,
            KeyCode::KeyC => Key::Color,
            _ => return None,
        })
    }
}

impl FromStr for Key {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Key::NAMES
            .iter()
            .find(|(name, _)| *name == s.trim())
            .map(|&(_, key)| key)
            .ok_or_else(|| Error::InvalidSetting {
                name: "--script",
                value: s.to_string(),
                message: format!(
                    "a key is one of {}",
                    Key::NAMES.map(|(name, _)| name).join(", ")
                ),
            })
    }
}

/// What the window shows and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewOptions {
    /// Window size, pixels.
    pub size: (u32, u32),
    /// The camera at the start (the mouse moves it from there).
    pub camera: CameraSpec,
    /// The color field at the start.
    pub color_by: ColorField,
    /// Keys pressed one per presented frame after the first (the replay then starts paused).
    pub script: Vec<Key>,
    /// Save the first presented frame and the one after each key of the script as
    /// `DIR/view_K.png`, then close the window.
    pub screenshots: Option<PathBuf>,
}

/// The trajectory file of `path`: the file itself, or in a folder its `trajectory.traj`,
/// else its one `.traj` file.
pub fn trajectory_in(path: &Path) -> Result<PathBuf> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let live = path.join(LIVE_TRAJECTORY);
    if live.is_file() {
        return Ok(live);
    }
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.extension().is_some_and(|e| e == "traj") {
            found.push(p);
        }
    }
    match <[PathBuf; 1]>::try_from(found) {
        Ok([one]) => Ok(one),
        Err(found) => Err(Error::invalid(
            path.display().to_string(),
            if found.is_empty() {
                "no trajectory file (*.traj) in this folder: write one with `simulate \
                 --trajectory FILE`"
                    .to_string()
            } else {
                format!("{} trajectory files: name one", found.len())
            },
        )),
    }
}

/// The event loop of the window; without a display an error that says so and points at
/// `simulate --animation`.
fn event_loop() -> Result<EventLoop<()>> {
    let no_display = |why: String| {
        Error::NoDisplay(format!(
            "{why}; without one, render the run to an animation instead: `signorini simulate \
             SCENE --snapshot-every N --animation run.gif`"
        ))
    };
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err(no_display(
            if std::env::var_os("WAYLAND_DISPLAY").is_some() {
                "DISPLAY is not set (this build opens X11 windows: a Wayland desktop serves them through XWayland)"
            } else {
                "neither DISPLAY nor WAYLAND_DISPLAY is set"
            }
            .to_string(),
        ));
    }
    EventLoop::new().map_err(|e| no_display(format!("the window system did not start ({e})")))
}

/// Replays the trajectory file of `path` (a file, or a run's folder) in a window.
pub fn view(path: &Path, options: &ViewOptions) -> Result<()> {
    let reader = TrajectoryReader::open(&trajectory_in(path)?)?;
    if let Some(note) = reader.note() {
        eprintln!("note: {note}");
    }
    show_on(event_loop()?, reader, None, options)
}

/// Steps `scene` with `solver` for `steps` steps through [`run`] in a thread (its outputs
/// into `outputs.dir`, a trajectory frame every `outputs.snapshot_every` steps, no PNG
/// frames) while the window follows its trajectory file.
pub fn live(
    scene: Scene,
    solver: Runner,
    steps: usize,
    outputs: Outputs,
    options: &ViewOptions,
) -> Result<()> {
    // The display is checked before the run starts.
    let events = event_loop()?;
    let path = outputs.dir.join(LIVE_TRAJECTORY);
    let _ = std::fs::remove_file(&path);
    let outputs = Outputs {
        trajectory: Some(path.clone()),
        no_frames: true,
        snapshot_every: outputs.snapshot_every.max(1),
        ..outputs
    };
    let (mut scene, mut solver) = (scene, solver);
    let sim = std::thread::spawn(move || {
        run(&mut scene, &mut solver, steps, &outputs, |_| {}).map(|_| ())
    });
    // The run writes the header and the first frame before its first step.
    let reader = loop {
        match TrajectoryReader::open(&path) {
            Ok(r) if r.frames() > 0 => break r,
            other if sim.is_finished() => {
                finished(sim)?;
                // The run ended well before its file could be read: what was wrong with it.
                return Err(other.err().unwrap_or_else(|| {
                    Error::invalid(path.display().to_string(), "the run wrote no frame")
                }));
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    show_on(events, reader, Some(sim), options)
}

/// The result of the run thread once it has ended.
fn finished(sim: JoinHandle<Result<()>>) -> Result<()> {
    sim.join()
        .map_err(|_| Error::Report("the simulation thread panicked".into()))?
}

/// Opens the window of `events` on `reader` (and the thread of a live run) and runs it until
/// it is closed.
fn show_on(
    events: EventLoop<()>,
    reader: TrajectoryReader,
    sim: Option<JoinHandle<Result<()>>>,
    options: &ViewOptions,
) -> Result<()> {
    let mut app = Viewer::new(reader, sim, options)?;
    events
        .run_app(&mut app)
        .map_err(|e| Error::NoDisplay(format!("the event loop failed: {e}")))?;
    if let Some(e) = app.error {
        return Err(e);
    }
    match app.sim.take() {
        Some(sim) if sim.is_finished() => finished(sim),
        _ => Ok(()),
    }
}

/// The orbiting camera: a target, and the eye on a sphere around it.
#[derive(Debug, Clone, Copy)]
struct Orbit {
    target: Vector3<f64>,
    distance: f64,
    /// Azimuth of the eye about `+z`, radians.
    azimuth: f64,
    /// Elevation of the eye above the target's horizontal plane, radians.
    elevation: f64,
    fov: f64,
}

impl Orbit {
    /// The orbit through `camera`.
    fn of(camera: &Camera) -> Orbit {
        let d = camera.eye - camera.target;
        let distance = d.norm();
        Orbit {
            target: camera.target,
            distance,
            azimuth: d.y.atan2(d.x),
            elevation: (d.z / distance).clamp(-1.0, 1.0).asin(),
            fov: camera.fov,
        }
    }

    fn eye(&self) -> Vector3<f64> {
        let (az, el) = (self.azimuth, self.elevation);
        self.target
            + self.distance * Vector3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin())
    }

    fn spec(&self) -> CameraSpec {
        CameraSpec::Explicit {
            eye: self.eye().into(),
            target: self.target.into(),
            fov: self.fov,
        }
    }

    /// Turns by a drag of `(dx, dy)` pixels.
    fn rotate(&mut self, dx: f64, dy: f64) {
        const PER_PIXEL: f64 = 0.008;
        const LIMIT: f64 = 1.55;
        self.azimuth -= dx * PER_PIXEL;
        self.elevation = (self.elevation + dy * PER_PIXEL).clamp(-LIMIT, LIMIT);
    }

    /// Moves the target by a drag of `(dx, dy)` pixels in a view `height` pixels high: the
    /// point under the cursor at the target's depth follows it.
    fn pan(&mut self, dx: f64, dy: f64, height: f64) {
        let forward = (self.target - self.eye()).normalize();
        let right = forward.cross(&Vector3::z()).normalize();
        let up = right.cross(&forward);
        let per_pixel = 2.0 * self.distance * (0.5 * self.fov.to_radians()).tan() / height;
        self.target += per_pixel * (-dx * right + dy * up);
    }

    /// Zooms in by `steps` wheel steps (out when negative).
    fn zoom(&mut self, steps: f64) {
        self.distance *= 0.85f64.powf(steps);
    }
}

/// The window and what draws into it.
struct Surface {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: Arc<GpuContext>,
    renderer: Renderer,
}

/// The viewer's state: the file, the frame shown, the camera, the mouse.
struct Viewer {
    reader: TrajectoryReader,
    sim: Option<JoinHandle<Result<()>>>,
    options: ViewOptions,
    surface: Option<Surface>,
    frame: usize,
    playing: bool,
    field: ColorField,
    scale: Option<ColorScale>,
    bounds: Bounds,
    orbit: Option<Orbit>,
    cursor: Option<(f64, f64)>,
    buttons: (bool, bool),
    modifiers: ModifiersState,
    /// Frames presented so far.
    presented: usize,
    error: Option<Error>,
}

impl Viewer {
    fn new(
        mut reader: TrajectoryReader,
        sim: Option<JoinHandle<Result<()>>>,
        options: &ViewOptions,
    ) -> Result<Viewer> {
        let first = reader.frame(0)?;
        let bounds = scene_bounds(&reader.header().scene_frame(&first, options.color_by)?);
        Ok(Viewer {
            reader,
            playing: options.script.is_empty(),
            sim,
            options: options.clone(),
            surface: None,
            frame: 0,
            field: options.color_by,
            scale: None,
            bounds,
            orbit: None,
            cursor: None,
            buttons: (false, false),
            modifiers: ModifiersState::empty(),
            presented: 0,
            error: None,
        })
    }

    /// Opens the window and its surface.
    fn open(&mut self, events: &ActiveEventLoop) -> Result<()> {
        let (w, h) = self.options.size;
        let attributes = Window::default_attributes()
            .with_title(format!("signorini view · {}", self.reader.header().scene))
            .with_inner_size(PhysicalSize::new(w, h));
        let window = Arc::new(
            events
                .create_window(attributes)
                .map_err(|e| Error::NoDisplay(format!("cannot open a window: {e}")))?,
        );
        let (ctx, surface, caps) = GpuContext::with_surface(window.clone())?;
        // The frames are sRGB bytes copied as they are: any 8-bit RGBA or BGRA format shows
        // them unchanged.
        use wgpu::TextureFormat as F;
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| matches!(f, F::Bgra8UnormSrgb | F::Rgba8UnormSrgb | F::Bgra8Unorm | F::Rgba8Unorm))
            .filter(|_| caps.usages.contains(wgpu::TextureUsages::COPY_DST))
            .ok_or_else(|| {
                Error::Gpu(format!(
                    "the window's surface takes no copied 8-bit RGBA frames (formats {:?}, usages {:?})",
                    caps.formats, caps.usages
                ))
            })?;
        let size = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::COPY_DST,
            format,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::Fifo,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps.alpha_modes[0],
            view_formats: vec![],
            color_space: wgpu::SurfaceColorSpace::Auto,
        };
        surface.configure(&ctx.device, &config);
        let ctx = Arc::new(ctx);
        self.surface = Some(Surface {
            renderer: Renderer::new(ctx.clone()),
            window,
            surface,
            config,
            ctx,
        });
        Ok(())
    }

    /// Applies a key.
    fn press(&mut self, key: Key) {
        let last = self.reader.frames() - 1;
        match key {
            Key::PlayPause => self.playing = !self.playing,
            Key::Next => self.frame = (self.frame + 1).min(last),
            Key::Previous => self.frame = self.frame.saturating_sub(1),
            Key::First => self.frame = 0,
            Key::Last => self.frame = last,
            Key::Color => {
                let k = FIELDS.iter().position(|f| *f == self.field).unwrap_or(0);
                self.field = FIELDS[(k + 1) % FIELDS.len()];
                self.scale = None;
            }
        }
        if key != Key::PlayPause {
            self.playing = false;
        }
    }

    /// Renders the current frame at the surface's size.
    fn render(&mut self) -> Result<Image> {
        let surface = self.surface.as_mut().expect("opened");
        let (width, height) = (surface.config.width, surface.config.height);
        let aspect = f64::from(width) / f64::from(height);
        let orbit = *self.orbit.get_or_insert_with(|| {
            Orbit::of(&Camera::new(&self.options.camera, &self.bounds, aspect))
        });
        let frame = self.reader.frame(self.frame)?;
        let header = self.reader.header();
        let scene = header.scene_frame(&frame, self.field)?;
        // The scale only widens while a field is shown: its colors keep their meaning.
        let now = ColorScale::spanning(scene.values.iter().copied(), self.field.label());
        let scale = match &self.scale {
            Some(s) => s.union(&now),
            None => now,
        };
        self.scale = Some(scale.clone());
        let state = if self.playing { "playing" } else { "paused" };
        let style = Style {
            width: width.max(16),
            height: height.max(16),
            camera: orbit.spec(),
            bounds: Some(self.bounds),
            scale,
            caption: Some(format!(
                "{} · frame {}/{} · {state}",
                caption(
                    &header.scene,
                    frame.step as usize,
                    frame.time,
                    &header.solver
                ),
                self.frame + 1,
                self.reader.frames()
            )),
            overlay: true,
        };
        surface.renderer.render(&scene, &style)
    }

    /// Draws the current frame into the window, saves the screenshot the script asks for,
    /// and moves on (the next frame when playing, the next key of the script).
    fn redraw(&mut self, events: &ActiveEventLoop) -> Result<()> {
        if self.sim.is_some() {
            self.reader.refresh()?;
        }
        let image = self.render()?;
        let surface = self.surface.as_ref().expect("opened");
        let texture = match surface.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            other => {
                // Lost or outdated (a resize under way): configure again and draw next time.
                eprintln!("note: the window's surface was {other:?}: configured again");
                surface
                    .surface
                    .configure(&surface.ctx.device, &surface.config);
                surface.window.request_redraw();
                return Ok(());
            }
        };
        let bgra = matches!(
            surface.config.format,
            wgpu::TextureFormat::Bgra8UnormSrgb | wgpu::TextureFormat::Bgra8Unorm
        );
        let mut bytes = image.rgba.clone();
        if bgra {
            for p in bytes.chunks_exact_mut(4) {
                p.swap(0, 2);
            }
        }
        let size = texture.texture.size();
        if (size.width, size.height) == (image.width, image.height) {
            surface.ctx.queue.write_texture(
                texture.texture.as_image_copy(),
                &bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(4 * image.width),
                    rows_per_image: Some(image.height),
                },
                size,
            );
        }
        surface.window.pre_present_notify();
        surface.ctx.queue.present(texture);
        let window = surface.window.clone();
        if let Some(dir) = &self.options.screenshots {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            write_frame_png(&dir.join(format!("view_{}.png", self.presented)), &image)?;
        }
        self.presented += 1;
        let script = &self.options.script;
        if let Some(&key) = script.get(self.presented - 1) {
            self.press(key);
        } else if self.options.screenshots.is_some() {
            events.exit();
            return Ok(());
        } else if self.playing {
            let shown = self.frame;
            let last = self.reader.frames() - 1;
            // A live run is followed at its newest frame.
            self.frame = if self.sim.is_some() {
                last
            } else {
                (self.frame + 1).min(last)
            };
            self.playing = self.sim.is_some() || self.frame < last;
            if self.sim.is_some() && self.frame == shown {
                // Nothing new from the run yet: wait a little before looking again.
                std::thread::sleep(Duration::from_millis(30));
            }
        } else {
            return Ok(());
        }
        window.request_redraw();
        Ok(())
    }

    /// Handles a window event.
    fn event(&mut self, events: &ActiveEventLoop, event: WindowEvent) -> Result<()> {
        let Some(surface) = self.surface.as_mut() else {
            return Ok(());
        };
        let window = surface.window.clone();
        match event {
            WindowEvent::CloseRequested => events.exit(),
            WindowEvent::Resized(size) => {
                surface.config.width = size.width.max(1);
                surface.config.height = size.height.max(1);
                surface
                    .surface
                    .configure(&surface.ctx.device, &surface.config);
                window.request_redraw();
            }
            WindowEvent::RedrawRequested => self.redraw(events)?,
            WindowEvent::ModifiersChanged(m) => self.modifiers = m.state(),
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    if matches!(code, KeyCode::Escape | KeyCode::KeyQ) {
                        events.exit();
                    } else if let Some(key) = Key::of(code) {
                        self.press(key);
                        window.request_redraw();
                    }
                }
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let down = state == ElementState::Pressed;
                match button {
                    MouseButton::Left => self.buttons.0 = down,
                    MouseButton::Right | MouseButton::Middle => self.buttons.1 = down,
                    _ => {}
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                let now = (position.x, position.y);
                if let (Some((x, y)), Some(orbit)) = (self.cursor, self.orbit.as_mut()) {
                    let (dx, dy) = (now.0 - x, now.1 - y);
                    let pan = self.buttons.1 || (self.buttons.0 && self.modifiers.shift_key());
                    if pan {
                        orbit.pan(dx, dy, f64::from(surface.config.height));
                    } else if self.buttons.0 {
                        orbit.rotate(dx, dy);
                    }
                    if self.buttons.0 || self.buttons.1 {
                        window.request_redraw();
                    }
                }
                self.cursor = Some(now);
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => f64::from(y),
                    MouseScrollDelta::PixelDelta(p) => p.y / 40.0,
                };
                if let Some(orbit) = self.orbit.as_mut() {
                    orbit.zoom(steps);
                    window.request_redraw();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Keeps the first error and closes the window.
    fn fail(&mut self, events: &ActiveEventLoop, result: Result<()>) {
        if let Err(e) = result {
            self.error.get_or_insert(e);
            events.exit();
        }
    }
}

impl ApplicationHandler for Viewer {
    fn resumed(&mut self, events: &ActiveEventLoop) {
        if self.surface.is_none() {
            let opened = self.open(events);
            if opened.is_ok() {
                self.surface
                    .as_ref()
                    .expect("opened")
                    .window
                    .request_redraw();
            }
            self.fail(events, opened);
        }
    }

    fn window_event(&mut self, events: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let result = self.event(events, event);
        self.fail(events, result);
    }
}
