# shellcheck shell=bash
# The live-registry suites' shared part (e2e/webassembly.bats, e2e/volumes.bats; loaded after
# requests, host and faults): the local registry seeded with the fixtures and the fault registry
# in front of it, started once per file, and `evaluate`, the host's `run` recording its host calls.

# live_start / live_stop: the registries of a suite (setup_file / teardown_file); exports
# SOURCES_ALL, the sources file naming both insecure.
live_start() {
  cd "$BATS_TEST_DIRNAME/.." || return 1
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
  faults_start
  export SOURCES_ALL="$REGISTRY_DIR/sources-live.yml"
  printf 'insecure_sources: ["%s", "%s"]\n' "$REGISTRY" "$FAULTS" >"$SOURCES_ALL"
}

live_stop() {
  cd "$BATS_TEST_DIRNAME/.." || return 1
  faults_stop
  source e2e/registry.bash
  registry_stop
}

# live_setup: each test's REQUEST and CALLS files; the host's error chains stay one line without
# its backtraces.
live_setup() {
  cd "$BATS_TEST_DIRNAME/.." || return 1
  REQUEST="$BATS_TEST_TMPDIR/request.json"
  CALLS="$BATS_TEST_TMPDIR/calls.yml"
  unset RUST_BACKTRACE
}

# evaluate [SETTINGS_JSON]: the host's `run` on $REQUEST with SETTINGS_JSON (default {}) and a
# lookup budget no loaded machine spends (these cases are about shapes, not time); RESPONSE is its
# stdout line, $CALLS the host calls.
evaluate() {
  rm -f "$CALLS"
  local settings
  settings=$(jq -c '. + {lookupBudgetMilliseconds: 30000}' <<<"${1:-"{}"}")
  run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" \
    --record-host-capabilities-interactions "$CALLS" --settings-json "$settings" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

# calls: the host calls of the last evaluation, one "TAG IMAGE" per line.
calls() { recorded_calls "$CALLS"; }
