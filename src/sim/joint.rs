//! Constraint rows: the Jacobian row of a point velocity along a direction, and the joints
//! (bilateral blocks) built from such rows, scleronomic (`C(q) = 0`) or rheonomic
//! (`C(q, t) = 0`: a prescribed motion, whose rows carry the explicit rate `∂C/∂t`).
//!
//! Generalized velocities are `(v, ω)` with `v` in the world frame and `ω` in the body frame,
//! so the row of `e · (v + ω_world × r)` is `(e, r_body × e_body)`.

use nalgebra::{UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

use super::body::RigidBody;

/// One scalar constraint between two bodies: `C(q, t) = 0` with
/// `dC/dt = a·v_A + b·v_B + ∂C/∂t`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstraintRow {
    /// Row for body A.
    pub a: [f64; 6],
    /// Row for body B.
    pub b: [f64; 6],
    /// The position-level violation `C`.
    pub violation: f64,
    /// The explicit time rate `∂C/∂t` (0 unless the joint prescribes a motion).
    pub rate: f64,
}

/// The row of `e · (velocity of the world point p attached to body)`.
pub fn point_row(body: &RigidBody, p: &Vector3<f64>, e: &Vector3<f64>) -> [f64; 6] {
    let inv = body.pose.orientation.inverse();
    let r = inv * (p - body.pose.position);
    let ang = r.cross(&(inv * e));
    [e.x, e.y, e.z, ang.x, ang.y, ang.z]
}

/// The row of `c · ω_world` of a body.
pub fn angular_row(body: &RigidBody, c: &Vector3<f64>) -> [f64; 6] {
    let c = body.pose.orientation.inverse() * c;
    [0.0, 0.0, 0.0, c.x, c.y, c.z]
}

/// The world frame as a body: fixed, at the origin.
fn ground() -> RigidBody {
    RigidBody::fixed(super::Shape::Plane, super::Pose::at(Vector3::zeros()))
}

fn neg(r: [f64; 6]) -> [f64; 6] {
    r.map(|x| -x)
}

fn add(a: [f64; 6], b: [f64; 6]) -> [f64; 6] {
    std::array::from_fn(|i| a[i] + b[i])
}

/// Two unit vectors completing `n` to an orthonormal frame `(n, t1, t2)`.
pub fn tangent_frame(n: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let helper = if n.x.abs() < 0.6 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let t1 = n.cross(&helper).normalize();
    (t1, n.cross(&t1))
}

/// Two world directions perpendicular to a body-frame axis of `body`, rigidly attached to
/// the body (so that their rates are `ω × p`).
fn attached_perpendiculars(body: &RigidBody, axis: [f64; 3]) -> (Vector3<f64>, Vector3<f64>) {
    let (p1, p2) = tangent_frame(&Vector3::from(axis).normalize());
    (body.pose.orientation * p1, body.pose.orientation * p2)
}

/// The kinds of joint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", deny_unknown_fields)]
pub enum JointKind {
    /// The two anchors coincide (3 rows).
    Spherical,
    /// The anchors stay at a fixed distance (1 row).
    Distance {
        /// Rest length, m.
        length: f64,
    },
    /// Spherical plus an aligned hinge axis (5 rows).
    Revolute {
        /// Hinge axis in the frame of body A.
        axis_a: [f64; 3],
        /// Hinge axis in the frame of body B.
        axis_b: [f64; 3],
    },
    /// B's anchor stays on a line through A's anchor (2 rows, rotations free); with the
    /// ground as A and a vertical axis, the vertical guide of the thesis' sphere stacks.
    Line {
        /// Direction of the line in the frame of body A.
        axis_a: [f64; 3],
    },
    /// B slides along an axis fixed in A without rotating relative to A (5 rows).
    Prismatic {
        /// Sliding axis in the frame of body A.
        axis_a: [f64; 3],
    },
    /// A prescribed motion of B relative to A (6 rheonomic rows): B's anchor moves at
    /// `velocity` from A's anchor and B turns at `angular_velocity` from its rotation
    /// relative to A at creation, both constant in A's frame. With zero `velocity` it is a
    /// revolute joint driven at a prescribed speed (a motor); with the ground as A, a body
    /// pushed along a line. Its impulses are the driving force and torque.
    Prescribed {
        /// Velocity of B's anchor relative to A's, A's frame, m/s.
        #[serde(default)]
        velocity: [f64; 3],
        /// Angular velocity of B relative to A, A's frame, rad/s.
        #[serde(default)]
        angular_velocity: [f64; 3],
    },
}

