#!/usr/bin/env bats
# End-to-end: the compiled module run by a Kubewarden host (e2e/host.bash: the embedded host by
# default, kwctl >= 1.35 with E2E_HOST=kwctl) against a real OCI registry (e2e/registry.bash)
# seeded with the fixture images. Host calls are counted from the host's
# --record-host-capabilities-interactions file.
#   make e2e-tests                      # every e2e suite, on each host installed
#   bats e2e.bats                       # this one (needs `make policy.wasm host`)

bats_require_minimum_version 1.5.0
load e2e/requests
load e2e/host

setup_file() {
  cd "$BATS_TEST_DIRNAME"
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
  CALLS="$BATS_TEST_TMPDIR/calls.yml"
}

# evaluate [FLAG...]: the host's `run` on $REQUEST; RESPONSE is its stdout line, $CALLS the host
# calls.
evaluate() {
  rm -f "$CALLS"
  run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES" \
    --record-host-capabilities-interactions "$CALLS" "$@" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

@test "kwctl annotate is silent: the declared hostCapabilities are the ones the module uses" {
  needs_kwctl annotate
  run --separate-stderr "$KWCTL" annotate -m metadata.yml -u README.md \
    -o "$BATS_TEST_TMPDIR/annotated.wasm" policy.wasm
  [ "$status" -eq 0 ]
  [ "$stderr" = "" ]
  [ "$output" = "" ]
  # The check can fail: metadata that declares one operation too few gets a warning.
  grep -v 'oci/v1/oci_manifest_config' metadata.yml >"$BATS_TEST_TMPDIR/metadata.yml"
  run --separate-stderr "$KWCTL" annotate -m "$BATS_TEST_TMPDIR/metadata.yml" -u README.md \
    -o "$BATS_TEST_TMPDIR/annotated2.wasm" policy.wasm
  [[ "$stderr" == *"oci/v1/oci_manifest_config"* ]]
}

@test "the annotated module carries the metadata's hostCapabilities" {
  needs_kwctl inspect
  run "$KWCTL" inspect --output yaml annotated-policy.wasm
  [ "$status" -eq 0 ]
  [[ "$output" == *"hostCapabilities:"*"- oci/v1/oci_manifest"*"- oci/v1/oci_manifest_config"* ]]
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
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(no_common_warning \
    "image-arch-affinity: no linux node architecture runs every image of this Pod: " \
    "\"$REGISTRY/multi/s390x-only:1.0\" runs on s390x; \"$REGISTRY/single/arm64-oci:1.0\" runs on arm64" \
    ". Use images built for a common architecture")" ]
}

@test "lookup failures under each onLookupFailure" {
  pod_request "$(containers "$REGISTRY/nope/missing:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  unknown="Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: manifest unknown]"
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(ignored_warning "$REGISTRY/nope/missing:1.0" "$unknown")" ]

  evaluate --settings-json '{"onLookupFailure":"accept"}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(unpinned_warning "$REGISTRY/nope/missing:1.0" "$unknown")" ]

  pod_request "$(containers "$REGISTRY/multi/oci-index:nope" "$REGISTRY/multi/oci-index:1.0")"
  evaluate --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$REGISTRY/multi/oci-index:nope" "$unknown")" ]
}

@test "index of attestations only, or of no entries: a lookup failure that says why" {
  pod_request "$(containers "$REGISTRY/multi/attestations-only:1.0" "$REGISTRY/multi/empty-index:1.0")"
  evaluate --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup \
    "$REGISTRY/multi/attestations-only:1.0" \
    "the image index has no runnable entry (its 2 entries are attestations or of unknown platform)" \
    "$REGISTRY/multi/empty-index:1.0" "the image index has no entries")" ]
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

