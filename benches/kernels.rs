//! The kernels of one projected Jacobi iteration, CPU and GPU side by side, on granular
//! packings: the product with `N` in `f64` (rayon), the `f32` CPU mirror of the three GPU
//! kernels (one thread), the GPU kernels (10 iterations per submission), and the projection
//! on the cones. Throughput is in contacts (elements) per second.
//!
//! `cargo bench --bench kernels`; not run in CI.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use signorini::app::bench::problems::granular_packing;
use signorini::gpu::{Apply, GpuContext, GpuKernels, OperatorData, ProblemData, cpu};
use signorini::problem::System;
use signorini::solver::Settings;

/// Contacts of the packings.
const SIZES: [usize; 2] = [1_000, 10_000];
/// GPU iterations per submission.
const GPU_BATCH: usize = 10;

fn kernels(c: &mut Criterion) {
    let gpu = GpuContext::new()
        .map_err(|e| eprintln!("GPU kernels skipped: {e}"))
        .ok();
    let mut group = c.benchmark_group("jacobi_iteration");
    for size in SIZES {
        let sys = System::new(&granular_packing(size).unwrap()).unwrap();
        let contacts = sys.blocks() as u64;
        let data = ProblemData::new(&sys, &Settings::default()).unwrap();
        let OperatorData::Factored {
            links_ptr,
            links,
            jac,
            minv_jac,
        } = &data.op
        else {
            unreachable!("the packings are factored problems")
        };
        group.throughput(Throughput::Elements(contacts));
        let gamma = vec![0.1; sys.rows()];
        let mut y = vec![0.0; sys.rows()];
        group.bench_function(BenchmarkId::new("cpu_f64_apply_N", contacts), |b| {
            b.iter(|| sys.apply(&gamma, &mut y))
        });
        let mut w = vec![0.0f32; 6 * data.params.n_bodies as usize];
        let mut u = vec![0.0f32; data.gamma.len()];
        let mut out = vec![0.0f32; data.gamma.len()];
        let apply = Apply {
            add_r: 1,
            pad: [0; 3],
        };
        group.bench_function(BenchmarkId::new("cpu_f32_mirror", contacts), |b| {
            b.iter(|| {
                let p = &data.params;
                cpu::factored_bodies(p, links_ptr, links, minv_jac, &data.gamma, &mut w);
                cpu::factored_rows(
                    p,
                    &apply,
                    &data.blocks,
                    jac,
                    &w,
                    &data.r,
                    &data.compliance,
                    &data.gamma,
                    &mut u,
                );
                cpu::jacobi_step(p, &data.blocks, &u, &data.gamma, &mut out);
            })
        });
        if let Some(ctx) = &gpu {
            let mut k = GpuKernels::jacobi(ctx, &data).unwrap();
            group.throughput(Throughput::Elements(contacts * GPU_BATCH as u64));
            group.bench_function(BenchmarkId::new("gpu_f32_kernels_x10", contacts), |b| {
                b.iter(|| {
                    k.run(GPU_BATCH);
                    ctx.wait().unwrap();
                })
            });
        }
        group.throughput(Throughput::Elements(contacts));
        let mut x: Vec<f64> = (0..sys.rows()).map(|i| (i % 7) as f64 - 3.0).collect();
        group.bench_function(BenchmarkId::new("cpu_f64_project_K", contacts), |b| {
            b.iter(|| {
                for (k, cone) in sys.cones().iter().enumerate() {
                    cone.project(&mut x[sys.block_range(k)]);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
