//! PNG snapshots of a scene: a front view (x right, z up) and a top view (x right, y up) side
//! by side, drawn with `plotters` on a white background, without any text.
//!
//! Spheres are lightly filled circles and boxes the lightly filled outline of their projected
//! corners, both colored by speed from blue (at rest) to red (at the top of the color scale).
//! Planes are drawn as a dark line where they cut the view's bounds when they are seen edge-on
//! (their normal lies in the view's plane); a thin gray frame marks the bounds. Both views
//! keep an aspect ratio of 1:1 in world units; bodies are drawn from far to near.

use std::io;
use std::path::Path;

use nalgebra::Vector3;
use plotters::coord::Shift;
use plotters::prelude::{
    BitMapBackend, BitMapElement, Circle, Color, DrawingArea, IntoDrawingArea, PathElement,
    Polygon, RGBColor, Rectangle, WHITE,
};

use super::{SceneView, box_corners, write_via_temp};
use crate::error::{Error, Result};
use crate::sim::{Pose, Shape};

/// An axis-aligned box of the world: its lowest and its highest corner.
pub type Bounds = ([f64; 3], [f64; 3]);

/// Size of the image, the part of the world it shows and the color scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotSettings {
    /// Width of the image in pixels (both views together).
    pub width: u32,
    /// Height of the image in pixels.
    pub height: u32,
    /// The part of the world to show; `None` fits the bounding box of the bodies that are not
    /// planes, with a margin of 5% of its largest extent.
    pub bounds: Option<Bounds>,
    /// The speed drawn in red, m/s; `None` takes the largest speed of the scene.
    pub max_speed: Option<f64>,
}

impl Default for SnapshotSettings {
    fn default() -> Self {
        SnapshotSettings {
            width: 1200,
            height: 600,
            bounds: None,
            max_speed: None,
        }
    }
}

/// Empty border between a view's bounds and the edge of its panel, pixels.
const MARGIN_PX: u32 = 10;
/// How much of its color a body's fill takes (the rest is the white background).
const FILL_OPACITY: f64 = 0.3;
/// Color of the bounds' frame.
const FRAME_COLOR: RGBColor = RGBColor(170, 170, 170);
/// Color of the planes.
const PLANE_COLOR: RGBColor = RGBColor(40, 40, 40);
/// Color of the slowest bodies.
const SLOW_COLOR: RGBColor = RGBColor(0, 0, 255);
/// Color of the fastest bodies.
const FAST_COLOR: RGBColor = RGBColor(255, 0, 0);

/// One of the two views: the world axes that point right, up and away from the viewer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axes {
    right: usize,
    up: usize,
    depth: usize,
    /// +1 when the viewer looks along `+depth`, −1 when along `−depth`.
    looking: f64,
}

/// The front view: x right, z up, looking along +y.
pub(crate) const FRONT: Axes = Axes {
    right: 0,
    up: 2,
    depth: 1,
    looking: 1.0,
};
/// The top view: x right, y up, looking down along −z.
pub(crate) const TOP: Axes = Axes {
    right: 0,
    up: 1,
    depth: 2,
    looking: -1.0,
};

impl Axes {
    /// The view-plane coordinates (right, up) of a world point.
    fn plane(&self, p: &[f64; 3]) -> [f64; 2] {
        [p[self.right], p[self.up]]
    }

    /// How far from the viewer a world point is, along the view direction.
    fn distance(&self, p: &Vector3<f64>) -> f64 {
        self.looking * p[self.depth]
    }
}

/// Maps the world points of one view to the pixels of its panel: the bounds fill the panel
/// less its margin, centered, with the same scale on both axes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PixelMap {
    axes: Axes,
    world_center: [f64; 2],
    pixel_center: [f64; 2],
    /// Pixels per meter.
    scale: f64,
}

