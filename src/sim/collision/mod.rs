//! Collision detection (DESIGN §5): a broad phase on a uniform grid ([`broad`]) proposes
//! candidate pairs, the narrow phase ([`narrow`]) turns each pair into contact points.
//!
//! Contacts are reported up to a gap of `envelope`, so that they enter the problem a step
//! before the bodies touch.

mod broad;
mod narrow;

use nalgebra::Vector3;
use rayon::prelude::*;

use super::{Pose, Shape};

/// One contact point between two bodies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contact {
    /// First body (index into the shapes/poses slices). The plane when one body is a plane,
    /// otherwise the smaller index.
    pub body_a: usize,
    /// Second body (index into the shapes/poses slices).
    pub body_b: usize,
    /// Unit normal, world frame, pointing from A towards B.
    pub normal: Vector3<f64>,
    /// World-frame point on A's surface.
    pub point_a: Vector3<f64>,
    /// World-frame point on B's surface.
    pub point_b: Vector3<f64>,
    /// Signed gap along the normal, `(point_b − point_a)·normal`; negative = penetration.
    pub distance: f64,
    /// Id of the contact feature (box corner, face pair + clipped vertex, edge pair), unique
    /// within the pair and stable across steps while the same geometric feature touches:
    /// the key for warm-start persistence.
    pub feature: u32,
}

/// Counters of one [`detect`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CollisionStats {
    /// Pairs handed from the broad phase to the narrow phase.
    pub candidate_pairs: usize,
    /// Contacts reported.
    pub contacts: usize,
}

/// All contacts with `distance <= envelope` between bodies that are not both static, written
/// to `out` (cleared first) in the order of `(body_a, body_b, feature)`, whatever the number
/// of threads. Plane–plane pairs are never tested.
///
/// # Panics
/// If `shapes`, `poses` and `is_static` differ in length.
pub fn detect(
    shapes: &[Shape],
    poses: &[Pose],
    is_static: &[bool],
    envelope: f64,
    out: &mut Vec<Contact>,
) -> CollisionStats {
    assert_eq!(shapes.len(), poses.len(), "one pose per shape");
    assert_eq!(shapes.len(), is_static.len(), "one static flag per shape");
    let pairs = broad::candidate_pairs(shapes, poses, is_static, envelope);
    out.clear();
    out.par_extend(
        pairs
            .par_iter()
            .flat_map_iter(|&(a, b)| narrow::collide(a, b, shapes, poses, envelope)),
    );
    out.par_sort_unstable_by_key(|c| (c.body_a, c.body_b, c.feature));
    CollisionStats {
        candidate_pairs: pairs.len(),
        contacts: out.len(),
    }
}
