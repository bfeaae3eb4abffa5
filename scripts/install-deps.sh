#!/usr/bin/env bash
# Installs what building, running and testing the policy needs. Idempotent: installs only what is
# missing, and never a Kubewarden tool system-wide.
#
#   scripts/install-deps.sh run   `make run` (`make deps-run`): what running the example needs
#   scripts/install-deps.sh [all] `make test` and CI (`make deps`, .ci/run): everything below
#
# run:
# - the wasm32-wasip1 Rust target;
# - Debian packages: docker-registry (the local OCI registry of the example and the e2e tests),
#   jq, curl (scripts/run-example.sh, e2e/registry.bash);
# - Kubewarden's kwctl >= 1.35, when it is on PATH and new enough, linked into the project-local,
#   git-ignored .tools/bin/ (`make run` runs the example on it; without it, on the embedded host).
# all, besides:
# - rustfmt and clippy; a check that Go >= 1.26 is on PATH;
# - Debian packages: bats, wrk (policy-server load runs), unzip, shellcheck (make lint: actionlint
#   runs it on the workflows' run: scripts);
# - actionlint ACTIONLINT_VERSION (make lint: the GitHub workflows), cosign COSIGN_VERSION and
#   syft SYFT_VERSION (e2e/release.bats, the release's dry run), built with `go install` from
#   their Go modules into .tools/bin/ (needs Go);
# - policy-server >= 1.35 linked as kwctl is (GitHub's CI puts both on PATH: kwctl by Kubewarden's
#   installer, policy-server out of its signed image; docs/release.md). Nothing prebuilt is
#   downloaded here, and neither is built. Without them the e2e suites run on the embedded host
#   (`make host`) and the suites that need a Kubewarden tool are skipped, each saying so: this
#   script says it in one line and succeeds.
# 1.35 is the first release that enforces host-capability grants and reads `hostCapabilities` from
# the policy metadata: an older kwctl/policy-server neither checks nor honours them.
set -euo pipefail
cd "$(dirname "$0")/.."

MIN_VERSION=1.35.0
# actionlint's newest release on the Go module proxy when pinned; `make lint` runs it.
ACTIONLINT_VERSION=1.7.12
TOOLS=.tools/bin
# What .github/workflows/release.yml installs (sigstore/cosign-installer's cosign-release,
# Kubewarden's syft-installer's version): scripts/check-kubewarden-pins.sh checks they agree.
COSIGN_VERSION=v3.1.3
SYFT_VERSION=v1.57.1

log() { echo "install-deps: $*" >&2; }

mode=${1:-all}
case "$mode" in
  run | all) ;;
  *) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1
fi

# apt_install COMMAND:PACKAGES...: installs the Debian PACKAGES (space-separated) of each COMMAND
# that is not on PATH.
apt_install() {
  local missing=() entry packages
  for entry in "$@"; do
    command -v "${entry%%:*}" >/dev/null 2>&1 && continue
    read -ra packages <<<"${entry#*:}"
    missing+=("${packages[@]}")
  done
  ((${#missing[@]})) || return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# e2e/registry.bash finds docker-registry on PATH or at /usr/bin/docker-registry.
[ -x /usr/bin/docker-registry ] || apt_install docker-registry:docker-registry
apt_install jq:jq "curl:curl ca-certificates"

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

mkdir -p "$TOOLS"
tool_ok kwctl || from_path kwctl || rm -f "$TOOLS/kwctl"
# make run says itself which host ran the example, kwctl or the embedded host.
[ "$mode" = all ] || exit 0

# make test runs cargo fmt and cargo clippy: a minimal toolchain profile has neither.
for component in rustfmt clippy; do
  rustup component list --installed | grep -q "^$component" || rustup component add "$component"
done

# k8s-judge/ (make k8s-test, make k8s-e2e) is a Go module on Kubernetes 1.37 and Karpenter
# v1.15.0, which needs Go 1.26.9: a Go >= 1.26 on PATH starts it, and GOTOOLCHAIN=go1.27.3 (.ci/run,
# scripts/k8s-test.sh) has the go command take that toolchain from the module proxy. Debian's
# golang-go is older: there is nothing to install here, only a clear stop.
go_version=$(go env GOVERSION 2>/dev/null || true)
if [ -z "$go_version" ] || [ "$(printf '%s\n%s\n' go1.26 "$go_version" | sort -V | head -n 1)" != go1.26 ]; then
  log "k8s-judge needs Go >= 1.26 on PATH (found: ${go_version:-none}); install it from go.dev/dl"
  exit 1
fi

apt_install bats:bats wrk:wrk unzip:unzip shellcheck:shellcheck

if [ "$("$TOOLS/actionlint" -version 2>/dev/null | head -n 1)" != "v$ACTIONLINT_VERSION" ]; then
  command -v go >/dev/null 2>&1 || { log "actionlint needs Go to be built: install Go"; exit 1; }
  GOBIN="$PWD/$TOOLS" go install "github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION"
  log "actionlint $ACTIONLINT_VERSION built from its Go module"
fi
# cosign and syft for the release's dry run (e2e/release.bats: sign with a throwaway key, verify,
# the SBOM), the versions the release workflow installs, built from their Go modules (about 5
# minutes each on 2 cores, once): the module version recorded in the binary says which is built.
go_tool() {
  local name=$1 package=$2 version=$3
  if [ "$(go version -m "$TOOLS/$name" 2>/dev/null | awk '$1 == "mod" { print $3 }')" != "$version" ]; then
    GOBIN="$PWD/$TOOLS" go install -ldflags="-s -w" "$package@$version"
    log "$name $version built from its Go module"
  fi
}
go_tool cosign github.com/sigstore/cosign/v3/cmd/cosign "$COSIGN_VERSION"
go_tool syft github.com/anchore/syft/cmd/syft "$SYFT_VERSION"
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
  log "${missing[*]} >= $MIN_VERSION not installed (not on PATH): the e2e suites run on the embedded host, the suites that need ${missing[*]} are skipped"
fi
