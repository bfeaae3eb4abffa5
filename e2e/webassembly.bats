#!/usr/bin/env bats
# Images that are not native, end to end: the compiled module run by a Kubewarden host
# (e2e/host.bash: the embedded host, or kwctl >= 1.35 with E2E_HOST=kwctl) against the local
# registry seeded with the WebAssembly, artifact and nested-index fixtures
# (registry-fixtures/README.md), and the fault registry for the nesting cycle. Each case checks
# the exact answer and the host calls (from the host's --record-host-capabilities-interactions
# file).
#   bats e2e/webassembly.bats    # needs `make policy.wasm host`

bats_require_minimum_version 1.5.0
load requests
load host
load faults
load live

setup_file() { live_start; }
teardown_file() { live_stop; }
setup() { live_setup; }

# with_runtime_class CLASS: the spec on stdin with runtimeClassName CLASS.
with_runtime_class() { jq -c --arg c "$1" '. + {runtimeClassName: $c}'; }

CLASSES='{"wasmRuntimeClasses":["wasmtime-spin-v2"]}'

@test "WebAssembly images and a Spin artifact constrain nothing, under every onLookupFailure and the fallback" {
  pod_request "$(containers "$REGISTRY/wasm/single:1.0" "$REGISTRY/wasm/index:1.0" "$REGISTRY/wasm/spin:1.0")"
  for settings in '{}' '{"onLookupFailure":"reject"}' '{"onLookupFailure":"accept"}' \
    '{"fallbackArchitectures":["amd64"]}' '{"schedulableArchitectures":["amd64","arm64"]}'; do
    evaluate "$settings"
    [ "$(allowed)" = true ]
    [ "$(patch)" = none ]
    [ "$(warnings)" = null ]
    # The single image's platform is in its config; the Spin artifact is known from its manifest.
    [ "$(calls)" = "OciManifest $REGISTRY/wasm/single:1.0
OciManifestAndConfig $REGISTRY/wasm/single:1.0
OciManifest $REGISTRY/wasm/index:1.0
OciManifest $REGISTRY/wasm/spin:1.0" ]
  done
}

@test "with a WebAssembly image, the other images decide" {
  pod_request "$(containers "$REGISTRY/wasm/spin:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate '{"onLookupFailure":"reject"}'
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(warnings)" = null ]
  # The other image's lookup failed: fallbackArchitectures stand in for it, as for it alone.
  pod_request "$(containers "$REGISTRY/wasm/spin:1.0" "$REGISTRY/nope/missing:1.0")"
  evaluate '{"fallbackArchitectures":["amd64"]}'
  [ "$(patch)" = "$(pin_patch amd64)" ]
  unknown="Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: manifest unknown]"
  [ "$(warnings)" = "$(jq -nc --arg a "$(ignored_warning "$REGISTRY/nope/missing:1.0" "$unknown")" \
    --arg b "image-arch-affinity: no image of the Pod other than its WebAssembly ones could be looked up (\"$REGISTRY/nope/missing:1.0\"): it is pinned as if they ran on amd64 (setting fallbackArchitectures)" '[$a, $b]')" ]
  # An all-WebAssembly Pod gets the settings for any node, and no annotation.
  pod_request "$(containers "$REGISTRY/wasm/index:1.0" "$REGISTRY/wasm/spin:1.0")"
  evaluate '{"schedulableArchitectures":["amd64","arm64"],"preferredArchitecture":"arm64"}'
  [ "$(patch)" = "$(jq -nc '[{op: "add", path: "/spec/affinity", value: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [
    {preference: {matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["arm64"]}]}, weight: 50}]}}}]')" ]
}

@test "a mixed index is read for its native entries, unless the Pod's RuntimeClass is in wasmRuntimeClasses" {
  spec=$(containers "$REGISTRY/wasm/native-wasm:1.0")
  pod_request "$spec"
  evaluate "$CLASSES"
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warnings)" = null ]
  pod_request "$(echo "$spec" | with_runtime_class runc)"
  evaluate "$CLASSES"
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  pod_request "$(echo "$spec" | with_runtime_class wasmtime-spin-v2)"
  evaluate "$CLASSES"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warnings)" = null ]
  [ "$(host_calls "$CALLS")" = "1 0" ]
  # A native-only sidecar still constrains the Pod.
  pod_request "$(containers "$REGISTRY/wasm/native-wasm:1.0" "$REGISTRY/single/amd64-docker:1.0" | with_runtime_class wasmtime-spin-v2)"
  evaluate "$CLASSES"
  [ "$(patch)" = "$(pin_patch amd64)" ]
}

