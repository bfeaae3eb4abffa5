#!/usr/bin/env bats
# Smoke test of `make bench` (scripts/bench.sh): one kwctl bench case and 1-second wrk runs, so
# that the script keeps working; the figures themselves are not checked (docs/performance.md).

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  export BENCH_OUT="$BATS_FILE_TMPDIR/bench"
  BENCH_CASES=pod-skipped BENCH_ROUNDS=1 BENCH_KWCTL_SECONDS=1 make -s bench BENCH_SECONDS=1 \
    >"$BATS_FILE_TMPDIR/bench.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/bench.log" >&2; return 1; }
}

@test "kwctl bench: one row with the host calls and a time per module" {
  cd "$BATS_TEST_DIRNAME/.."
  run grep '^| pod-skipped |' "$BENCH_OUT/kwctl-bench.md"
  echo "$output"
  [[ "$output" =~ ^\|\ pod-skipped\ \|\ 0\ \|(\ [0-9]+\.[0-9]\ \([0-9]+\.[0-9]\)\ \|){3}$ ]]
}

@test "policy-server + wrk: req/s, p99 and ratio for each policy, no failed request" {
  cd "$BATS_TEST_DIRNAME/.."
  cat "$BENCH_OUT/wrk.md"
  for row in "image-arch-affinity | pod-3-images" "trivial | pod-3-images" \
    "pod-privileged( \([^)]*\))? | pod-3-images" "image-arch-affinity-configured | pod-3-images" \
    "image-arch-affinity | pod-skipped"; do
    grep -Eq "^\| ${row//|/\\|} \| [1-9][0-9]* \| [0-9]+\.[0-9]{2} \| [0-9]+\.[0-9]{2}x \|$" "$BENCH_OUT/wrk.md"
  done
  run grep -l 'Non-2xx' "$BENCH_OUT"/wrk-*.txt
  [ "$status" -eq 1 ]
}
