//! Contacts of cylinders with planes, spheres, boxes and other cylinders.
//!
//! A cylinder's axis is its body `z` axis. Where a flat feature rests on a flat one the
//! contact is a manifold: the cap as a polygon of [`RIM_POINTS`] rim points, or the
//! generatrix (the side's line nearest the other body) as a segment, clipped like the box
//! faces of `box_box` and reduced to at most 4 points.
//!
//! - plane, sphere: exact (support points of the caps' rims; closest point of the solid);
//! - box: separating axes (the box's face normals, the cylinder's axis, and the directions
//!   from the cylinder to each box corner and to each box edge's point nearest to the
//!   axis), then the feature of the other body clipped to the reference face, cap or slab
//!   of the side (a curved rim against a box edge is only approximated by these axes);
//! - cylinder: parallel axes exactly (side by side: the overlap of the generatrices; cap on
//!   cap: the rim points of each cap inside the other's disc); crossing sides by the closest
//!   points of the two axes; otherwise (a cap's rim against the other cylinder) the rim
//!   points of each cylinder against the other solid, an approximation whose gap is exact
//!   at the samples.

use std::f64::consts::{FRAC_1_SQRT_2, TAU};

use super::{Hit, Obb, V3, closest_points_of_segments, face_id, reduce, side_planes};
use crate::sim::Pose;

/// Points on a cap's rim that stand for the disc (a regular polygon).
pub(super) const RIM_POINTS: usize = 8;

/// Below this length of its component across the axis, a direction counts as along the
/// axis and the body `x` axis is taken as the radial direction (a standing cylinder).
const ALONG_AXIS: f64 = 1e-6;

/// A cylinder in the world frame.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cyl {
    /// Center.
    c: V3,
    /// Unit axis (body `z`).
    a: V3,
    /// Body `x` axis: the radial direction when no other is defined.
    x: V3,
    r: f64,
    h: f64,
}

impl Cyl {
    /// The cylinder of radius `r` and half length `h` at `pose`.
    pub(super) fn new(pose: &Pose, r: f64, h: f64) -> Cyl {
        Cyl {
            c: pose.position,
            a: pose.orientation * V3::z(),
            x: pose.orientation * V3::x(),
            r,
            h,
        }
    }

    /// Half-width of the projection on the unit direction `l`: `h|a·l| + r√(1 − (a·l)²)`.
    fn radius_along(&self, l: &V3) -> f64 {
        let al = self.a.dot(l);
        self.h * al.abs() + self.r * (1.0 - al * al).max(0.0).sqrt()
    }

    /// The unit direction across the axis nearest to `d` (body `x` when `d` is along it).
    fn radial(&self, d: &V3) -> V3 {
        let across = d - self.a * self.a.dot(d);
        let len = across.norm();
        if len > ALONG_AXIS * d.norm() && len > 0.0 {
            across / len
        } else {
            self.x
        }
    }

    /// Center of cap `s` (±1).
    fn cap_center(&self, s: f64) -> V3 {
        self.c + self.a * (s * self.h)
    }

    /// The rim of cap `s` as [`RIM_POINTS`] points, the first in the radial direction `w`,
    /// counter-clockwise about the axis; features `offset + k`.
    fn rim(&self, s: f64, w: &V3, offset: u32) -> Vec<(V3, u32)> {
        let v = self.a.cross(w);
        (0..RIM_POINTS)
            .map(|k| {
                let t = TAU * k as f64 / RIM_POINTS as f64;
                let p = self.cap_center(s) + (w * t.cos() + v * t.sin()) * self.r;
                (p, offset + k as u32)
            })
            .collect()
    }

    /// The feature nearest along `−n` (least `p·n`): the cap facing `−n` as a rim polygon
    /// when the axis is within 45° of `n`, otherwise the generatrix (two points). Features:
    /// `0..2·RIM_POINTS` cap rims, then the two generatrix ends.
    fn incident(&self, n: &V3) -> Vec<(V3, u32)> {
        let an = self.a.dot(n);
        let w = self.radial(&-n);
        if an.abs() >= FRAC_1_SQRT_2 {
            let s = -an.signum();
            self.rim(s, &w, if s > 0.0 { RIM_POINTS as u32 } else { 0 })
        } else {
            let end = 2 * RIM_POINTS as u32;
            let (p, q) = (self.cap_center(-1.0), self.cap_center(1.0));
            vec![(p + w * self.r, end), (q + w * self.r, end + 1)]
        }
    }

