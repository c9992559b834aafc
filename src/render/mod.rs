//! Shaded 3-D frames of a scene, rendered offscreen with wgpu into an in-memory RGBA image
//! (issue 18); writing them to files is the report layer's job.
//!
//! Spheres are ray-cast impostors (exact silhouettes and depth, `shaders/render/sphere.*`),
//! boxes and the joints' links are triangle meshes, planes are translucent polygons clipped
//! to the scene box and to each other (a container shows its floor and walls). Lambert +
//! ambient shading with a light above and to the left of the camera, 4× MSAA (alpha to
//! coverage for the impostors' edges), a perspective [`Camera`] that frames the scene's
//! bounding box from a preset direction or is placed explicitly. Bodies are colored by a
//! [`ColorField`] on a [`ColorScale`] (viridis); the overlay adds a caption, the color bar
//! with its units and a scale bar.

mod camera;
mod color;
mod geometry;
mod overlay;
mod renderer;

use nalgebra::Vector3;

pub use camera::{Bounds, Camera, CameraSpec, DEFAULT_FOV, Preset};
pub use color::{ColorField, ColorScale, colormap};
pub use geometry::scene_bounds;
pub(crate) use overlay::register_font;
pub use renderer::{Renderer, StateSpheres};

use crate::error::{Error, Result};
use crate::sim::{Joint, Pose, Shape, World};

/// What one frame shows: the bodies (shape, pose and the value of the color field) and the
/// joints' links as world-space segments.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SceneFrame {
    /// The shape of every body.
    pub shapes: Vec<Shape>,
    /// The pose of every body.
    pub poses: Vec<Pose>,
    /// The value of the color field for every body.
    pub values: Vec<f64>,
    /// Thin links drawn between the two points of each pair.
    pub links: Vec<[Vector3<f64>; 2]>,
}

impl SceneFrame {
    /// The bodies of `world` colored by `field`, its joints drawn by [`joint_links`] and
    /// each solid of finite elements as the edges of its boundary triangles.
    pub fn from_world(world: &World, field: ColorField) -> SceneFrame {
        let poses: Vec<Pose> = world.bodies.iter().map(|b| b.pose).collect();
        let ends: Vec<Link> = world.joints.iter().map(Link::of).collect();
        let mut links = joint_links(&ends, &poses);
        for solid in &world.solids {
            let x = &solid.positions;
            links.extend(solid.edges.iter().map(|&[a, b]| [x[a], x[b]]));
        }
        SceneFrame {
            shapes: world.bodies.iter().map(|b| b.shape).collect(),
            links,
            poses,
            values: field.values(world),
        }
    }

    /// Checks that there is one pose and one value per shape.
    pub fn check(&self) -> Result<()> {
        let n = self.shapes.len();
        for (field, len) in [("poses", self.poses.len()), ("values", self.values.len())] {
            if len != n {
                return Err(Error::invalid(
                    format!("scene_frame.{field}"),
                    format!("{len} entries for {n} shapes"),
                ));
            }
        }
        Ok(())
    }
}

/// The ends of a joint as the renderer draws it: the two bodies and their anchors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Body A; `None` is the ground.
    pub body_a: Option<usize>,
    /// Anchor on A, in A's frame (the world frame for the ground).
    pub anchor_a: Vector3<f64>,
    /// Body B.
    pub body_b: usize,
    /// Anchor on B, in B's frame.
    pub anchor_b: Vector3<f64>,
}

impl Link {
    /// The ends of `joint`.
    pub fn of(joint: &Joint) -> Link {
        Link {
            body_a: joint.body_a,
            anchor_a: joint.anchor_a,
            body_b: joint.body_b,
            anchor_b: joint.anchor_b,
        }
    }
}

/// The world-space segments of the joints `links` for the bodies at `poses`: each joint is
/// the polyline from body A's center (or the ground anchor) through the anchors to body B's
/// center, zero-length pieces left out.
pub fn joint_links(links: &[Link], poses: &[Pose]) -> Vec<[Vector3<f64>; 2]> {
    let mut out = Vec::new();
    for j in links {
        let b = &poses[j.body_b];
        let (start, anchor_a) = match j.body_a {
            Some(a) => (poses[a].position, poses[a].to_world(&j.anchor_a)),
            None => (j.anchor_a, j.anchor_a),
        };
        let path = [start, anchor_a, b.to_world(&j.anchor_b), b.position];
        out.extend(
            path.windows(2)
                .filter(|w| w[0] != w[1])
                .map(|w| [w[0], w[1]]),
        );
    }
    out
}

/// How a frame is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Style {
    /// Image width, pixels.
    pub width: u32,
    /// Image height, pixels.
    pub height: u32,
    /// Where the camera is.
    pub camera: CameraSpec,
    /// The box the camera frames and the planes are cut to; `None` takes the frame's
    /// [`scene_bounds`] (a run fixes it at its first frame so that the camera stays put).
    pub bounds: Option<Bounds>,
    /// The color scale of the bodies' values.
    pub scale: ColorScale,
    /// The caption (top left), if any.
    pub caption: Option<String>,
    /// Whether to draw the overlay: caption, color bar and scale bar.
    pub overlay: bool,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            width: 960,
            height: 600,
            camera: CameraSpec::default(),
            bounds: None,
            scale: ColorScale::spanning([], ColorField::Speed.label()),
            caption: None,
            overlay: true,
        }
    }
}

/// The caption of a frame of a run: scene, step, simulated time and solver.
pub fn caption(scene: &str, step: usize, time: f64, solver: &str) -> String {
    format!("{scene} · step {step} · t = {time:.3} s · {solver}")
}

/// An RGBA image, 8 bits per channel, rows from the top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `4 × width × height` bytes.
    pub rgba: Vec<u8>,
}

impl Image {
    /// The pixel at column `x`, row `y` (from the top).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }
}
