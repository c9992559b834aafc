//! Benchmark problems: granular packings built by the simulator, so that every solver sees
//! the contact networks a simulation produces (collision detection, Jacobians, cones).

use crate::error::Result;
use crate::problem::Problem;
use crate::sim::scene;

/// The first-step problem of a cubic packing of touching unit spheres (radius 0.5 m,
/// spacing 1 m, μ = 0.5) in an open box, under gravity with `h` = 10 ms: every sphere touches
/// its six neighbours, the floor or a wall, which gives about three Coulomb contacts per
/// sphere. `contacts` is the number aimed at; the problem has roughly that many (the
/// boundary adds a few percent).
pub fn granular_packing(contacts: usize) -> Result<Problem> {
    let spheres = contacts.div_ceil(3).max(1);
    let side = (spheres as f64).cbrt().ceil().max(1.0);
    let half = side / 2.0;
    let text = format!(
        "friction = 0.5\n\
         [settings]\ndt = 0.01\nenvelope = 0.05\n\
         [[container]]\nhalf_size = [{half}, {half}]\n\
         [[lattice]]\nshape = {{ type = \"sphere\", radius = 0.5 }}\ncount = {spheres}\n\
         min = [-{half}, -{half}, 0.0]\nmax = [{half}, {half}, 0.0]\nspacing = 1.0\n"
    );
    let name = format!("granular_packing_{contacts}");
    let mut scene = scene::parse(&text, "<bench>", &name, &[])?;
    let mut problem = scene.world.problem().problem;
    problem.name = name;
    Ok(problem)
}

#[cfg(test)]
mod tests {
    use super::granular_packing;
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
}