    /// The point of the surface nearest to `p`: the outward unit normal there, the point,
    /// and the signed distance of `p` (negative inside, pushed out through the nearest of
    /// the side and the caps).
    fn closest(&self, p: &V3) -> (V3, V3, f64) {
        let d = p - self.c;
        let z = d.dot(&self.a);
        let across = d - self.a * z;
        let rho = across.norm();
        let w = if rho > 0.0 { across / rho } else { self.x };
        if rho > self.r || z.abs() > self.h {
            // p − q from its two parts, each positive where it is outside (no cancellation).
            let (zc, rc) = (z.clamp(-self.h, self.h), rho.min(self.r));
            let diff = w * (rho - rc) + self.a * (z - zc);
            let len = diff.norm();
            (diff / len, self.c + self.a * zc + w * rc, len)
        } else if self.r - rho < self.h - z.abs() {
            (w, self.c + self.a * z + w * self.r, rho - self.r)
        } else {
            let s = if z >= 0.0 { 1.0 } else { -1.0 };
            (self.a * s, self.cap_center(s) + across, z.abs() - self.h)
        }
    }
}

/// One Sutherland–Hodgman step on a polygon, a segment (2 points, no closing edge) or a
/// point: the part with `w·p ≤ offset`. A cut point's feature is `64·(side + 1)` plus the
/// low bits of its edge's first vertex.
fn clip(poly: &[(V3, u32)], w: &V3, offset: f64, side: u32) -> Vec<(V3, u32)> {
    let edges = if poly.len() > 2 {
        poly.len()
    } else {
        poly.len().saturating_sub(1)
    };
    let mut out = Vec::with_capacity(poly.len() + 1);
    for (k, &(p, id)) in poly.iter().enumerate() {
        let dp = w.dot(&p) - offset;
        if dp <= 0.0 {
            out.push((p, id));
        }
        if k < edges {
            let (q, _) = poly[(k + 1) % poly.len()];
            let dq = w.dot(&q) - offset;
            if (dp <= 0.0) != (dq <= 0.0) {
                out.push((p + (q - p) * (dp / (dp - dq)), 64 * (side + 1) + id % 64));
            }
        }
    }
    out
}

/// Plane (normal `n` through `o`) – cylinder: the incident feature's points within the
/// envelope.
pub(super) fn plane_cylinder(n: V3, o: V3, cy: &Cyl, envelope: f64) -> Vec<Hit> {
    let hits = cy
        .incident(&n)
        .into_iter()
        .map(|(p, f)| Hit::from_b(n, p, (p - o).dot(&n), f))
        .filter(|h| h.distance <= envelope)
        .collect();
    reduce(hits, &n)
}

/// Cylinder (A) – sphere (B): the closest point of the solid cylinder to the center.
pub(super) fn cylinder_sphere(cy: &Cyl, center: V3, radius: f64) -> Hit {
    let (n, q, d) = cy.closest(&center);
    Hit {
        normal: n,
        point_a: q,
        point_b: center - n * radius,
        distance: d - radius,
        feature: 0,
    }
}

/// Which feature a box–cylinder separating axis belongs to.
#[derive(Debug, Clone, Copy)]
enum Axis {
    /// Face normal `i` of the box.
    Face(usize),
    /// The cylinder's axis (a cap).
    Cap,
    /// Across the cylinder's side (`axis × edge` or towards a corner).
    Side,
}

