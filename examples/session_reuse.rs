//! What a solver session saves per time step (issue 13): a scene stepped twice in lockstep,
//! once with one session for the whole run (what `simulate` does) and once with a new
//! session every step (a solver that keeps nothing), interleaved step by step so both see the
//! same machine load. Both runs solve the same problems (the physics is deterministic). A
//! session reuses its analysis only while the pattern stands: every step of the bilateral
//! network, few steps of a pile whose contacts change.
//!
//! ```text
//! cargo run --release --example session_reuse -- SCENE SOLVER STEPS [key=value ...]
//! cargo run --release --example session_reuse -- bilateral_network ip 20
//! cargo run --release --example session_reuse -- balls_in_box jacobi-gpu 100 lattice.0.count=8000
//! ```

use std::path::Path;

use signorini::registry;
use signorini::sim::scene;
use signorini::solver::Runner;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scene_name = args.first().map_or("bilateral_network", String::as_str);
    let solver = args.get(1).map_or("ip", String::as_str);
    let steps: usize = args.get(2).map_or(20, |s| s.parse().expect("a step count"));
    let sets: Vec<(String, String)> = args[3.min(args.len())..]
        .iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenes/{scene_name}.toml"));
    let load = || scene::load(&file, &sets).unwrap_or_else(|e| panic!("{e}"));
    let (mut kept_scene, mut fresh_scene) = (load(), load());
    let mut kept = Runner::new(registry::solver(solver).unwrap_or_else(|e| panic!("{e}")));
    let (mut kept_s, mut fresh_s, mut fresh_analyses) = (0.0, 0.0, 0);
    for _ in 0..steps {
        let a = kept_scene.world.step(&mut kept).unwrap();
        let mut fresh = Runner::new(registry::solver(solver).unwrap());
        let b = fresh_scene.world.step(&mut fresh).unwrap();
        assert_eq!(
            a.contacts, b.contacts,
            "the two runs must solve the same problems"
        );
        kept_s += a.solve_s;
        fresh_s += b.solve_s;
        fresh_analyses += fresh.analyses();
    }
    let n = steps as f64;
    println!(
        "{solver}, {scene_name} {} bodies, {steps} steps (interleaved):",
        kept_scene.world.bodies.len()
    );
    println!(
        "  one session per run:  {:.2} ms solve per step, {} analyses",
        1e3 * kept_s / n,
        kept.analyses()
    );
    println!(
        "  a session per step:   {:.2} ms solve per step, {fresh_analyses} analyses",
        1e3 * fresh_s / n
    );
    println!(
        "  saved: {:.2} ms per step ({:.1} %)",
        1e3 * (fresh_s - kept_s) / n,
        100.0 * (fresh_s - kept_s) / fresh_s.max(f64::MIN_POSITIVE)
    );
}
