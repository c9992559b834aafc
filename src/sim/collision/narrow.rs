//! Narrow phase: contact points of one pair of shapes.
//!
//! Every routine works on an ordered pair (A, B) and returns [`Hit`]s whose normal points from
//! A to B; [`collide`] puts the pair in the order of [`Contact`] (plane first, otherwise the
//! smaller index first) and flips the hits when a routine's natural order is the other one.

mod cylinder;

use nalgebra::{Matrix3, Vector3};
use smallvec::SmallVec;

use cylinder::Cyl;

use super::Contact;
use super::broad::Aabb;
use crate::sim::{Pose, Shape};

type V3 = Vector3<f64>;

/// A contact point of an ordered pair, before the body indices are attached.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hit {
    normal: V3,
    point_a: V3,
    point_b: V3,
    distance: f64,
    feature: u32,
}

impl Hit {
    /// The same contact seen from the other body.
    fn flipped(self) -> Hit {
        Hit {
            normal: -self.normal,
            point_a: self.point_b,
            point_b: self.point_a,
            ..self
        }
    }

    /// A hit whose points are `point_b` and its projection `point_b − distance·normal`.
    fn from_b(normal: V3, point_b: V3, distance: f64, feature: u32) -> Hit {
        Hit {
            normal,
            point_a: point_b - normal * distance,
            point_b,
            distance,
            feature,
        }
    }
}

/// Hits of one ordered pair: a few, stored inline (no heap allocation for the pairs of
/// spheres, planes and cylinders with spheres).
type Hits = SmallVec<[Hit; 4]>;

/// Appends to `out` the contacts within `envelope` between bodies `a` and `b` (any order,
/// not both planes), in the order of their features.
pub(crate) fn collide(
    a: usize,
    b: usize,
    shapes: &[Shape],
    poses: &[Pose],
    envelope: f64,
    out: &mut Vec<Contact>,
) {
    let (a, b) = match (shapes[a], shapes[b]) {
        (_, Shape::Plane) => (b, a),
        (Shape::Plane, _) => (a, b),
        _ => (a.min(b), a.max(b)),
    };
    let (sa, pa, sb, pb) = (&shapes[a], &poses[a], &shapes[b], &poses[b]);
    let contact = |h: Hit| Contact {
        body_a: a,
        body_b: b,
        normal: h.normal,
        point_a: h.point_a,
        point_b: h.point_b,
        distance: h.distance,
        feature: h.feature,
    };
    // A pair of one point (every pair of a granular packing) straight into `out`: no
    // `Hits` of four points built, moved and sorted for it.
    if let Some(h) = one_hit(sa, pa, sb, pb) {
        if h.distance <= envelope {
            out.push(contact(h));
        }
        return;
    }
    let first = out.len();
    out.extend(
        hits(sa, pa, sb, pb, envelope)
            .into_iter()
            .filter(|h| h.distance <= envelope)
            .map(contact),
    );
    out[first..].sort_by_key(|c| c.feature);
}

/// The hit of the ordered pair (A, B) when the pair has one point (a sphere against a
/// plane, a sphere, a box or a cylinder), else `None`.
fn one_hit(sa: &Shape, pa: &Pose, sb: &Shape, pb: &Pose) -> Option<Hit> {
    Some(match (*sa, *sb) {
        (Shape::Plane, Shape::Sphere { radius }) => plane_sphere(pa, pb.position, radius),
        (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb }) => {
            sphere_sphere(pa.position, ra, pb.position, rb)
        }
        (Shape::Box { half_extents }, Shape::Sphere { radius }) => {
            box_sphere(&Obb::new(pa, half_extents), pb.position, radius)
        }
        (Shape::Sphere { radius }, Shape::Box { half_extents }) => {
            box_sphere(&Obb::new(pb, half_extents), pa.position, radius).flipped()
        }
        (
            Shape::Cylinder {
                radius,
                half_length,
            },
            Shape::Sphere { radius: rs },
        ) => cylinder::cylinder_sphere(&Cyl::new(pa, radius, half_length), pb.position, rs),
        (
            Shape::Sphere { radius: rs },
            Shape::Cylinder {
                radius,
                half_length,
            },
        ) => {
            cylinder::cylinder_sphere(&Cyl::new(pb, radius, half_length), pa.position, rs).flipped()
        }
        _ => return None,
    })
}

