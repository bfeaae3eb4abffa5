# shellcheck shell=bash
# The fault registry (target/debug/fault-registry, registry-fixtures/README.md) in front of the
# e2e registry (e2e/registry.bash), for e2e/faults.bats and conformance/record.sh.
#
#   faults_start        # after registry_start: exports FAULTS=127.0.0.1:PORT, FAULTS_PID, FAULTS_LOG
#   faults_stop
#   manifest_gets NAME  # manifest GETs the fault registry saw for repositories starting with NAME

# faults_start: starts target/debug/fault-registry (FAULT_REGISTRY to override) in front of
# $REGISTRY; exports FAULTS=127.0.0.1:PORT, FAULTS_PID, FAULTS_LOG (one JSON line per request).
faults_start() {
  local bin="${FAULT_REGISTRY:-${CARGO_TARGET_DIR:-target}/debug/fault-registry}"
  [ -n "${FAULT_REGISTRY:-}" ] || cargo build -q -p registry-fixtures --bin fault-registry </dev/null >&2 || return 1
  mkdir -p "$REGISTRY_DIR/faults"
  export FAULTS_LOG="$REGISTRY_DIR/faults/requests.jsonl"
  # No stdin; output to a file; fd 3 closed so bats does not wait on it.
  "$bin" --upstream "$REGISTRY" --addr-file "$REGISTRY_DIR/faults/addr" --log "$FAULTS_LOG" \
    </dev/null >"$REGISTRY_DIR/faults/out.log" 2>&1 3>&- &
  export FAULTS_PID=$!
  echo "$FAULTS_PID" >"$REGISTRY_DIR/faults/pid"
  for _ in $(seq 1 100); do
    if [ -s "$REGISTRY_DIR/faults/addr" ]; then
      FAULTS="$(cat "$REGISTRY_DIR/faults/addr")"
      export FAULTS
      return 0
    fi
    kill -0 "$FAULTS_PID" 2>/dev/null || break
    sleep 0.05
  done
  cat "$REGISTRY_DIR/faults/out.log" >&2
  return 1
}

faults_stop() {
  local pid="${FAULTS_PID:-}"
  if [ -z "$pid" ] && [ -n "${REGISTRY_DIR:-}" ] && [ -f "$REGISTRY_DIR/faults/pid" ]; then
    pid="$(cat "$REGISTRY_DIR/faults/pid")"
  fi
  [ -n "$pid" ] || return 0
  stop_pid "$pid"
  unset FAULTS_PID
}

# manifest_gets NAME: manifest GETs the fault registry saw for repositories starting with NAME.
manifest_gets() {
  jq -s --arg p "/v2/$1" '[.[] | select(.method == "GET" and (.path | startswith($p)) and (.path | contains("/manifests/")))] | length' "$FAULTS_LOG"
}
