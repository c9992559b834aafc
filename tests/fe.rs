//! Finite elements (issue 19): the corotational tetrahedron, the cantilever against
//! Euler–Bernoulli, the implicit step's energy, node contacts and the mesh files.

use nalgebra::{Rotation3, Vector3};
use signorini::app::report::drives;
use signorini::app::run::{Outputs, run};
use signorini::registry;
use signorini::sim::fe::{Material, Solid, TetMesh};
use signorini::sim::scene;
use signorini::solver::Runner;

type V3 = Vector3<f64>;

fn runner(name: &str) -> Runner {
    Runner::new(registry::solver(name).unwrap())
}

/// A scene of one `[[fe_box]]` and `extra` tables, built from its text.
fn fe_scene(settings: &str, fe_box: &str, extra: &str) -> scene::Scene {
    let text = format!("[settings]\n{settings}\n\n[[fe_box]]\n{fe_box}\n{extra}");
    scene::parse(&text, "fe.toml", "fe", &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Mean z displacement of the nodes whose rest positions `select` picks.
fn mean_dz(solid: &Solid, select: impl Fn(&V3) -> bool) -> f64 {
    let at: Vec<usize> = (0..solid.rest.len())
        .filter(|&i| select(&solid.rest[i]))
        .collect();
    at.iter()
        .map(|&i| solid.positions[i].z - solid.rest[i].z)
        .sum::<f64>()
        / at.len() as f64
}

/// A cantilever (1 m, square section 0.1 m, E = 1 GPa, ν = 0, clamped at x = 0) under
/// its own weight, solved statically: a time step of 100 s makes `H = M + h²K` the stiffness
/// to within `M/(h²K) ~ 1e-8`, so each step is a Newton step of the corotational
/// equilibrium; three of them converge. Returns the mean tip deflection and Euler–Bernoulli's
/// `δ = q L⁴ / (8 E I) = 1.5 ρ g L⁴ / (E t²)`.
fn cantilever_tip(cells: [usize; 3]) -> (f64, f64) {
    let [cx, cy, cz] = cells;
    let mut s = fe_scene(
        "dt = 100.0",
        &format!(
            "min = [0.0, -0.05, -0.05]\nmax = [1.0, 0.05, 0.05]\ncells = [{cx}, {cy}, {cz}]\n\
             material = {{ young = 1e9, poisson = 0.0, density = 1000.0 }}\n\
             fixed = [{{ plane = {{ point = [0.0, 0.0, 0.0], normal = [1.0, 0.0, 0.0] }} }}]"
        ),
        "",
    );
    let mut solver = runner("ip");
    for _ in 0..3 {
        s.world.step(&mut solver).unwrap();
    }
    let solid = &s.world.solids[0];
    let tip = -mean_dz(solid, |p| (p.x - 1.0).abs() < 1e-9);
    let theory = 1.5 * 1000.0 * 9.81 / (1e9 * 0.1 * 0.1);
    (tip, theory)
}

/// Linear tetrahedra lock in bending: the tip deflection is 0.51 of Euler–Bernoulli's at
/// 20×2×2 cells, 0.79 at 40×4×4, 0.97 at 100×2×8 and 0.98 at 100×2×12 (ν = 0; with ν = 0.3
/// the clamped face stiffens the root and 100×2×12 gives 0.95). The slender beam
/// (L/t = 10) adds about 1 % of shear deflection (Timoshenko) that Euler–Bernoulli leaves out.
#[test]
fn cantilever_matches_euler_bernoulli() {
    let (tip, theory) = cantilever_tip([100, 2, 12]);
    let ratio = tip / theory;
    println!("tip {tip:.6e} m, Euler–Bernoulli {theory:.6e} m, ratio {ratio:.4}");
    assert!((ratio - 1.0).abs() < 0.05, "ratio {ratio}");
}

fn material() -> Material {
    Material {
        young: 1e7,
        poisson: 0.3,
        density: 1000.0,
        rayleigh: [0.0, 0.0],
    }
}

/// A rigid rotation by 90° (and a translation) of a corotational element gives no elastic
/// force, where the linear element (`R = I`) gives a large one; a free solid rotated so
/// stays at rest through a step.
#[test]
fn rigid_rotation_gives_no_elastic_force() {
    let mesh = TetMesh::cuboid([0.0; 3], [0.2, 0.1, 0.1], [2, 1, 1]);
    let mut solid = Solid::new(&mesh, material(), &[], 0.0).unwrap();
    let turn = Rotation3::from_axis_angle(&Vector3::y_axis(), std::f64::consts::FRAC_PI_2);
    let shift = V3::new(0.3, -1.0, 2.0);
    solid.positions = solid.rest.iter().map(|p| turn * p + shift).collect();
    let x = &solid.positions;
    for tet in &solid.tets {
        let r = tet.rotation(x);
        assert!((r - turn.matrix()).norm() < 1e-12, "{r}");
        let f = tet.forces(&r, &tet.displacements(&r, x, &solid.rest));
        let max = f.iter().map(|v| v.norm()).fold(0.0, f64::max);
        assert!(max < 1e-6, "corotational force {max} N");
        let id = nalgebra::Matrix3::identity();
        let linear = tet.forces(&id, &tet.displacements(&id, x, &solid.rest));
        assert!(linear.iter().map(|v| v.norm()).fold(0.0, f64::max) > 1e3);
    }
    assert!(solid.elastic_energy() < 1e-18);
    let mut s = fe_scene(
        "dt = 0.01\ngravity = [0.0, 0.0, 0.0]",
        "min = [0.0, 0.0, 0.0]\nmax = [0.2, 0.1, 0.1]\ncells = [2, 1, 1]\n\
         material = { young = 1e7, poisson = 0.3, density = 1000.0 }",
        "",
    );
    s.world.solids[0].positions = solid.positions.clone();
    s.world.step(&mut runner("ip")).unwrap();
    let vmax = s.world.solids[0]
        .velocities
        .iter()
        .map(|v| v.norm())
        .fold(0.0, f64::max);
    // Rounding only: the linear element's forces would move the nodes at metres per second.
    assert!(vmax < 1e-9, "a rigidly rotated solid moves at {vmax} m/s");
}

/// The linearly implicit Euler step (thesis eq. 3.22) is dissipative: on a mode of angular
/// frequency `ω` it multiplies `v² + ω²x²` by exactly `1/(1 + ω²h²)` per step (with
/// `z = v + iωx`, one step is `z ← z/(1 − iωh)`), and turns the frequency into
/// `ω_d = atan(ωh)/h`. A cantilever released from its static deflection (mostly its first
/// mode; the higher modes die within a period) without gravity and damping loses its energy
/// at that rate: over 100 periods of `N` steps the energy keeps `(1 + (2π/N)²)^(−100 N)`,
/// e.g. 8·10⁻¹⁸ at N = 100; a drift below 1 % over 100 periods needs about 400 000 steps
/// per period. The test measures the rate over 10 periods and compares it with the formula.
#[test]
fn implicit_step_dissipates_energy_at_the_implicit_euler_rate() {
    let beam = "min = [0.0, -0.05, -0.05]\nmax = [1.0, 0.05, 0.05]\ncells = [20, 1, 2]\n\
                material = { young = 1e9, poisson = 0.3, density = 1000.0 }\n\
                fixed = [{ plane = { point = [0.0, 0.0, 0.0], normal = [1.0, 0.0, 0.0] } }]";
    let mut s = fe_scene("dt = 100.0", beam, "");
    let mut solver = runner("ip");
    for _ in 0..3 {
        s.world.step(&mut solver).unwrap();
    }
    let h = 1e-3;
    s.world.settings.gravity = [0.0; 3];
    s.world.settings.dt = h;
    s.world.solids[0]
        .velocities
        .iter_mut()
        .for_each(|v| *v = V3::zeros());
    let mut tip = Vec::new();
    let mut energy = Vec::new();
    for _ in 0..700 {
        let solid = &s.world.solids[0];
        tip.push(mean_dz(solid, |p| (p.x - 1.0).abs() < 1e-9));
        energy.push(solid.kinetic_energy() + solid.elastic_energy());
        s.world.step(&mut solver).unwrap();
    }
    assert!(
        energy.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-9)),
        "the energy never grows"
    );
    // Upward zero crossings of the tip after the first period, interpolated.
    let crossings: Vec<f64> = (60..tip.len() - 1)
        .filter(|&n| tip[n] < 0.0 && tip[n + 1] >= 0.0)
        .map(|n| n as f64 + tip[n] / (tip[n] - tip[n + 1]))
        .collect();
    assert!(crossings.len() >= 10, "{} crossings", crossings.len());
    let (first, last) = (crossings[0], crossings[crossings.len() - 1]);
    let steps_per_period = (last - first) / (crossings.len() - 1) as f64;
    let omega = (2.0 * std::f64::consts::PI / steps_per_period).tan() / h;
    let (n1, n2) = (first.round() as usize, last.round() as usize);
    let measured = energy[n2] / energy[n1];
    let theory = (1.0 + (omega * h).powi(2)).powi(-((n2 - n1) as i32));
    let per_period = (1.0 + (omega * h).powi(2)).powf(-steps_per_period);
    println!(
        "ω = {omega:.2} rad/s, {steps_per_period:.1} steps per period; energy ratio over \
         {} steps: measured {measured:.4e}, implicit Euler {theory:.4e}; per period {per_period:.4}, \
         over 100 periods {:.3e}",
        n2 - n1,
        per_period.powi(100)
    );
    assert!(
        (measured / theory - 1.0).abs() < 0.03,
        "{measured} vs {theory}"
    );
}