impl PixelMap {
    /// The map of `axes` that fits `bounds` into a panel of `size` pixels.
    pub(crate) fn new(axes: Axes, bounds: &Bounds, size: (u32, u32)) -> Self {
        let (lo, hi) = (axes.plane(&bounds.0), axes.plane(&bounds.1));
        let usable = |pixels: u32| f64::from(pixels.saturating_sub(2 * MARGIN_PX));
        let scale = (usable(size.0) / (hi[0] - lo[0])).min(usable(size.1) / (hi[1] - lo[1]));
        PixelMap {
            axes,
            world_center: [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1])],
            pixel_center: [0.5 * f64::from(size.0), 0.5 * f64::from(size.1)],
            scale,
        }
    }

    /// The pixel of view-plane coordinates (right, up); pixel rows grow downwards.
    fn pixel_of_plane(&self, q: [f64; 2]) -> (i32, i32) {
        let x = self.pixel_center[0] + (q[0] - self.world_center[0]) * self.scale;
        let y = self.pixel_center[1] - (q[1] - self.world_center[1]) * self.scale;
        (x.round() as i32, y.round() as i32)
    }

    /// The pixel of a world point.
    pub(crate) fn pixel(&self, p: &Vector3<f64>) -> (i32, i32) {
        self.pixel_of_plane(self.axes.plane(&[p.x, p.y, p.z]))
    }

    /// A world length in pixels, at least one.
    fn length(&self, l: f64) -> u32 {
        ((l * self.scale).round() as u32).max(1)
    }
}

/// The color of `speed` on the scale from 0 (blue) to `max_speed` (red); speeds outside the
/// scale take the color of its nearest end.
pub(crate) fn speed_color(speed: f64, max_speed: f64) -> RGBColor {
    let t = if max_speed > 0.0 {
        (speed / max_speed).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mix = |a: u8, b: u8| (f64::from(a) + t * (f64::from(b) - f64::from(a))).round() as u8;
    RGBColor(
        mix(SLOW_COLOR.0, FAST_COLOR.0),
        mix(SLOW_COLOR.1, FAST_COLOR.1),
        mix(SLOW_COLOR.2, FAST_COLOR.2),
    )
}

/// The world bounding box of a body, `None` for a plane.
fn body_bounds(shape: &Shape, pose: &Pose) -> Option<Bounds> {
    match shape {
        Shape::Sphere { radius } => {
            let (lo, hi) = (
                pose.position.add_scalar(-radius),
                pose.position.add_scalar(*radius),
            );
            Some((lo.into(), hi.into()))
        }
        Shape::Box { half_extents } => {
            let corners = box_corners(half_extents, pose);
            let lo = corners.iter().fold(corners[0], |a, c| a.inf(c));
            let hi = corners.iter().fold(corners[0], |a, c| a.sup(c));
            Some((lo.into(), hi.into()))
        }
        Shape::Plane => None,
    }
}

/// The bounding box of the bodies that are not planes, grown by 5% of its largest extent on
/// every side; the cube `[-1, 1]³` when there are none.
pub(crate) fn fit_bounds(view: &SceneView) -> Bounds {
    let Some((mut lo, mut hi)) = view
        .bodies()
        .filter_map(|(shape, pose, _)| body_bounds(shape, pose))
        .reduce(|(lo, hi), (l, h)| {
            (
                std::array::from_fn(|k| lo[k].min(l[k])),
                std::array::from_fn(|k| hi[k].max(h[k])),
            )
        })
    else {
        return ([-1.0; 3], [1.0; 3]);
    };
    let extent = (0..3).map(|k| hi[k] - lo[k]).fold(0.0, f64::max);
    let margin = if extent > 0.0 { 0.05 * extent } else { 1.0 };
    for k in 0..3 {
        lo[k] -= margin;
        hi[k] += margin;
    }
    (lo, hi)
}

/// The part of the infinite line `p + t d` inside the rectangle `[lo, hi]`, if any.
pub(crate) fn clip_line(
    p: [f64; 2],
    d: [f64; 2],
    lo: [f64; 2],
    hi: [f64; 2],
) -> Option<([f64; 2], [f64; 2])> {
    let (mut t0, mut t1) = (f64::NEG_INFINITY, f64::INFINITY);
    for k in 0..2 {
        if d[k] == 0.0 {
            if p[k] < lo[k] || p[k] > hi[k] {
                return None;
            }
        } else {
            let (a, b) = ((lo[k] - p[k]) / d[k], (hi[k] - p[k]) / d[k]);
            t0 = t0.max(a.min(b));
            t1 = t1.min(a.max(b));
        }
    }
    let at = |t: f64| [p[0] + t * d[0], p[1] + t * d[1]];
    (t0 <= t1).then(|| (at(t0), at(t1)))
}

/// The convex hull of pixels, its vertices in order around it (Andrew's monotone chain).
pub(crate) fn convex_hull(mut points: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    points.sort_unstable();
    points.dedup();
    if points.len() < 3 {
        return points;
    }
    let mut hull = half_hull(points.iter());
    let mut upper = half_hull(points.iter().rev());
    hull.pop();
    upper.pop();
    hull.extend(upper);
    hull
}

/// One chain of the monotone chain algorithm over points sorted in one direction.
fn half_hull<'a>(points: impl Iterator<Item = &'a (i32, i32)>) -> Vec<(i32, i32)> {
    let cross = |o: (i32, i32), a: (i32, i32), b: (i32, i32)| {
        let d = |p: (i32, i32), q: (i32, i32)| {
            (
                i64::from(p.0) - i64::from(q.0),
                i64::from(p.1) - i64::from(q.1),
            )
        };
        let ((ax, ay), (bx, by)) = (d(a, o), d(b, o));
        ax * by - ay * bx
    };
    let mut chain: Vec<(i32, i32)> = Vec::new();
    for &p in points {
        while let [.., o, a] = chain[..] {
            if cross(o, a, p) > 0 {
                break;
            }
            chain.pop();
        }
        chain.push(p);
    }
    chain
}