/// Hits of the ordered pair (A, B) of more than one point ([`one_hit`] has the others); a
/// plane can only be A.
fn hits(sa: &Shape, pa: &Pose, sb: &Shape, pb: &Pose, envelope: f64) -> Hits {
    match (*sa, *sb) {
        (_, Shape::Plane) => Hits::new(),
        (Shape::Plane, Shape::Box { half_extents }) => {
            plane_box(pa, &Obb::new(pb, half_extents), envelope).into()
        }
        (Shape::Box { half_extents: ha }, Shape::Box { half_extents: hb }) => {
            box_box(&Obb::new(pa, ha), &Obb::new(pb, hb), envelope).into()
        }
        (
            Shape::Plane,
            Shape::Cylinder {
                radius,
                half_length,
            },
        ) => {
            let (n, o) = plane_frame(pa);
            cylinder::plane_cylinder(n, o, &Cyl::new(pb, radius, half_length), envelope).into()
        }
        (
            Shape::Box { half_extents },
            Shape::Cylinder {
                radius,
                half_length,
            },
        ) => {
            let cy = Cyl::new(pb, radius, half_length);
            cylinder::box_cylinder(&Obb::new(pa, half_extents), &cy, envelope).into()
        }
        (
            Shape::Cylinder {
                radius,
                half_length,
            },
            Shape::Box { half_extents },
        ) => {
            let cy = Cyl::new(pa, radius, half_length);
            cylinder::box_cylinder(&Obb::new(pb, half_extents), &cy, envelope)
                .into_iter()
                .map(Hit::flipped)
                .collect()
        }
        (
            Shape::Cylinder {
                radius: ra,
                half_length: ha,
            },
            Shape::Cylinder {
                radius: rb,
                half_length: hb,
            },
        ) => cylinder::cylinder_cylinder(&Cyl::new(pa, ra, ha), &Cyl::new(pb, rb, hb), envelope)
            .into(),
        // The pairs of one point.
        _ => Hits::new(),
    }
}

/// Sphere–sphere: along the line of centers (`+z` when the centers coincide).
fn sphere_sphere(ca: V3, ra: f64, cb: V3, rb: f64) -> Hit {
    let d = cb - ca;
    let len = d.norm();
    let normal = if len > 0.0 { d / len } else { V3::z() };
    Hit {
        normal,
        point_a: ca + normal * ra,
        point_b: cb - normal * rb,
        distance: len - ra - rb,
        feature: 0,
    }
}

/// The world normal and a point of a plane body.
fn plane_frame(plane: &Pose) -> (V3, V3) {
    (plane.orientation * V3::z(), plane.position)
}

/// Plane–sphere: the gap of the center above the plane, less the radius.
fn plane_sphere(plane: &Pose, c: V3, r: f64) -> Hit {
    let (n, o) = plane_frame(plane);
    Hit::from_b(n, c - n * r, (c - o).dot(&n) - r, 0)
}

/// Plane–box: one hit per corner within the envelope; the feature is the corner index.
fn plane_box(plane: &Pose, b: &Obb, envelope: f64) -> Vec<Hit> {
    let (n, o) = plane_frame(plane);
    (0..8)
        .map(|k| (k, b.corner(k)))
        .map(|(k, v)| Hit::from_b(n, v, (v - o).dot(&n), k as u32))
        .filter(|h| h.distance <= envelope)
        .collect()
}

/// Box (A) – sphere (B): the closest point of the box to the center; when the center is
/// inside, the face of least penetration.
fn box_sphere(b: &Obb, c: V3, r: f64) -> Hit {
    let q = b.local_point(c);
    let h = V3::from(b.half);
    let clamped = q.zip_map(&h, |x, hi| x.clamp(-hi, hi));
    let (n_local, on_box, center_gap) = if clamped != q {
        let d = q - clamped;
        let len = d.norm();
        (d / len, clamped, len)
    } else {
        // Inside: push out through the nearest face (axis k of least depth h_k − |q_k|).
        let k = (0..3)
            .min_by(|&i, &j| (h[i] - q[i].abs()).total_cmp(&(h[j] - q[j].abs())))
            .unwrap_or(2);
        let sign = if q[k] >= 0.0 { 1.0 } else { -1.0 };
        let mut face = q;
        face[k] = sign * h[k];
        (V3::ith(k, sign), face, q[k].abs() - h[k])
    };
    let normal = b.rot * n_local;
    Hit {
        normal,
        point_a: b.pose.position + b.rot * on_box,
        point_b: c - normal * r,
        distance: center_gap - r,
        feature: 0,
    }
}

