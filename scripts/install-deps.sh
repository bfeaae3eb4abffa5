#!/usr/bin/env bash
# Installs what building, running and testing the policy needs. Idempotent: installs only what is
# missing, and never a Kubewarden tool system-wide.
#
# - the wasm32-wasip1 Rust target;
# - Debian packages: docker-registry (the local OCI registry of the e2e tests), bats, jq, wrk
#   (policy-server load runs), curl, unzip (the release archives);
# - kwctl and policy-server >= 1.35 in the project-local, git-ignored .tools/bin/, from the first
#   of these that works:
#   1. the ones on PATH, when new enough (symlinked into .tools/bin);
#   2. ../shared/kubewarden/ beside the repository (its install.sh unpacks them and checks their
#      SHA256SUMS);
#   3. Kubewarden's official GitHub release for this OS and CPU (KUBEWARDEN_VERSION, default
#      1.35.0), checked against the release's checksum files.
# 1.35 is the first release that enforces host-capability grants and reads `hostCapabilities` from
# the policy metadata: an older kwctl/policy-server neither checks nor honours them.
set -euo pipefail
cd "$(dirname "$0")/.."

MIN_VERSION=1.35.0
KUBEWARDEN_VERSION=${KUBEWARDEN_VERSION:-1.35.0}
TOOLS=.tools/bin

log() { echo "install-deps: $*" >&2; }

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1
fi

missing=()
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
command -v bats >/dev/null 2>&1 || missing+=(bats)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v curl >/dev/null 2>&1 || missing+=(curl ca-certificates)
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

# tools_ok: .tools/bin/kwctl and .tools/bin/policy-server run and are new enough.
tools_ok() {
  local tool
  for tool in kwctl policy-server; do
    new_enough "$(version_of "$TOOLS/$tool")" || return 1
  done
}

# from_path: symlink kwctl and policy-server from PATH when both are new enough.
from_path() {
  local tool bin
  for tool in kwctl policy-server; do
    bin=$(command -v "$tool" 2>/dev/null) || return 1
    # Not our own symlink (PATH may contain .tools/bin).
    [ "$(readlink -f "$bin")" != "$(readlink -f "$TOOLS/$tool" 2>/dev/null)" ] || return 1
    new_enough "$(version_of "$bin")" || return 1
  done
  for tool in kwctl policy-server; do
    ln -sfn "$(readlink -f "$(command -v "$tool")")" "$TOOLS/$tool"
  done
  log "kwctl and policy-server from PATH"
}

# from_shared: ../shared/kubewarden (Linux x86_64 builds, checksum-verified by its install.sh).
from_shared() {
  local shared=../shared/kubewarden
  [ -x "$shared/install.sh" ] || return 1
  [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || return 1
  rm -f "$TOOLS/kwctl" "$TOOLS/policy-server" # symlinks from an earlier PATH install
  "$shared/install.sh" "$TOOLS" >&2
}

# from_release: Kubewarden's GitHub release of KUBEWARDEN_VERSION for this OS and CPU.
# kwctl and policy-server are released from the kubewarden/kubewarden-controller repository
# (a monorepo since 1.32) as <tool>-<os>-<arch>.zip; each release also carries a
# <tool>-<os>-<arch>.sha256 / checksums file, verified below before anything is installed.
# Untested here (the development machines have no internet access).
from_release() {
  local os arch tmp tool base url
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) log "no Kubewarden release for $(uname -s)"; return 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) log "no Kubewarden release for $(uname -m)"; return 1 ;;
  esac
  command -v unzip >/dev/null || { log "unzip is needed"; return 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  for tool in kwctl policy-server; do
    base="$tool-$os-$arch"
    url="https://github.com/kubewarden/kubewarden-controller/releases/download/v$KUBEWARDEN_VERSION"
    log "downloading $url/$base.zip"
    curl -fsSL --retry 3 -o "$tmp/$base.zip" "$url/$base.zip" || return 1
    curl -fsSL --retry 3 -o "$tmp/$base.zip.sha256" "$url/$base.zip.sha256" || return 1
    # The checksum file names the archive: "<sha256>  <tool>-<os>-<arch>.zip".
    (cd "$tmp" && sha256sum -c --quiet "$base.zip.sha256") || { log "checksum mismatch for $base.zip"; return 1; }
    unzip -q -o "$tmp/$base.zip" -d "$tmp/$tool"
    rm -f "$TOOLS/$tool"
    install -m 0755 "$tmp/$tool/$base" "$TOOLS/$tool"
  done
  log "kwctl and policy-server $KUBEWARDEN_VERSION from the GitHub release"
}

mkdir -p "$TOOLS"
if tools_ok; then
  :
elif from_path || from_shared || from_release; then
  tools_ok || { log "$TOOLS holds no kwctl/policy-server >= $MIN_VERSION"; exit 1; }
else
  log "cannot provide kwctl and policy-server >= $MIN_VERSION (see scripts/install-deps.sh)"
  exit 1
fi
log "$("$TOOLS/kwctl" --version 2>&1 | head -n 1); $("$TOOLS/policy-server" --version 2>&1 | head -n 1)"
