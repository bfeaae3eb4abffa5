#!/usr/bin/env bats
# Image volumes (spec.volumes[].image, GA in Kubernetes 1.36) end to end: the compiled module run
# by a Kubewarden host (e2e/host.bash: the embedded host, or kwctl >= 1.35 with E2E_HOST=kwctl)
# against the local registry seeded with the fixtures (registry-fixtures/README.md): an image
# volume's index or single-platform image constrains the Pod like a container's image, an
# artifact with no platform (artifacts/model, artifacts/dataset, a Helm chart) constrains
# nothing, messages name the volume. Each case checks the exact answer and the host calls (from
# the host's --record-host-capabilities-interactions file).
#   bats e2e/volumes.bats    # needs `make policy.wasm host`

bats_require_minimum_version 1.5.0
load requests
load host
load faults
load live

setup_file() { live_start; }
teardown_file() { live_stop; }
setup() { live_setup; }

@test "an image volume's index or single-platform image constrains the Pod like a container's" {
  pod_request "$(containers "$REGISTRY/multi/docker-list:1.0" | with_volumes "tools=$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(calls)" = "OciManifest $REGISTRY/multi/docker-list:1.0
OciManifest $REGISTRY/single/arm64-oci:1.0
OciManifestAndConfig $REGISTRY/single/arm64-oci:1.0" ]
  pod_request "$(containers "$REGISTRY/single/amd64-docker:1.0" | with_volumes "plugins=$REGISTRY/multi/oci-index:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64)" ]
  [ "$(host_calls "$CALLS")" = "2 1" ]
}

@test "artifacts with no platform constrain nothing, cost one call each, under every onLookupFailure and the fallback" {
  pod_request "$(containers "$REGISTRY/multi/s390x-only:1.0" |
    with_volumes "model=$REGISTRY/artifacts/model:1.0" "data=$REGISTRY/artifacts/dataset:1.0" "chart=$REGISTRY/artifacts/helm-chart:1.0")"
  for settings in '{}' '{"onLookupFailure":"reject"}' '{"onLookupFailure":"accept"}' '{"fallbackArchitectures":["amd64"]}'; do
    evaluate "$settings"
    [ "$(allowed)" = true ]
    [ "$(warnings)" = null ]
    [ "$(patch)" = "$(pin_patch s390x)" ]
    [ "$(calls)" = "OciManifest $REGISTRY/multi/s390x-only:1.0
OciManifest $REGISTRY/artifacts/model:1.0
OciManifest $REGISTRY/artifacts/dataset:1.0
OciManifest $REGISTRY/artifacts/helm-chart:1.0" ]
  done
  # Beside images that run anywhere: no pin, no annotation.
  pod_request "$(containers "$REGISTRY/wasm/spin:1.0" | with_volumes "model=$REGISTRY/artifacts/model:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
}

@test "a reference that a container runs and a volume mounts is looked up once; an artifact a container runs stays a failed lookup" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/single/arm64-oci:1.0" |
    with_volumes "same=$REGISTRY/multi/oci-index:1.0" "again=$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(host_calls "$CALLS")" = "2 1" ]
  image="$REGISTRY/artifacts/dataset:1.0"
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$image" | with_volumes "data=$image")"
  evaluate '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$image" 'the manifest is an artifact of type "application/vnd.example.dataset.v1", not a container image')" ]
  [ "$(calls)" = "OciManifest $REGISTRY/multi/oci-index:1.0
OciManifest $image
OciManifestAndConfig $image" ]
}

@test "refusals and failed lookups name the volume" {
  pod_request "$(containers "$REGISTRY/single/amd64-docker:1.0" | with_volumes "plugins=$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: no linux node architecture runs every image of this Pod: \"$REGISTRY/single/amd64-docker:1.0\" runs on amd64; volume \"plugins\" image \"$REGISTRY/single/arm64-oci:1.0\" runs on arm64. Use images built for a common architecture" ]
  missing="$REGISTRY/nope/missing:1.0"
  unknown="Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: manifest unknown]"
  pod_request "$(containers "$REGISTRY/single/arm64-oci:1.0" | with_volumes "cache=$missing")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(warnings)" = "$(jq -nc --arg w "$(lookup_warning "image-arch-affinity: volume \"cache\" image \"$missing\" $IGNORED_LOOKUP: " "$unknown")" '[$w]')" ]
  evaluate '{"onLookupFailure":"reject"}'
  [ "$(message)" = "$REJECTED_LOOKUP: volume \"cache\" image \"$missing\": $unknown (setting onLookupFailure: reject)" ]
}

@test "a Deployment whose template's image volume shares no architecture with its containers is refused at apply time" {
  workload_request Deployment CREATE "$(containers "$REGISTRY/single/amd64-docker:1.0" | with_volumes "plugins=$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: no linux node architecture runs every image of this Pod template: \"$REGISTRY/single/amd64-docker:1.0\" runs on amd64; volume \"plugins\" image \"$REGISTRY/single/arm64-oci:1.0\" runs on arm64. Use images built for a common architecture" ]
  # Under mutate, the template is pinned.
  workload_request Deployment CREATE "$(containers "$REGISTRY/multi/oci-index:1.0" | with_volumes "plugins=$REGISTRY/single/arm64-oci:1.0")"
  evaluate '{"workloadTemplates":"mutate"}'
  [ "$(patch)" = "$(template_patch /spec/template arm64)" ]
}

@test "the bounds on host calls count image volumes: 400 volumes of two references, two lookups; the lookup budget stops before a volume" {
  pod_request "$(jq -nc --arg a "$REGISTRY/multi/oci-index:1.0" --arg b "$REGISTRY/single/arm64-oci:1.0" \
    '{containers: [{name: "c", image: $a}], volumes: [range(400) as $i | {name: "v\($i)", image: {reference: (if $i % 2 == 0 then $a else $b end)}}]}')"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(host_calls "$CALLS")" = "2 1" ]
  # A container image on a registry slower than the budget: the volume after it is not looked up,
  # and its warning names it.
  slow="$FAULTS/faults/slow-1500/multi/oci-index:1.0"
  pod_request "$(containers "$slow" | with_volumes "tools=$REGISTRY/single/arm64-oci:1.0")"
  rm -f "$CALLS"
  run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" \
    --record-host-capabilities-interactions "$CALLS" --settings-json '{"lookupBudgetMilliseconds":1000}' "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warning_count)" = 1 ]
  [[ "$(warning)" == "image-arch-affinity: volume \"tools\" image \"$REGISTRY/single/arm64-oci:1.0\" $IGNORED_LOOKUP: not looked up: the lookup time budget (lookupBudgetMilliseconds: 1000) was spent after "* ]]
  [ "$(calls)" = "OciManifest $slow" ]
}
