#!/usr/bin/env bats
# End-to-end: the compiled policy.wasm, run by a kwctl-compatible host (KWCTL: the test host by
# default, or kwctl itself), against a real OCI registry seeded with fixture images.
#   make e2e-tests                 # through target/host/test-host
#   make e2e-tests KWCTL=kwctl     # through kwctl

load e2e/requests

setup_file() {
  cd "$BATS_TEST_DIRNAME"
  export KWCTL="${KWCTL:-.tools/bin/kwctl}"
  export POLICY="${POLICY:-policy.wasm}"
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
}

teardown_file() {
  cd "$BATS_TEST_DIRNAME"
  source e2e/registry.bash
  registry_stop
}

setup() {
  cd "$BATS_TEST_DIRNAME"
  REQUEST="$BATS_TEST_TMPDIR/request.json"
}

evaluate() {
  run "$KWCTL" run --request-path "$REQUEST" --sources-path "$SOURCES" "$@" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

@test "the module stays under its size budget (1 MiB)" {
  size=$(stat -c %s "$POLICY")
  echo "# $POLICY: $size bytes" >&3
  [ "$size" -lt 1048576 ]
}

@test "OCI index with attestation entries: pinned to amd64 and arm64" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
}

@test "Docker manifest list and OCI index: pinned to the common architectures" {
  pod_request "$(containers "$REGISTRY/multi/docker-list:1.0" "$REGISTRY/multi/oci-index:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  pod_request "$(containers "$REGISTRY/multi/docker-list:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64 arm arm64 ppc64le s390x)" ]
}

@test "single-platform OCI manifest (arm64) and Docker schema 2 manifest (amd64): platform from the config" {
  pod_request "$(containers "$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  pod_request "$(containers "$REGISTRY/single/amd64-docker:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64)" ]
}

@test "arm/v7-only image: pinned to arm" {
  pod_request "$(containers "$REGISTRY/single/armv7:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm)" ]
}

@test "references by digest and by tag@digest" {
  pod_request "$(containers "$REGISTRY/multi/oci-index@$MULTI_OCI_INDEX_DIGEST" \
    "$REGISTRY/single/arm64-oci:1.0@$SINGLE_ARM64_OCI_DIGEST")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
}

@test "Windows-only image on a linux Pod: rejected, naming each image" {
  pod_request "$(containers "$REGISTRY/multi/windows-only:1.0" "$REGISTRY/multi/oci-index:1.0")"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: no linux node architecture runs every image of this Pod: \"$REGISTRY/multi/windows-only:1.0\" has no linux build (only windows/amd64); \"$REGISTRY/multi/oci-index:1.0\" runs on amd64, arm64. Use images built for a common architecture" ]
}

@test "Windows Pod counts the windows entries" {
  pod_request "$(containers "$REGISTRY/multi/windows-linux:1.0" | jq -c '. + {os: {name: "windows"}}')"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64)" ]
}

@test "images sharing no architecture: rejected, or accepted with a warning" {
  pod_request "$(containers "$REGISTRY/multi/s390x-only:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: no linux node architecture runs every image of this Pod: \"$REGISTRY/multi/s390x-only:1.0\" runs on s390x; \"$REGISTRY/single/arm64-oci:1.0\" runs on arm64. Use images built for a common architecture" ]
  evaluate --settings-json '{"onNoCommonArchitecture":"accept"}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [[ "$(warnings)" == *"accepted without an architecture constraint"* ]]
}

@test "lookup failures under each onLookupFailure" {
  pod_request "$(containers "$REGISTRY/nope/missing:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [[ "$(warnings)" == *"image \\\"$REGISTRY/nope/missing:1.0\\\" was left out of the architecture decision because its lookup failed: "* ]]

  evaluate --settings-json '{"onLookupFailure":"accept"}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [[ "$(warnings)" == *"not pinned to an architecture because a lookup failed"*"nope/missing:1.0"* ]]

  pod_request "$(containers "$REGISTRY/multi/oci-index:nope" "$REGISTRY/multi/oci-index:1.0")"
  evaluate --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [[ "$(message)" == "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"$REGISTRY/multi/oci-index:nope\": "*"(setting onLookupFailure: reject)" ]]
}

@test "index of attestations only, or of no entries: a lookup failure that says why" {
  pod_request "$(containers "$REGISTRY/multi/attestations-only:1.0" "$REGISTRY/multi/empty-index:1.0")"
  evaluate --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [[ "$(message)" == *"multi/attestations-only:1.0\": the image index has no runnable entry (its 2 entries are attestations or of unknown platform)"* ]]
  [[ "$(message)" == *"multi/empty-index:1.0\": the image index has no entries"* ]]
}

@test "skipped Pods: no patch" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeName: "node-1"}')"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")" \
    '{"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"ds","uid":"1","controller":true}]}'
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
}

@test "nodeSelector: accepted unchanged when it fits, rejected naming the conflict otherwise" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeSelector: {"kubernetes.io/arch": "arm64"}}')"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeSelector: {"kubernetes.io/arch": "s390x"}}')"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=s390x asks for an architecture that its images do not run on; they all run on: amd64, arm64" ]
}