/// Writes the snapshot of `view` to the PNG file `path` (which must end in `.png`). The file
/// appears whole or not at all.
pub fn write_snapshot(path: &Path, view: &SceneView, settings: &SnapshotSettings) -> Result<()> {
    view.check()?;
    let bounds = settings.bounds.unwrap_or_else(|| fit_bounds(view));
    check_settings(settings, &bounds)?;
    let max_speed = settings
        .max_speed
        .unwrap_or_else(|| view.speeds.iter().copied().fold(0.0, f64::max));
    let left = settings.width / 2;
    let panels = [
        (0, (left, settings.height), FRONT),
        (left, (settings.width - left, settings.height), TOP),
    ];
    write_via_temp(path, |temp| {
        let root = BitMapBackend::new(temp, (settings.width, settings.height)).into_drawing_area();
        for (x, size, axes) in panels {
            let pixels = render_panel(
                view,
                &PixelMap::new(axes, &bounds, size),
                &bounds,
                size,
                max_speed,
            )?;
            let element = BitMapElement::with_owned_buffer((x as i32, 0), size, pixels)
                .ok_or_else(|| io::Error::other("panel buffer of the wrong size"))?;
            root.draw(&element).map_err(io::Error::other)?;
        }
        root.present().map_err(io::Error::other)
    })
}

/// Rejects an image too small for its margins and bounds that are empty or not finite.
fn check_settings(settings: &SnapshotSettings, bounds: &Bounds) -> Result<()> {
    let min_panel = 2 * MARGIN_PX + 1;
    if settings.width / 2 < min_panel || settings.height < min_panel {
        return Err(Error::InvalidSetting {
            name: "snapshot size",
            value: format!("{}x{}", settings.width, settings.height),
            message: format!("must be at least {}x{min_panel} pixels", 2 * min_panel),
        });
    }
    let (lo, hi) = bounds;
    if !(0..3).all(|k| lo[k].is_finite() && hi[k].is_finite() && lo[k] < hi[k]) {
        return Err(Error::InvalidSetting {
            name: "snapshot bounds",
            value: format!("{lo:?} .. {hi:?}"),
            message: "must be finite with lowest < highest on every axis".into(),
        });
    }
    Ok(())
}

/// The drawing area of one view.
type Panel<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// Draws one view into an RGB buffer of `size` pixels (drawing outside it is clipped).
fn render_panel(
    view: &SceneView,
    map: &PixelMap,
    bounds: &Bounds,
    size: (u32, u32),
    max_speed: f64,
) -> io::Result<Vec<u8>> {
    let mut pixels = vec![255; 3 * size.0 as usize * size.1 as usize];
    {
        let panel = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        panel.fill(&WHITE).map_err(io::Error::other)?;
        draw_frame(&panel, map, bounds)?;
        let mut solids = Vec::new();
        for (shape, pose, speed) in view.bodies() {
            match shape {
                Shape::Plane => draw_plane(&panel, map, bounds, pose)?,
                _ => solids.push((shape, pose, speed)),
            }
        }
        solids.sort_by(|a, b| {
            map.axes
                .distance(&b.1.position)
                .total_cmp(&map.axes.distance(&a.1.position))
        });
        for (shape, pose, speed) in solids {
            draw_solid(&panel, map, shape, pose, speed_color(speed, max_speed))?;
        }
        panel.present().map_err(io::Error::other)?;
    }
    Ok(pixels)
}

