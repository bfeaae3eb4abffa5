#!/usr/bin/env bash
# `make run`: the policy on test_data/pod-multi-arch.json with real image lookups, on kwctl when it
# is installed, else on the embedded host (RUN_HOST=kwctl|embedded picks). Starts a local OCI
# registry (e2e/registry.bash), pushes the fixture images, runs
#   kwctl run --request-path request.json --sources-path sources.yml annotated-policy.wasm
# (or `embedded-host run ... policy.wasm`, with metadata.yml beside the module), prints which host
# ran it, the response and the decoded JSON patch, and stops the registry.
# Knobs: RUN_HOST, KWCTL (default .tools/bin/kwctl), EMBEDDED_HOST (default
# $CARGO_TARGET_DIR/debug/embedded-host, CARGO_TARGET_DIR default target), SETTINGS (settings JSON, default {}), REQUEST (an AdmissionRequest
# whose images read REGISTRY/..., default test_data/pod-multi-arch.json).
set -euo pipefail
cd "$(dirname "$0")/.."
KWCTL=${KWCTL:-.tools/bin/kwctl}
EMBEDDED_HOST=${EMBEDDED_HOST:-${CARGO_TARGET_DIR:-target}/debug/embedded-host}
RUN_HOST=${RUN_HOST:-$([ -x "$KWCTL" ] && echo kwctl || echo embedded)}
case "$RUN_HOST" in
  kwctl)
    host=$(realpath "$KWCTL") module=annotated-policy.wasm
    echo "Host: $("$host" --version 2>/dev/null | head -n 1) ($KWCTL)"
    ;;
  embedded)
    host=$(realpath "$EMBEDDED_HOST") module=policy.wasm
    echo "Host: the embedded host ($EMBEDDED_HOST: the module run as kwctl run runs it$([ -x "$KWCTL" ] || echo "; kwctl is not installed"))"
    ;;
  *) echo "run-example.sh: RUN_HOST is kwctl or embedded, not $RUN_HOST" >&2; exit 2 ;;
esac
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
request=${REQUEST:-test_data/pod-multi-arch.json}
[[ "$request" == /* ]] || request="$OLDPWD/$request"
sed "s|REGISTRY|$REGISTRY|g" "$request" >request.json
cp "$OLDPWD/$module" "$module"
cp "$OLDPWD/metadata.yml" metadata.yml
echo "Pod images:"
jq -r '.object.spec | (.initContainers // []) + .containers | .[] | "  \(.name): \(.image)"' request.json
echo
args=(run --request-path request.json --sources-path sources.yml)
[ -z "${SETTINGS:-}" ] || args+=(--settings-json "$SETTINGS")
args+=("$module")
echo "\$ $(basename "$host") ${args[*]}"
response=$("$host" "${args[@]}" 2>host.log) || {
  cat host.log >&2
  exit 1
}
echo "Response:"
echo "$response" | jq 'del(.patch)'
if [ "$(echo "$response" | jq -r 'has("patch")')" = true ]; then
  echo "Patch:"
  echo "$response" | jq -r '.patch | @base64d' | jq -c '.[]'
fi