/// An oriented box in the world frame.
#[derive(Debug, Clone, Copy)]
struct Obb {
    /// Body → world rotation; column `i` is the world direction of body axis `i`.
    rot: Matrix3<f64>,
    half: [f64; 3],
    /// Center (the body origin) and orientation.
    pose: Pose,
}

impl Obb {
    /// The box of half extents `half` at `pose`.
    fn new(pose: &Pose, half: [f64; 3]) -> Obb {
        Obb {
            rot: *pose.orientation.to_rotation_matrix().matrix(),
            half,
            pose: *pose,
        }
    }

    /// World direction of body axis `i`.
    fn axis(&self, i: usize) -> V3 {
        self.rot.column(i).into_owned()
    }

    /// Corner `k`: bit `i` of `k` set ⇔ coordinate `i` is `+half[i]`.
    fn corner(&self, k: usize) -> V3 {
        self.pose.position + self.rot * corner_local(&self.half, k)
    }

    /// A world point in the body frame.
    fn local_point(&self, p: V3) -> V3 {
        self.rot.transpose() * (p - self.pose.position)
    }

    /// Half-width of the box's projection on the unit direction `l`: Σ h_i |a_i·l|.
    fn radius_along(&self, l: &V3) -> f64 {
        (0..3)
            .map(|i| self.half[i] * self.axis(i).dot(l).abs())
            .sum()
    }

    /// The world AABB inflated by `margin` (always `Some`: a box is not a plane).
    fn aabb(&self, margin: f64) -> Option<Aabb> {
        Aabb::of(
            &Shape::Box {
                half_extents: self.half,
            },
            &self.pose,
            margin,
        )
    }
}

/// Body-frame corner `k` of a box of half extents `h`.
fn corner_local(h: &[f64; 3], k: usize) -> V3 {
    V3::from_fn(|i, _| if k >> i & 1 == 1 { h[i] } else { -h[i] })
}

/// The separating axis of least penetration (most separation).
#[derive(Debug, Clone, Copy)]
enum Axis {
    /// Face normal `i` of A.
    FaceA(usize),
    /// Face normal `j` of B.
    FaceB(usize),
    /// `a_i × b_j`.
    Edge(usize, usize),
}

/// Box–box. Separating axis test over the 15 axes; a face axis gives a manifold clipped from
/// the incident face, an edge axis the closest points of the two edges.
fn box_box(a: &Obb, b: &Obb, envelope: f64) -> Vec<Hit> {
    // The AABB test is necessary for a gap ≤ envelope; it also keeps the result independent
    // of the broad phase where the SAT gap under-estimates the true gap (separated corners).
    match (a.aabb(envelope), b.aabb(envelope)) {
        (Some(x), Some(y)) if x.overlaps(&y) => {}
        _ => return Vec::new(),
    }
    let (axis, gap, n) = separating_axis(a, b);
    if gap > envelope {
        return Vec::new();
    }
    match axis {
        Axis::FaceA(i) => face_contact(a, i, b, n, envelope, 0),
        Axis::FaceB(j) => face_contact(b, j, a, -n, envelope, 1)
            .into_iter()
            .map(Hit::flipped)
            .collect(),
        Axis::Edge(i, j) => vec![edge_contact(a, i, b, j, n)],
    }
}

/// SAT: the axis of largest separation `|d·l| − r_A(l) − r_B(l)`, its separation and the unit
/// normal along it pointing from A to B. Faces of A win ties; faces of B and edges must beat
/// the best so far by a small tolerance, so that resting contacts keep a face manifold.
fn separating_axis(a: &Obb, b: &Obb) -> (Axis, f64, V3) {
    let d = b.pose.position - a.pose.position;
    let min_half = |o: &Obb| o.half.iter().copied().fold(f64::INFINITY, f64::min);
    let tol = 1e-3 * (min_half(a) + min_half(b));
    let sep = |l: &V3| d.dot(l).abs() - a.radius_along(l) - b.radius_along(l);
    let oriented = |l: V3| if d.dot(&l) < 0.0 { -l } else { l };
    let mut best = (Axis::FaceA(0), f64::NEG_INFINITY, V3::z());
    for i in 0..3 {
        let l = a.axis(i);
        if sep(&l) > best.1 {
            best = (Axis::FaceA(i), sep(&l), oriented(l));
        }
    }
    for j in 0..3 {
        let l = b.axis(j);
        if sep(&l) > best.1 + tol {
            best = (Axis::FaceB(j), sep(&l), oriented(l));
        }
    }
    for i in 0..3 {
        for j in 0..3 {
            let c = a.axis(i).cross(&b.axis(j));
            let len = c.norm();
            if len < 1e-6 {
                continue; // parallel edges: covered by the face axes
            }
            let l = c / len;
            if sep(&l) > best.1 + tol {
                best = (Axis::Edge(i, j), sep(&l), oriented(l));
            }
        }
    }
    best
}

