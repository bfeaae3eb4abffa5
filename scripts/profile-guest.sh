#!/usr/bin/env bash
# Where the guest's instructions go, per admission, for one benchmark case: builds policy.wasm
# with its symbols, runs the case under callgrind with the test host naming the compiled guest
# functions (TEST_HOST_PERFMAP=1), and prints the inclusive instruction count of each guest function.
#   scripts/profile-guest.sh ["3 containers, 3 images"] [rows]
# Needs valgrind, python3 and the bench binary (`make bench` builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
case_name=${1:-3 containers, 3 images}
rows=${2:-40}
iterations=10
CARGO_PROFILE_RELEASE_STRIP=false cargo build --quiet --target wasm32-wasip1 --release --lib \
  --target-dir target/profile
wasm=$(realpath target/profile/wasm32-wasip1/release/image_arch_affinity.wasm)
bench=$(ls -t target/host/deps/admission-* | grep -v '\.d$' | head -n 1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The module is loaded twice (as "policy" and as "trivial"): the map has both copies.
(cd "$out" && TEST_HOST_PERFMAP=1 POLICY_WASM=$wasm TRIVIAL_WASM=$wasm \
  BENCH_ONLY="$case_name" BENCH_ITERATIONS=$iterations \
  valgrind --tool=callgrind --smc-check=all --collect-atstart=no \
  '--toggle-collect=*Host::evaluate*' --callgrind-out-file="$out/callgrind.out" \
  "$OLDPWD/$bench" >/dev/null 2>&1)
callgrind_annotate --inclusive=yes --threshold=100 "$out/callgrind.out" >"$out/annotated"
# wasmtime writes the map to /tmp/perf-<pid>.map: the newest one is this run's.
map=$(ls -t /tmp/perf-*.map | head -n 1)
mv "$map" "$out/perf.map"
python3 - "$out/annotated" "$out/perf.map" "$((iterations + 1))" "$rows" <<'PY'
import bisect, re, sys
annotated, *maps, evaluations, rows = sys.argv[1:]
ranges = []
for path in maps:
    for line in open(path):
        start, size, name = line.rstrip("\n").split(" ", 2)
        name = re.sub(r"::h[0-9a-f]{16}$", "", re.sub(r"\[[0-9a-f]+\]", "", name))
        ranges.append((int(start, 16), int(size, 16), name))
ranges.sort()
starts = [r[0] for r in ranges]
inclusive = {}
for line in open(annotated):
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\?\?\?:0x([0-9a-f]+) \[", line)
    if not m:
        continue
    address = int(m.group(2), 16)
    i = bisect.bisect_right(starts, address) - 1
    if i < 0 or address >= ranges[i][0] + ranges[i][1]:
        continue
    cost = int(m.group(1).replace(",", ""))
    inclusive[ranges[i][2]] = max(inclusive.get(ranges[i][2], 0), cost)
print("| guest function | instructions per admission (inclusive) |\n|---|---|")
for name, cost in sorted(inclusive.items(), key=lambda x: -x[1])[: int(rows)]:
    print(f"| {name[:120]} | {cost // int(evaluations)} |")
PY
