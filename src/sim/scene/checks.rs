//! Checks of a scene before it is built: every number finite, the bodies not degenerate, the
//! time step and the collision envelope against the scene's length and speed scales, and the
//! memory the bodies and the contacts the envelope implies would take.

use super::SpecError;
use super::spec::{MotionSpec, SceneFile};
use crate::error::Result;
use crate::limits::{self, Limits};
use crate::sim::Shape;
use crate::sim::body::mass_properties;
use crate::sim::joint::JointKind;

/// The tables of a scene file, as `SpecError` sections (for the line of a key).
const SECTIONS: [&str; 14] = [
    "settings",
    "run",
    "body",
    "container",
    "lattice",
    "stack",
    "chain",
    "wall",
    "net",
    "joint",
    "fe_box",
    "fe_mesh",
    "track",
    "spring",
];

/// Memory of one body with its share of the collision grid, the problem and the outputs.
const BODY_BYTES: usize = 2048;
/// Memory of one contact: the contact, its Jacobian block, its rows in the solver's vectors
/// and its warm-start entry.
const CONTACT_BYTES: usize = 1024;
/// Memory of one tetrahedron: its rest stiffness blocks, its 144 entries of `H` as triplets
/// and in CSR, and its share of the Cholesky factor of `H`.
const ELEMENT_BYTES: usize = 16384;
/// Neighbours of a sphere in a dense packing (the kissing number): contacts per body when the
/// envelope is small against the bodies.
const KISSING: f64 = 12.0;

/// Refuses a NaN or an infinity anywhere in the scene table (after `--set`), naming its key.
pub(super) fn finite(table: &toml::Table) -> Result<(), SpecError> {
    fn walk(
        v: &toml::Value,
        key: &str,
        section: Option<(&'static str, usize)>,
    ) -> Result<(), SpecError> {
        match v {
            toml::Value::Float(x) if !x.is_finite() => Err((
                section,
                key.to_string(),
                format!("is {x}; every number of a scene must be finite"),
            )),
            toml::Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
                // An array of tables is a section (`[[lattice]]`); of numbers, a vector.
                let sec = match (item, section) {
                    (toml::Value::Table(_), None) => {
                        SECTIONS.iter().find(|s| **s == key).map(|s| (*s, i))
                    }
                    _ => section,
                };
                walk(item, &format!("{key}[{i}]"), sec)
            }),
            toml::Value::Table(t) => t.iter().try_for_each(|(k, item)| {
                let sec = section.or_else(|| SECTIONS.iter().find(|s| **s == key).map(|s| (*s, 0)));
                walk(item, &format!("{key}.{k}"), sec)
            }),
            _ => Ok(()),
        }
    }
    table.iter().try_for_each(|(k, v)| walk(v, k, None))
}