/// A vertex of the clipped incident face. `id` names it (stable feature): `0..8` an incident
/// corner, `8 + 4·src + side` the cut of edge `src` by reference side plane `side`. `src` is
/// the source of the polygon edge leaving this vertex: `0..4` incident face edges, `4 + s`
/// reference side plane `s`.
#[derive(Debug, Clone, Copy)]
struct ClipVertex {
    p: V3,
    id: u32,
    src: u32,
}

/// Face contact: reference face of `r` normal to axis `i` (facing `n`, from `r` to the
/// incident box `inc`), incident face = the face of `inc` most anti-parallel to `n`, clipped
/// against the four side planes of the reference face (Sutherland–Hodgman). Points within
/// the envelope are kept, at most 4. `role` (0: reference is A, 1: B) enters the feature id.
fn face_contact(r: &Obb, i: usize, inc: &Obb, n: V3, envelope: f64, role: u32) -> Vec<Hit> {
    let ref_face = face_id(i, r.axis(i).dot(&n));
    let face_center = r.pose.position + n * r.half[i];
    let j = (0..3)
        .max_by(|&x, &y| {
            inc.axis(x)
                .dot(&n)
                .abs()
                .total_cmp(&inc.axis(y).dot(&n).abs())
        })
        .unwrap_or(0);
    let inc_face = face_id(j, -inc.axis(j).dot(&n));
    let mut poly = incident_face(inc, j, inc_face);
    for (side, (w, h)) in side_planes(r, i).into_iter().enumerate() {
        poly = clip(&poly, &w, h + w.dot(&r.pose.position), side as u32);
    }
    let base = ((role * 6 + ref_face) * 6 + inc_face) * 64;
    let hits: Vec<Hit> = poly
        .iter()
        .map(|v| Hit::from_b(n, v.p, (v.p - face_center).dot(&n), base + v.id))
        .filter(|h| h.distance <= envelope)
        .collect();
    reduce(hits, &n)
}

/// Face `2·axis + (sign > 0)`, with `sign` the direction of the face normal along the axis.
fn face_id(axis: usize, sign: f64) -> u32 {
    2 * axis as u32 + u32::from(sign > 0.0)
}

/// The four corners of face `face` (normal to axis `j`) of `b`, in order around the face.
fn incident_face(b: &Obb, j: usize, face: u32) -> Vec<ClipVertex> {
    let (u, v) = ((j + 1) % 3, (j + 2) % 3);
    let along_j = (face & 1) << j;
    // (u, v) signs in cyclic order: (+,+), (−,+), (−,−), (+,−).
    [(1, 1), (0, 1), (0, 0), (1, 0)]
        .into_iter()
        .enumerate()
        .map(|(e, (su, sv))| {
            let k = along_j | su << u | sv << v;
            ClipVertex {
                p: b.corner(k as usize),
                id: k,
                src: e as u32,
            }
        })
        .collect()
}

/// Side planes `w·p ≤ h + w·c` of the face of `r` normal to axis `i`: `±u`, `±v` with the
/// other two axes `u`, `v` and their half extents.
fn side_planes(r: &Obb, i: usize) -> [(V3, f64); 4] {
    let (u, v) = ((i + 1) % 3, (i + 2) % 3);
    let (au, av) = (r.axis(u), r.axis(v));
    [
        (au, r.half[u]),
        (-au, r.half[u]),
        (av, r.half[v]),
        (-av, r.half[v]),
    ]
}

/// One Sutherland–Hodgman step: the part of the polygon with `w·p ≤ offset`.
fn clip(poly: &[ClipVertex], w: &V3, offset: f64, side: u32) -> Vec<ClipVertex> {
    let mut out = Vec::with_capacity(poly.len() + 1);
    for (k, cur) in poly.iter().enumerate() {
        let next = &poly[(k + 1) % poly.len()];
        let (dc, dn) = (w.dot(&cur.p) - offset, w.dot(&next.p) - offset);
        if dc <= 0.0 {
            out.push(*cur);
        }
        if (dc <= 0.0) != (dn <= 0.0) {
            // dc and dn have strictly opposite signs here, so dc − dn ≠ 0.
            let t = dc / (dc - dn);
            out.push(ClipVertex {
                p: cur.p + (next.p - cur.p) * t,
                id: 8 + 4 * cur.src + side,
                // Leaving the plane inward, the edge follows the cut edge; leaving outward,
                // the clipped polygon runs along the side plane.
                src: if dc <= 0.0 { 4 + side } else { cur.src },
            });
        }
    }
    out
}