@test "a Helm chart named as a Pod image: a lookup failure naming its artifact type" {
  image="$REGISTRY/artifacts/helm-chart:1.0"
  cause='the manifest is an artifact of type "application/vnd.cncf.helm.config.v1+json", not a container image'
  pod_request "$(containers "$image" "$REGISTRY/multi/oci-index:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warnings)" = "$(jq -nc --arg w "$(ignored_warning "$image" "$cause")" '[$w]')" ]
  evaluate '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$image" "$cause")" ]
  [ "$(calls)" = "OciManifest $image
OciManifestAndConfig $image
OciManifest $REGISTRY/multi/oci-index:1.0" ]
}

@test "a nested index is looked up by digest, one host call more" {
  pod_request "$(containers "$REGISTRY/nested/index:1.0" "$REGISTRY/multi/docker-list:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64 s390x)" ]
  [ "$(warnings)" = null ]
  [ "$(calls)" = "OciManifest $REGISTRY/nested/index:1.0
OciManifest $REGISTRY/nested/index@$NESTED_INDEX_INNER_DIGEST
OciManifest $REGISTRY/multi/docker-list:1.0" ]
  # Its nested WebAssembly entry, under a WebAssembly RuntimeClass: nothing to pin.
  pod_request "$(containers "$REGISTRY/nested/index:1.0" | with_runtime_class wasmtime-spin-v2)"
  evaluate "$CLASSES"
  [ "$(patch)" = none ]
}

@test "indexes nested more than 3 deep: a lookup failure, the fourth index not looked up" {
  image="$REGISTRY/nested/too-deep:1.0"
  pod_request "$(containers "$image" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$image" "the image index nests indexes more than 3 deep: index ${NESTED_TOO_DEEP_LEVEL4_DIGEST:0:19}… is not followed")" ]
  [ "$(calls)" = "OciManifest $image
OciManifest $REGISTRY/nested/too-deep@$NESTED_TOO_DEEP_LEVEL2_DIGEST
OciManifest $REGISTRY/nested/too-deep@$NESTED_TOO_DEEP_LEVEL3_DIGEST
OciManifest $REGISTRY/single/arm64-oci:1.0
OciManifestAndConfig $REGISTRY/single/arm64-oci:1.0" ]
}

@test "a nesting cycle: the host refuses the index that is not what its digest names" {
  image="$FAULTS/faults/index-cycle/app:1.0"
  pod_request "$(containers "$image" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  nested=$(jq -r '.manifests[0].digest' <(curl -fsS "http://$FAULTS/v2/faults/index-cycle/app/manifests/1.0"))
  served=$(curl -fsS "http://$FAULTS/v2/faults/index-cycle/app/manifests/$nested" | sha256sum | cut -d ' ' -f 1)
  cause="nested index ${nested:0:19}…: Fail to interact with OCI registry: Digest error: Invalid digest. Expected $nested, got sha256:$served"
  [ "$(message)" = "$(rejected_lookup "$image" "$cause")" ]
  [ "$(calls)" = "OciManifest $image
OciManifest ${image%:1.0}@$nested
OciManifest $REGISTRY/single/arm64-oci:1.0
OciManifestAndConfig $REGISTRY/single/arm64-oci:1.0" ]
}

@test "wasmRuntimeClasses is validated when the policy loads" {
  pod_request "$(containers "$REGISTRY/wasm/spin:1.0")"
  run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" \
    --settings-json '{"wasmRuntimeClasses":["wasmtime-spin-v2","Spin_V2"]}' "$POLICY"
  [ "$status" -eq 1 ]
  [ "$(echo "$stderr" | grep '^Error: ')" = "Error: Provided settings are not valid: wasmRuntimeClasses[1]: \"Spin_V2\" is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters) (a RuntimeClass name)" ]
}
