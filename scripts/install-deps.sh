#!/usr/bin/env bash
# Installs what building and testing the policy needs on a fresh Debian machine: the
# wasm32-wasip1 Rust target, the OCI registry the tests start (Debian's docker-registry), bats and
# jq. Idempotent: installs only what is missing.
set -euo pipefail

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1
fi

missing=()
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
command -v bats >/dev/null 2>&1 || missing+=(bats)
command -v jq >/dev/null 2>&1 || missing+=(jq)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
