# shellcheck shell=bash
# A throw-away local OCI registry (Debian's docker-registry, distribution 2.8) with the e2e
# fixture images, for e2e.bats and the Makefile.
#
#   source e2e/registry.bash
#   registry_start   # exports REGISTRY=127.0.0.1:PORT, SOURCES=<sources.yml>, REGISTRY_DIR
#   registry_seed    # pushes the fixtures, exports the *_DIGEST variables (see DIGESTS_FILE)
#   registry_stop    # kills the registry, removes REGISTRY_DIR
#
# From bats: call registry_start + registry_seed in setup_file and registry_stop in
# teardown_file. Variables exported in setup_file are visible to the tests.
#
# Knobs (environment):
#   DOCKER_REGISTRY_BIN  registry binary (default: docker-registry on PATH, /usr/bin/docker-registry)
#   SEED_REGISTRY        seeding binary (default: target/debug/seed-registry of the registry-fixtures
#                        crate, built if missing)
#   REGISTRY_PORT        fixed port instead of a free random one

_REGISTRY_BASH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_REGISTRY_REPO_ROOT="$(cd "$_REGISTRY_BASH_DIR/.." && pwd)"

_registry_log() { echo "registry.bash: $*" >&2; }

# shellcheck source=ports.bash
source "$_REGISTRY_BASH_DIR/ports.bash"

# True when $REGISTRY_PID is alive.
_registry_alive() {
  [ -n "${REGISTRY_PID:-}" ] && kill -0 "$REGISTRY_PID" 2>/dev/null
}

registry_start() {
  if _registry_alive; then
    _registry_log "already running at $REGISTRY (pid $REGISTRY_PID)"
    return 0
  fi
  local bin="${DOCKER_REGISTRY_BIN:-}"
  if [ -z "$bin" ]; then
    bin="$(command -v docker-registry || true)"
    [ -n "$bin" ] || bin=/usr/bin/docker-registry
  fi
  if [ ! -x "$bin" ]; then
    _registry_log "docker-registry not found (apt-get install docker-registry)"
    return 1
  fi

  REGISTRY_DIR="$(mktemp -d "${TMPDIR:-/tmp}/e2e-registry.XXXXXX")" || return 1
  export REGISTRY_DIR
  mkdir -p "$REGISTRY_DIR/storage"

  local attempt port
  for attempt in 1 2 3 4 5; do
    port="${REGISTRY_PORT:-$(free_port)}" || { _registry_log "no free port"; return 1; }
    cat >"$REGISTRY_DIR/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/storage
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:$port
  secret: e2e-not-a-secret
EOF
    # No stdin; stdout/stderr to a log file; fd 3 closed so bats does not wait on it.
    "$bin" serve "$REGISTRY_DIR/config.yml" </dev/null >"$REGISTRY_DIR/registry.log" 2>&1 3>&- &
    REGISTRY_PID=$!
    echo "$REGISTRY_PID" >"$REGISTRY_DIR/registry.pid"
    export REGISTRY_PID

    local i
    for i in $(seq 1 100); do
      if ! _registry_alive; then
        break
      fi
      if curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null; then
        export REGISTRY="127.0.0.1:$port"
        export SOURCES="$REGISTRY_DIR/sources.yml"
        printf 'insecure_sources: ["%s"]\n' "$REGISTRY" >"$SOURCES"
        _registry_log "listening at $REGISTRY (pid $REGISTRY_PID, dir $REGISTRY_DIR)"
        return 0
      fi
      sleep 0.1
    done
    _registry_log "attempt $attempt on port $port failed:"
    sed 's/^/  /' "$REGISTRY_DIR/registry.log" >&2
    _registry_kill
    [ -z "${REGISTRY_PORT:-}" ] || break
  done
  _registry_log "could not start docker-registry"
  rm -rf "$REGISTRY_DIR"
  unset REGISTRY_DIR
  return 1
}

_registry_kill() {
  if _registry_alive; then
    stop_pid "$REGISTRY_PID"
  fi
  unset REGISTRY_PID
}

# The seeding binary: $SEED_REGISTRY, else target/debug/seed-registry (cargo brings it up to date).
_registry_seed_bin() {
  if [ -n "${SEED_REGISTRY:-}" ]; then
    echo "$SEED_REGISTRY"
    return 0
  fi
  local target="${CARGO_TARGET_DIR:-$_REGISTRY_REPO_ROOT/target}"
  local bin="$target/debug/seed-registry"
  (cd "$_REGISTRY_REPO_ROOT" && cargo build -q -p registry-fixtures --bin seed-registry </dev/null >&2) || return 1
  echo "$bin"
}

registry_seed() {
  if [ -z "${REGISTRY:-}" ] || [ -z "${REGISTRY_DIR:-}" ]; then
    _registry_log "registry_seed: call registry_start first"
    return 1
  fi
  local bin
  bin="$(_registry_seed_bin)" || return 1
  export DIGESTS_FILE="$REGISTRY_DIR/digests.env"
  "$bin" --registry "$REGISTRY" --digests-out "$DIGESTS_FILE" </dev/null || return 1
  local line
  while IFS= read -r line; do
    case "$line" in
      ''|'#'*) ;;
      *) export "${line?}" ;;
    esac
  done <"$DIGESTS_FILE"
}

registry_stop() {
  if [ -z "${REGISTRY_PID:-}" ] && [ -n "${REGISTRY_DIR:-}" ] && [ -f "$REGISTRY_DIR/registry.pid" ]; then
    REGISTRY_PID="$(cat "$REGISTRY_DIR/registry.pid")"
  fi
  _registry_kill
  if [ -n "${REGISTRY_DIR:-}" ] && [ -d "$REGISTRY_DIR" ]; then
    rm -rf "$REGISTRY_DIR"
  fi
  unset REGISTRY_DIR REGISTRY SOURCES DIGESTS_FILE
  return 0
}
