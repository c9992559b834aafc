//! Interior-point iterations on the scenes (issue 6): iterations per step on `balls_in_box`
//! at several sizes (thesis Table 5.3 analogue), and the warm start table (paper 000
//! Table 2 analogue) on `single_ball`, `single_brick`, `balls_in_box` and `mass_ratio_stack`.
//!
//! ```text
//! cargo run --release --example ip_scenes -- sizes 1000,2000,4000,8000 [steps]
//! cargo run --release --example ip_scenes -- warm [steps]
//! ```

use std::path::Path;
use std::time::Instant;

use signorini::sim::scene;
use signorini::solver::ip::WarmStart;
use signorini::solver::{Ip, IpParams, Status};

/// `--set` overrides of a scene.
type Sets = Vec<(String, String)>;

/// Per-step IP iterations and times of `steps` steps of a scene.
struct Run {
    iterations: Vec<usize>,
    solve_s: Vec<f64>,
    failures: usize,
    contacts: usize,
}

fn run(file: &str, sets: &[(String, String)], params: IpParams, steps: usize) -> Run {
    let mut sc = scene::load(Path::new(file), sets).unwrap_or_else(|e| panic!("{e}"));
    let mut ip = signorini::solver::Runner::new(Box::new(Ip::new(params)));
    let mut out = Run {
        iterations: Vec::new(),
        solve_s: Vec::new(),
        failures: 0,
        contacts: 0,
    };
    for _ in 0..steps {
        let start = Instant::now();
        let (stats, report) = sc.world.step_with_report(&mut ip).unwrap();
        let t = start.elapsed().as_secs_f64();
        out.contacts = out.contacts.max(stats.contacts);
        if stats.contacts + stats.bilateral_rows == 0 {
            continue;
        }
        if report.status != Status::Converged {
            out.failures += 1;
        }
        out.iterations.push(report.iterations);
        out.solve_s.push(stats.solve_s.min(t));
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("warm");
    let set = |k: &str, v: &str| (k.to_string(), v.to_string());
    match mode {
        "sizes" => {
            let sizes: Vec<usize> = args
                .get(1)
                .map_or("500,1000,2000,4000", String::as_str)
                .split(',')
                .map(|s| s.parse().unwrap())
                .collect();
            let steps: usize = args.get(2).map_or(50, |s| s.parse().unwrap());
            println!(
                "| spheres | max contacts | steps with contacts | mean iter | min–max iter | max dev from mean | time/iter (ms) | time/step (ms) | not converged |"
            );
            println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for n in sizes {
                let r = run(
                    "scenes/balls_in_box.toml",
                    &[set("lattice.0.count", &n.to_string())],
                    IpParams::default(),
                    steps,
                );
                let it: Vec<f64> = r.iterations.iter().map(|&i| i as f64).collect();
                let m = mean(&it);
                let (lo, hi) = (
                    r.iterations.iter().min().copied().unwrap_or(0),
                    r.iterations.iter().max().copied().unwrap_or(0),
                );
                let dev = it.iter().fold(0.0f64, |d, i| d.max((i - m).abs() / m));
                let t_step = mean(&r.solve_s);
                println!(
                    "| {n} | {} | {} | {m:.1} | {lo}–{hi} | {:.0} % | {:.2} | {:.1} | {} |",
                    r.contacts,
                    it.len(),
                    100.0 * dev,
                    1e3 * t_step / m.max(1.0),
                    1e3 * t_step,
                    r.failures
                );
            }
        }
        _ => {
            let steps: usize = args.get(1).map_or(50, |s| s.parse().unwrap());
            let scenes: Vec<(&str, &str, Sets)> = vec![
                ("single_ball", "scenes/single_ball.toml", vec![]),
                ("single_brick", "scenes/single_brick.toml", vec![]),
                (
                    "balls_in_box (1000)",
                    "scenes/balls_in_box.toml",
                    vec![set("lattice.0.count", "1000")],
                ),
                (
                    "mass_ratio_stack 1:1e6",
                    "scenes/mass_ratio_stack.toml",
                    vec![set("stack.0.masses", "[1.0, 1e6, 1.0, 1e6, 1.0]")],
                ),
                (
                    "mass_ratio_stack 1:1e12",
                    "scenes/mass_ratio_stack.toml",
                    vec![set("stack.0.masses", "[1.0, 1e12, 1.0, 1e12, 1.0]")],
                ),
                (
                    "mass_ratio_stack 10^j",
                    "scenes/mass_ratio_stack.toml",
                    vec![],
                ),
            ];
            println!(
                "| scene | warm start | mean iter | max iter | not converged | time/step (ms) |"
            );
            println!("|---|---|---:|---:|---:|---:|");
            for (name, file, sets) in &scenes {
                for mode in [WarmStart::None, WarmStart::Partial, WarmStart::Full] {
                    let r = run(
                        file,
                        sets,
                        IpParams {
                            warm_start: mode,
                            ..IpParams::default()
                        },
                        steps,
                    );
                    let it: Vec<f64> = r.iterations.iter().map(|&i| i as f64).collect();
                    println!(
                        "| {name} | {mode:?} | {:.1} | {} | {} | {:.2} |",
                        mean(&it),
                        r.iterations.iter().max().copied().unwrap_or(0),
                        r.failures,
                        1e3 * mean(&r.solve_s)
                    );
                }
            }
        }
    }
}
