//! What the GPU draws, built on the CPU: sphere instances, and world-space triangles for
//! boxes, links and planes (planes are clipped to the scene box and to the free side of the
//! other planes, so a container's five planes become its floor and walls).

use bytemuck::{Pod, Zeroable};
use nalgebra::{Matrix3, Vector3};

use super::camera::Bounds;
use super::{SceneFrame, Style};
use crate::sim::Shape;

/// One sphere: center (relative to the origin) and radius, linear RGB color (GPU layout).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct SphereInstance {
    pub(crate) center_radius: [f32; 4],
    pub(crate) color: [f32; 4],
}

/// One mesh vertex: position (relative to the origin), normal, linear RGBA color.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct MeshVertex {
    pub(crate) position: [f32; 3],
    pub(crate) normal: [f32; 3],
    pub(crate) color: [f32; 4],
}

/// The geometry of one frame.
#[derive(Debug, Default)]
pub(crate) struct Geometry {
    pub(crate) spheres: Vec<SphereInstance>,
    /// Opaque triangles (boxes, links).
    pub(crate) opaque: Vec<MeshVertex>,
    /// Translucent triangles (planes), far to near.
    pub(crate) translucent: Vec<MeshVertex>,
}

/// An sRGB byte as linear intensity (the render target is sRGB: shading is linear).
pub(crate) fn linear(c: u8) -> f32 {
    let c = f32::from(c) / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// An sRGB color and an opacity as linear RGBA.
fn rgba(c: [u8; 3], alpha: f32) -> [f32; 4] {
    [linear(c[0]), linear(c[1]), linear(c[2]), alpha]
}

fn f32x3(v: &Vector3<f64>) -> [f32; 3] {
    [v.x as f32, v.y as f32, v.z as f32]
}

/// The bounding box of the bodies that are not planes, grown by 5% of its largest extent on
/// every side, then stretched to reach every axis-aligned plane (a floor below a falling
/// ball); the cube `[-1, 1]³` when there are only planes.
pub fn scene_bounds(frame: &SceneFrame) -> Bounds {
    let solids = frame
        .shapes
        .iter()
        .zip(&frame.poses)
        .filter_map(|(shape, pose)| {
            let half = shape.world_half_extents(&pose.orientation)?;
            Some((pose.position - half, pose.position + half))
        })
        .reduce(|(lo, hi), (l, h)| (lo.inf(&l), hi.sup(&h)));
    let Some((mut lo, mut hi)) = solids else {
        return ([-1.0; 3], [1.0; 3]);
    };
    let extent = (hi - lo).max();
    let margin = if extent > 0.0 { 0.05 * extent } else { 1.0 };
    lo.add_scalar_mut(-margin);
    hi.add_scalar_mut(margin);
    for (shape, pose) in frame.shapes.iter().zip(&frame.poses) {
        if *shape == Shape::Plane {
            let n = pose.orientation * Vector3::z();
            let k = n.iamax();
            if n[k].abs() > 0.99 {
                lo[k] = lo[k].min(pose.position[k]);
                hi[k] = hi[k].max(pose.position[k]);
            }
        }
    }
    (lo.into(), hi.into())
}

/// The box the planes are clipped to: `bounds` grown by 15% of its largest extent.
fn plane_box(bounds: &Bounds) -> Bounds {
    let (lo, hi) = (Vector3::from(bounds.0), Vector3::from(bounds.1));
    let grow = 0.15 * (hi - lo).max();
    (lo.add_scalar(-grow).into(), hi.add_scalar(grow).into())
}

/// Keeps the part of the convex polygon `poly` where `n·x ≥ c` (Sutherland–Hodgman).
fn clip(poly: &[Vector3<f64>], n: &Vector3<f64>, c: f64) -> Vec<Vector3<f64>> {
    let mut out = Vec::with_capacity(poly.len() + 1);
    for (i, a) in poly.iter().enumerate() {
        let b = &poly[(i + 1) % poly.len()];
        let (da, db) = (n.dot(a) - c, n.dot(b) - c);
        if da >= 0.0 {
            out.push(*a);
        }
        if (da >= 0.0) != (db >= 0.0) {
            out.push(a + (b - a) * (da / (da - db)));
        }
    }
    out
}

impl Geometry {
    /// The geometry of `frame` seen under `style`, positions relative to `origin`; `bounds`
    /// (see [`scene_bounds`]) limits the planes.
    pub(crate) fn build(
        frame: &SceneFrame,
        style: &Style,
        bounds: &Bounds,
        origin: &Vector3<f64>,
        eye: &Vector3<f64>,
    ) -> Geometry {
        let mut g = Geometry::default();
        let mut planes = Vec::new();
        for (i, (shape, pose)) in frame.shapes.iter().zip(&frame.poses).enumerate() {
            let color = rgba(style.scale.color(frame.values[i]), 1.0);
            let center = pose.position - origin;
            match *shape {
                Shape::Sphere { radius } => g.spheres.push(SphereInstance {
                    center_radius: [
                        center.x as f32,
                        center.y as f32,
                        center.z as f32,
                        radius as f32,
                    ],
                    color,
                }),
                Shape::Box { half_extents } => {
                    let r = pose.orientation.to_rotation_matrix().into_inner();
                    let axes = r * Matrix3::from_diagonal(&Vector3::from(half_extents));
                    push_box(&mut g.opaque, &center, &axes, color);
                }
                Shape::Cylinder {
                    radius,
                    half_length,
                } => {
                    let r = pose.orientation.to_rotation_matrix().into_inner();
                    push_cylinder(&mut g.opaque, &center, &r, radius, half_length, color);
                }
                Shape::Plane => planes.push(i),
            }
        }
        let link_color = rgba(LINK_COLOR, 1.0);
        let width = 0.004 * (Vector3::from(bounds.1) - Vector3::from(bounds.0)).max();
        for [a, b] in &frame.links {
            let d = b - a;
            let len = d.norm();
            if len > 0.0 {
                let z = d / len;
                let x = z
                    .cross(&if z.z.abs() < 0.9 {
                        Vector3::z()
                    } else {
                        Vector3::x()
                    })
                    .normalize();
                let axes = Matrix3::from_columns(&[x * width, z.cross(&x) * width, 0.5 * d]);
                push_box(&mut g.opaque, &(0.5 * (a + b) - origin), &axes, link_color);
            }
        }
        g.translucent = planes_mesh(frame, &planes, &plane_box(bounds), origin, eye);
        g
    }
}

/// Color of the joints' links (sRGB).
const LINK_COLOR: [u8; 3] = [70, 70, 70];
/// Color of the planes (sRGB).
const PLANE_COLOR: [u8; 3] = [190, 190, 196];
/// Opacity of a floor-like plane (normal within 30° of +z) and of the others.
const FLOOR_OPACITY: f32 = 0.85;
const WALL_OPACITY: f32 = 0.12;

/// The 12 triangles of the box with center `c` whose columns of `axes` are its half axes.
fn push_box(out: &mut Vec<MeshVertex>, c: &Vector3<f64>, axes: &Matrix3<f64>, color: [f32; 4]) {
    for k in 0..3 {
        let (u, v) = (
            axes.column((k + 1) % 3).into_owned(),
            axes.column((k + 2) % 3).into_owned(),
        );
        for sign in [1.0, -1.0] {
            let n = sign * axes.column(k).into_owned();
            let face = c + n;
            let normal = f32x3(&n.normalize());
            let corner = |a: f64, b: f64| MeshVertex {
                position: f32x3(&(face + a * u + b * v)),
                normal,
                color,
            };
            let quad = [
                corner(-1.0, -1.0),
                corner(1.0, -1.0),
                corner(1.0, 1.0),
                corner(-1.0, 1.0),
            ];
            out.extend([quad[0], quad[1], quad[2], quad[0], quad[2], quad[3]]);
        }
    }
}

/// Sides of the polygon that stands for a cylinder's circle in its mesh.
const CYLINDER_SEGMENTS: usize = 32;

/// The triangles of a cylinder with center `c`, rotation `r` (its axis is the third
/// column), radius `radius` and half length `half`: the side with smooth normals, and the
/// two caps as fans.
fn push_cylinder(
    out: &mut Vec<MeshVertex>,
    c: &Vector3<f64>,
    r: &Matrix3<f64>,
    radius: f64,
    half: f64,
    color: [f32; 4],
) {
    let (x, y, a) = (
        r.column(0).into_owned(),
        r.column(1).into_owned(),
        r.column(2).into_owned(),
    );
    let radial = |k: usize| {
        let t = std::f64::consts::TAU * k as f64 / CYLINDER_SEGMENTS as f64;
        x * t.cos() + y * t.sin()
    };
    let vertex = |p: Vector3<f64>, n: &Vector3<f64>| MeshVertex {
        position: f32x3(&p),
        normal: f32x3(n),
        color,
    };
    for k in 0..CYLINDER_SEGMENTS {
        let (u, w) = (radial(k), radial(k + 1));
        let at = |e: &Vector3<f64>, s: f64| c + e * radius + a * (s * half);
        let (p0, p1, p2, p3) = (at(&u, -1.0), at(&w, -1.0), at(&w, 1.0), at(&u, 1.0));
        out.extend([
            vertex(p0, &u),
            vertex(p1, &w),
            vertex(p2, &w),
            vertex(p0, &u),
            vertex(p2, &w),
            vertex(p3, &u),
        ]);
        for s in [-1.0, 1.0] {
            let n = a * s;
            out.extend([
                vertex(c + n * half, &n),
                vertex(at(&u, s), &n),
                vertex(at(&w, s), &n),
            ]);
        }
    }
}

/// The planes `planes` of `frame` as polygons: each plane's square around the box's center,
/// clipped to `boxed` and to the free side of the other planes, then sorted far to near
/// from `eye` for blending.
fn planes_mesh(
    frame: &SceneFrame,
    planes: &[usize],
    boxed: &Bounds,
    origin: &Vector3<f64>,
    eye: &Vector3<f64>,
) -> Vec<MeshVertex> {
    let (lo, hi) = (Vector3::from(boxed.0), Vector3::from(boxed.1));
    let (center, size) = (0.5 * (lo + hi), (hi - lo).norm());
    let normal = |i: usize| frame.poses[i].orientation * Vector3::z();
    let mut polygons: Vec<(f64, Vec<MeshVertex>)> = Vec::new();
    for &i in planes {
        let (p, n) = (frame.poses[i].position, normal(i));
        let foot = center - n * n.dot(&(center - p));
        let u = n
            .cross(&if n.z.abs() < 0.9 {
                Vector3::z()
            } else {
                Vector3::x()
            })
            .normalize();
        let v = n.cross(&u);
        let mut poly: Vec<_> = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
            .iter()
            .map(|&(a, b)| foot + size * (a * u + b * v))
            .collect();
        for k in 0..3 {
            let e = Vector3::ith(k, 1.0);
            poly = clip(&poly, &e, lo[k]);
            poly = clip(&poly, &-e, -hi[k]);
        }
        for &j in planes.iter().filter(|&&j| j != i) {
            let (q, m) = (frame.poses[j].position, normal(j));
            // The free side of plane j, with a little slack so that touching planes meet.
            poly = clip(&poly, &m, m.dot(&q) - 1e-9 * size);
        }
        if poly.len() < 3 {
            continue;
        }
        let opacity = if n.z > 30f64.to_radians().cos() {
            FLOOR_OPACITY
        } else {
            WALL_OPACITY
        };
        let color = rgba(PLANE_COLOR, opacity);
        let vertex = |x: &Vector3<f64>| MeshVertex {
            position: f32x3(&(x - origin)),
            normal: f32x3(&n),
            color,
        };
        let mut tris = Vec::with_capacity(3 * poly.len());
        for k in 1..poly.len() - 1 {
            tris.extend([vertex(&poly[0]), vertex(&poly[k]), vertex(&poly[k + 1])]);
        }
        let centroid = poly.iter().sum::<Vector3<f64>>() / poly.len() as f64;
        polygons.push(((centroid - eye).norm(), tris));
    }
    polygons.sort_by(|a, b| b.0.total_cmp(&a.0));
    polygons.into_iter().flat_map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::ColorScale;
    use crate::sim::Pose;
    use nalgebra::UnitQuaternion;

    fn plane(position: [f64; 3], normal: [f64; 3]) -> Pose {
        Pose {
            position: position.into(),
            orientation: UnitQuaternion::rotation_between(&Vector3::z(), &normal.into())
                .unwrap_or_else(|| {
                    UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI)
                }),
        }
    }

    #[test]
    fn a_container_becomes_a_floor_and_four_walls_that_meet() {
        // Floor at z = 0, walls at x = ±1, y = ±1 (normals inwards), one sphere inside.
        let mut shapes = vec![Shape::Plane; 5];
        let mut poses = vec![
            plane([0.0; 3], [0.0, 0.0, 1.0]),
            plane([-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
            plane([1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]),
            plane([0.0, -1.0, 0.0], [0.0, 1.0, 0.0]),
            plane([0.0, 1.0, 0.0], [0.0, -1.0, 0.0]),
        ];
        shapes.push(Shape::Sphere { radius: 0.5 });
        poses.push(Pose::at(Vector3::new(0.0, 0.0, 2.0)));
        let frame = SceneFrame {
            values: vec![0.0; 6],
            shapes,
            poses,
            links: Vec::new(),
        };
        let bounds = scene_bounds(&frame);
        // The floor below the sphere is reached.
        assert!(bounds.0[2] <= 0.0 && bounds.1[2] >= 2.5, "{bounds:?}");
        let style = Style {
            scale: ColorScale::spanning([0.0], "x"),
            ..Style::default()
        };
        let eye = Vector3::new(5.0, -5.0, 5.0);
        let g = Geometry::build(&frame, &style, &bounds, &Vector3::zeros(), &eye);
        assert_eq!(g.spheres.len(), 1);
        assert!(g.opaque.is_empty());
        // Every plane vertex lies inside the container: |x|, |y| ≤ 1, z ≥ 0.
        assert!(!g.translucent.is_empty() && g.translucent.len().is_multiple_of(3));
        for v in &g.translucent {
            let [x, y, z] = v.position;
            assert!(
                x.abs() <= 1.0 + 1e-6 && y.abs() <= 1.0 + 1e-6 && z >= -1e-6,
                "{x} {y} {z}"
            );
        }
        // The floor fills the container's bottom: its area is 4 m².
        let floor_area: f32 = g
            .translucent
            .chunks(3)
            .filter(|t| t.iter().all(|v| v.position[2].abs() < 1e-6))
            .map(|t| {
                let p = |k: usize| Vector3::from(t[k].position);
                0.5 * (p(1) - p(0)).cross(&(p(2) - p(0))).norm()
            })
            .sum();
        assert!((floor_area - 4.0).abs() < 1e-4, "{floor_area}");
    }

    /// The geometry of `frame` seen from `eye` in the default style, after checking that the
    /// low corner of its scene bounds is `low`.
    fn built_within(frame: &SceneFrame, low: [f64; 3], eye: &Vector3<f64>) -> Geometry {
        let bounds = scene_bounds(frame);
        for (got, want) in bounds.0.iter().zip(low) {
            assert!((got - want).abs() < 1e-12, "{bounds:?}");
        }
        Geometry::build(frame, &Style::default(), &bounds, &Vector3::zeros(), eye)
    }

    #[test]
    fn boxes_and_links_are_closed_meshes() {
        let frame = SceneFrame {
            shapes: vec![Shape::Box {
                half_extents: [1.0, 2.0, 3.0],
            }],
            poses: vec![Pose::at(Vector3::new(1.0, 0.0, 0.0))],
            values: vec![0.0],
            links: vec![[Vector3::zeros(), Vector3::new(0.0, 0.0, 4.0)]],
        };
        let g = built_within(&frame, [-0.3, -2.3, -3.3], &Vector3::x());
        assert_eq!(g.opaque.len(), 72);
        // The box's vertices are its corners: |x − 1| = 1, |y| = 2, |z| = 3.
        for v in &g.opaque[..36] {
            let [x, y, z] = v.position;
            assert_eq!(((x - 1.0).abs(), y.abs(), z.abs()), (1.0, 2.0, 3.0));
            // Normals point out of the box.
            let out = Vector3::new(x - 1.0, y, z).dot(&Vector3::from(v.normal));
            assert!(out > 0.0);
        }
        // The link spans z from 0 to 4.
        let zs: Vec<f32> = g.opaque[36..].iter().map(|v| v.position[2]).collect();
        assert_eq!(zs.iter().copied().fold(f32::INFINITY, f32::min), 0.0);
        assert_eq!(zs.iter().copied().fold(f32::NEG_INFINITY, f32::max), 4.0);
    }

    #[test]
    fn a_cylinder_mesh_lies_on_its_surface() {
        // Axis along world x (body z turned onto x), radius 0.5, half length 2.
        let pose = Pose {
            position: Vector3::new(0.0, 1.0, 0.0),
            orientation: UnitQuaternion::rotation_between(&Vector3::z(), &Vector3::x())
                .expect("not opposite"),
        };
        let frame = SceneFrame {
            shapes: vec![Shape::Cylinder {
                radius: 0.5,
                half_length: 2.0,
            }],
            poses: vec![pose],
            values: vec![0.0],
            links: Vec::new(),
        };
        // 5% of the largest extent (4) around x ∈ [−2, 2], y ∈ [0.5, 1.5], z ∈ [−0.5, 0.5].
        let g = built_within(&frame, [-2.2, 0.3, -0.7], &Vector3::z());
        assert_eq!(g.opaque.len(), 12 * CYLINDER_SEGMENTS);
        for v in &g.opaque {
            let p = Vector3::from(v.position).cast::<f64>() - Vector3::new(0.0, 1.0, 0.0);
            let rho = p.y.hypot(p.z);
            // On the side (ρ = r, normal radial) or on a cap (|x| = h, normal ±x).
            let n = Vector3::from(v.normal).cast::<f64>();
            let on_side = (rho - 0.5).abs() < 1e-6 && n.x.abs() < 1e-6;
            let on_cap = ((p.x.abs() - 2.0).abs() < 1e-6) && rho <= 0.5 + 1e-6 && n.x * p.x > 0.0;
            assert!(on_side || on_cap, "{p:?} {n:?}");
        }
    }
}
