//! Spring-dampers between two bodies: a force along the line of their anchors,
//! `f = −(k (l − l₀) + c l̇)` on B (its opposite on A), applied explicitly: its impulse over
//! the step enters the free velocity `v_free = v + h M⁻¹ (f_ext + f_spring)` of paper 001
//! eq. (1), like gravity.

use nalgebra::Vector3;

use super::body::RigidBody;

/// A linear spring-damper between an anchor on body A (or the world) and one on body B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spring {
    /// Body A; `None` is the world frame (the ground).
    pub body_a: Option<usize>,
    /// Body B.
    pub body_b: usize,
    /// Anchor on A, in A's frame (world frame for the ground).
    pub anchor_a: Vector3<f64>,
    /// Anchor on B, in B's frame.
    pub anchor_b: Vector3<f64>,
    /// Rest length `l₀`, m.
    pub rest_length: f64,
    /// Stiffness `k`, N/m.
    pub stiffness: f64,
    /// Damping `c`, N·s/m.
    pub damping: f64,
}

/// A force (world frame) applied at a world point of a body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointForce {
    /// The body.
    pub body: usize,
    /// The world point the force acts at, m.
    pub point: Vector3<f64>,
    /// The force, N.
    pub force: Vector3<f64>,
}

/// The world position and velocity of the point `anchor` (body frame) of `body`.
fn point_state(body: &RigidBody, anchor: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let r = body.pose.orientation * anchor;
    let w = body.pose.orientation * body.angular_velocity;
    (body.pose.position + r, body.velocity + w.cross(&r))
}

impl Spring {
    /// The spring's length `l` (distance between the anchors), m.
    pub fn length(&self, bodies: &[RigidBody]) -> f64 {
        let (pa, _) = self.anchor_a_state(bodies);
        let (pb, _) = point_state(&bodies[self.body_b], &self.anchor_b);
        (pb - pa).norm()
    }

    fn anchor_a_state(&self, bodies: &[RigidBody]) -> (Vector3<f64>, Vector3<f64>) {
        match self.body_a {
            Some(a) => point_state(&bodies[a], &self.anchor_a),
            None => (self.anchor_a, Vector3::zeros()),
        }
    }

    /// The forces on B and on A (when A is a body) at the current state; none while the
    /// anchors coincide (no direction).
    pub fn forces(&self, bodies: &[RigidBody]) -> Vec<PointForce> {
        let (pa, va) = self.anchor_a_state(bodies);
        let (pb, vb) = point_state(&bodies[self.body_b], &self.anchor_b);
        let Some(n) = (pb - pa).try_normalize(1e-12) else {
            return Vec::new();
        };
        let l = (pb - pa).norm();
        let rate = n.dot(&(vb - va));
        let f = -(self.stiffness * (l - self.rest_length) + self.damping * rate) * n;
        let mut out = vec![PointForce {
            body: self.body_b,
            point: pb,
            force: f,
        }];
        if let Some(a) = self.body_a {
            out.push(PointForce {
                body: a,
                point: pa,
                force: -f,
            });
        }
        out
    }
}
