#!/bin/bash
# Reruns the study of docs/CONVERGENCE.md with the `convergence` benchmark suite: the four CPU
# solvers on one step of B1–B4 and balls_in_box at 1000 bodies per scene (the full scenes; B4
# has a wall of 1000 bricks rather than 735), and of the three-point bending and the tracked
# vehicle at their own sizes, relative residual 1e-6, at most 20000
# iterations. Report, CSV and charts in out/convergence-study/. Run from the repository root.
set -e
cargo run --release -- bench convergence --solvers jacobi,pgs,spg,apgd --device cpu \
  --sizes 1000 --iterations 20000 --tol 1e-6 --out out/convergence-study