@test "settings are validated when the policy loads: exit code 1, the policy's message" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  # refused SETTINGS MESSAGE: the host exits 1 and its error's first line is kwctl's, with the
  # policy's MESSAGE.
  refused() {
    run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES" \
      --settings-json "$1" "$POLICY"
    [ "$status" -eq 1 ]
    [ "$output" = "" ]
    [ "$(echo "$stderr" | grep '^Error: ')" = "Error: Provided settings are not valid: $2" ]
  }
  refused '{"preferredArchitectureWeight":0}' \
    "preferredArchitectureWeight: 0 is outside 1..100 (the weight of a preferred node affinity term)"
  refused '{"schedulableArchitectures":["x86_64"]}' \
    'schedulableArchitectures: unknown architecture "x86_64"; use a node `kubernetes.io/arch` value: 386, amd64, arm, arm64, loong64, mips, mips64, mips64le, mipsle, ppc64, ppc64le, riscv64, s390x, wasm'
  refused '{"preferredArchitectures":[{"architecture":"arm64","weight":80},{"architecture":"arm64","weight":10}]}' \
    'preferredArchitectures: "arm64" is listed twice'
  refused '{"onLookupFailure":"accept","fallbackArchitectures":["amd64"]}' \
    'fallbackArchitectures applies under onLookupFailure: ignoreImage only (with accept a Pod whose lookups fail is left unpinned, with reject it is rejected)'
  refused '{"clusterOperatingSystems":["linux","Linux"]}' \
    'clusterOperatingSystems: "Linux" is no node operating system; use a node `kubernetes.io/os` value: linux, windows'
  refused '{"readNodes":true,"clusterOperatingSystems":["linux","windows"]}' \
    "clusterOperatingSystems and readNodes: true exclude each other: readNodes reads the operating systems from the cluster's Nodes (and autoscaledArchitectures)"
  refused '{"onLookupFailur":"accept"}' \
    'invalid settings: unknown field `onLookupFailur`, expected one of `defaultOperatingSystem`, `schedulableArchitectures`, `clusterOperatingSystems`, `onNoCommonArchitecture`, `onLookupFailure`, `registryMirrors`, `imagePlatforms`, `preferredArchitecture`, `preferredArchitectureWeight`, `preferredArchitectures`, `fallbackArchitectures`, `architectureTolerations`, `matchNodeLabels`, `workloadTemplates`, `daemonSetTemplates`, `lookupBudgetMilliseconds`, `readNodes`, `autoscaledArchitectures`, `pinWindowsBuild`, `wasmRuntimeClasses`, `templateDecisionSeconds` at line 1 column 17'
}

@test "index entries without an os field: the host cannot parse the index, a lookup failure" {
  # kwctl's registry client (oci-client) rejects the whole index before the policy sees it.
  image="$REGISTRY/multi/no-os:1.0"
  pod_request "$(containers "$image" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(warning_count)" = 1 ]
  cause="Fail to interact with OCI registry: Failed to parse manifest as Versioned object: data did not match any variant of untagged enum OciManifest"
  [ "$(warning)" = "$(ignored_warning "$image" "$cause")" ]
  [ "$(host_calls "$CALLS")" = "2 1" ]
  grep -qF "message: 'Fail to interact with OCI registry: Failed to parse manifest as Versioned object: data did not match any variant of untagged enum OciManifest'" "$CALLS"
  evaluate --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$image" "$cause")" ]
}

@test "index entries with an empty os string: they count for every OS" {
  pod_request "$(containers "$REGISTRY/multi/empty-os:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warnings)" = null ]
  pod_request "$(containers "$REGISTRY/multi/empty-os:1.0" | jq -c '. + {os: {name: "windows"}}')"
  evaluate
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
}

@test "host calls: one lookup per distinct image, none for skipped Pods" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate
  [ "$(patch)" = "$(pin_patch arm64)" ]
  # v1/oci_manifest for each image, v1/oci_manifest_config for the single-platform one.
  [ "$(host_calls "$CALLS")" = "2 1" ]
  [ "$(manifest_images "$CALLS")" = "[\"$REGISTRY/multi/oci-index:1.0\",\"$REGISTRY/single/arm64-oci:1.0\"]" ]
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeName: "node-1"}')"
  evaluate
  [ "$(host_calls "$CALLS")" = "0 0" ]
}

@test "host-capability grants: a lookup the host was not granted is a lookup failure naming the capability" {
  # kwctl grants --allowed-host-capabilities (default *); policy-server the policy's grants.
  # (The flag takes several values: in its = form it cannot swallow the module's path.)
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  evaluate --allowed-host-capabilities='oci/*'
  [ "$(patch)" = "$(pin_patch arm64)" ]
  [ "$(warnings)" = null ]
  evaluate --allowed-host-capabilities=oci/v1/oci_manifest
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warning)" = "image-arch-affinity: image \"$REGISTRY/single/arm64-oci:1.0\" was left out of the architecture decision because its lookup failed: Policy has not been granted access to the 'oci/v1/oci_manifest_config' host capability. The violation has been reported." ]
  evaluate --allowed-host-capabilities='net/*' --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [[ "$(message)" == "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"$REGISTRY/multi/oci-index:1.0\": Policy has not been granted access to the 'oci/v1/oci_manifest' host capability. The violation has been reported.; "* ]]
}

