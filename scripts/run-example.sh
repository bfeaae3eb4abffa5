#!/usr/bin/env bash
# `make run`: the annotated policy on test_data/pod-multi-arch.json with kwctl and real image
# lookups. Starts a local OCI registry (e2e/registry.bash), pushes the fixture images, runs
#   kwctl run --request-path request.json --sources-path sources.yml annotated-policy.wasm
# prints the response and the decoded JSON patch, and stops the registry.
# Knobs: KWCTL (default .tools/bin/kwctl), SETTINGS (settings JSON, default {}).
set -euo pipefail
cd "$(dirname "$0")/.."
KWCTL=${KWCTL:-.tools/bin/kwctl}
[[ "$KWCTL" == */* ]] && KWCTL=$(realpath "$KWCTL")
# With RUST_BACKTRACE set, the host appends a backtrace to lookup errors (and so to warnings).
unset RUST_BACKTRACE RUST_LIB_BACKTRACE
# A registry of its own, even when called with another one's variables in the environment.
unset REGISTRY REGISTRY_PID REGISTRY_DIR SOURCES DIGESTS_FILE
# shellcheck source=../e2e/registry.bash
source e2e/registry.bash
trap registry_stop EXIT
registry_start
registry_seed >/dev/null

# The example request names its images REGISTRY/...: point them at the local registry, whose
# sources.yml (written by registry_start) lists it as insecure (plain HTTP).
cd "$REGISTRY_DIR"
sed "s|REGISTRY|$REGISTRY|g" "$OLDPWD/test_data/pod-multi-arch.json" >request.json
cp "$OLDPWD/annotated-policy.wasm" annotated-policy.wasm
echo "Pod images:"
jq -r '.object.spec | (.initContainers // []) + .containers | .[] | "  \(.name): \(.image)"' request.json
echo
args=(run --request-path request.json --sources-path sources.yml)
[ -z "${SETTINGS:-}" ] || args+=(--settings-json "$SETTINGS")
args+=(annotated-policy.wasm)
echo "\$ kwctl ${args[*]}"
response=$("$KWCTL" "${args[@]}" 2>kwctl.log) || {
  cat kwctl.log >&2
  exit 1
}
echo "Response:"
echo "$response" | jq 'del(.patch)'
if [ "$(echo "$response" | jq -r 'has("patch")')" = true ]; then
  echo "Patch:"
  echo "$response" | jq -r '.patch | @base64d' | jq .
fi