/// At most 4 of the hits: the deepest, the farthest from it, and the two farthest on either
/// side of the line through those (largest triangle areas about `n`).
fn reduce(hits: Vec<Hit>, n: &V3) -> Vec<Hit> {
    if hits.len() <= 4 {
        return hits;
    }
    let p = |k: usize| hits[k].point_b;
    let argmax = |f: &dyn Fn(usize) -> f64| {
        (0..hits.len())
            .max_by(|&x, &y| f(x).total_cmp(&f(y)))
            .unwrap_or(0)
    };
    let k0 = argmax(&|k| -hits[k].distance);
    let k1 = argmax(&|k| (p(k) - p(k0)).norm_squared());
    let area = |k: usize| (p(k1) - p(k0)).cross(&(p(k) - p(k0))).dot(n);
    let k2 = argmax(&area);
    let k3 = argmax(&|k| -area(k));
    let mut keep = vec![k0, k1, k2, k3];
    keep.sort_unstable();
    keep.dedup();
    keep.into_iter().map(|k| hits[k]).collect()
}

/// Edge–edge contact along the edge axis `n = ±a_i × b_j` (from A to B): closest points of
/// the edge of A along `a_i` farthest along `n` and the edge of B along `b_j` farthest along
/// `−n`. The feature names the two edges.
fn edge_contact(a: &Obb, i: usize, b: &Obb, j: usize, n: V3) -> Hit {
    let (ea, ka) = support_edge(a, i, &n);
    let (eb, kb) = support_edge(b, j, &-n);
    let (pa, pb) = closest_points_of_segments(ea, eb);
    const EDGE_BASE: u32 = 2 * 6 * 6 * 64;
    Hit {
        normal: n,
        point_a: pa,
        point_b: pb,
        distance: (pb - pa).dot(&n),
        feature: EDGE_BASE + (3 * i as u32 + j as u32) * 16 + ka * 4 + kb,
    }
}

/// The edge of `b` parallel to axis `i` farthest along `dir` (end points) and its index among
/// the 4 parallel edges (sign bits of the two other coordinates).
fn support_edge(b: &Obb, i: usize, dir: &V3) -> ((V3, V3), u32) {
    let mut mid = b.pose.position;
    let mut index = 0;
    for (bit, k) in [(i + 1) % 3, (i + 2) % 3].into_iter().enumerate() {
        let positive = b.axis(k).dot(dir) >= 0.0;
        let sign = if positive { 1.0 } else { -1.0 };
        mid += b.axis(k) * (sign * b.half[k]);
        index |= u32::from(positive) << bit;
    }
    let half = b.axis(i) * b.half[i];
    ((mid - half, mid + half), index)
}