@test "preferredArchitectures: weighted preferred terms for the architectures the Pod may run on" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  evaluate --settings-json '{"preferredArchitectures":[{"architecture":"arm64","weight":80},{"architecture":"s390x","weight":30},{"architecture":"amd64","weight":20}]}'
  [ "$(patch | jq -cS .)" = "$(pin_patch amd64 arm64 | jq -cS '.[1].value.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution = [
    {weight: 80, preference: {matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["arm64"]}]}},
    {weight: 20, preference: {matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["amd64"]}]}}]')" ]
  [ "$(warnings)" = null ]
}

@test "fallbackArchitectures: a Pod none of whose images could be looked up is pinned to them, with a warning" {
  pod_request "$(containers "$REGISTRY/nope/missing:1.0")"
  evaluate --settings-json '{"fallbackArchitectures":["amd64"]}'
  [ "$(patch)" = "$(pin_patch amd64)" ]
  unknown="Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: manifest unknown]"
  [ "$(warnings)" = "$(jq -nc --arg a "$(ignored_warning "$REGISTRY/nope/missing:1.0" "$unknown")" \
    --arg b "image-arch-affinity: no image of the Pod could be looked up (\"$REGISTRY/nope/missing:1.0\"): it is pinned as if they ran on amd64 (setting fallbackArchitectures)" '[$a, $b]')" ]
  # Unset: left unpinned.
  evaluate
  [ "$(patch)" = none ]
  [ "$(warning_count)" = 1 ]
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
  spec=$(containers "$REGISTRY/multi/s390x-only:1.0" "$REGISTRY/single/arm64-oci:1.0")
  workload_request Deployment UPDATE "$spec" "$spec"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(host_calls "$CALLS")" = "0 0" ]
  workload_request Deployment UPDATE "$spec" "$(containers "$REGISTRY/multi/s390x-only:1.0")"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(host_calls "$CALLS")" = "2 1" ]
}

@test "after admission: a Pod UPDATE looks up only new images; kubectl debug is judged where the Pod may be" {
  # The Pod as the policy pinned it at CREATE, bound to a Node whose platform is not read.
  pinned=$(containers "$REGISTRY/single/arm64-oci:1.0" | jq -c '. + {nodeName: "node-1", affinity: {nodeAffinity:
    {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions:
    [{key: "kubernetes.io/arch", operator: "In", values: ["arm64"]}]}]}}}}')
  settings='{"schedulableArchitectures":["amd64","arm64"]}'
  # No new image (a label, a finalizer): no lookup.
  pod_update_request "" "$pinned" "$pinned"
  evaluate --settings-json "$settings"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(host_calls "$CALLS")" = "0 0" ]
  debug() { echo "$pinned" | jq -c --arg i "$1" '. + {ephemeralContainers: [{name: "debugger", image: $i}]}'; }
  pod_update_request ephemeralcontainers "$pinned" "$(debug "$REGISTRY/multi/oci-index:1.0")"
  evaluate --settings-json "$settings"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(manifest_images "$CALLS")" = "[\"$REGISTRY/multi/oci-index:1.0\"]" ]
  pod_update_request ephemeralcontainers "$pinned" "$(debug "$REGISTRY/single/amd64-docker:1.0")"
  evaluate --settings-json "$settings"
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod is bound to node \"node-1\", which may be one of the linux nodes of arm64 its constraints admit (setting schedulableArchitectures: amd64, arm64; setting readNodes reads the Node), where its new images have no build: image \"$REGISTRY/single/amd64-docker:1.0\" of ephemeral container \"debugger\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it" ]
  [ "$(host_calls "$CALLS")" = "1 1" ]
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

# ---- the README's commands and examples ----

readme_block() { doc_block README.md "$1"; }