/// A group of dynamic bodies of one shape: where the scene sets them, how many, their
/// density, their initial speed, and the joint that prescribes their motion if one does.
struct Group {
    section: Option<(&'static str, usize)>,
    key: String,
    shape: Shape,
    density: f64,
    count: Option<usize>,
    speed: f64,
    driven: Option<Drive>,
}

/// A `[[body]]` whose motion a `prescribed` joint to the ground (or to a fixed body) sets
/// entirely: the joint, and the speed of the body's center under it.
struct Drive {
    joint: usize,
    speed: f64,
}

fn norm(v: [f64; 3]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The smallest and largest size (diameter, or smallest and largest box edge) of a shape.
fn sizes(shape: &Shape) -> (f64, f64) {
    match *shape {
        Shape::Sphere { radius } => (2.0 * radius, 2.0 * radius),
        Shape::Box { half_extents } => (
            2.0 * half_extents.iter().copied().fold(f64::INFINITY, f64::min),
            2.0 * half_extents.iter().copied().fold(0.0, f64::max),
        ),
        Shape::Cylinder {
            radius,
            half_length,
        } => (2.0 * radius.min(half_length), 2.0 * radius.max(half_length)),
        Shape::Plane => (f64::INFINITY, 0.0),
    }
}

impl SceneFile {
    /// The dynamic bodies, group by group (`count` is `None` when it overflows).
    fn groups(&self) -> Vec<Group> {
        let mut out = Vec::new();
        for (i, b) in self.body.iter().enumerate() {
            if b.motion == MotionSpec::Dynamic {
                out.push(Group {
                    section: Some(("body", i)),
                    key: format!("body[{i}].shape"),
                    shape: b.shape,
                    density: b.density,
                    count: Some(1),
                    speed: norm(b.velocity),
                    driven: self.drive(b),
                });
            }
        }
        for (i, l) in self.lattice.iter().enumerate() {
            out.push(Group {
                section: Some(("lattice", i)),
                key: format!("lattice[{i}].shape"),
                shape: l.shape,
                density: l.density,
                count: Some(l.count),
                speed: norm(l.velocity),
                driven: None,
            });
        }
        for (i, s) in self.stack.iter().enumerate() {
            let key = format!("stack[{i}].shape");
            let section = Some(("stack", i));
            match (&s.masses, s.shape) {
                (Some(masses), None) => out.extend(masses.iter().map(|m| Group {
                    section,
                    key: format!("stack[{i}].masses"),
                    shape: Shape::Sphere {
                        radius: (3.0 * m / (4.0 * std::f64::consts::PI * s.density)).cbrt(),
                    },
                    density: s.density,
                    count: Some(1),
                    speed: 0.0,
                    driven: None,
                })),
                (masses, Some(shape)) => out.push(Group {
                    section,
                    key,
                    shape,
                    density: s.density,
                    count: masses.as_ref().map(Vec::len).or(s.count),
                    speed: 0.0,
                    driven: None,
                }),
                (None, None) => {}
            }
        }
        for (i, c) in self.chain.iter().enumerate() {
            let section = Some(("chain", i));
            out.push(Group {
                section,
                key: format!("chain[{i}].shape"),
                shape: c.shape,
                density: c.density,
                count: Some(c.count),
                speed: 0.0,
                driven: None,
            });
            if let Some(e) = c.end_shape {
                out.push(Group {
                    section,
                    key: format!("chain[{i}].end_shape"),
                    shape: e,
                    density: c.end_density,
                    count: Some(1),
                    speed: 0.0,
                    driven: None,
                });
            }
        }
        for (i, w) in self.wall.iter().enumerate() {
            out.push(Group {
                section: Some(("wall", i)),
                key: format!("wall[{i}].brick"),
                shape: Shape::Box {
                    half_extents: w.brick,
                },
                density: w.density,
                count: w.rows.checked_mul(w.columns),
                speed: 0.0,
                driven: None,
            });
        }
        for (i, t) in self.track.iter().enumerate() {
            let [hx, hy, hz] = t.shoe;
            out.push(Group {
                section: Some(("track", i)),
                key: format!("track[{i}].shoe"),
                shape: Shape::Box {
                    half_extents: t.shoe,
                },
                density: t.shoe_mass / (8.0 * hx * hy * hz),
                count: Some(2 * (t.shoes_per_run + t.shoes_per_half_turn)),
                speed: 0.0,
                driven: None,
            });
            out.push(Group {
                section: Some(("track", i)),
                key: format!("track[{i}].road_wheel_radius"),
                shape: Shape::Cylinder {
                    radius: t.road_wheel_radius,
                    half_length: t.wheel_half_width,
                },
                density: 1.0,
                count: Some(t.road_wheels + 2),
                speed: t.commanded_speed().abs(),
                driven: None,
            });
        }
        for (i, n) in self.net.iter().enumerate() {
            out.push(Group {
                section: Some(("net", i)),
                key: format!("net[{i}].radius"),
                shape: Shape::Sphere { radius: n.radius },
                density: n.density,
                count: n.nx.checked_mul(n.ny),
                speed: 0.0,
                driven: None,
            });
        }
        out
    }

    /// The prescribed joint that sets the whole motion of `body`: one from the ground or from
    /// a fixed body (a joint from a moving body leaves B moved by A's dynamics), with the
    /// speed of B's center, `|v| + |ω| |at − center|`. A spin about the center is left out:
    /// a wheel driven on its axle (a motor) sweeps no new space.
    fn drive(&self, body: &super::spec::BodySpec) -> Option<Drive> {
        let name = body.name.as_deref()?;
        let still = |a: &str| {
            a == "ground"
                || self
                    .body
                    .iter()
                    .any(|o| o.name.as_deref() == Some(a) && o.motion == MotionSpec::Fixed)
        };
        self.joint.iter().enumerate().find_map(|(j, spec)| {
            let JointKind::Prescribed {
                velocity,
                angular_velocity,
            } = spec.kind
            else {
                return None;
            };
            (spec.b == name && still(&spec.a)).then(|| {
                let arm: [f64; 3] = std::array::from_fn(|k| spec.at[k] - body.position[k]);
                Drive {
                    joint: j,
                    speed: norm(velocity) + norm(angular_velocity) * norm(arm),
                }
            })
        })
    }

    /// Fastest prescribed motion: the peak speed `2π f ‖A‖` of an oscillating body or
    /// container, or the speed of a prescribed joint.
    fn kinematic_speed(&self) -> f64 {
        let peak = |o: &crate::sim::body::Oscillation| {
            2.0 * std::f64::consts::PI * o.frequency.abs() * norm(o.amplitude)
        };
        let bodies = self.body.iter().filter_map(|b| match &b.motion {
            MotionSpec::Oscillation(o) => Some(peak(o)),
            _ => None,
        });
        let containers = self
            .container
            .iter()
            .filter_map(|c| c.oscillation.as_ref().map(peak));
        let joints = self.joint.iter().filter_map(|j| match j.kind {
            JointKind::Prescribed { velocity, .. } => Some(norm(velocity)),
            _ => None,
        });
        bodies.chain(containers).chain(joints).fold(0.0, f64::max)
    }
}

/// Every dynamic body has a mass and moments of inertia that are normal positive numbers:
/// sizes such as 1e-300 m make them underflow to zero (or overflow), and the body could not
/// be stepped.
pub(super) fn masses(spec: &SceneFile) -> Result<(), SpecError> {
    for g in spec.groups() {
        let ok = mass_properties(&g.shape, g.density).is_some_and(|(m, inertia)| {
            std::iter::once(m)
                .chain(inertia.iter().copied())
                .all(|v| v.is_finite() && v >= f64::MIN_POSITIVE)
        });
        if !ok {
            return Err((
                g.section,
                g.key,
                format!(
                    "a {:?} of density {} has a mass or moment of inertia that is zero or \
                     infinite in floating point: the sizes are degenerate",
                    g.shape, g.density
                ),
            ));
        }
    }
    Ok(())
}

/// What the scales of a scene say: an error when the time step or the envelope cannot give
/// a meaningful simulation, warnings when contacts will be found late.
///
/// A body whose motion a prescribed joint sets (a rheonomic constraint, thesis §5.3.2's
/// pusher) is not moved by its own dynamics: contacts cannot make it tunnel, so it is left
/// out of the time step's size check. Nothing deflects it either, so the envelope must
/// cover its travel in one step: contacts ahead of it are then in the problem before it
/// reaches them.
pub(super) fn scales(spec: &SceneFile) -> Result<Vec<String>, SpecError> {
    let groups = spec.groups();
    let st = &spec.settings;
    let set = Some(("settings", 0));
    for g in &groups {
        let Some(drive) = &g.driven else { continue };
        let travel = drive.speed * st.dt;
        if travel > st.envelope {
            return Err((
                set,
                "settings.envelope".into(),
                format!(
                    "is {} m, less than the {travel:.3e} m that {} moves in one step on \
                     joint[{}] ({:.3e} m/s): a body on a prescribed motion is not stopped by \
                     contacts, so the envelope must find them a step ahead",
                    st.envelope,
                    g.key.trim_end_matches(".shape"),
                    drive.joint,
                    drive.speed
                ),
            ));
        }
    }
    let largest = groups.iter().map(|g| sizes(&g.shape).1).fold(0.0, f64::max);
    if !groups.is_empty() && st.envelope > largest {
        return Err((
            set,
            "settings.envelope".into(),
            format!(
                "is {} m, more than the largest body ({largest:.3e} m): bodies that do not \
                 touch would become contacts (up to every pair)",
                st.envelope
            ),
        ));
    }
    let free: Vec<&Group> = groups.iter().filter(|g| g.driven.is_none()).collect();
    if free.is_empty() {
        return Ok(Vec::new());
    }
    let smallest = free
        .iter()
        .map(|g| sizes(&g.shape).0)
        .fold(f64::INFINITY, f64::min);
    // Distance a body at rest falls in one step, and one moving at the scene's speed.
    let fall = norm(st.gravity) * st.dt * st.dt;
    let speed = free
        .iter()
        .map(|g| g.speed)
        .fold(spec.kinematic_speed(), f64::max);
    let travel = fall + speed * st.dt;
    if travel > smallest {
        return Err((
            set,
            "settings.dt".into(),
            format!(
                "is {} s: in one step a body moves {travel:.3e} m (|g| dt² + speed × dt, speed \
                 {speed:.3e} m/s), more than the smallest body ({smallest:.3e} m): bodies would \
                 pass through each other",
                st.dt
            ),
        ));
    }
    let mut warnings = Vec::new();
    if travel > st.envelope {
        warnings.push(format!(
            "settings.envelope = {} m is less than the distance a body moves in one step \
             ({travel:.3e} m): contacts are found only once bodies overlap",
            st.envelope
        ));
    }
    Ok(warnings)
}

/// Refuses a scene whose bodies and contacts would need more memory than `limits`: the
/// number of bodies from every generator, with overflow checked, and the contacts the
/// envelope implies (about `12 ((d + e)/d)³` neighbours per body of size `d`, at most all
/// pairs).
pub(super) fn memory(spec: &SceneFile, limits: &Limits) -> Result<()> {
    let groups = spec.groups();
    let bodies = groups
        .iter()
        .try_fold(spec.container.len() * 5 + spec.body.len(), |acc, g| {
            acc.checked_add(g.count?)
        });
    let smallest = groups
        .iter()
        .map(|g| sizes(&g.shape).0)
        .fold(f64::INFINITY, f64::min);
    let contacts = bodies.and_then(|n| {
        let neighbours =
            (KISSING * ((smallest + spec.settings.envelope) / smallest).powi(3)).min(n as f64);
        let c = n as f64 * (neighbours / 2.0 + 1.0);
        (c < usize::MAX as f64).then_some(c as usize)
    });
    // The tetrahedra of the generated boxes (a mesh file's are bounded by the file).
    let elements = spec.fe_box.iter().try_fold(0usize, |acc, b| {
        let cells = b.cells.iter().try_fold(6usize, |n, c| n.checked_mul(*c))?;
        acc.checked_add(cells)
    });
    let bytes = limits::total(&[
        bodies.and_then(|n| limits::bytes_of(n, BODY_BYTES)),
        contacts.and_then(|c| limits::bytes_of(c, CONTACT_BYTES)),
        elements.and_then(|e| limits::bytes_of(e, ELEMENT_BYTES)),
    ]);
    limits.check(
        || {
            format!(
                "the scene ({} bodies, about {} contacts, {} tetrahedra)",
                bodies.map_or("too many".into(), |n| n.to_string()),
                contacts.map_or("too many".into(), |c| c.to_string()),
                elements.map_or("too many".into(), |e| e.to_string())
            )
        },
        bytes,
    )
}

#[cfg(test)]
mod tests {
    use crate::sim::scene::parse;

    /// A Ø 5 cm cylinder moving 5 cm per step, with `a` the other end of its prescribed
    /// joint (a fixed `"base"`, or a dynamic `"cart"`), at `envelope`.
    fn pusher(a: &str, envelope: f64) -> crate::Result<crate::sim::scene::Scene> {
        let text = format!(
            "[settings]\ndt = 0.05\nenvelope = {envelope}\n\
             [[body]]\nname = \"base\"\nshape = {{ type = \"plane\" }}\nmotion = \"fixed\"\n\
             [[body]]\nname = \"cart\"\nshape = {{ type = \"box\", half_extents = [0.5, 0.5, 0.5] }}\n\
             position = [3.0, 0.0, 1.0]\n\
             [[body]]\nname = \"pusher\"\nposition = [0.0, 0.0, 1.0]\n\
             shape = {{ type = \"cylinder\", radius = 0.025, half_length = 0.2 }}\n\
             velocity = [0.0, 0.0, -1.0]\n\
             [[joint]]\ntype = \"prescribed\"\na = \"{a}\"\nb = \"pusher\"\n\
             at = [0.0, 0.0, 1.0]\nvelocity = [0.0, 0.0, -1.0]\n"
        );
        parse(&text, "p.toml", "p", &[])
    }

    #[test]
    fn a_prescribed_body_skips_the_size_check_but_needs_the_envelope() {
        // Driven from a fixed body: no tunnelling by its own dynamics; the envelope covers it.
        let scene = pusher("base", 0.06).unwrap_or_else(|e| panic!("{e}"));
        assert!(scene.world.bodies[2].is_dynamic());
        // An envelope shorter than its 5 cm per step is refused, naming the joint.
        let err = pusher("base", 0.04).err().unwrap().to_string();
        assert!(
            err.contains("settings.envelope")
                && err.contains("joint[0]")
                && err.contains("body[2]"),
            "{err}"
        );
        // Driven from a dynamic body, its motion is not prescribed: the time step is too long
        // for a body of 5 cm moving 5 cm per step.
        let err = pusher("cart", 0.06).err().unwrap().to_string();
        assert!(
            err.contains("settings.dt") && err.contains("pass through"),
            "{err}"
        );
    }
}
