#!/usr/bin/env bash
# Installs what building, running and testing the policy needs. Idempotent: installs only what is
# missing, and never a Kubewarden tool system-wide.
#
# - the wasm32-wasip1 Rust target;
# - Debian packages: docker-registry (the local OCI registry of the e2e tests), bats, jq, wrk
#   (policy-server load runs), curl;
# - kwctl and policy-server >= 1.35 in the project-local, git-ignored .tools/bin/, from the first
#   of these that works:
#   1. the ones on PATH, when new enough (symlinked into .tools/bin);
#   2. ../shared/kubewarden/ beside the repository (its install.sh unpacks them and checks their
#      SHA256SUMS);
#   3. Kubewarden's release KUBEWARDEN_VERSION (default 1.35.0) for this OS and CPU: kwctl's
#      release archive, checked against the SHA-256 digest GitHub publishes for it; policy-server
#      (released only as a container image) built from the release tag (see from_release).
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

# from_release: Kubewarden's release KUBEWARDEN_VERSION from github.com/kubewarden/kubewarden-controller
# (a monorepo since 1.32). Needs internet access: not exercised on the development machines or CI,
# which have ../shared/kubewarden.
# - kwctl: the release asset kwctl-<os>-<arch>.zip (the name Kubewarden's build-kwctl workflow
#   gives it; it holds kwctl-<os>-<arch> and its Sigstore bundle), checked against the SHA-256
#   digest GitHub publishes for that asset in the release's API answer before anything is unpacked.
# - policy-server: Kubewarden publishes it only as a container image, so it is built from the
#   release tag with `cargo install --locked` (cargo checks every dependency against the tag's
#   Cargo.lock checksums; takes a while).
from_release() {
  local os arch tmp base api digest repo=kubewarden/kubewarden-controller tag="v$KUBEWARDEN_VERSION"
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) log "no kwctl release for $(uname -s)"; return 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) log "no kwctl release for $(uname -m)"; return 1 ;;
  esac
  command -v unzip >/dev/null || { log "unzip is needed (apt-get install unzip)"; return 1; }
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  base="kwctl-$os-$arch"
  api=$(curl -fsSL --retry 3 "https://api.github.com/repos/$repo/releases/tags/$tag") || return 1
  digest=$(echo "$api" | jq -r --arg n "$base.zip" '.assets[] | select(.name == $n) | .digest // empty')
  [[ "$digest" == sha256:* ]] || { log "release $tag publishes no sha256 digest for $base.zip"; return 1; }
  log "downloading $base.zip of $repo $tag"
  curl -fsSL --retry 3 -o "$tmp/$base.zip" "https://github.com/$repo/releases/download/$tag/$base.zip" || return 1
  echo "${digest#sha256:}  $tmp/$base.zip" | sha256sum -c --quiet - || { log "checksum mismatch for $base.zip"; return 1; }
  unzip -q -o "$tmp/$base.zip" -d "$tmp/kwctl"
  rm -f "$TOOLS/kwctl"
  install -m 0755 "$tmp/kwctl/$base" "$TOOLS/kwctl"
  log "building policy-server $tag from source (cargo install --locked)"
  rm -f "$TOOLS/policy-server"
  cargo install --locked --quiet --git "https://github.com/$repo" --tag "$tag" \
    --root "$tmp/cargo" policy-server || return 1
  install -m 0755 "$tmp/cargo/bin/policy-server" "$TOOLS/policy-server"
  log "kwctl and policy-server $KUBEWARDEN_VERSION from Kubewarden's release $tag"
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