@test "make run (the README's first command): the example Pod on this host, response and decoded patch" {
  # The command lines the README shows are the ones scripts/run-example.sh runs and prints.
  readme_cmd=$(readme_block '`make run` builds `policy.wasm`' | grep "^$(basename "$HOST_BIN") run ")
  case "$E2E_HOST" in
    kwctl) [ "$readme_cmd" = "kwctl run --request-path request.json --sources-path sources.yml annotated-policy.wasm" ] ;;
    embedded) [ "$readme_cmd" = "embedded-host run --request-path request.json --sources-path sources.yml policy.wasm" ] ;;
  esac
  run make -s run RUN_HOST="$E2E_HOST" KWCTL="$KWCTL"
  [ "$status" -eq 0 ]
  [[ "$output" == *"\$ $readme_cmd"* ]]
  [[ "$output" == *'"allowed": true'* ]]
  # The decoded patch, one operation per line: the Pod pinned to arm64 (its init container is arm64 only).
  patch=$(echo "$output" | sed -n '/^Patch:$/,$p' | tail -n +2 | jq -cs .)
  [ "$patch" = "$(pin_patch arm64)" ]
}

@test "the README's examples (and design.md's): each command run on this host prints the lines shown" {
  # Each ```console block under "## Examples" of README.md, then of docs/design.md: `$ make run
  # ...`, then lines its output must hold (the local registry's address read as REGISTRY; JSON
  # lines compared as JSON).
  awk '/^## / {f = ($0 == "## Examples")} f && /^```console$/ {b = 1; n++; next} b && /^```$/ {b = 0; next} b {print n "\t" $0}' \
    README.md docs/design.md >"$BATS_TEST_TMPDIR/examples"
  [ "$(cut -f 1 "$BATS_TEST_TMPDIR/examples" | sort -u | wc -l)" -eq 3 ]
  for n in 1 2 3; do
    cmd=$(awk -F '\t' -v n=$n '$1 == n {print $2; exit}' "$BATS_TEST_TMPDIR/examples")
    [[ "$cmd" == '$ make run'* ]]
    eval "set -- ${cmd#\$ make }"
    run make -s "$@" RUN_HOST="$E2E_HOST" KWCTL="$KWCTL"
    [ "$status" -eq 0 ]
    out=$(echo "$output" | sed -E 's|127\.0\.0\.1:[0-9]+|REGISTRY|g')
    while IFS= read -r line; do
      if [[ "$line" == '{'* ]]; then
        want=$(echo "$line" | jq -cS .)
        echo "$out" | grep '^{"' | jq -cS . | grep -qxF "$want" || { echo "example $n: no JSON line $line"; false; }
      else
        echo "$out" | grep -qxF -- "$line" || { echo "example $n: no line $line"; false; }
      fi
    done < <(awk -F '\t' -v n=$n '$1 == n {print $2}' "$BATS_TEST_TMPDIR/examples" | tail -n +2)
  done
}

@test "the README's ClusterAdmissionPolicy runs on the host (module replaced by the local build)" {
  readme_block '^## Install with Kubewarden' >"$BATS_TEST_TMPDIR/policy.yaml"
  grep -q '^kind: ClusterAdmissionPolicy$' "$BATS_TEST_TMPDIR/policy.yaml"
  sed -i "s|^  module: registry://.*|  module: file://$PWD/$POLICY|" "$BATS_TEST_TMPDIR/policy.yaml"
  sed "s|REGISTRY|$REGISTRY|g" test_data/pod-multi-arch.json >"$REQUEST"
  run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES" "$BATS_TEST_TMPDIR/policy.yaml"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
}

@test "the README's full settings example is valid and applies" {
  readme_block '^A full example' >"$BATS_TEST_TMPDIR/settings.yaml"
  grep -q '^schedulableArchitectures: \[amd64, arm64\]$' "$BATS_TEST_TMPDIR/settings.yaml"
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  evaluate --settings-path "$BATS_TEST_TMPDIR/settings.yaml"
  [ "$(allowed)" = true ]
  # amd64 and arm64 are every schedulable architecture: no pin, but arm64 preferred and tolerated.
  [ "$(patch | jq -cS .)" = "$(jq -ncS '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
    {op: "add", path: "/spec/affinity", value: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [
      {weight: 50, preference: {matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["arm64"]}]}}]}}},
    {op: "add", path: "/spec/tolerations", value: [{key: "kubernetes.io/arch", operator: "Equal", value: "arm64", effect: "NoSchedule"}]}]')" ]
}
