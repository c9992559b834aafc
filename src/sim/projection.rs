//! Position-level post-stabilization of the joints (Cline & Pai 2003, "Post-stabilization
//! for rigid body simulation with contact and constraints", §4; the position half of the
//! split-impulse scheme of Bullet and Chrono). After the step's integration the positions of
//! jointed bodies are projected back onto the joint manifold `C(q, t) = 0` by Gauss–Newton
//! steps on the bilateral rows only:
//!
//! `(J M⁻¹ Jᵀ + εI) Δλ = −C`, `Δq = M⁻¹ Jᵀ Δλ`,
//!
//! the mass-weighted least-norm correction (`J` the rows of [`Joint::rows`], `M` the bodies'
//! mass and principal inertia). `εI` (relative to the largest diagonal entry) keeps the matrix
//! positive definite when rows are redundant (closed loops such as a track's shoes): the
//! correction `Δq` does not depend on it along the rows' null space. The velocities are left
//! as the solver made them: projecting them on `J v = −∂C/∂t` would ignore the contacts and
//! friction the solver balanced them with, and the step's velocity rows already carry the
//! remaining drift's `C/h`, which the projection keeps small.

use nalgebra::Vector3;

use super::body::RigidBody;
use super::joint::{ConstraintRow, Joint};
use crate::error::Result;
use crate::limits::Limits;
use crate::problem::{CsrMatrix, SparseLlt};

/// Gauss–Newton steps at most per projection: the drift of one step is small, so one or two
/// reach the tolerance; the cap bounds a projection from a far-off state.
const MAX_ITERATIONS: usize = 10;

/// `ε` relative to the largest diagonal entry of `J M⁻¹ Jᵀ`.
const REGULARIZATION: f64 = 1e-10;

/// What a projection did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// Gauss–Newton steps taken.
    pub iterations: usize,
    /// Largest `|C|` of a row before the projection (m, or rad for angular rows).
    pub before: f64,
    /// Largest `|C|` after it.
    pub after: f64,
}

/// One row with a dynamic side: its violation and its parts on the dynamic bodies.
struct Row {
    violation: f64,
    parts: Vec<(usize, [f64; 6])>,
}

/// The rows of `joints` at time `t` that move a dynamic body.
fn joint_rows(bodies: &[RigidBody], joints: &[Joint], t: f64) -> Vec<Row> {
    let dynamic = |b: Option<usize>| b.filter(|&i| bodies[i].is_dynamic());
    joints
        .iter()
        .flat_map(|j| {
            j.rows(bodies, t).into_iter().filter_map(move |r| {
                let ConstraintRow {
                    a, b, violation, ..
                } = r;
                let parts: Vec<_> = [(dynamic(j.body_a), a), (dynamic(Some(j.body_b)), b)]
                    .into_iter()
                    .filter_map(|(body, row)| Some((body?, row)))
                    .collect();
                (!parts.is_empty()).then_some(Row { violation, parts })
            })
        })
        .collect()
}

/// `M⁻¹` of a dynamic body: linear then angular (body frame).
fn inverse_mass(b: &RigidBody) -> [f64; 6] {
    let (m, i) = (b.mass, b.inertia);
    [1.0 / m, 1.0 / m, 1.0 / m, 1.0 / i.x, 1.0 / i.y, 1.0 / i.z]
}

