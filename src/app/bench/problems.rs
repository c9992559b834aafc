//! Benchmark problems, all built by the simulator so that every solver sees the contact
//! networks a simulation produces (collision detection, Jacobians, cones):
//!
//! - [`granular_packing`] / [`packing_scene`]: a cubic packing of touching spheres, about
//!   three contacts per sphere from the first step (throughput, scaling);
//! - [`scene_cases`]: one step of each benchmark scene of paper 004 (B1–B4, the tracked
//!   vehicle), of `balls_in_box`, scaled to a number of bodies, and of the thesis' three-point
//!   bending (convergence, accuracy). The scene files are compiled in, so the suites run from
//!   any folder.

use serde::Serialize;

use crate::error::Result;
use crate::problem::Problem;
use crate::registry;
use crate::sim::scene::{self, Scene};
use crate::solver::Runner;

/// A cubic packing of `spheres` touching unit spheres (radius 0.5 m, spacing 1 m, μ = 0.5)
/// in an open box, under gravity with `h` = 10 ms: every sphere touches its six neighbours,
/// the floor or a wall. `max_iter` caps the stepper's solves.
pub fn packing_scene(spheres: usize, max_iter: usize) -> Result<Scene> {
    let spheres = spheres.max(1);
    let side = (spheres as f64).cbrt().ceil().max(1.0);
    let half = side / 2.0;
    let text = format!(
        "friction = 0.5\n\
         [settings]\ndt = 0.01\nenvelope = 0.05\nmax_iter = {max_iter}\n\
         [[container]]\nhalf_size = [{half}, {half}]\n\
         [[lattice]]\nshape = {{ type = \"sphere\", radius = 0.5 }}\ncount = {spheres}\n\
         min = [-{half}, -{half}, 0.0]\nmax = [{half}, {half}, 0.0]\nspacing = 1.0\n"
    );
    scene::parse(&text, "<bench>", &format!("packing_{spheres}"), &[])
}

/// The first-step problem of [`packing_scene`] with about `contacts` Coulomb contacts
/// (three per sphere; the boundary adds a few percent).
pub fn granular_packing(contacts: usize) -> Result<Problem> {
    let mut scene = packing_scene(contacts.div_ceil(3), 500)?;
    let mut problem = scene.world.problem().problem;
    problem.name = format!("granular_packing_{contacts}");
    Ok(problem)
}

/// One step of a benchmark scene, scaled to a number of bodies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SceneCase {
    /// Short label (`B1` … `B4`, `BiB`, `TPB`, `TV`).
    pub label: &'static str,
    /// The scene (file stem in `scenes/`).
    pub scene: &'static str,
    /// The overrides that scale it (`key`, `value`), as `simulate --set` takes them.
    pub sets: Vec<(String, String)>,
    /// Steps run before the problem is taken.
    pub steps: usize,
    /// The solver that runs those steps (its cap and tolerance the scene's).
    pub stepper: &'static str,
}

/// The compiled-in text of a benchmark scene.
fn scene_text(scene: &str) -> &'static str {
    match scene {
        "bilateral_network" => include_str!("../../../scenes/bilateral_network.toml"),
        "sphere_pile" => include_str!("../../../scenes/sphere_pile.toml"),
        "plate_stack" => include_str!("../../../scenes/plate_stack.toml"),
        "wrecking_ball" => include_str!("../../../scenes/wrecking_ball.toml"),
        "three_point_bending" => include_str!("../../../scenes/three_point_bending.toml"),
        "tracked_vehicle" => include_str!("../../../scenes/tracked_vehicle.toml"),
        _ => include_str!("../../../scenes/balls_in_box.toml"),
    }
}

