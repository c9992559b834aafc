#!/usr/bin/env bash
# A CPU profile of the host's side of the GPU-resident step on the lent GPU machine (issue 14's
# host time), which has no `perf`: carry the development machine's, with the libraries it
# links, as `.dev/perf.tar.xz` (`perf/perf` and `perf/lib*.so*`: `cp /usr/bin/perf` and the
# `ldd` list but libc, libm, ld-linux), and a release build with its symbols (`strip
# --strip-debug`; call graphs need `RUSTFLAGS="-C force-frame-pointers=yes"`) as
# `.dev/bin/signorini.xz`. Samples `cpu-clock` at 4 kHz after the first 1.5 s (the setup) of
# 1000 steps of 1e5 spheres, 100 Jacobi iterations per step; writes flat and inclusive
# profiles (all threads, by thread, the main thread's) and the top symbols' callers under $OUT.
#   bash benches/device-profile.sh
set -u
# `device.sh` with no part: the binaries unpacked, the Vulkan loader installed.
bash benches/device.sh none >/dev/null 2>&1
bin=/tmp/device-bin/signorini
mkdir -p /tmp/p && tar -C /tmp/p -xJf .dev/perf.tar.xz
perf() { LD_LIBRARY_PATH=/tmp/p/perf /tmp/p/perf/perf "$@"; }
perf --version; cat /proc/sys/kernel/perf_event_paranoid
h=5.5
args=(simulate scenes/balls_in_box.toml --set "container.0.half_size=[$h,$h]"
  --set "lattice.0.min=[-$h,-$h,0]" --set "lattice.0.max=[$h,$h,0]" --set lattice.0.count=100000
  --steps 1000 --snapshot-every 0 --solver jacobi-gpu --set settings.tol=0
  --set settings.max_iter=100 --json-summary)
if perf --version >/dev/null 2>&1; then
  perf record -D 1500 -e cpu-clock -F 4000 -g -o /tmp/perf.data "$bin" "${args[@]}" \
    --out /tmp/sim-p >"$OUT/sim.json" 2>"$OUT/sim.err"
  report() { perf report -i /tmp/perf.data --stdio "$@" 2>/dev/null; }
  report --no-children --sort pid -g none | head -40 >"$OUT/by-thread.txt"
  report --no-children --sort sym -g none | head -150 >"$OUT/by-sym.txt"
  report --children --sort sym -g none | head -200 >"$OUT/children.txt"
  report --no-children --sort sym -g caller --percent-limit 1.5 | head -1500 >"$OUT/callers.txt"
  t=$(perf script -i /tmp/perf.data -F pid 2>/dev/null | head -1 | tr -d ' ')
  echo "main thread $t"
  report --tid "$t" --children --sort sym -g none | head -200 >"$OUT/main-children.txt"
  report --tid "$t" --no-children --sort sym -g none | head -150 >"$OUT/main-self.txt"
else
  echo "no perf"; "$bin" "${args[@]}" --out /tmp/sim-p >"$OUT/sim.json"
fi
tail -c 600 "$OUT/sim.json"; head -30 "$OUT/by-thread.txt" 2>/dev/null
