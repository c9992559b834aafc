//! Shapes and poses of rigid bodies.

use nalgebra::{UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

/// Position (world frame) and orientation (body → world) of a body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Position of the body's center of mass, world frame.
    pub position: Vector3<f64>,
    /// Rotation from the body frame (principal axes) to the world frame.
    pub orientation: UnitQuaternion<f64>,
}

impl Pose {
    /// A pose at `position` with the identity orientation.
    pub fn at(position: Vector3<f64>) -> Self {
        Pose {
            position,
            orientation: UnitQuaternion::identity(),
        }
    }

    /// A body-frame point in the world frame.
    pub fn to_world(&self, p: &Vector3<f64>) -> Vector3<f64> {
        self.position + self.orientation * p
    }
}

/// The collision shape of a body, in its body frame (centered on the center of mass).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Shape {
    /// A sphere of the given radius.
    Sphere {
        /// Radius (> 0).
        radius: f64,
    },
    /// A box with the given half extents along the body axes.
    Box {
        /// Half extents (> 0).
        half_extents: [f64; 3],
    },
    /// The half-space below the plane through the body origin with body-frame normal `+z`:
    /// the plane is the surface, `+z` points out of the solid. Only fixed or kinematic bodies
    /// carry planes.
    Plane,
    /// A solid circular cylinder whose axis is the body `z` axis, centered on the body origin:
    /// its caps are the discs at `z = ±half_length`.
    Cylinder {
        /// Radius (> 0).
        radius: f64,
        /// Half of the length along the body `z` axis (> 0).
        half_length: f64,
    },
}

impl Shape {
    /// Half extents of the shape's world-frame axis-aligned bounding box at `orientation`
    /// (centered on the body origin); `None` for a plane.
    pub fn world_half_extents(&self, orientation: &UnitQuaternion<f64>) -> Option<Vector3<f64>> {
        match *self {
            Shape::Sphere { radius } => Some(Vector3::repeat(radius)),
            // Extent of an oriented box along world axis i: Σ_j |R_ij| h_j.
            Shape::Box { half_extents } => {
                Some(orientation.to_rotation_matrix().matrix().abs() * Vector3::from(half_extents))
            }
            // The caps' discs of radius r about the axis a: r·√(1 − a_i²) + h·|a_i|.
            Shape::Cylinder {
                radius,
                half_length,
            } => {
                let a = orientation * Vector3::z();
                Some(a.map(|ai| radius * (1.0 - ai * ai).max(0.0).sqrt() + half_length * ai.abs()))
            }
            Shape::Plane => None,
        }
    }

    /// Radius of a sphere about the body origin that holds the shape; `None` for a plane.
    pub fn bounding_radius(&self) -> Option<f64> {
        match *self {
            Shape::Sphere { radius } => Some(radius),
            Shape::Box { half_extents } => Some(Vector3::from(half_extents).norm()),
            Shape::Cylinder {
                radius,
                half_length,
            } => Some(radius.hypot(half_length)),
            Shape::Plane => None,
        }
    }
}