@test "every ORed required term gains the expression" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
    {matchExpressions: [{key: "zone", operator: "In", values: ["a"]}]},
    {matchExpressions: [{key: "pool", operator: "Exists"}]}]}}}}')"
  evaluate
  terms=/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms
  expected=$(jq -nc --arg t "$terms" '{key: "kubernetes.io/arch", operator: "In", values: ["amd64", "arm64"]} as $e | [
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
    {op: "add", path: "\($t)/0/matchExpressions/1", value: $e},
    {op: "add", path: "\($t)/1/matchExpressions/1", value: $e}]')
  [ "$(patch)" = "$expected" ]
}

@test "images covering every schedulable architecture: no patch" {
  pod_request "$(containers "$REGISTRY/multi/docker-list:1.0")"
  evaluate --settings-json '{"schedulableArchitectures":["amd64","arm64"]}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
}

@test "settings are validated when the policy loads" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  run "$KWCTL" run --request-path "$REQUEST" --sources-path "$SOURCES" \
    --settings-json '{"preferredArchitectureWeight":0}' "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *"preferredArchitectureWeight: 0 is outside 1..100"* ]]
  run "$KWCTL" run --request-path "$REQUEST" --sources-path "$SOURCES" \
    --settings-json '{"schedulableArchitectures":["x86_64"]}' "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *'schedulableArchitectures: unknown architecture \"x86_64\"'* || "$output" == *'schedulableArchitectures: unknown architecture "x86_64"'* ]]
  run "$KWCTL" run --request-path "$REQUEST" --sources-path "$SOURCES" \
    --settings-json '{"onLookupFailur":"accept"}' "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *'unknown field `onLookupFailur`'* ]]
}

@test "index entries without an os: they count for every OS (raw manifests), a lookup failure where the host re-parses" {
  pod_request "$(containers "$REGISTRY/multi/no-os:1.0")"
  if [[ "$(basename "$KWCTL")" == test-host ]]; then
    evaluate
    [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
    evaluate --reserialize-manifests
  else
    evaluate
  fi
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [[ "$(warnings)" == *"multi/no-os:1.0\\\" was left out of the architecture decision"* ]]
}

# host_calls: the host-call counts of the last evaluation, as "manifest config" (test host only).
host_calls() {
  jq -r '"\(.["v1/oci_manifest"]) \(.["v1/oci_manifest_config"])"' "$BATS_TEST_TMPDIR/calls.json"
}

need_test_host() {
  if [[ "$(basename "$KWCTL")" != test-host ]]; then skip "host-call counts need the test host"; fi
}

@test "host calls: one lookup per distinct image, none for skipped Pods (test host only)" {
  need_test_host
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate --host-calls-report "$BATS_TEST_TMPDIR/calls.json"
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(host_calls)" = "2 1" ]
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeName: "node-1"}')"
  evaluate --host-calls-report "$BATS_TEST_TMPDIR/calls.json"
  [ "$(host_calls)" = "0 0" ]
}

# ---- workloads ----

@test "workloads of every kind: rejected at apply time when their images share no architecture" {
  spec=$(containers "$REGISTRY/multi/s390x-only:1.0" "$REGISTRY/single/arm64-oci:1.0")
  for kind in Deployment ReplicaSet StatefulSet DaemonSet Job CronJob ReplicationController; do
    workload_request "$kind" CREATE "$spec"
    evaluate
    [ "$(allowed)" = false ]
    [ "$(message)" = "image-arch-affinity: no linux node architecture runs every image of this Pod template: \"$REGISTRY/multi/s390x-only:1.0\" runs on s390x; \"$REGISTRY/single/arm64-oci:1.0\" runs on arm64. Use images built for a common architecture" ]
  done
}

@test "workloads: validate accepts unchanged, mutate pins the template of every kind" {
  spec=$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/docker-list:1.0")
  for kind in Deployment ReplicaSet StatefulSet Job CronJob ReplicationController; do
    workload_request "$kind" CREATE "$spec"
    evaluate
    [ "$(allowed)" = true ]
    [ "$(patch)" = none ]
    evaluate --settings-json '{"workloadTemplates":"mutate"}'
    at=/spec/template
    [ "$kind" = CronJob ] && at=/spec/jobTemplate/spec/template
    [ "$(patch)" = "$(template_patch "$at" amd64 arm64)" ]
  done
}

@test "workload UPDATE: no lookup without image changes, checked with them" {
  need_test_host
  spec=$(containers "$REGISTRY/multi/s390x-only:1.0" "$REGISTRY/single/arm64-oci:1.0")
  workload_request Deployment UPDATE "$spec" "$spec"
  evaluate --host-calls-report "$BATS_TEST_TMPDIR/calls.json"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(host_calls)" = "0 0" ]
  workload_request Deployment UPDATE "$spec" "$(containers "$REGISTRY/multi/s390x-only:1.0")"
  evaluate --host-calls-report "$BATS_TEST_TMPDIR/calls.json"
  [ "$(allowed)" = false ]
  [ "$(host_calls)" = "2 1" ]
}

@test "DaemonSets: a warning naming the failing architectures, or a pinned template" {
  spec=$(containers "$REGISTRY/single/amd64-docker:1.0")
  workload_request DaemonSet CREATE "$spec"
  evaluate --settings-json '{"schedulableArchitectures":["amd64","arm64"]}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warnings)" = '["image-arch-affinity: this DaemonSet'"'"'s images run only on amd64: its Pods will fail on the arm64 nodes. Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"]' ]
  evaluate --settings-json '{"schedulableArchitectures":["amd64","arm64"],"daemonSetTemplates":"mutate"}'
  [ "$(patch)" = "$(template_patch /spec/template amd64)" ]
  [ "$(warnings)" = null ]
}
