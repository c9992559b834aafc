//! Every registered solver (CPU and `-gpu` variants, whatever the registry holds) for a
//! fixed number of iterations on granular packings, side by side. Throughput is in
//! contact-iterations (elements) per second; `signorini bench throughput` measures the same
//! from the command line and reports the bandwidth fraction.
//!
//! `cargo bench --bench solvers`; not run in CI.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use signorini::app::bench::problems::granular_packing;
use signorini::problem::System;
use signorini::registry;
use signorini::solver::Settings;

/// Contacts of the packings.
const SIZES: [usize; 2] = [1_000, 10_000];
/// Iterations per solve.
const ITERATIONS: usize = 20;

fn solvers(c: &mut Criterion) {
    let gpu = !signorini::gpu::adapters().is_empty();
    // The convergence test cannot stop a solve: every solve runs ITERATIONS iterations.
    let settings = Settings {
        tol: 0.0,
        max_iter: ITERATIONS,
        stall_iterations: usize::MAX,
        ..Settings::default()
    };
    for size in SIZES {
        let sys = System::new(&granular_packing(size).unwrap()).unwrap();
        let contacts = sys.blocks() as u64;
        let mut group = c.benchmark_group(format!("solve_{contacts}_contacts"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(contacts * ITERATIONS as u64));
        for name in registry::names() {
            if name.ends_with("-gpu") && !gpu {
                continue;
            }
            let solver = registry::solver(name).unwrap();
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| solver.solve(&sys, &settings).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group!(benches, solvers);
criterion_main!(benches);
