//! Rigid bodies: mass properties, motion type (dynamic, fixed, kinematic), state and its
//! integration.

use nalgebra::{UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

use super::{Pose, Shape};

/// A prescribed sinusoidal translation `x(t) = x₀ + A sin(2π f t + φ)` (a shaker).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oscillation {
    /// Amplitude vector `A`, m.
    pub amplitude: [f64; 3],
    /// Frequency `f`, Hz.
    pub frequency: f64,
    /// Phase `φ`, rad.
    #[serde(default)]
    pub phase: f64,
}

impl Oscillation {
    fn angle(&self, t: f64) -> f64 {
        2.0 * std::f64::consts::PI * self.frequency * t + self.phase
    }

    /// Displacement from the rest position at time `t`.
    pub fn displacement(&self, t: f64) -> Vector3<f64> {
        Vector3::from(self.amplitude) * self.angle(t).sin()
    }
}

/// How a body moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Motion {
    /// Moved by forces and impulses.
    Dynamic,
    /// Never moves.
    Fixed,
    /// Follows a prescribed motion about its rest position; impulses do not affect it.
    Kinematic {
        /// The prescribed motion.
        oscillation: Oscillation,
        /// Position at `t = 0` minus the displacement there.
        rest: Vector3<f64>,
    },
}

/// One rigid body.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidBody {
    /// Collision shape.
    pub shape: Shape,
    /// Position and orientation.
    pub pose: Pose,
    /// Linear velocity, world frame.
    pub velocity: Vector3<f64>,
    /// Angular velocity, body frame (principal axes).
    pub angular_velocity: Vector3<f64>,
    /// Mass (infinite for non-dynamic bodies).
    pub mass: f64,
    /// Principal moments of inertia.
    pub inertia: Vector3<f64>,
    /// Coulomb friction coefficient of the body's surface (a pair uses the smaller one).
    pub friction: f64,
    /// How the body moves.
    pub motion: Motion,
}

/// Mass and principal inertia of a shape of uniform density.
pub fn mass_properties(shape: &Shape, density: f64) -> Option<(f64, Vector3<f64>)> {
    match *shape {
        Shape::Sphere { radius } => {
            let m = density * 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3);
            Some((m, Vector3::repeat(0.4 * m * radius * radius)))
        }
        Shape::Box {
            half_extents: [a, b, c],
        } => {
            let m = density * 8.0 * a * b * c;
            let third = m / 3.0;
            Some((
                m,
                Vector3::new(
                    third * (b * b + c * c),
                    third * (a * a + c * c),
                    third * (a * a + b * b),
                ),
            ))
        }
        // I_z = m r²/2 about the axis, I_x = I_y = m (3r² + L²)/12 with L = 2h.
        Shape::Cylinder {
            radius,
            half_length,
        } => {
            let m = density * std::f64::consts::PI * radius * radius * 2.0 * half_length;
            let across = m * (3.0 * radius * radius + 4.0 * half_length * half_length) / 12.0;
            Some((m, Vector3::new(across, across, 0.5 * m * radius * radius)))
        }
        Shape::Plane => None,
    }
}

impl RigidBody {
    /// A dynamic body at rest with the given mass properties.
    pub fn dynamic(shape: Shape, pose: Pose, mass: f64, inertia: Vector3<f64>) -> Self {
        RigidBody {
            shape,
            pose,
            velocity: Vector3::zeros(),
            angular_velocity: Vector3::zeros(),
            mass,
            inertia,
            friction: 0.0,
            motion: Motion::Dynamic,
        }
    }

    /// A fixed body.
    pub fn fixed(shape: Shape, pose: Pose) -> Self {
        RigidBody {
            motion: Motion::Fixed,
            mass: f64::INFINITY,
            inertia: Vector3::repeat(f64::INFINITY),
            ..RigidBody::dynamic(shape, pose, 1.0, Vector3::repeat(1.0))
        }
    }

    /// Whether impulses move the body.
    pub fn is_dynamic(&self) -> bool {
        self.motion == Motion::Dynamic
    }

    /// The 6-vector of generalized velocity: linear (world) then angular (body frame).
    pub fn generalized_velocity(&self) -> [f64; 6] {
        let (v, w) = (self.velocity, self.angular_velocity);
        [v.x, v.y, v.z, w.x, w.y, w.z]
    }

    /// Sets the velocities from a generalized 6-vector.
    pub fn set_generalized_velocity(&mut self, g: &[f64]) {
        self.velocity = Vector3::new(g[0], g[1], g[2]);
        self.angular_velocity = Vector3::new(g[3], g[4], g[5]);
    }

    /// Kinetic energy (zero for non-dynamic bodies).
    pub fn kinetic_energy(&self) -> f64 {
        if !self.is_dynamic() {
            return 0.0;
        }
        let w = self.angular_velocity;
        0.5 * self.mass * self.velocity.norm_squared()
            + 0.5 * w.component_mul(&self.inertia).dot(&w)
    }