/// Projects the dynamic bodies of `bodies` onto `C(q, t) = 0` of `joints` until no row's
/// `|C|` exceeds `tol` (or 10 Gauss–Newton steps); a failed factorization is an error.
pub fn project(bodies: &mut [RigidBody], joints: &[Joint], t: f64, tol: f64) -> Result<Projection> {
    let worst = |rows: &[Row]| rows.iter().fold(0.0f64, |m, r| m.max(r.violation.abs()));
    let mut rows = joint_rows(bodies, joints, t);
    let before = worst(&rows);
    let mut out = Projection {
        iterations: 0,
        before,
        after: before,
    };
    let limits = Limits::default();
    while out.after > tol && out.iterations < MAX_ITERATIONS {
        // Rows of each body, then the lower triangle of J M⁻¹ Jᵀ body by body.
        let mut by_body: Vec<Vec<(usize, [f64; 6])>> = vec![Vec::new(); bodies.len()];
        for (k, r) in rows.iter().enumerate() {
            for &(b, row) in &r.parts {
                by_body[b].push((k, row));
            }
        }
        let mut triplets = Vec::new();
        for (b, list) in by_body.iter().enumerate() {
            let w = inverse_mass(&bodies[b]);
            for (n, &(i, ri)) in list.iter().enumerate() {
                for &(j, rj) in &list[..=n] {
                    let v: f64 = (0..6).map(|c| ri[c] * w[c] * rj[c]).sum();
                    triplets.push((i.max(j), i.min(j), v));
                }
            }
        }
        let scale = triplets
            .iter()
            .filter(|(i, j, _)| i == j)
            .fold(0.0f64, |m, t| m.max(t.2));
        triplets.extend((0..rows.len()).map(|i| (i, i, REGULARIZATION * scale)));
        let a = CsrMatrix::from_triplets(rows.len(), rows.len(), &triplets)?;
        let mut lambda: Vec<f64> = rows.iter().map(|r| -r.violation).collect();
        SparseLlt::new(&a, &limits, "the joints' J M⁻¹ Jᵀ")?.solve(&mut lambda);
        // Δq = M⁻¹ Jᵀ Δλ.
        for (b, list) in by_body.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            let w = inverse_mass(&bodies[b]);
            let mut d = [0.0; 6];
            for &(k, row) in list {
                (0..6).for_each(|c| d[c] += w[c] * row[c] * lambda[k]);
            }
            bodies[b].displace(
                &Vector3::new(d[0], d[1], d[2]),
                &Vector3::new(d[3], d[4], d[5]),
            );
        }
        rows = joint_rows(bodies, joints, t);
        out.after = worst(&rows);
        out.iterations += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::joint::JointKind;
    use crate::sim::{Pose, Shape};
    use nalgebra::UnitQuaternion;

    /// Two free bodies pulled apart at their spherical joint and twisted off their hinge are
    /// put back on it to the tolerance, their centre of mass unmoved (the correction is
    /// internal and mass-weighted).
    #[test]
    fn a_torn_joint_is_closed_without_moving_the_centre_of_mass() {
        let body = |x: f64, m: f64| {
            RigidBody::dynamic(
                Shape::Box {
                    half_extents: [0.2, 0.1, 0.1],
                },
                Pose::at(Vector3::new(x, 0.0, 0.0)),
                m,
                Vector3::new(0.01, 0.02, 0.03) * m,
            )
        };
        let mut bodies = vec![body(-0.2, 1.0), body(0.2, 3.0)];
        let hinge = JointKind::Revolute {
            axis_a: [0.0, 0.0, 1.0],
            axis_b: [0.0, 0.0, 1.0],
        };
        let joints = [Joint::at_world_point(
            &bodies,
            Some(0),
            1,
            Vector3::zeros(),
            hinge,
        )];
        let centre = |b: &[RigidBody]| (b[0].pose.position + 3.0 * b[1].pose.position) / 4.0;
        bodies[1].pose.position += Vector3::new(0.03, -0.02, 0.01);
        bodies[1].pose.orientation = UnitQuaternion::from_euler_angles(0.05, -0.03, 0.2);
        let before = centre(&bodies);
        let p = project(&mut bodies, &joints, 0.0, 1e-10).unwrap();
        assert!(p.before > 0.03 && p.after <= 1e-10, "{p:?}");
        assert!((1..MAX_ITERATIONS).contains(&p.iterations), "{p:?}");
        assert!((centre(&bodies) - before).norm() < 1e-12);
    }
}
