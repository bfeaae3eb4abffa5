# shellcheck shell=bash
# A throw-away Kubewarden policy-server (1.35) on 127.0.0.1, for e2e/*.bats and scripts/bench.sh.
#
#   source e2e/policy-server.bash
#   policy_server_start POLICIES_YML [EXTRA_ARGS...]
#       # exports POLICY_SERVER_URL=http://127.0.0.1:PORT, POLICY_SERVER_PID, POLICY_SERVER_DIR,
#       # POLICY_SERVER_LOG; returns once the readiness probe answers (every policy loaded)
#   policy_server_validate POLICY_ID REQUEST_JSON_FILE  # prints the AdmissionReview response
#   policy_server_stop     # kills the server by its process id, removes POLICY_SERVER_DIR
#
# Plain HTTP, no Kubernetes (--ignore-kubernetes-connection-failure), no telemetry. When $SOURCES
# is set (e2e/registry.bash exports it), the server reads it (--sources-path) to reach the local
# plain-HTTP registry. From bats: start in setup_file, stop in teardown_file.
#
# Knobs (environment):
#   POLICY_SERVER              the binary (default: .tools/bin/policy-server)
#   POLICY_SERVER_LOG_LEVEL    default: warn
#   POLICY_SERVER_START_TIMEOUT seconds to wait for readiness (default: 120: the first start
#                              compiles the modules)

_POLICY_SERVER_BASH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_POLICY_SERVER_REPO_ROOT="$(cd "$_POLICY_SERVER_BASH_DIR/.." && pwd)"

_policy_server_log() { echo "policy-server.bash: $*" >&2; }

# shellcheck source=ports.bash
source "$_POLICY_SERVER_BASH_DIR/ports.bash"

_policy_server_alive() {
  [ -n "${POLICY_SERVER_PID:-}" ] && kill -0 "$POLICY_SERVER_PID" 2>/dev/null
}

policy_server_start() {
  local policies="$1"
  shift
  if [ ! -f "$policies" ]; then
    _policy_server_log "no policies file $policies"
    return 1
  fi
  local bin="${POLICY_SERVER:-$_POLICY_SERVER_REPO_ROOT/.tools/bin/policy-server}"
  if [ ! -x "$bin" ]; then
    _policy_server_log "policy-server not found at $bin (bash scripts/install-deps.sh)"
    return 1
  fi
  POLICY_SERVER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/e2e-policy-server.XXXXXX")" || return 1
  export POLICY_SERVER_DIR
  export POLICY_SERVER_LOG="$POLICY_SERVER_DIR/policy-server.log"
  local sources=()
  if [ -n "${SOURCES:-}" ]; then
    sources=(--sources-path "$SOURCES")
  fi

  local attempt port readiness i
  for attempt in 1 2 3; do
    port="$(free_port)" || { _policy_server_log "no free port"; return 1; }
    readiness="$(free_port)" || { _policy_server_log "no free port"; return 1; }
    [ "$port" != "$readiness" ] || continue
    # No stdin; output to the log; fd 3 closed so bats does not wait on the server.
    "$bin" --policies "$policies" --addr 127.0.0.1 --port "$port" \
      --readiness-probe-port "$readiness" \
      --policies-download-dir "$POLICY_SERVER_DIR" \
      --sigstore-cache-dir "$POLICY_SERVER_DIR/sigstore" \
      --ignore-kubernetes-connection-failure \
      --log-level "${POLICY_SERVER_LOG_LEVEL:-warn}" --log-no-color \
      "${sources[@]}" "$@" \
      </dev/null >"$POLICY_SERVER_LOG" 2>&1 3>&- &
    POLICY_SERVER_PID=$!
    export POLICY_SERVER_PID
    echo "$POLICY_SERVER_PID" >"$POLICY_SERVER_DIR/policy-server.pid"
    for i in $(seq 1 $(( ${POLICY_SERVER_START_TIMEOUT:-120} * 10 ))); do
      _policy_server_alive || break
      if curl -fsS -o /dev/null "http://127.0.0.1:$readiness/readiness" 2>/dev/null; then
        export POLICY_SERVER_URL="http://127.0.0.1:$port"
        _policy_server_log "listening at $POLICY_SERVER_URL (pid $POLICY_SERVER_PID)"
        return 0
      fi
      sleep 0.1
    done
    _policy_server_log "attempt $attempt (port $port) failed; log:"
    sed 's/^/  /' "$POLICY_SERVER_LOG" >&2
    _policy_server_kill
    # A policy that does not load stops the server: no point in retrying on other ports.
    grep -q 'Address already in use' "$POLICY_SERVER_LOG" || break
  done
  _policy_server_log "could not start policy-server"
  return 1
}

_policy_server_kill() {
  if _policy_server_alive; then
    stop_pid "$POLICY_SERVER_PID"
  fi
  unset POLICY_SERVER_PID
}

# policy_server_review REQUEST_FILE: the AdmissionReview (admission.k8s.io/v1) that carries the
# AdmissionRequest in REQUEST_FILE, as the API server sends it.
policy_server_review() {
  jq -c '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: .}' "$1"
}

# policy_server_validate POLICY_ID REQUEST_FILE: POSTs the request, wrapped in an
# AdmissionReview, to /validate/POLICY_ID and prints the review's `response` on one line (the
# shape kwctl run prints). Fails on an HTTP error, printing the body.
policy_server_validate() {
  local review answer
  review="$(policy_server_review "$2")" || return 1
  answer="$(curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' \
    --data-binary "$review" "$POLICY_SERVER_URL/validate/$1")" || { echo "$answer"; return 1; }
  echo "$answer" | jq -c '.response'
}

policy_server_stop() {
  if [ -z "${POLICY_SERVER_PID:-}" ] && [ -n "${POLICY_SERVER_DIR:-}" ] \
    && [ -f "$POLICY_SERVER_DIR/policy-server.pid" ]; then
    POLICY_SERVER_PID="$(cat "$POLICY_SERVER_DIR/policy-server.pid")"
  fi
  _policy_server_kill
  if [ -n "${POLICY_SERVER_DIR:-}" ] && [ -d "$POLICY_SERVER_DIR" ]; then
    rm -rf "$POLICY_SERVER_DIR"
  fi
  unset POLICY_SERVER_DIR POLICY_SERVER_URL POLICY_SERVER_LOG
  return 0
}