/// A joint between body `a` (or the world frame) and body `b`; either body may be fixed or
/// kinematic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Joint {
    /// Body A; `None` is the world frame (the ground).
    pub body_a: Option<usize>,
    /// Body B.
    pub body_b: usize,
    /// Anchor on A, in A's frame (world frame for the ground).
    pub anchor_a: Vector3<f64>,
    /// Anchor on B, in B's frame.
    pub anchor_b: Vector3<f64>,
    /// The kind.
    pub kind: JointKind,
    /// `q_A⁻¹ q_B` when the joint was made: the relative rotation a prismatic joint keeps.
    pub rest_rotation: UnitQuaternion<f64>,
}

impl Joint {
    /// A joint whose anchors are the world point `at` (the relative rotation of the two
    /// bodies now is the one it keeps).
    pub fn at_world_point(
        bodies: &[RigidBody],
        body_a: Option<usize>,
        body_b: usize,
        at: Vector3<f64>,
        kind: JointKind,
    ) -> Self {
        let ground = ground();
        let pa = &body_a.map_or(&ground, |i| &bodies[i]).pose;
        let pb = &bodies[body_b].pose;
        Joint {
            body_a,
            body_b,
            anchor_a: pa.orientation.inverse() * (at - pa.position),
            anchor_b: pb.orientation.inverse() * (at - pb.position),
            kind,
            rest_rotation: pa.orientation.inverse() * pb.orientation,
        }
    }

    /// Number of rows.
    pub fn rows_count(&self) -> usize {
        match self.kind {
            JointKind::Spherical => 3,
            JointKind::Distance { .. } => 1,
            JointKind::Line { .. } => 2,
            JointKind::Revolute { .. } | JointKind::Prismatic { .. } => 5,
            JointKind::Prescribed { .. } => 6,
        }
    }

    /// The constraint rows at the current poses and time `t` (s since the joint was made).
    pub fn rows(&self, bodies: &[RigidBody], t: f64) -> Vec<ConstraintRow> {
        let ground = ground();
        let a = self.body_a.map_or(&ground, |i| &bodies[i]);
        let b = &bodies[self.body_b];
        // A prescribed joint's anchor on A has moved by `velocity·t` (A's frame).
        let (moved, turn) = match self.kind {
            JointKind::Prescribed {
                velocity,
                angular_velocity,
            } => (Vector3::from(velocity), Vector3::from(angular_velocity)),
            _ => (Vector3::zeros(), Vector3::zeros()),
        };
        let pa = a.pose.to_world(&(self.anchor_a + moved * t));
        let pb = b.pose.to_world(&self.anchor_b);
        let d = pb - pa;
        let linear = |e: &Vector3<f64>| ConstraintRow {
            a: neg(point_row(a, &pa, e)),
            b: point_row(b, &pb, e),
            violation: e.dot(&d),
            rate: -e.dot(&(a.pose.orientation * moved)),
        };
        // d/dt (p·d) = ω_A·(p × d) + p·(ṗ_B − ṗ_A) for p attached to A.
        let off_axis = |p: &Vector3<f64>| {
            let mut row = linear(p);
            row.a = add(row.a, angular_row(a, &p.cross(&d)));
            row
        };
        let angular = |c: &Vector3<f64>, violation: f64| ConstraintRow {
            a: neg(angular_row(a, c)),
            b: angular_row(b, c),
            violation,
            rate: -c.dot(&(a.pose.orientation * turn)),
        };
        match self.kind {
            JointKind::Spherical => [Vector3::x(), Vector3::y(), Vector3::z()]
                .iter()
                .map(linear)
                .collect(),
            JointKind::Distance { length } => {
                let n = d.try_normalize(1e-12).unwrap_or_else(Vector3::z);
                vec![ConstraintRow {
                    violation: d.norm() - length,
                    ..linear(&n)
                }]
            }
            JointKind::Revolute { axis_a, axis_b } => {
                let bw = (b.pose.orientation * Vector3::from(axis_b)).normalize();
                let (p1, p2) = attached_perpendiculars(a, axis_a);
                let mut rows: Vec<_> = [Vector3::x(), Vector3::y(), Vector3::z()]
                    .iter()
                    .map(linear)
                    .collect();
                // d/dt (p·b) = (ω_B − ω_A)·(b × p) for p attached to A and b to B.
                for p in [p1, p2] {
                    rows.push(angular(&bw.cross(&p), p.dot(&bw)));
                }
                rows
            }
            JointKind::Line { axis_a } => {
                let (p1, p2) = attached_perpendiculars(a, axis_a);
                [p1, p2].iter().map(off_axis).collect()
            }
            JointKind::Prismatic { axis_a } => {
                let (p1, p2) = attached_perpendiculars(a, axis_a);
                let mut rows: Vec<_> = [p1, p2].iter().map(off_axis).collect();
                rows.extend(self.keep_rotation(a, b, UnitQuaternion::identity(), &angular));
                rows
            }
            JointKind::Prescribed { .. } => {
                let mut rows: Vec<_> = [Vector3::x(), Vector3::y(), Vector3::z()]
                    .iter()
                    .map(linear)
                    .collect();
                let turned = UnitQuaternion::from_scaled_axis(turn * t);
                rows.extend(self.keep_rotation(a, b, turned, &angular));
                rows
            }
        }
    }

