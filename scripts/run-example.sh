#!/usr/bin/env bash
# Runs the policy on test_data/pod-multi-arch.json with real image lookups: starts a local OCI
# registry, pushes the fixture images, evaluates the Pod through the test host, prints the
# decision and the JSON patch, and stops the registry.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../e2e/registry.bash
source e2e/registry.bash
trap registry_stop EXIT
registry_start
registry_seed >/dev/null

request="$REGISTRY_DIR/request.json"
sed "s|REGISTRY|$REGISTRY|g" test_data/pod-multi-arch.json >"$request"
echo "Pod images:"
jq -r '.object.spec | (.initContainers // []) + .containers | .[] | "  \(.name): \(.image)"' "$request"
echo
response=$(target/host/test-host run --request-path "$request" --sources-path "$SOURCES" \
  --settings-json "${SETTINGS:-{\}}" policy.wasm)
echo "Response:"
echo "$response" | jq 'del(.patch)'
if [ "$(echo "$response" | jq -r 'has("patch")')" = true ]; then
  echo "Patch:"
  echo "$response" | jq -r '.patch | @base64d' | jq .
fi