/// The thin frame around the view's bounds.
fn draw_frame(panel: &Panel, map: &PixelMap, bounds: &Bounds) -> io::Result<()> {
    let corners = [
        map.pixel(&Vector3::from(bounds.0)),
        map.pixel(&Vector3::from(bounds.1)),
    ];
    panel
        .draw(&Rectangle::new(corners, FRAME_COLOR.stroke_width(1)))
        .map_err(io::Error::other)
}

/// A plane seen edge-on, as the segment where it cuts the view's bounds; others are skipped.
fn draw_plane(panel: &Panel, map: &PixelMap, bounds: &Bounds, pose: &Pose) -> io::Result<()> {
    let axes = map.axes;
    let normal = pose.orientation * Vector3::z();
    if normal[axes.depth].abs() > 1e-9 {
        return Ok(());
    }
    let p = axes.plane(&pose.position.into());
    let direction = [-normal[axes.up], normal[axes.right]];
    let (lo, hi) = (axes.plane(&bounds.0), axes.plane(&bounds.1));
    let Some((a, b)) = clip_line(p, direction, lo, hi) else {
        return Ok(());
    };
    let segment = vec![map.pixel_of_plane(a), map.pixel_of_plane(b)];
    panel
        .draw(&PathElement::new(segment, PLANE_COLOR.stroke_width(2)))
        .map_err(io::Error::other)
}

/// Whether the pixel bounding box of `points` meets the panel (what does not is not drawn).
fn in_panel(panel: &Panel, points: &[(i32, i32)]) -> bool {
    let (w, h) = panel.dim_in_pixel();
    let inside = |coord: fn(&(i32, i32)) -> i32, size: u32| {
        let lowest = points.iter().map(coord).min().unwrap_or(i32::MAX);
        let highest = points.iter().map(coord).max().unwrap_or(i32::MIN);
        highest >= 0 && i64::from(lowest) < i64::from(size)
    };
    inside(|p| p.0, w) && inside(|p| p.1, h)
}