    /// Free velocity `v + h M⁻¹ f_ext` with gravity and, when enabled, the explicit gyroscopic
    /// term `−ω × Jω` in the body frame.
    pub fn free_velocity(&self, h: f64, gravity: &Vector3<f64>, gyroscopic: bool) -> [f64; 6] {
        let v = self.velocity + h * gravity;
        let w = self.angular_velocity;
        let w = if gyroscopic {
            let torque = -w.cross(&w.component_mul(&self.inertia));
            w + h * torque.component_div(&self.inertia)
        } else {
            w
        };
        [v.x, v.y, v.z, w.x, w.y, w.z]
    }

    /// The change of generalized velocity an impulse `p` (world frame, N·s) at the world
    /// point `at` gives the body: `Δv = p / m`, `Δω = I⁻¹ Rᵀ (r × p)` (body frame).
    pub fn velocity_change(&self, at: &Vector3<f64>, p: &Vector3<f64>) -> [f64; 6] {
        let dv = p / self.mass;
        let torque = self.pose.orientation.inverse() * (at - self.pose.position).cross(p);
        let dw = torque.component_div(&self.inertia);
        [dv.x, dv.y, dv.z, dw.x, dw.y, dw.z]
    }

    /// Advances the pose over `h` with the current velocities: `x ← x + h v` and the
    /// exponential-map rotation update `q ← q ⊗ exp(h ω_body)` (thesis eq. 3.1).
    pub fn integrate(&mut self, h: f64) {
        self.displace(&(h * self.velocity), &(h * self.angular_velocity));
    }

    /// Moves the body by `dx` (world frame) and turns it by the rotation vector `dtheta`
    /// (body frame): `q ← q ⊗ exp(dθ)`.
    pub fn displace(&mut self, dx: &Vector3<f64>, dtheta: &Vector3<f64>) {
        self.pose.position += dx;
        self.pose.orientation *= UnitQuaternion::from_scaled_axis(*dtheta);
    }

    /// For a kinematic body: the pose at time `t` and the mean velocity over `[t, t + h]`, so
    /// that contacts see exactly the displacement of the coming step.
    pub fn prescribe(&mut self, t: f64, h: f64) {
        if let Motion::Kinematic { oscillation, rest } = self.motion {
            self.pose.position = rest + oscillation.displacement(t);
            self.velocity = (oscillation.displacement(t + h) - oscillation.displacement(t)) / h;
            self.angular_velocity = Vector3::zeros();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mass_properties_of_sphere_and_box() {
        let (m, j) = mass_properties(&Shape::Sphere { radius: 0.5 }, 1000.0).unwrap();
        assert!((m - 1000.0 * 4.0 / 3.0 * std::f64::consts::PI / 8.0).abs() < 1e-9);
        assert!((j.x - 0.4 * m * 0.25).abs() < 1e-9);
        let (m, j) = mass_properties(
            &Shape::Box {
                half_extents: [1.0, 2.0, 3.0],
            },
            2.0,
        )
        .unwrap();
        assert_eq!(m, 96.0);
        // I_x = m (b² + c²)/12 with full extents b = 4, c = 6.
        assert!((j.x - 96.0 * (16.0 + 36.0) / 12.0).abs() < 1e-9);
        let (m, j) = mass_properties(
            &Shape::Cylinder {
                radius: 0.5,
                half_length: 1.0,
            },
            2.0,
        )
        .unwrap();
        let want = 2.0 * std::f64::consts::PI * 0.25 * 2.0;
        assert!((m - want).abs() < 1e-12);
        // Solid cylinder of length 2: I_z = m r²/2, I_x = m (3r² + L²)/12.
        assert!((j.z - m * 0.125).abs() < 1e-12);
        assert!((j.x - m * (0.75 + 4.0) / 12.0).abs() < 1e-12 && j.x == j.y);
    }

    #[test]
    fn rotation_update_is_the_exponential_map_in_the_body_frame() {
        let mut b = RigidBody::dynamic(
            Shape::Sphere { radius: 1.0 },
            Pose {
                position: Vector3::zeros(),
                orientation: UnitQuaternion::from_euler_angles(0.0, 0.0, 0.5),
            },
            1.0,
            Vector3::repeat(1.0),
        );
        b.angular_velocity = Vector3::new(0.0, 0.0, 2.0);
        b.integrate(0.25);
        let yaw = b.pose.orientation.euler_angles().2;
        assert!((yaw - 1.0).abs() < 1e-12);
        assert!((b.pose.orientation.norm() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn kinematic_body_follows_its_oscillation() {
        let osc = Oscillation {
            amplitude: [0.0, 0.0, 0.01],
            frequency: 5.0,
            phase: 0.0,
        };
        let mut b = RigidBody::fixed(Shape::Plane, Pose::at(Vector3::zeros()));
        b.motion = Motion::Kinematic {
            oscillation: osc,
            rest: Vector3::new(0.0, 0.0, 1.0),
        };
        b.prescribe(0.05, 0.01);
        assert!((b.pose.position.z - 1.01).abs() < 1e-15);
        let next = 1.0 + 0.01 * (2.0 * std::f64::consts::PI * 5.0 * 0.06).sin();
        assert!((b.velocity.z - (next - 1.01) / 0.01).abs() < 1e-12);
    }
}