    /// The three angular rows that hold B at the rotation `q_A ⊗ turned ⊗ rest` (world
    /// frame components of the rotation vector from that target to B's orientation).
    fn keep_rotation(
        &self,
        a: &RigidBody,
        b: &RigidBody,
        turned: UnitQuaternion<f64>,
        angular: &dyn Fn(&Vector3<f64>, f64) -> ConstraintRow,
    ) -> Vec<ConstraintRow> {
        let target = a.pose.orientation * turned * self.rest_rotation;
        let theta = (b.pose.orientation * target.inverse()).scaled_axis();
        [Vector3::x(), Vector3::y(), Vector3::z()]
            .iter()
            .map(|e| angular(e, e.dot(&theta)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Pose, Shape};

    fn ball(at: Vector3<f64>, yaw: f64) -> RigidBody {
        RigidBody::dynamic(
            Shape::Sphere { radius: 0.1 },
            Pose {
                position: at,
                orientation: UnitQuaternion::from_euler_angles(0.3, -0.2, yaw),
            },
            1.0,
            Vector3::repeat(0.01),
        )
    }

    /// Each row's `a·v_A + b·v_B + ∂C/∂t` equals the finite-difference rate of its violation.
    #[test]
    fn rows_are_the_derivatives_of_their_violations() {
        let kinds = [
            JointKind::Spherical,
            JointKind::Distance { length: 0.5 },
            JointKind::Revolute {
                axis_a: [0.0, 0.0, 1.0],
                axis_b: [0.0, 0.0, 1.0],
            },
            JointKind::Prismatic {
                axis_a: [0.0, 1.0, 0.0],
            },
            JointKind::Line {
                axis_a: [0.0, 0.3, 1.0],
            },
            JointKind::Prescribed {
                velocity: [0.5, -0.2, 1.0],
                angular_velocity: [2.0, 0.5, -1.0],
            },
        ];
        let t = 0.7;
        for kind in kinds {
            let mut bodies = vec![
                ball(Vector3::zeros(), 0.1),
                ball(Vector3::new(0.3, 0.2, 0.1), 0.4),
            ];
            let joint =
                Joint::at_world_point(&bodies, Some(0), 1, Vector3::new(0.1, 0.1, 0.0), kind);
            // A prescribed rotation is held near its target at `t` (its rows are the
            // small-angle rates, as those of a prismatic joint).
            if let JointKind::Prescribed {
                angular_velocity, ..
            } = kind
            {
                let turned = UnitQuaternion::from_scaled_axis(Vector3::from(angular_velocity) * t);
                bodies[1].pose.orientation =
                    bodies[0].pose.orientation * turned * joint.rest_rotation;
            }
            // Perturb so that violations are non-zero, then move with some velocity.
            bodies[1].pose.position += Vector3::new(0.01, -0.02, 0.015);
            bodies[0].velocity = Vector3::new(0.3, -0.1, 0.2);
            bodies[0].angular_velocity = Vector3::new(0.5, 0.2, -0.4);
            bodies[1].velocity = Vector3::new(-0.2, 0.4, 0.1);
            bodies[1].angular_velocity = Vector3::new(-0.3, 0.6, 0.2);
            let rows = joint.rows(&bodies, t);
            assert_eq!(rows.len(), joint.rows_count());
            let h = 1e-7;
            let mut moved = bodies.clone();
            moved.iter_mut().for_each(|b| b.integrate(h));
            let after = joint.rows(&moved, t + h);
            let (va, vb) = (
                bodies[0].generalized_velocity(),
                bodies[1].generalized_velocity(),
            );
            for (r, r2) in rows.iter().zip(&after) {
                let rate: f64 =
                    (0..6).map(|i| r.a[i] * va[i] + r.b[i] * vb[i]).sum::<f64>() + r.rate;
                let fd = (r2.violation - r.violation) / h;
                assert!(
                    (rate - fd).abs() < 1e-4,
                    "{kind:?}: row rate {rate} vs {fd}"
                );
            }
        }
    }

    #[test]
    fn tangent_frame_is_orthonormal() {
        for n in [
            Vector3::z(),
            Vector3::x(),
            Vector3::new(1.0, 2.0, -3.0).normalize(),
        ] {
            let (t1, t2) = tangent_frame(&n);
            assert!(
                t1.dot(&n).abs() < 1e-15 && t2.dot(&n).abs() < 1e-15 && t1.dot(&t2).abs() < 1e-15
            );
            assert!((n.cross(&t1) - t2).norm() < 1e-15);
        }
    }
}