/// Box (A) – cylinder (B), normals from the box to the cylinder. The axis of largest
/// separation `|d·l| − r_box(l) − r_cyl(l)` (see the module documentation for the axes)
/// picks the reference: a box face (the cylinder's
/// incident cap polygon or generatrix clipped to the face), the cap (the box's face most
/// facing it clipped to the rim polygon's side planes), or the side (the box's corner,
/// edge or face nearest to the cylinder, each point against the solid cylinder; an edge
/// along the axis is clipped to the cylinder's length, another edge gives its point nearest
/// to the axis). Box faces win ties; the others must beat them by a small tolerance.
pub(super) fn box_cylinder(b: &Obb, cy: &Cyl, envelope: f64) -> Vec<Hit> {
    let d = cy.c - b.pose.position;
    let min_half = b.half.iter().copied().fold(cy.r.min(cy.h), f64::min);
    let tol = 1e-3 * min_half;
    let sep = |l: &V3| d.dot(l).abs() - b.radius_along(l) - cy.radius_along(l);
    let oriented = |l: V3| if d.dot(&l) < 0.0 { -l } else { l };
    let corners: Vec<V3> = (0..8).map(|k| b.corner(k)).collect();
    let mut best = (Axis::Face(0), f64::NEG_INFINITY, V3::z());
    for i in 0..3 {
        let l = b.axis(i);
        if sep(&l) > best.1 {
            best = (Axis::Face(i), sep(&l), oriented(l));
        }
    }
    // From the cylinder to each box edge's point nearest to the axis, and to each corner.
    let axis_segment = (cy.cap_center(-1.0), cy.cap_center(1.0));
    let edges = (0..8usize).flat_map(|k| {
        (0..3)
            .filter(move |j| k >> j & 1 == 0)
            .map(move |j| (k, k | 1 << j))
    });
    let towards_edges = edges.map(|(k, l)| {
        let (_, on_edge) = closest_points_of_segments(axis_segment, (corners[k], corners[l]));
        cy.closest(&on_edge).0
    });
    let towards_corners = corners.iter().map(|q| cy.closest(q).0);
    let others = std::iter::once((Axis::Cap, cy.a)).chain(
        towards_edges
            .chain(towards_corners)
            .map(|l| (Axis::Side, l)),
    );
    for (axis, l) in others {
        if sep(&l) > best.1 + tol {
            best = (axis, sep(&l), oriented(l));
        }
    }
    let (axis, gap, n) = best;
    if gap > envelope {
        return Vec::new();
    }
    let hits: Vec<Hit> = match axis {
        Axis::Face(i) => {
            let face_center = b.pose.position + n * b.half[i];
            let mut poly = cy.incident(&n);
            for (side, (w, h)) in side_planes(b, i).into_iter().enumerate() {
                poly = clip(&poly, &w, h + w.dot(&b.pose.position), side as u32);
            }
            poly.into_iter()
                .map(|(p, f)| Hit::from_b(n, p, (p - face_center).dot(&n), f))
                .collect()
        }
        Axis::Cap => {
            // The cap's outward normal is −n; the box face most facing the cylinder.
            let cap = cy.cap_center(-cy.a.dot(&n).signum());
            let j = (0..3)
                .max_by(|&x, &y| b.axis(x).dot(&n).abs().total_cmp(&b.axis(y).dot(&n).abs()))
                .unwrap_or(0);
            let face = face_id(j, b.axis(j).dot(&n));
            let mut poly: Vec<(V3, u32)> = super::incident_face(b, j, face)
                .into_iter()
                .map(|v| (v.p, v.id))
                .collect();
            let u = cy.radial(&-n);
            for (side, (w, _)) in cy.rim(1.0, &u, 0).into_iter().enumerate() {
                let w = (w - cy.cap_center(1.0)) / cy.r;
                poly = clip(&poly, &w, cy.r + w.dot(&cy.c), side as u32);
            }
            poly.into_iter()
                .map(|(p, f)| {
                    let gap = (cap - p).dot(&n);
                    Hit {
                        normal: n,
                        point_a: p,
                        point_b: p + n * gap,
                        distance: gap,
                        feature: f,
                    }
                })
                .collect()
        }
        Axis::Side => box_support(b, &n, cy)
            .into_iter()
            .map(|(p, f)| {
                let (m, q, dist) = cy.closest(&p);
                Hit {
                    normal: -m,
                    point_a: p,
                    point_b: q,
                    distance: dist,
                    feature: 2048 + f,
                }
            })
            .collect(),
    };
    let hits = hits
        .into_iter()
        .filter(|h| h.distance <= envelope)
        .collect();
    reduce(hits, &n)
}

/// The points of the box's feature farthest along `n` that face the cylinder's side: a
/// corner; an edge clipped to the cylinder's length when along the axis, else its point
/// nearest to the axis; or a face's four corners. Features: corner indices, `8 + ` an
/// edge's cut.
fn box_support(b: &Obb, n: &V3, cy: &Cyl) -> Vec<(V3, u32)> {
    /// Below this |cos| a box axis is across `n`: the feature spans it.
    const ACROSS: f64 = 1e-3;
    let mut k = 0usize;
    let mut free = Vec::new();
    for j in 0..3 {
        let s = b.axis(j).dot(n);
        if s.abs() < ACROSS {
            free.push(j);
        } else if s > 0.0 {
            k |= 1 << j;
        }
    }
    match free[..] {
        [j] => {
            let (p, q) = (b.corner(k), b.corner(k | 1 << j));
            if b.axis(j).dot(&cy.a).abs() > 1.0 - ACROSS {
                let seg = clip(
                    &[(p, k as u32), (q, (k | 1 << j) as u32)],
                    &cy.a,
                    cy.h + cy.a.dot(&cy.c),
                    0,
                );
                clip(&seg, &-cy.a, cy.h - cy.a.dot(&cy.c), 1)
            } else {
                let ends = (cy.cap_center(-1.0), cy.cap_center(1.0));
                let (on_edge, _) = closest_points_of_segments((p, q), ends);
                vec![(on_edge, 8 + j as u32)]
            }
        }
        [j1, j2] => [0, 1 << j1, 1 << j2, 1 << j1 | 1 << j2]
            .map(|bits| (b.corner(k | bits), (k | bits) as u32))
            .to_vec(),
        _ => vec![(b.corner(k), k as u32)],
    }
}

