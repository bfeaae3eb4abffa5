#!/usr/bin/env bash
# Instructions per admission (host + guest, counted by valgrind's callgrind inside
# test_host::Host::evaluate), for one module and one benchmark case: deterministic where wall-clock
# times on a shared machine are not.
#   scripts/count-instructions.sh MODULE.wasm "3 containers, 3 images"   # one module, one case
#   scripts/count-instructions.sh                                         # a table: every case
# Case names are those of test-host/benches/admission.rs. Needs valgrind and the bench binary
# (`make bench` builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=$(ls -t target/host/deps/admission-* | grep -v '\.d$' | head -n 1)
iterations=10

count() {
  local collected
  collected=$(POLICY_WASM=$1 TRIVIAL_WASM=$1 BENCH_ONLY="$2" BENCH_ITERATIONS=$iterations \
    valgrind --tool=callgrind --smc-check=all --collect-atstart=no '--toggle-collect=*Host::evaluate*' \
    --callgrind-out-file=/dev/null "$bench" 2>&1 | sed -n 's/.*Collected : //p')
  # Each iteration (plus one warm-up) evaluates the module twice (as "policy" and as "trivial").
  echo $((collected / ((iterations + 1) * 2)))
}

if (($# == 2)); then
  echo "$(basename "$1") | $2 | $(count "$(realpath "$1")" "$2")"
  exit 0
fi
policy=$(realpath policy.wasm)
trivial=$(realpath target/wasm32-wasip1/release/trivial_policy.wasm)
echo "| case | instructions per admission (policy) | (trivial) | ratio |"
echo "|---|---|---|---|"
for case in "skipped Pod (nodeName)" "1 container, 1 image" "3 containers, 3 images" \
  "10 containers, 1 image" "10 containers, 10 images" "100 containers, 1 image" \
  "100 containers, 10 images" "realistic Pod (7 KB), 3 images"; do
  ours=$(count "$policy" "$case")
  base=$(count "$trivial" "$case")
  echo "| $case | $ours | $base | $(awk "BEGIN { printf \"%.2f\", $ours / $base }") |"
done
