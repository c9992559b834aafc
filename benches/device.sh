#!/usr/bin/env bash
# The device checks of issues 14, 16 and 20 in one run on a lent GPU machine (the `device`
# tool; no Rust toolchain there). Run from the repository root with stripped release builds
# made on the development machine in `.dev/bin` (ignored: name `.dev` and `.gl` in the
# tool's `carry`; each `xz`-compressed as NAME.xz to fit the tool's 64 MiB): `signorini` (this
# tree), `signorini-base` (the commit compared against, optional) and the GPU test binaries
# (`cargo test --release --no-run --test NAME`, copied as NAME). Writes logs, JSON summaries
# and reports under $OUT and prints a summary table last. Usage:
#   bash benches/device.sh [PART...]   parts: host big scaling throughput cpu coulomb tests largest
# (no part: every part; `none`: only the binaries unpacked and the Vulkan loader installed,
# for `device-profile.sh`).
set -u
bin=/tmp/device-bin
out=/tmp/device-out
mkdir -p "$out" "$bin"
for f in .dev/bin/*.xz; do
  [ -e "$f" ] || continue
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$bin/$(basename "${f%.xz}")"
done
chmod +x "$bin"/*
parts=${*:-host big scaling throughput cpu coulomb tests largest}

# The Vulkan loader and NVIDIA's driver manifest (see the device tool's README).
# NVIDIA's Vulkan driver (in libGLX_nvidia) needs glvnd's libGLdispatch: the debs of
# libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 in `.gl`.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e "$icd" ] || icd=$(find / -xdev -name 'nvidia_icd*.json' 2>/dev/null | head -1)
[ -n "$icd" ] && export VK_DRIVER_FILES=$icd
echo "Vulkan driver manifest: ${icd:-none}"
ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1 | head -5
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if ! "$bin/signorini" simulate scenes/single_ball.toml --solver jacobi-gpu --steps 1 \
  --snapshot-every 0 --out /tmp/sim-probe >/dev/null 2>&1; then
  VK_LOADER_DEBUG=error,warn "$bin/signorini" simulate scenes/single_ball.toml \
    --solver jacobi-gpu --steps 1 --snapshot-every 0 --out /tmp/sim-probe 2>&1 | tail -20
  exit 1
fi
nproc
# The test binaries find the repository at the path they were built in.
if [ "$(pwd -P)" != /work/main ]; then
  mkdir -p /work
  [ -e /work/main ] || ln -s "$(pwd -P)" /work/main
fi
mkdir -p target/release
cp "$bin/signorini" target/release/signorini

summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# balls_in_box widened to 2 HALF m × 2 HALF m (HALF = 5.5 by default: 1e5 spheres; 17.5 for
# 1e6, the fourth session's box: in 11 m × 11 m 1e6 spheres stack 40 layers deep, which 100
# Jacobi iterations do not hold).
wide() {
  local h=${HALF:-5.5}
  echo --set "container.0.half_size=[$h,$h]" --set "lattice.0.min=[-$h,-$h,0]" \
    --set "lattice.0.max=[$h,$h,0]"
}
# sim NAME BINARY COUNT STEPS ARGS...: one `simulate` run's JSON summary into $out/NAME.json.
sim() {
  local name=$1 exe=$2 count=$3 steps=$4
  shift 4
  local t0=$SECONDS
  local -a box
  read -ra box <<<"$(wide)"
  timeout "${SIM_TIMEOUT:-150}" "$exe" simulate scenes/balls_in_box.toml "${box[@]}" \
    --set "lattice.0.count=$count" --steps "$steps" --snapshot-every 0 \
    --out "/tmp/sim-$name" --json-summary "$@" >"$out/$name.json" 2>"$out/$name.err"
  local rc=$?
  python3 - "$out/$name.json" "$name" "$rc" "$((SECONDS - t0))" <<'EOF' | tee -a "$summary"
import json, sys
path, name, rc, secs = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception:
    print(f"{name}: rc {rc}, no summary ({secs} s)")
    sys.exit()
n = max(d["steps"], 1)
wall = d["wall_s"] / n
print(f"{name}: rc {rc} pipeline {d['pipeline']} bodies {d['bodies']} contacts(max) "
      f"{d['max_contacts']} it/step {d['mean_iterations']:.1f} rounds {d['mean_rounds']:.1f} "
      f"wall {wall*1e3:.2f} ms/step host {d['host_s']*1e3:.3f} ms/step "
      f"share {d['host_s']/wall:.3f} res {d['max_residual']:.2e} "
      f"mem {d.get('gpu_memory_bytes', 0) / max(d['bodies'], 1):.0f} B/body ({secs} s)")
EOF
}

for part in $parts; do
  case $part in
  tests)
    for t in gpu_kernels gpu_solvers gpu_step gpu_refine render bench; do
      [ -x "$bin/$t" ] || continue
      t0=$SECONDS
      CI=true timeout 100 "$bin/$t" >"$out/test-$t.log" 2>&1
      note "test $t: rc $? ($((SECONDS - t0)) s) $(grep -E '^test result' "$out/test-$t.log" | tail -1)"
    done
    ;;
  host)
    # Host time per step of the resident step at 1e5 spheres: the base build and this one
    # interleaved, twice each; then the dispatch count (iterations) and the threads varied.
    for round in 1 2; do
      [ -x "$bin/signorini-base" ] && sim "base-1e5-$round" "$bin/signorini-base" 100000 300 \
        --solver jacobi-gpu --set settings.tol=0 --set settings.max_iter=100
      sim "new-1e5-$round" "$bin/signorini" 100000 300 \
        --solver jacobi-gpu --set settings.tol=0 --set settings.max_iter=100
    done
    sim new-1e5-it25 "$bin/signorini" 100000 300 \
      --solver jacobi-gpu --set settings.tol=0 --set settings.max_iter=25
    RAYON_NUM_THREADS=1 sim new-1e5-1thread "$bin/signorini" 100000 300 \
      --solver jacobi-gpu --set settings.tol=0 --set settings.max_iter=100
    ;;
  big)
    for exe in signorini-base signorini; do
      [ -x "$bin/$exe" ] && HALF=17.5 sim "$exe-1e6" "$bin/$exe" 1000000 100 \
        --solver jacobi-gpu --set settings.tol=0 --set settings.max_iter=100
    done
    ;;
  scaling)
    # The GPU time of the resident step by kernel (timestamps) at 1e5 and 333 334 bodies
    # (about 1e6 contacts: the compact blocks' iteration kernels against `throughput`'s).
    t0=$SECONDS
    timeout 200 "$bin/signorini" bench scaling --device gpu --solvers jacobi \
      --sizes 100000,333334 --steps 5 --out "$out/scaling" >"$out/scaling.log" 2>&1
    note "bench scaling: rc $? ($((SECONDS - t0)) s)"
    ;;
  throughput)
    # Jacobi on both devices and the coloured PGS on the CPU's threads in one suite (one
    # problem, one copy-bandwidth measurement per device): issue 16's ratios.
    t0=$SECONDS
    timeout 300 "$bin/signorini" bench throughput --solvers jacobi,pgs-colored --sizes 1e6 \
      --device cpu,gpu --precision f64,f32 --iterations 30 --out "$out/throughput" \
      >"$out/throughput.log" 2>&1
    note "bench throughput: rc $? ($((SECONDS - t0)) s)"
    ;;
  cpu)
    # The CPU kernels on all the machine's threads: Jacobi and the coloured PGS (issue 16).
    t0=$SECONDS
    timeout 300 "$bin/signorini" bench throughput --solvers jacobi,pgs-colored --sizes 1e6 \
      --device cpu --precision f64,f32 --iterations 30 --out "$out/cpu" >"$out/cpu.log" 2>&1
    note "bench throughput (cpu): rc $? ($((SECONDS - t0)) s)"
    ;;
  coulomb)
    # The outer De Saxcé rounds' GPU cost: spg-gpu at 1e5 spheres, CCP against Coulomb.
    for model in ccp coulomb; do
      sim "spg-1e5-$model" "$bin/signorini" 100000 200 --solver spg-gpu \
        --set settings.tol=1e-4 --set settings.max_iter=100 \
        --set "settings.friction_model=\"$model\""
    done
    ;;
  largest)
    # The refusal names the largest scene (past the binding limit: NVIDIA's 2 GiB / 128 B
    # per sphere, 16.8 M); then 1.6e7 spheres, 3 steps. `--max-memory` is the CPU pipeline's
    # estimate (about 21 kB per sphere), not what the resident step holds on the host.
    read -ra box <<<"$(HALF=17.5 wide)"
    timeout 90 "$bin/signorini" simulate scenes/balls_in_box.toml "${box[@]}" \
      --set lattice.0.count=17000000 --steps 1 --snapshot-every 0 --solver jacobi-gpu \
      --max-memory 2TB --out /tmp/sim-largest >"$out/largest-refusal.log" 2>&1
    note "17M spheres: rc $? $(tail -c 400 "$out/largest-refusal.log" | tr '\n' ' ')"
    HALF=17.5 sim new-1.6e7 "$bin/signorini" 16000000 3 --solver jacobi-gpu --set settings.tol=0 \
      --set settings.max_iter=100 --max-memory 2TB
    ;;
  esac
  # The tool brings back a few files: the logs in one archive, after each part (what was
  # done comes back when a later part runs out of time).
  [ -n "${OUT:-}" ] && tar czf "$OUT/device-out.tgz" -C "$out" .
done
echo "==== summary"
cat "$summary"