/// Cylinder (A) – cylinder (B); see the module documentation.
pub(super) fn cylinder_cylinder(p: &Cyl, q: &Cyl, envelope: f64) -> Vec<Hit> {
    /// Below this `1 − |cos|` the axes count as parallel.
    const PARALLEL: f64 = 1e-6;
    let d = q.c - p.c;
    let hits = if 1.0 - p.a.dot(&q.a).abs() < PARALLEL {
        parallel_cylinders(p, q, d)
    } else {
        let (sa, sb) = closest_points_of_segments(
            (p.cap_center(-1.0), p.cap_center(1.0)),
            (q.cap_center(-1.0), q.cap_center(1.0)),
        );
        let interior = |c: &Cyl, s: &V3| (s - c.c).dot(&c.a).abs() < c.h * (1.0 - 1e-9);
        if interior(p, &sa) && interior(q, &sb) {
            let diff = sb - sa;
            let n = diff
                .try_normalize(0.0)
                .unwrap_or_else(|| p.a.cross(&q.a).normalize());
            let gap = diff.norm() - p.r - q.r;
            vec![Hit {
                normal: n,
                point_a: sa + n * p.r,
                point_b: sb - n * q.r,
                distance: gap,
                feature: 0,
            }]
        } else {
            rims_against(p, q)
        }
    };
    let hits: Vec<Hit> = hits
        .into_iter()
        .filter(|h| h.distance <= envelope)
        .collect();
    let n = hits.first().map_or(V3::z(), |h| h.normal);
    reduce(hits, &n)
}

/// The rim points of each cylinder against the other solid cylinder.
fn rims_against(p: &Cyl, q: &Cyl) -> Vec<Hit> {
    let rims = |c: &Cyl| {
        let mut pts = c.rim(-1.0, &c.x, 0);
        pts.extend(c.rim(1.0, &c.x, RIM_POINTS as u32));
        pts
    };
    let of_p = rims(p).into_iter().map(|(pt, f)| {
        let (m, on_q, dist) = q.closest(&pt);
        Hit {
            normal: -m,
            point_a: pt,
            point_b: on_q,
            distance: dist,
            feature: 1 + f,
        }
    });
    let of_q = rims(q).into_iter().map(|(pt, f)| {
        let (m, on_p, dist) = p.closest(&pt);
        Hit {
            normal: m,
            point_a: on_p,
            point_b: pt,
            distance: dist,
            feature: 64 + f,
        }
    });
    of_p.chain(of_q).collect()
}

/// Parallel axes, `d` from A's center to B's: side by side (the two ends of the common part
/// of the generatrices) or cap on cap (rim points of each cap inside the other's disc, and
/// the cap centers inside the other disc), whichever separates more.
fn parallel_cylinders(p: &Cyl, q: &Cyl, d: V3) -> Vec<Hit> {
    let t = d.dot(&p.a);
    let across = d - p.a * t;
    let side_gap = across.norm() - p.r - q.r;
    let cap_gap = t.abs() - p.h - q.h;
    if side_gap >= cap_gap {
        let n = p.radial(&across);
        let (lo, hi) = ((-p.h).max(t - q.h), p.h.min(t + q.h));
        let (lo, hi) = if lo > hi {
            let mid = 0.5 * (lo + hi);
            (mid, mid)
        } else {
            (lo, hi)
        };
        let mut ends = vec![lo];
        if hi > lo {
            ends.push(hi);
        }
        ends.into_iter()
            .enumerate()
            .map(|(k, s)| {
                let point_a = p.c + p.a * s + n * p.r;
                Hit::from_b(n, point_a + n * side_gap, side_gap, 1 + k as u32)
            })
            .collect()
    } else {
        let n = p.a * t.signum();
        let (cap_p, cap_q) = (p.c + n * p.h, q.c - n * q.h);
        let inside = |c: &Cyl, x: &V3| {
            let r = x - c.c;
            (r - c.a * c.a.dot(&r)).norm() <= c.r * (1.0 + 1e-9)
        };
        let mut pts_q = q.rim(0.0, &q.x, 0);
        pts_q.push((q.c, RIM_POINTS as u32));
        let mut pts_p = p.rim(0.0, &p.x, 0);
        pts_p.push((p.c, RIM_POINTS as u32));
        let of_q = pts_q
            .into_iter()
            .map(|(x, f)| (x - q.c + cap_q, f))
            .filter(|(x, _)| inside(p, x))
            .map(|(x, f)| Hit::from_b(n, x, cap_gap, 16 + f));
        let of_p = pts_p
            .into_iter()
            .map(|(x, f)| (x - p.c + cap_p, f))
            .filter(|(x, _)| inside(q, x))
            .map(|(x, f)| Hit {
                normal: n,
                point_a: x,
                point_b: x + n * cap_gap,
                distance: cap_gap,
                feature: 32 + f,
            });
        of_q.chain(of_p).collect()
    }
}
