#!/bin/bash
# Regenerates docs/CONVERGENCE.md's data: dumps one step of each benchmark scene and runs the
# four CPU solvers on it (relative residual 1e-6, at most 20000 iterations), with a chart each.
# Run from the repository root after `cargo build --release`.
set -e
B=target/release/signorini; S=scenes; O=/tmp/b4
rm -rf $O; mkdir -p $O
$B simulate $S/bilateral_network.toml --steps 10 --dump-step 10 --snapshot-every 0 --out $O/b1 > /dev/null
$B simulate $S/sphere_pile.toml --steps 100 --dump-step 100 --snapshot-every 0 --out $O/b2 > /dev/null
$B simulate $S/plate_stack.toml --steps 10 --dump-step 10 --snapshot-every 0 --out $O/b3 > /dev/null
$B simulate $S/wrecking_ball.toml --steps 230 --dump-step 230 --snapshot-every 0 --out $O/b4 > /dev/null
$B simulate $S/balls_in_box.toml --steps 50 --dump-step 50 --snapshot-every 0 --out $O/bib1000 > /dev/null
$B simulate $S/balls_in_box.toml --set lattice.0.count=4000 --steps 50 --dump-step 50 --snapshot-every 0 --out $O/bib4000 > /dev/null
echo dumped
for c in b1 b2 b3 b4 bib1000 bib4000; do
  f=$(ls $O/$c/problem_*.json)
  $B check $f --tol 1e-6 --max-iter 20000 --solvers jacobi,pgs,spg,apgd --plot docs/convergence_$c.png --trace $O/$c/trace --json > $O/$c/check.json
  echo "$c done"
done
python3 docs/convergence_table.py
