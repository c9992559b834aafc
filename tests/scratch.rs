use signorini::problem::{System, io, FrictionModel};
use signorini::solver::{Settings};
#[test]
fn scratch() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/problems/siconos/fc3d").join(std::env::var("F").unwrap_or("Capsules-i101-404.dat".into()));
    let sys = if std::env::var("SCENE").is_ok() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.toml");
        let sets = [("lattice.0.count".to_string(), "100".to_string())];
        let mut scene = signorini::sim::scene::load(&path, &sets).unwrap();
        let pgs = signorini::registry::solver("pgs").unwrap();
        for _ in 0..20 { scene.world.step(pgs.as_ref()).unwrap(); }
        System::new(&scene.world.problem().problem).unwrap()
    } else { System::new(&io::read(&path, None).unwrap()).unwrap() };
    let settings = Settings { tol: std::env::var("TOL").map(|s| s.parse().unwrap()).unwrap_or(1e-6), max_iter: std::env::var("N").map(|s| s.parse().unwrap()).unwrap_or(300), friction: if std::env::var("C").is_ok() {FrictionModel::Coulomb} else {FrictionModel::Ccp}, ..Settings::default() };
    for name in std::env::var("S").unwrap_or("spg,spg-gpu".into()).split(',') {
        let r = signorini::registry::solver(name).unwrap().solve(&sys, &settings).unwrap();
        println!("{name}: {} {} res {:e}", r.status, r.iterations, r.residual.relative);
        let t: Vec<String> = r.trace.iter().step_by(if name.ends_with("gpu") {1} else {10}).take(40).map(|t| format!("{}:{:.2e}", t.iteration, t.residual)).collect();
        println!("{}", t.join(" "));
    }
}