/// Closest points of segments `[p1, q1]` and `[p2, q2]` (Ericson, Real-Time Collision
/// Detection §5.1.9); the segments have positive length.
fn closest_points_of_segments((p1, q1): (V3, V3), (p2, q2): (V3, V3)) -> (V3, V3) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.norm_squared(), d2.norm_squared(), d2.dot(&r));
    let (b, c) = (d1.dot(&d2), d1.dot(&r));
    let denom = a * e - b * b;
    let s = if denom > 1e-12 * a * e {
        ((b * f - c * e) / denom).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let t = (b * s + f) / e;
    let (s, t) = if t < 0.0 {
        ((-c / a).clamp(0.0, 1.0), 0.0)
    } else if t > 1.0 {
        (((b - c) / a).clamp(0.0, 1.0), 1.0)
    } else {
        (s, t)
    };
    (p1 + d1 * s, p2 + d2 * t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::UnitQuaternion;
    use std::f64::consts::{FRAC_PI_4, SQRT_2};

    const TOL: f64 = 1e-12;

    fn pose(p: [f64; 3], q: UnitQuaternion<f64>) -> Pose {
        Pose {
            position: V3::from(p),
            orientation: q,
        }
    }

    fn rot(axis: V3, angle: f64) -> UnitQuaternion<f64> {
        UnitQuaternion::from_scaled_axis(axis.normalize() * angle)
    }

    fn cube(h: f64) -> Shape {
        Shape::Box {
            half_extents: [h; 3],
        }
    }

    fn close(a: V3, b: V3) -> bool {
        (a - b).norm() < 1e-9
    }

    /// Checks the invariants every contact must satisfy.
    fn check(c: &Contact) {
        assert!((c.normal.norm() - 1.0).abs() < TOL, "unit normal");
        let gap = (c.point_b - c.point_a).dot(&c.normal);
        assert!((gap - c.distance).abs() < 1e-9, "distance = (pb − pa)·n");
    }

    fn contacts(shapes: &[Shape], poses: &[Pose], a: usize, b: usize, env: f64) -> Vec<Contact> {
        let mut cs = Vec::new();
        collide(a, b, shapes, poses, env, &mut cs);
        cs.iter().for_each(check);
        cs
    }

    #[test]
    fn sphere_sphere_gap_normal_and_surface_points() {
        let shapes = [Shape::Sphere { radius: 1.0 }, Shape::Sphere { radius: 0.5 }];
        let poses = [Pose::at(V3::zeros()), Pose::at(V3::new(1.0, 2.0, 2.0))];
        // Asked in either order, A is the smaller index.
        let cs = contacts(&shapes, &poses, 1, 0, 2.0);
        assert_eq!(cs.len(), 1);
        let c = cs[0];
        assert_eq!((c.body_a, c.body_b), (0, 1));
        let n = V3::new(1.0, 2.0, 2.0) / 3.0;
        assert!((c.distance - 1.5).abs() < TOL); // |c2 − c1| − r1 − r2 = 3 − 1 − 0.5
        assert!(close(c.normal, n));
        assert!(close(c.point_a, n));
        assert!(close(c.point_b, V3::new(1.0, 2.0, 2.0) - n * 0.5));
        // Out of the envelope: nothing.
        assert!(contacts(&shapes, &poses, 0, 1, 1.4).is_empty());
    }

    #[test]
    fn sphere_sphere_penetration_and_coincident_centers() {
        let shapes = [Shape::Sphere { radius: 1.0 }, Shape::Sphere { radius: 1.0 }];
        let poses = [Pose::at(V3::zeros()), Pose::at(V3::new(0.0, -1.5, 0.0))];
        let c = contacts(&shapes, &poses, 0, 1, 0.0)[0];
        assert!((c.distance + 0.5).abs() < TOL);
        assert!(close(c.normal, -V3::y()));
        let poses = [Pose::at(V3::zeros()), Pose::at(V3::zeros())];
        let c = contacts(&shapes, &poses, 0, 1, 0.0)[0];
        assert!(close(c.normal, V3::z()));
        assert!((c.distance + 2.0).abs() < TOL);
    }

    #[test]
    fn sphere_on_a_30_degree_incline() {
        let incline = rot(V3::x(), std::f64::consts::FRAC_PI_6);
        // Plane after the sphere: the plane is still body A.
        let shapes = [Shape::Sphere { radius: 0.5 }, Shape::Plane];
        let origin = V3::new(1.0, 2.0, 3.0);
        let n = V3::new(0.0, -0.5, 3f64.sqrt() / 2.0); // R_x(30°) ẑ
        let tangent = V3::new(0.7, 3f64.sqrt() / 2.0, 0.5); // ⊥ n
        let center = origin + n * 0.8 + tangent * 2.0;
        let poses = [Pose::at(center), pose(origin.into(), incline)];
        let cs = contacts(&shapes, &poses, 0, 1, 0.5);
        assert_eq!(cs.len(), 1);
        let c = cs[0];
        assert_eq!((c.body_a, c.body_b), (1, 0));
        assert!(close(c.normal, n));
        assert!((c.distance - 0.3).abs() < 1e-12);
        assert!(close(c.point_b, center - n * 0.5));
        assert!(close(c.point_a, origin + tangent * 2.0));
        assert!(contacts(&shapes, &poses, 0, 1, 0.29).is_empty());
    }

    #[test]
    fn box_resting_on_a_plane_touches_by_its_four_bottom_corners() {
        let shapes = [
            Shape::Plane,
            Shape::Box {
                half_extents: [1.0, 0.5, 0.25],
            },
        ];
        let poses = [
            Pose::at(V3::zeros()),
            pose([2.0, -1.0, 0.26], rot(V3::z(), 0.7)),
        ];
        let cs = contacts(&shapes, &poses, 1, 0, 0.05);
        let features: Vec<u32> = cs.iter().map(|c| c.feature).collect();
        assert_eq!(features, [0, 1, 2, 3]); // corners with z = −h
        for c in &cs {
            assert_eq!((c.body_a, c.body_b), (0, 1));
            assert!((c.distance - 0.01).abs() < 1e-12);
            assert!(close(c.normal, V3::z()));
            assert!((c.point_b.z - 0.01).abs() < 1e-12 && c.point_a.z.abs() < 1e-12);
            let k = c.feature as usize;
            assert!(close(
                c.point_b,
                poses[1].to_world(&corner_local(&[1.0, 0.5, 0.25], k))
            ));
        }
    }

    #[test]
    fn tilted_box_touches_a_plane_by_one_corner() {
        // Body diagonal −(1,1,1) turned to −z: corner 0 is the lowest.
        let diag = -V3::new(1.0, 1.0, 1.0).normalize();
        let tilt = UnitQuaternion::rotation_between(&diag, &-V3::z()).expect("not opposite");
        let half_diag = 0.75f64.sqrt();
        let shapes = [Shape::Plane, cube(0.5)];
        let poses = [
            Pose::at(V3::zeros()),
            pose([0.0, 0.0, half_diag - 0.02], tilt),
        ];
        let cs = contacts(&shapes, &poses, 0, 1, 0.1);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].feature, 0);
        assert!((cs[0].distance + 0.02).abs() < 1e-12);
    }

    /// A box of half extents (1, 2, 3) at (1, 1, 1) turned 90° about z, and a sphere of
    /// radius `r` at the body-frame point `local`.
    fn sphere_near_box(local: [f64; 3], r: f64) -> (Contact, Pose) {
        let shapes = [
            Shape::Box {
                half_extents: [1.0, 2.0, 3.0],
            },
            Shape::Sphere { radius: r },
        ];
        let bp = pose([1.0, 1.0, 1.0], rot(V3::z(), std::f64::consts::FRAC_PI_2));
        let poses = [bp, Pose::at(bp.to_world(&V3::from(local)))];
        let cs = contacts(&shapes, &poses, 0, 1, 1.0);
        assert_eq!(cs.len(), 1);
        (cs[0], bp)
    }

    #[test]
    fn sphere_above_a_box_face() {
        let (c, bp) = sphere_near_box([0.2, -0.5, 3.6], 0.5);
        assert!((c.distance - 0.1).abs() < TOL);
        assert!(close(c.normal, V3::z()));
        assert!(close(c.point_a, bp.to_world(&V3::new(0.2, -0.5, 3.0))));
    }

    #[test]
    fn sphere_near_a_box_edge() {
        // Past the edge x = 1, z = 3 by (0.3, 0.4): center gap 0.5.
        let (c, bp) = sphere_near_box([1.3, 0.5, 3.4], 0.2);
        assert!((c.distance - 0.3).abs() < TOL);
        assert!(close(c.normal, bp.orientation * V3::new(0.6, 0.0, 0.8)));
        assert!(close(c.normal, V3::new(0.0, 0.6, 0.8))); // body x is world y
        assert!(close(c.point_a, bp.to_world(&V3::new(1.0, 0.5, 3.0))));
    }

    #[test]
    fn sphere_near_a_box_corner() {
        let (c, bp) = sphere_near_box([1.2, -2.2, 3.1], 0.1);
        assert!((c.distance - (0.09f64.sqrt() - 0.1)).abs() < TOL);
        assert!(close(c.point_a, bp.to_world(&V3::new(1.0, -2.0, 3.0))));
        assert!(close(
            c.normal,
            bp.orientation * V3::new(2.0, -2.0, 1.0) / 3.0
        ));
    }

    #[test]
    fn sphere_center_inside_a_box() {
        // Nearest face is x = +1 (depth 0.1): pushed out along body x = world y.
        let (c, bp) = sphere_near_box([0.9, 0.5, -1.0], 0.25);
        assert!((c.distance + 0.35).abs() < TOL);
        assert!(close(c.normal, V3::y()));
        assert!(close(c.point_a, bp.to_world(&V3::new(1.0, 0.5, -1.0))));
    }

    #[test]
    fn sphere_before_box_gets_the_flipped_normal() {
        let shapes = [Shape::Sphere { radius: 0.5 }, cube(1.0)];
        let poses = [Pose::at(V3::new(0.0, 0.0, 1.6)), Pose::at(V3::zeros())];
        let c = contacts(&shapes, &poses, 1, 0, 0.5)[0];
        assert_eq!((c.body_a, c.body_b), (0, 1));
        assert!(close(c.normal, -V3::z()));
        assert!(close(c.point_a, V3::new(0.0, 0.0, 1.1)));
        assert!(close(c.point_b, V3::new(0.0, 0.0, 1.0)));
        assert!((c.distance - 0.1).abs() < TOL);
    }

    #[test]
    fn box_resting_on_a_larger_box_face_to_face() {
        let shapes = [
            Shape::Box {
                half_extents: [2.0, 2.0, 0.5],
            },
            cube(0.5),
        ];
        let upper = pose([0.3, -0.2, 1.02], rot(V3::z(), 0.3));
        let poses = [Pose::at(V3::zeros()), upper];
        let cs = contacts(&shapes, &poses, 0, 1, 0.05);
        assert_eq!(cs.len(), 4);
        let bottom: Vec<V3> = (0..4)
            .map(|k| upper.to_world(&corner_local(&[0.5; 3], k)))
            .collect();
        for c in &cs {
            assert!((c.distance - 0.02).abs() < 1e-12);
            assert!(close(c.normal, V3::z()));
            assert!(bottom.iter().any(|&v| close(v, c.point_b)));
            assert!((c.point_a.z - 0.5).abs() < 1e-12);
        }
        let mut features: Vec<u32> = cs.iter().map(|c| c.feature).collect();
        features.dedup();
        assert_eq!(features.len(), 4);
        // Upper box first: the normal points down, from the upper box to the lower.
        let cs = contacts(&[shapes[1], shapes[0]], &[poses[1], poses[0]], 0, 1, 0.05);
        assert_eq!(cs.len(), 4);
        assert!(cs.iter().all(|c| close(c.normal, -V3::z())));
        assert!(cs.iter().all(|c| (c.point_b.z - 0.5).abs() < 1e-12));
    }

    #[test]
    fn box_turned_45_degrees_on_a_box_gives_at_most_4_points_in_the_overlap() {
        let shapes = [cube(1.0), cube(1.0)];
        let poses = [
            Pose::at(V3::zeros()),
            pose([0.0, 0.0, 1.99], rot(V3::z(), FRAC_PI_4)),
        ];
        let cs = contacts(&shapes, &poses, 0, 1, 0.05);
        // The overlap is an octagon (8 clipped points) reduced to 4.
        assert_eq!(cs.len(), 4);
        for c in &cs {
            assert!((c.distance + 0.01).abs() < 1e-12);
            assert!(close(c.normal, V3::z()));
            let p = c.point_a;
            let in_lower = p.x.abs() <= 1.0 + 1e-9 && p.y.abs() <= 1.0 + 1e-9;
            let in_upper = p.x.abs() + p.y.abs() <= SQRT_2 + 1e-9;
            assert!(in_lower && in_upper && (p.z - 1.0).abs() < 1e-12);
        }
        // The 4 points span the octagon (diameter 2·√(1 + (√2 − 1)²) ≈ 2.16), not one side.
        let diameter = cs
            .iter()
            .flat_map(|c| cs.iter().map(|d| (c.point_a - d.point_a).norm()))
            .fold(0.0, f64::max);
        assert!(diameter > 2.0, "{diameter}");
    }

    #[test]
    fn crossing_edges_give_one_contact() {
        // A's top is an edge along x at z = √2, B's bottom an edge along y at x = 0.3.
        for gap in [0.03, -0.05] {
            let shapes = [cube(1.0), cube(1.0)];
            let poses = [
                pose([0.0, 0.0, 0.0], rot(V3::x(), FRAC_PI_4)),
                pose([0.3, 0.2, 2.0 * SQRT_2 + gap], rot(V3::y(), FRAC_PI_4)),
            ];
            let cs = contacts(&shapes, &poses, 0, 1, 0.05);
            assert_eq!(cs.len(), 1);
            let c = cs[0];
            assert!((c.distance - gap).abs() < 1e-12);
            assert!(close(c.normal, V3::z()));
            assert!(close(c.point_a, V3::new(0.3, 0.0, SQRT_2)));
            assert!(close(c.point_b, V3::new(0.3, 0.0, SQRT_2 + gap)));
        }
    }

    #[test]
    fn separated_boxes_give_nothing() {
        let shapes = [cube(1.0), cube(1.0)];
        let poses = [Pose::at(V3::zeros()), Pose::at(V3::new(2.2, 0.5, 0.0))];
        assert!(contacts(&shapes, &poses, 0, 1, 0.1).is_empty());
        assert_eq!(contacts(&shapes, &poses, 0, 1, 0.25).len(), 4);
    }
}