/// A sphere or a box (skipped when it is outside the panel): lightly filled, outlined in `color`.
fn draw_solid(
    panel: &Panel,
    map: &PixelMap,
    shape: &Shape,
    pose: &Pose,
    color: RGBColor,
) -> io::Result<()> {
    let fill = color.mix(FILL_OPACITY).filled();
    let outline = color.stroke_width(2);
    let drawn = match shape {
        Shape::Sphere { radius } => {
            let (center, r) = (map.pixel(&pose.position), map.length(*radius));
            let r_px = i32::try_from(r).unwrap_or(i32::MAX);
            let corners = [
                (center.0.saturating_sub(r_px), center.1.saturating_sub(r_px)),
                (center.0.saturating_add(r_px), center.1.saturating_add(r_px)),
            ];
            if !in_panel(panel, &corners) {
                return Ok(());
            }
            panel
                .draw(&Circle::new(center, r, fill))
                .and_then(|()| panel.draw(&Circle::new(center, r, outline)))
        }
        Shape::Box { half_extents } => {
            let corners = box_corners(half_extents, pose).map(|c| map.pixel(&c));
            if !in_panel(panel, &corners) {
                return Ok(());
            }
            let hull = convex_hull(corners.to_vec());
            let mut closed = hull.clone();
            closed.push(hull[0]);
            panel
                .draw(&Polygon::new(hull, fill))
                .and_then(|()| panel.draw(&PathElement::new(closed, outline)))
        }
        Shape::Plane => Ok(()),
    };
    drawn.map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::report::tests::temp_dir;
    use nalgebra::UnitQuaternion;

    /// A floor, three spheres (at rest, medium, fastest) and a box turned about z and x.
    fn scene() -> (Vec<Shape>, Vec<Pose>, Vec<f64>) {
        let turned = UnitQuaternion::from_euler_angles(0.4, 0.0, 0.5);
        let shapes = vec![
            Shape::Plane,
            Shape::Sphere { radius: 0.5 },
            Shape::Sphere { radius: 0.5 },
            Shape::Sphere { radius: 0.3 },
            Shape::Box {
                half_extents: [0.6, 0.4, 0.3],
            },
        ];
        let poses = vec![
            Pose::at(Vector3::zeros()),
            Pose::at(Vector3::new(0.0, 0.0, 0.5)),
            Pose::at(Vector3::new(2.0, 1.0, 0.5)),
            Pose::at(Vector3::new(1.0, -1.0, 2.0)),
            Pose {
                position: Vector3::new(-2.0, 0.5, 0.6),
                orientation: turned,
            },
        ];
        (shapes, poses, vec![0.0, 0.0, 1.0, 2.0, 0.5])
    }

    fn is_white(p: &image::Rgb<u8>) -> bool {
        p.0 == [255, 255, 255]
    }

    #[test]
    fn snapshot_shows_the_bodies_in_both_views() {
        let (shapes, poses, speeds) = scene();
        let view = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &speeds,
        };
        let settings = SnapshotSettings {
            width: 800,
            height: 300,
            ..Default::default()
        };
        let path = temp_dir("snapshot").join("scene.png");
        write_snapshot(&path, &view, &settings).unwrap();

        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (800, 300));
        assert!(is_white(img.get_pixel(0, 0)) && is_white(img.get_pixel(799, 299)));

        let bounds = fit_bounds(&view);
        for (offset, axes) in [(0, FRONT), (400, TOP)] {
            let map = PixelMap::new(axes, &bounds, (400, 300));
            let at = |p: &Vector3<f64>| {
                let (x, y) = map.pixel(p);
                *img.get_pixel((x + offset) as u32, y as u32)
            };
            for pose in &poses[1..] {
                assert!(!is_white(&at(&pose.position)), "{axes:?} {pose:?}");
            }
            // The sphere at rest is blue, the fastest red.
            let (slow, fast) = (at(&poses[1].position).0, at(&poses[3].position).0);
            assert!(slow[2] > slow[0] && fast[0] > fast[2], "{slow:?} {fast:?}");
        }
    }

    #[test]
    fn floor_is_a_line_in_the_front_view_only() {
        let shapes = [Shape::Plane, Shape::Sphere { radius: 0.5 }];
        let poses = [
            Pose::at(Vector3::zeros()),
            Pose::at(Vector3::new(0.0, 0.0, 0.5)),
        ];
        let view = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &[0.0, 0.0],
        };
        let path = temp_dir("snapshot-floor").join("floor.png");
        write_snapshot(&path, &view, &SnapshotSettings::default()).unwrap();
        let img = image::open(&path).unwrap().to_rgb8();
        let bounds = fit_bounds(&view);
        let dark = |x: u32, y: i32| (y - 1..=y + 1).any(|y| img.get_pixel(x, y as u32).0[0] < 100);

        let front = PixelMap::new(FRONT, &bounds, (600, 600));
        let (x, y) = front.pixel(&Vector3::new(bounds.0[0] + 0.05, 0.0, 0.0));
        assert!(dark(x as u32, y), "no floor line at ({x}, {y})");
        // The top view sees the floor face-on: nothing is drawn far from the sphere.
        let top = PixelMap::new(TOP, &bounds, (600, 600));
        let (x, y) = top.pixel(&Vector3::new(bounds.0[0] + 0.05, bounds.0[1] + 0.05, 0.0));
        assert!(!dark(600 + x as u32, y));
    }

    #[test]
    fn pixel_map_keeps_the_aspect_ratio_and_centers_the_bounds() {
        let bounds = ([0.0, -5.0, 0.0], [4.0, 5.0, 2.0]);
        let map = PixelMap::new(FRONT, &bounds, (220, 120));
        // x spans 4 m in 200 px, z spans 2 m in 100 px: 50 px per meter on both axes.
        assert_eq!(map.pixel(&Vector3::new(2.0, 0.0, 1.0)), (110, 60));
        assert_eq!(map.pixel(&Vector3::new(0.0, 0.0, 0.0)), (10, 110));
        assert_eq!(map.pixel(&Vector3::new(4.0, 3.0, 2.0)), (210, 10));
        // Top view of the same bounds: y spans 10 m in 100 px, so 10 px per meter.
        let top = PixelMap::new(TOP, &bounds, (220, 120));
        assert_eq!(top.pixel(&Vector3::new(2.0, 0.0, 0.0)), (110, 60));
        assert_eq!(top.pixel(&Vector3::new(4.0, 5.0, 0.0)), (130, 10));
        assert_eq!(top.length(0.5), 5);
    }

    #[test]
    fn bodies_outside_the_bounds_are_skipped() {
        let shapes = [
            Shape::Sphere { radius: 1e6 },
            Shape::Box {
                half_extents: [1.0; 3],
            },
        ];
        let far = Vector3::new(1e7, 0.0, 0.0);
        let poses = [Pose::at(far), Pose::at(-far)];
        let view = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &[1.0, 1.0],
        };
        let settings = SnapshotSettings {
            width: 200,
            height: 100,
            bounds: Some(([-1.0; 3], [1.0; 3])),
            max_speed: None,
        };
        let path = temp_dir("snapshot-far").join("far.png");
        write_snapshot(&path, &view, &settings).unwrap();
        let img = image::open(&path).unwrap().to_rgb8();
        assert!(
            img.pixels().all(|p| p.0[0] == p.0[2]),
            "only gray: frame, no body"
        );
    }

    #[test]
    fn colormap_runs_from_blue_to_red() {
        assert_eq!(speed_color(0.0, 2.0), SLOW_COLOR);
        assert_eq!(speed_color(2.0, 2.0), FAST_COLOR);
        assert_eq!(speed_color(5.0, 2.0), FAST_COLOR);
        assert_eq!(speed_color(-1.0, 2.0), SLOW_COLOR);
        assert_eq!(speed_color(1.0, 0.0), SLOW_COLOR);
        assert_eq!(speed_color(1.0, 2.0), RGBColor(128, 0, 128));
    }

    #[test]
    fn bounds_fit_the_solids_with_a_margin() {
        let shapes = [
            Shape::Plane,
            Shape::Sphere { radius: 1.0 },
            Shape::Box {
                half_extents: [1.0; 3],
            },
        ];
        let poses = [
            Pose::at(Vector3::new(0.0, 0.0, -100.0)),
            Pose::at(Vector3::zeros()),
            Pose::at(Vector3::new(8.0, 0.0, 0.0)),
        ];
        let view = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &[0.0; 3],
        };
        let (lo, hi) = fit_bounds(&view);
        // Extent 10 m along x: margin 0.5 m.
        assert_eq!(lo, [-1.5, -1.5, -1.5]);
        assert_eq!(hi, [9.5, 1.5, 1.5]);
        let planes_only = SceneView {
            shapes: &shapes[..1],
            poses: &poses[..1],
            speeds: &[0.0],
        };
        assert_eq!(fit_bounds(&planes_only), ([-1.0; 3], [1.0; 3]));
    }

    #[test]
    fn lines_are_clipped_to_the_bounds() {
        let (lo, hi) = ([-1.0, -1.0], [3.0, 2.0]);
        assert_eq!(
            clip_line([0.0, 0.0], [1.0, 0.0], lo, hi),
            Some(([-1.0, 0.0], [3.0, 0.0]))
        );
        assert_eq!(
            clip_line([0.0, 0.0], [0.0, -2.0], lo, hi),
            Some(([0.0, 2.0], [0.0, -1.0]))
        );
        assert_eq!(
            clip_line([0.0, 1.0], [1.0, 1.0], lo, hi),
            Some(([-1.0, 0.0], [1.0, 2.0]))
        );
        assert_eq!(clip_line([0.0, 5.0], [1.0, 0.0], lo, hi), None);
        assert_eq!(clip_line([10.0, 0.0], [1.0, 1.0], lo, hi), None);
    }

    #[test]
    fn hull_drops_inner_points() {
        let hull = convex_hull(vec![(0, 0), (4, 0), (2, 1), (4, 4), (0, 4), (1, 3), (4, 0)]);
        assert_eq!(hull, [(0, 0), (4, 0), (4, 4), (0, 4)]);
        assert_eq!(convex_hull(vec![(0, 0), (1, 1), (2, 2)]), [(0, 0), (2, 2)]);
    }

    #[test]
    fn bad_settings_and_paths_are_errors() {
        let (shapes, poses, speeds) = scene();
        let view = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &speeds,
        };
        let dir = temp_dir("snapshot-errors");
        let tiny = SnapshotSettings {
            width: 20,
            ..Default::default()
        };
        assert!(matches!(
            write_snapshot(&dir.join("a.png"), &view, &tiny),
            Err(Error::InvalidSetting { .. })
        ));
        let flat = SnapshotSettings {
            bounds: Some(([0.0; 3], [1.0, 0.0, 1.0])),
            ..Default::default()
        };
        assert!(matches!(
            write_snapshot(&dir.join("a.png"), &view, &flat),
            Err(Error::InvalidSetting { .. })
        ));
        let missing = dir.join("no/such/a.png");
        let err = write_snapshot(&missing, &view, &SnapshotSettings::default()).unwrap_err();
        assert!(matches!(err, Error::Io { path, .. } if path == missing));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}
