#!/usr/bin/env bash
# Instructions per admission (host + guest, counted by valgrind's callgrind inside
# test_host::Host::evaluate), for one module and one benchmark case: deterministic where wall-clock
# times on a shared machine are not.
#   scripts/count-instructions.sh MODULE.wasm "3 containers, 3 images"
# Case names are those of test-host/benches/admission.rs. Needs valgrind and the bench binary
# (`make bench` builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
module=$(realpath "$1")
case=$2
bench=$(ls -t target/host/deps/admission-* | grep -v '\.d$' | head -n 1)
iterations=10
collected=$(POLICY_WASM=$module TRIVIAL_WASM=$module BENCH_ONLY="$case" BENCH_ITERATIONS=$iterations \
  valgrind --tool=callgrind --smc-check=all --collect-atstart=no '--toggle-collect=*Host::evaluate*' \
  --callgrind-out-file=/dev/null "$bench" 2>&1 | sed -n 's/.*Collected : //p')
# Each iteration (plus one warm-up) evaluates the module twice (as "policy" and as "trivial").
echo "$(basename "$module") | $case | $((collected / ((iterations + 1) * 2)))"
