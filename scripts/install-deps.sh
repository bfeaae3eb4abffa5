#!/usr/bin/env bash
# Installs what building, running and testing the policy needs. Idempotent: installs only what is
# missing, and never a Kubewarden tool system-wide.
#
# - the wasm32-wasip1 Rust target, rustfmt and clippy; a check that Go >= 1.26 is on PATH;
# - Debian packages: docker-registry (the local OCI registry of the e2e tests), bats, jq, wrk
#   (policy-server load runs), curl, unzip, shellcheck (make lint: actionlint runs it on the
#   workflows' run: scripts);
# - actionlint ACTIONLINT_VERSION (make lint: the GitHub workflows), built with `go install` from
#   its Go module into .tools/bin/ (needs Go);
# - Kubewarden's kwctl and policy-server >= 1.35, when they can be had, in the project-local,
#   git-ignored .tools/bin/: the ones on PATH when new enough (symlinked), else kwctl from
#   Kubewarden's release KUBEWARDEN_VERSION (default 1.35.0), checked against the SHA-256 digest
#   GitHub publishes for it (policy-server is released only as a container image: PATH only).
#   Neither is ever built from source. Without them the e2e suites run on the embedded host
#   (`make host`) and the suites that need a Kubewarden tool are skipped, each saying so: this
#   script says it in one line and succeeds.
# 1.35 is the first release that enforces host-capability grants and reads `hostCapabilities` from
# the policy metadata: an older kwctl/policy-server neither checks nor honours them.
set -euo pipefail
cd "$(dirname "$0")/.."

MIN_VERSION=1.35.0
# actionlint's newest release on the Go module proxy when pinned; `make lint` runs it.
ACTIONLINT_VERSION=1.7.12
KUBEWARDEN_VERSION=${KUBEWARDEN_VERSION:-1.35.0}
TOOLS=.tools/bin

log() { echo "install-deps: $*" >&2; }

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1
fi
# make test runs cargo fmt and cargo clippy: a minimal toolchain profile has neither.
for component in rustfmt clippy; do
  rustup component list --installed | grep -q "^$component" || rustup component add "$component"
done

# k8s-judge/ (make k8s-test, make k8s-e2e) is a Go module on Kubernetes 1.37, which needs Go 1.26
# (go.mod's go line); our machines have it. Debian's golang-go is older: there is nothing to
# install here, only a clear stop.
go_version=$(go env GOVERSION 2>/dev/null || true)
if [ -z "$go_version" ] || [ "$(printf '%s\n%s\n' go1.26 "$go_version" | sort -V | head -n 1)" != go1.26 ]; then
  log "k8s-judge needs Go >= 1.26 on PATH (found: ${go_version:-none}); install it from go.dev/dl"
  exit 1
fi

missing=()
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
command -v bats >/dev/null 2>&1 || missing+=(bats)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v curl >/dev/null 2>&1 || missing+=(curl ca-certificates)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# version_of BIN: the x.y.z that `BIN --version` prints (empty when it does not run).
version_of() {
  "$1" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1 || true
}

# new_enough VERSION: VERSION >= MIN_VERSION.
new_enough() {
  [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$MIN_VERSION" "$1" | sort -V | head -n 1)" = "$MIN_VERSION" ]
}

# tool_ok TOOL: .tools/bin/TOOL runs and is new enough.
tool_ok() {
  new_enough "$(version_of "$TOOLS/$1")"
}

# from_path TOOL: symlink TOOL from PATH when it is new enough.
from_path() {
  local bin
  bin=$(command -v "$1" 2>/dev/null) || return 1
  # Not our own symlink (PATH may contain .tools/bin).
  [ "$(readlink -f "$bin")" != "$(readlink -f "$TOOLS/$1" 2>/dev/null)" ] || return 1
  new_enough "$(version_of "$bin")" || return 1
  ln -sfn "$(readlink -f "$bin")" "$TOOLS/$1"
  log "$1 from PATH"
}

# kwctl_from_release: kwctl of Kubewarden's release KUBEWARDEN_VERSION from
# github.com/kubewarden/kubewarden-controller (a monorepo since 1.32): the release asset
# kwctl-<os>-<arch>.zip (it holds kwctl-<os>-<arch> and its Sigstore bundle), checked against the
# SHA-256 digest GitHub publishes for that asset in the release's API answer before anything is
# unpacked. Fails fast where GitHub cannot be reached.
kwctl_from_release() {
  local os arch tmp base api digest repo=kubewarden/kubewarden-controller tag="v$KUBEWARDEN_VERSION"
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) return 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) return 1 ;;
  esac
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  base="kwctl-$os-$arch"
  api=$(curl -fsSL --connect-timeout 5 --max-time 30 "https://api.github.com/repos/$repo/releases/tags/$tag" 2>/dev/null) || return 1
  digest=$(echo "$api" | jq -r --arg n "$base.zip" '.assets[] | select(.name == $n) | .digest // empty')
  [[ "$digest" == sha256:* ]] || { log "release $tag publishes no sha256 digest for $base.zip"; return 1; }
  log "downloading $base.zip of $repo $tag"
  curl -fsSL --retry 3 --connect-timeout 5 -o "$tmp/$base.zip" "https://github.com/$repo/releases/download/$tag/$base.zip" || return 1
  echo "${digest#sha256:}  $tmp/$base.zip" | sha256sum -c --quiet - || { log "checksum mismatch for $base.zip"; return 1; }
  unzip -q -o "$tmp/$base.zip" -d "$tmp/kwctl"
  rm -f "$TOOLS/kwctl"
  install -m 0755 "$tmp/kwctl/$base" "$TOOLS/kwctl"
  log "kwctl $KUBEWARDEN_VERSION from Kubewarden's release $tag"
}

mkdir -p "$TOOLS"
if [ "$("$TOOLS/actionlint" -version 2>/dev/null | head -n 1)" != "v$ACTIONLINT_VERSION" ]; then
  command -v go >/dev/null 2>&1 || { log "actionlint needs Go to be built: install Go"; exit 1; }
  GOBIN="$PWD/$TOOLS" go install "github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION"
  log "actionlint $ACTIONLINT_VERSION built from its Go module"
fi
tool_ok kwctl || from_path kwctl || kwctl_from_release || rm -f "$TOOLS/kwctl"
tool_ok policy-server || from_path policy-server || rm -f "$TOOLS/policy-server"
missing=()
for tool in kwctl policy-server; do
  if tool_ok "$tool"; then
    log "$("$TOOLS/$tool" --version 2>&1 | head -n 1)"
  else
    missing+=("$tool")
  fi
done
if ((${#missing[@]})); then
  log "${missing[*]} >= $MIN_VERSION not installed (not on PATH$([[ " ${missing[*]} " == *" kwctl "* ]] && echo ", Kubewarden's release unreachable")): the e2e suites run on the embedded host, the suites that need ${missing[*]} are skipped"
fi