/// A soft cube of 0.1 m (1 kg) dropped from 5 mm onto `support` comes to rest on it: the node
/// contacts carry its weight, penetration stays within a millimetre. Returns the lowest
/// node's height.
fn cube_rests_on(support: &str) -> f64 {
    let cube = "min = [-0.05, -0.05, 0.005]\nmax = [0.05, 0.05, 0.105]\ncells = [2, 2, 2]\n\
                material = { young = 1e6, poisson = 0.3, density = 1000.0, \
                rayleigh = [0.0, 0.01], friction = 0.5 }";
    let mut s = fe_scene("dt = 0.005\nenvelope = 0.01", cube, support);
    let mut solver = runner("ip");
    for _ in 0..120 {
        let stats = s.world.step(&mut solver).unwrap();
        assert!(
            stats.residual < 1e-5,
            "step {}: residual {}",
            stats.step,
            stats.residual
        );
    }
    let solid = &s.world.solids[0];
    let vmax = solid
        .velocities
        .iter()
        .map(|v| v.norm())
        .fold(0.0, f64::max);
    assert!(vmax < 1e-3, "{support}: still moving at {vmax} m/s");
    let normal: f64 = s.world.node_contacts().map(|(_, g)| g[0]).sum();
    let weight = 1.0 * 9.81 * s.world.settings.dt;
    assert!(
        (normal / weight - 1.0).abs() < 0.01,
        "{support}: {normal} vs {weight} N·s"
    );
    solid
        .positions
        .iter()
        .map(|p| p.z)
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn solid_rests_on_plane_box_and_sphere() {
    let plane = "[[body]]\nshape = { type = \"plane\" }\nmotion = \"fixed\"";
    assert!(cube_rests_on(plane).abs() < 1e-3);
    let block = "[[body]]\nshape = { type = \"box\", half_extents = [0.2, 0.2, 0.05] }\n\
                 position = [0.0, 0.0, -0.05]\nmotion = \"fixed\"";
    assert!(cube_rests_on(block).abs() < 1e-3);
    // Four spheres under the corners of the bottom face, a table's feet (on one sphere a
    // flat face of nodes rests on one node and tips over onto its neighbours).
    let balls: String = [(-1, -1), (-1, 1), (1, -1), (1, 1)]
        .map(|(x, y)| {
            format!(
                "[[body]]\nshape = {{ type = \"sphere\", radius = 0.02 }}\n\
                 position = [{}, {}, -0.02]\nmotion = \"fixed\"\nfriction = 0.5\n",
                0.05 * x as f64,
                0.05 * y as f64
            )
        })
        .concat();
    assert!(cube_rests_on(&balls).abs() < 1e-3);
}

/// A Gmsh mesh (a unit cube of 5 tetrahedra, with a boundary triangle and a point element
/// that are skipped) loads through `[[fe_mesh]]` with its offset and fixed region; a broken
/// mesh is refused with the scene's key, the mesh file and its line.
#[test]
fn gmsh_mesh_loads_through_a_scene_and_errors_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("signorini-fe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let msh = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 8 1 8\n3 1 0 8\n\
               1\n2\n3\n4\n5\n6\n7\n8\n\
               0 0 0\n1 0 0\n0 1 0\n1 1 0\n0 0 1\n1 0 1\n0 1 1\n1 1 1\n$EndNodes\n\
               $Elements\n3 7 1 7\n0 1 15 1\n1 1\n2 1 2 1\n2 1 2 3\n3 1 4 5\n\
               3 1 2 4 6\n4 1 4 3 7\n5 5 6 7 1\n6 8 7 6 4\n7 1 4 6 7\n$EndElements\n";
    std::fs::write(dir.join("cube.msh"), msh).unwrap();
    let scene_text = "[settings]\ndt = 0.01\n\n[[fe_mesh]]\nfile = \"cube.msh\"\n\
                      offset = [0.0, 0.0, 1.0]\n\
                      material = { young = 1e6, poisson = 0.3, density = 1000.0 }\n\
                      fixed = [{ box = { min = [-1.0, -1.0, 0.0], max = [2.0, 2.0, 1.5] } }]\n";
    let path = dir.join("mesh.toml");
    std::fs::write(&path, scene_text).unwrap();
    let s = scene::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    let solid = &s.world.solids[0];
    assert_eq!((solid.rest.len(), solid.tets.len()), (8, 5));
    assert!((solid.tets.iter().map(|t| t.volume).sum::<f64>() - 1.0).abs() < 1e-12);
    assert!((solid.mass.iter().sum::<f64>() - 1000.0).abs() < 1e-9);
    assert_eq!(solid.rest[0].z, 1.0);
    // The bottom four nodes are held, the top four are free; all eight are on the surface.
    assert_eq!(solid.free_nodes(), 4);
    assert_eq!(solid.surface.len(), 8);
    assert_eq!(solid.faces.len(), 12);
    std::fs::write(dir.join("cube.msh"), msh.replace("7 1 4 6 7", "7 1 4 6 9")).unwrap();
    let err = scene::load(&path, &[]).err().unwrap().to_string();
    assert!(
        err.contains("mesh.toml")
            && err.contains("fe_mesh[0].file")
            && err.contains("cube.msh")
            && err.contains("line 35")
            && err.contains("node tag 9"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The pusher's force on the beam (N, downwards) from the last step's node contacts with
/// body `pusher`.
fn pusher_force(world: &signorini::sim::World, pusher: usize) -> f64 {
    let impulse: V3 = world
        .node_contacts()
        .filter(|(n, _)| n.contact.body_a == pusher)
        .map(|(n, g)| {
            let (t1, t2) = signorini::sim::joint::tangent_frame(&n.contact.normal);
            g[0] * n.contact.normal + g[1] * t1 + g[2] * t2
        })
        .sum();
    -impulse.z / world.settings.dt
}

/// The three-point bending scene with `sets` applied.
fn bending_scene(sets: &[(&str, &str)]) -> scene::Scene {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/three_point_bending.toml"
    );
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    scene::load(std::path::Path::new(path), &sets).unwrap_or_else(|e| panic!("{e}"))
}

/// The scene's pusher (thesis §5.3.2) is a dynamic cylinder on a prescribed joint: through
/// `simulate`'s loop it moves at exactly −1 m/s (displacement and velocity within 1e-6
/// relative) while it bends the beam, and the force `force_displacement.csv` reports from
/// the joint's impulse is the force its node contacts put on the beam; `force-chart` draws
/// the file.
#[test]
fn dynamic_pusher_follows_its_prescribed_motion_and_reports_its_force() {
    let mut scene = bending_scene(&[]);
    assert!(scene.world.bodies[2].is_dynamic(), "the pusher is dynamic");
    let dir = std::env::temp_dir().join(format!("signorini-tpb-{}", std::process::id()));
    let outputs = Outputs {
        dir: dir.clone(),
        ..Outputs::default()
    };
    let summary = run(&mut scene, &mut runner("ip"), 3, &outputs, |_| {}).unwrap();
    assert_eq!(summary.steps_not_converged, 0);
    let text = std::fs::read_to_string(dir.join(drives::FILE)).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(drives::HEADER));
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 3);
    for (k, row) in rows.iter().enumerate() {
        let want = 0.05 * (k + 1) as f64;
        assert!(
            (row[3] / want - 1.0).abs() < 1e-6,
            "step {}: displacement {} vs {want}",
            k + 1,
            row[3]
        );
    }
    let v = scene.world.bodies[2].velocity;
    assert!((v.z + 1.0).abs() < 1e-6 && v.xy().norm() < 1e-6, "{v}");
    let force = rows[2][5];
    let contacts = pusher_force(&scene.world, 2);
    println!("pusher force at step 3: {force:.3} N (joint), {contacts:.3} N (contacts)");
    assert!(force > 100.0, "the pusher bends the beam: {force} N");
    assert!(
        (force / contacts - 1.0).abs() < 1e-6,
        "{force} vs {contacts}"
    );
    // `signorini force-chart` draws the run's folder; a stiffness that is not a number is
    // refused, naming the option.
    let chart = dir.join("chart.png");
    let force_chart = |reference: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
            .args(["force-chart", &format!("pusher at 1 m/s={}", dir.display())])
            .args(["--reference", reference, "--out", chart.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = force_chart("48EI/L³=12000");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(image::open(&chart).unwrap().width() > 100);
    let out = force_chart("k=stiff");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--reference"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Three-point bending at a quasi-static pusher speed of 0.02 m/s (1 mm per step of 0.05 s;
/// the beam's first bending period is about 0.2 s), without gravity, friction or a wide
/// envelope: the slope of the pusher's force (its joint's impulse, as `force_displacement.csv`
/// writes it) against its displacement matches the Euler–Bernoulli stiffness `48 E I / L³`
/// within 10 % on a mesh of 130 × 2 × 12 cells (the scene's 26 × 12 × 3 cells of linear
/// tetrahedra lock in bending and give 1.55).
#[test]
fn three_point_bending_slope_matches_the_beam_stiffness() {
    let mut world = bending_scene(&QUASI_STATIC).world;
    let drive = drives::linear_drives(&world);
    assert_eq!(drive, [0]);
    let mut solver = runner("ip");
    let mut curve = Vec::new();
    for _ in 0..8 {
        let before = world.bodies[2].velocity;
        let stats = world.step(&mut solver).unwrap();
        assert!(
            stats.residual < 1e-6,
            "step {}: {}",
            stats.step,
            stats.residual
        );
        let r = drives::reading(&world, 0, &before);
        curve.push((r.displacement, r.force));
    }
    // From the fourth step on: the contacts' first indentation is behind.
    let (a, b) = (curve[3], curve[7]);
    let slope = (b.1 - a.1) / (b.0 - a.0);
    let theory = 48.0 * 1e7 * (0.3 * 0.1f64.powi(3) / 12.0);
    println!(
        "{curve:?}\nslope {slope:.1} N/m, 48EI/L³ {theory:.1} N/m, ratio {:.4}",
        slope / theory
    );
    assert!((slope / theory - 1.0).abs() < 0.1, "{slope} vs {theory}");
}

/// The quasi-static run of the three-point bending scene (README's chart): pusher at
/// 0.02 m/s, no gravity or friction, a 2 mm envelope, a mesh of 130 × 2 × 12 cells.
const QUASI_STATIC: [(&str, &str); 6] = [
    ("settings.gravity", "[0.0, 0.0, 0.0]"),
    ("settings.envelope", "0.002"),
    ("friction", "0.0"),
    ("body.2.velocity", "[0.0, 0.0, -0.02]"),
    ("joint.0.velocity", "[0.0, 0.0, -0.02]"),
    ("fe_box.0.cells", "[130, 2, 12]"),
];

/// Bad solids are refused before anything is built, naming the file, the line and the key;
/// an absurd mesh size is refused by the memory check, not allocated.
#[test]
fn bad_solids_are_refused_with_file_line_and_key() {
    let fe = |material: &str, cells: &str| {
        let text = format!(
            "[settings]\ndt = 0.01\n\n[[fe_box]]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 1.0, 1.0]\n\
             cells = {cells}\nmaterial = {material}\n"
        );
        scene::parse(&text, "bad.toml", "bad", &[])
            .err()
            .unwrap()
            .to_string()
    };
    let good = "{ young = 1e6, poisson = 0.3 }";
    let err = fe("{ young = 1e6, poisson = 0.5 }", "[1, 1, 1]");
    assert!(
        err.contains("bad.toml: line 8") && err.contains("fe_box[0].material.poisson"),
        "{err}"
    );
    let err = fe(good, "[0, 1, 1]");
    assert!(
        err.contains("line 7") && err.contains("fe_box[0].cells"),
        "{err}"
    );
    let err = fe("{ young = -1.0, poisson = 0.3 }", "[1, 1, 1]");
    assert!(err.contains("fe_box[0].material.young"), "{err}");
    let err = fe(good, "[100000, 100000, 100000]");
    assert!(
        err.contains("tetrahedra") && err.contains("memory limit"),
        "{err}"
    );
}