/// The benchmark steps, the first five at about `bodies` bodies each: B1 a `n × n` net
/// (`n² ≈ bodies`) after 10 steps; B2 a pile of `bodies` frictionless spheres after 40 steps;
/// B3 a stack of `min(bodies, 20)` plates alternating 1 kg and 1000 kg after 10 steps; B4 a
/// wall of about `bodies` bricks hit by the wrecking ball (step 230, just after impact);
/// balls_in_box with `bodies` balls after 30 steps (all stepped with PGS). At `bodies` = 1000
/// (B4: 735) these are the full scenes of `docs/CONVERGENCE.md`. The last two keep their
/// size, which is what they test: TPB the thesis' beam (26 × 12 × 3 cells, 4218 unknowns
/// with a non-diagonal `H`) pressed by the pusher, after 3 steps of `ip` (the pusher 15 cm
/// down, the beam bent); TV the vehicle of 86 bodies and 372 bilateral rows on its slabs
/// (a track's loop closes at its own number of shoes), after 20 steps of `apgd` (0.1 s: the
/// shoes on the slabs, the sprockets turning).
pub fn scene_cases(bodies: usize) -> Vec<SceneCase> {
    let n = bodies.max(4);
    let set = |pairs: &[(&str, String)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let side = ((n as f64).sqrt().round() as usize).max(2);
    let plates = n.min(20);
    let masses: Vec<&str> = (0..plates)
        .map(|i| if i % 2 == 0 { "1.0" } else { "1000.0" })
        .collect();
    // The wall keeps the 30 : 25 rows-to-columns shape of the full scene.
    let columns = ((n as f64 * 25.0 / 30.0).sqrt().round() as usize).max(2);
    let rows = n.div_ceil(columns).max(2);
    vec![
        SceneCase {
            label: "B1",
            scene: "bilateral_network",
            sets: set(&[
                ("net.0.nx", side.to_string()),
                ("net.0.ny", side.to_string()),
            ]),
            steps: 10,
            stepper: "pgs",
        },
        SceneCase {
            label: "B2",
            scene: "sphere_pile",
            sets: set(&[("lattice.0.count", n.to_string())]),
            steps: 40,
            stepper: "pgs",
        },
        SceneCase {
            label: "B3",
            scene: "plate_stack",
            sets: set(&[("stack.0.masses", format!("[{}]", masses.join(", ")))]),
            steps: 10,
            stepper: "pgs",
        },
        SceneCase {
            label: "B4",
            scene: "wrecking_ball",
            sets: set(&[
                ("wall.0.rows", rows.to_string()),
                ("wall.0.columns", columns.to_string()),
            ]),
            steps: 230,
            stepper: "pgs",
        },
        SceneCase {
            label: "BiB",
            scene: "balls_in_box",
            // Stepped at PGS's cap of 100, as docs/CONVERGENCE.md recorded it (the scene
            // itself now runs APGD at a cap of 500).
            sets: set(&[
                ("lattice.0.count", n.to_string()),
                ("settings.max_iter", "100".into()),
            ]),
            steps: 30,
            stepper: "pgs",
        },
        SceneCase {
            label: "TPB",
            scene: "three_point_bending",
            sets: Vec::new(),
            steps: 3,
            stepper: "ip",
        },
        SceneCase {
            label: "TV",
            scene: "tracked_vehicle",
            sets: Vec::new(),
            steps: 20,
            stepper: "apgd",
        },
    ]
}

impl SceneCase {
    /// The scene, built with its overrides.
    pub fn build(&self) -> Result<Scene> {
        let file = format!("scenes/{}.toml", self.scene);
        scene::parse(scene_text(self.scene), &file, self.scene, &self.sets)
    }

    /// The problem of step `steps + 1`: the scene advanced `steps` steps with the case's
    /// stepper, then collision detection and assembly, as `simulate --dump-step` writes it.
    /// The name says which step of which scene it is.
    pub fn problem(&self) -> Result<(Scene, Problem)> {
        let mut scene = self.build()?;
        let mut stepper = Runner::new(registry::solver(self.stepper)?);
        for _ in 0..self.steps {
            scene.world.step(&mut stepper)?;
        }
        let mut problem = scene.world.problem().problem;
        problem.name = format!(
            "{} {} ({} bodies, step {})",
            self.label,
            self.scene,
            scene.world.bodies.len(),
            self.steps + 1
        );
        Ok((scene, problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Cone;

    #[test]
    fn packing_has_about_three_contacts_per_sphere() {
        let p = granular_packing(3000).unwrap();
        let contacts = p.cones.len();
        assert!(
            (3000..3600).contains(&contacts),
            "{contacts} contacts for 3000 asked"
        );
        assert!(
            p.cones
                .iter()
                .all(|c| matches!(c, Cone::Coulomb { mu } if *mu == 0.5))
        );
    }

    #[test]
    fn scene_cases_scale_with_the_bodies_asked_for() {
        let cases = scene_cases(1000);
        assert_eq!(
            cases.iter().map(|c| c.label).collect::<Vec<_>>(),
            ["B1", "B2", "B3", "B4", "BiB", "TPB", "TV"]
        );
        // The thesis' beam and the vehicle keep their size.
        assert_eq!(scene_cases(6)[5..], cases[5..]);
        let value =
            |c: &SceneCase, key: &str| c.sets.iter().find(|(k, _)| k == key).unwrap().1.clone();
        assert_eq!(value(&cases[0], "net.0.nx"), "32");
        assert_eq!(value(&cases[1], "lattice.0.count"), "1000");
        assert_eq!(
            value(&cases[2], "stack.0.masses").matches("1000.0").count(),
            10
        );
        let bricks: usize = ["wall.0.rows", "wall.0.columns"]
            .iter()
            .map(|k| value(&cases[3], k).parse::<usize>().unwrap())
            .product();
        assert!((1000..1040).contains(&bricks), "{bricks}");
        // Every case builds; the B3 stack of a tiny size has as many plates as asked.
        for case in scene_cases(6) {
            let scene = case.build().unwrap();
            match case.label {
                "B3" => assert_eq!(scene.world.bodies.len(), 6 + 1, "plates and the ground"),
                "TPB" => assert_eq!(scene.world.solids[0].tets.len(), 26 * 12 * 3 * 6),
                "TV" => assert!(
                    scene.world.joints.len() >= 64,
                    "two loops of 32 pinned shoes"
                ),
                _ => {}
            }
        }
    }
}
