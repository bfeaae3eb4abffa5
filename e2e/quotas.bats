#!/usr/bin/env bats
# Registry quotas end to end: the compiled module run by a Kubewarden host (e2e/host.bash: the
# embedded host, or kwctl >= 1.35 with E2E_HOST=kwctl) against a real registry (e2e/registry.bash)
# behind the fault registry, which counts the requests it proxies (e2e/faults.bash). A Pod made
# from a template the policy pinned with templateDecisionSeconds costs no host call; any
# difference is looked up. The rollout's registry requests are counted on the embedded host's
# `serve`, which keeps lookups 60 s as policy-server does.
#   bats e2e/quotas.bats
# Counts are printed as "# ..." lines.

bats_require_minimum_version 1.5.0
load requests
load host
load faults

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
  faults_start
  export SOURCES_ALL="$REGISTRY_DIR/sources-quotas.yml"
  printf 'insecure_sources: ["%s", "%s"]\n' "$REGISTRY" "$FAULTS" >"$SOURCES_ALL"
}

teardown_file() {
  cd "$BATS_TEST_DIRNAME/.."
  faults_stop
  source e2e/registry.bash
  registry_stop
}

setup() {
  cd "$BATS_TEST_DIRNAME/.."
  REQUEST="$BATS_TEST_TMPDIR/request.json"
  CALLS="$BATS_TEST_TMPDIR/calls.yml"
  # Three images of the fixture registry, through the fault registry: an OCI index, a Docker
  # list (one lookup each) and a single-platform image (its manifest, then its config).
  IMAGES=("$FAULTS/multi/oci-index:1.0" "$FAULTS/multi/docker-list:1.0" "$FAULTS/single/arm64-oci:1.0")
  KEEP='{"workloadTemplates":"mutate","templateDecisionSeconds":3600}'
}

# evaluate SETTINGS_JSON: the host's `run` on $REQUEST; RESPONSE is its stdout line, $CALLS the
# host calls.
evaluate() {
  rm -f "$CALLS"
  run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" \
    --record-host-capabilities-interactions "$CALLS" --settings-json "$1" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

# apply_patch PATCH: the object on stdin with the JSON patch applied (the `add`, `replace` and
# `remove` of objects' fields that a template's patch holds).
apply_patch() {
  jq -c --argjson p "$1" '
    def pointer: ltrimstr("/") | split("/") | map(gsub("~1"; "/") | gsub("~0"; "~"));
    reduce $p[] as $op (.; ($op.path | pointer) as $path
      | if $op.op == "remove" then delpaths([$path]) else setpath($path; $op.value) end)'
}

# pod_of DEPLOYMENT: the Pod CREATE request for a Pod the ReplicaSet controller makes from the
# Deployment's template, as the API server hands it to the webhook (DefaultTolerationSeconds'
# tolerations added).
pod_of() {
  jq -c '.spec.template as $t
    | {uid: "e2e", kind: {group: "", version: "v1", kind: "Pod"},
       resource: {group: "", version: "v1", resource: "pods"}, operation: "CREATE",
       name: "w-1", namespace: "default", userInfo: {username: "system:serviceaccount:kube-system:replicaset-controller"},
       object: {apiVersion: "v1", kind: "Pod",
         metadata: ($t.metadata + {name: "w-1", namespace: "default", ownerReferences: [
           {apiVersion: "apps/v1", kind: "ReplicaSet", name: "w-1", uid: "1", controller: true}]}),
         spec: ($t.spec + {tolerations: [
           {key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300},
           {key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300}]})}}' <<<"$1"
}

# pinned_deployment SETTINGS_JSON: the Deployment of $IMAGES as stored after the policy's patch.
pinned_deployment() {
  workload_request Deployment CREATE "$(containers "${IMAGES[@]}")"
  evaluate "$1"
  [ "$(allowed)" = true ]
  jq -c .object "$REQUEST" | apply_patch "$(patch)"
}

@test "a Pod made from a template pinned with templateDecisionSeconds costs no host call; a difference is looked up" {
  deployment=$(pinned_deployment "$KEEP")
  record=$(jq -r '.spec.template.metadata.annotations["image-arch-affinity.kubewarden.io/decision"]' <<<"$deployment")
  [[ "$record" =~ ^[0-9]+/[0-9a-f]{16}$ ]]
  [ "$(jq -r '.spec.template.metadata.annotations["image-arch-affinity.kubewarden.io/architectures"]' <<<"$deployment")" = arm64 ]

  pod_of "$deployment" >"$REQUEST"
  evaluate "$KEEP"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warning_count)" = 0 ]
  [ "$(host_calls "$CALLS")" = "0 0" ]
  echo "# a Pod of the pinned Deployment: 0 host calls" >&3

  # Each difference: decided as any Pod (manifest calls, manifest-and-config calls).
  local pod
  pod=$(pod_of "$deployment")
  check() {
    local what=$1 settings=$2 calls=$3 filter=$4
    jq -c "$filter" <<<"$pod" >"$REQUEST"
    evaluate "$settings"
    echo "# $what: $(host_calls "$CALLS") host calls" >&3
    [ "$(host_calls "$CALLS")" = "$calls" ]
  }
  check "an image swapped" "$KEEP" "2 1" ".object.spec.containers[1].image = \"${IMAGES[0]}\""
  check "a sidecar another webhook added" "$KEEP" "4 1" \
    ".object.spec.containers += [{name: \"proxy\", image: \"$REGISTRY/multi/oci-index:1.0\"}]"
  check "a nodeSelector merged in" "$KEEP" "3 1" '.object.spec.nodeSelector = {"disk": "ssd"}'
  check "other settings" '{"workloadTemplates":"mutate","templateDecisionSeconds":60}' "3 1" .
  check "a record older than templateDecisionSeconds" "$KEEP" "3 1" \
    '.object.metadata.annotations["image-arch-affinity.kubewarden.io/decision"] |= (split("/") | "\((.[0] | tonumber) - 3600)/\(.[1])")'
  check "no record (templateDecisionSeconds unset)" '{"workloadTemplates":"mutate"}' "3 1" \
    'del(.object.metadata.annotations["image-arch-affinity.kubewarden.io/decision"])'
}

# serve_start / serve_stop: the embedded host's `serve` (a policy-server's lifetime: lookups kept
# 60 s) writing on fd 8 what it reads on fd 7.
serve_start() {
  rm -f "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
  mkfifo "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
  "$HOST_BIN" serve --sources-path "$SOURCES_ALL" "$POLICY" <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" 2>/dev/null 3>&- &
  SERVE_PID=$!
  exec 7>"$BATS_TEST_TMPDIR/in" 8<"$BATS_TEST_TMPDIR/out"
}

serve_stop() {
  exec 7>&- 8<&-
  wait "$SERVE_PID"
}

# rollout_gets SETTINGS_JSON: the manifest GETs the registry saw for a 3-image Deployment of 50
# replicas created at once, then restarted (kubectl rollout restart) once the host's 60 s cache has
# expired (a new host process): "<at creation> <at the restart>". The host's answers are appended
# to $ANSWERS, one line each.
rollout_gets() {
  local settings=$1 line pods deployment restarted before middle
  gets() { jq -s '[.[] | select(.method == "GET" and (.path | contains("/manifests/")))] | length' "$FAULTS_LOG"; }
  line() { jq -c --argjson s "$settings" '{request: ., settings: $s}'; }
  before=$(gets)
  workload_request Deployment CREATE "$(containers "${IMAGES[@]}")"
  serve_start
  line <"$REQUEST" >&7
  read -r RESPONSE <&8
  echo "$RESPONSE" >>"$ANSWERS"
  deployment=$(jq -c .object "$REQUEST")
  [ "$(patch)" = none ] || deployment=$(apply_patch "$(patch)" <<<"$deployment")
  for _ in $(seq 1 50); do
    pod_of "$deployment" | line >&7
    read -r RESPONSE <&8
    echo "$RESPONSE" >>"$ANSWERS"
  done
  serve_stop
  middle=$(gets)
  restarted=$(jq -c '.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"] = "2026-12-02T00:10:00Z"' <<<"$deployment")
  serve_start
  jq -nc --argjson o "$restarted" --argjson old "$deployment" \
    '{uid: "e2e", kind: {group: "apps", version: "v1", kind: "Deployment"},
      resource: {group: "apps", version: "v1", resource: "deployments"}, operation: "UPDATE",
      name: "w", namespace: "default", userInfo: {username: "e2e"}, object: $o, oldObject: $old}' |
    line >&7
  read -r RESPONSE <&8
  echo "$RESPONSE" >>"$ANSWERS"
  for _ in $(seq 1 50); do
    pod_of "$restarted" | line >&7
    read -r RESPONSE <&8
    echo "$RESPONSE" >>"$ANSWERS"
  done
  serve_stop
  echo "$((middle - before)) $(($(gets) - middle))"
}

@test "a rollout's registry requests (3 images, 50 replicas, a restart after the host's cache expired), under each mode" {
  on_kwctl && skip "kwctl has no serve: one process per evaluation keeps no lookup"
  local validate mutate keep
  ANSWERS="$BATS_TEST_TMPDIR/answers.jsonl"
  validate=$(rollout_gets '{}')
  mutate=$(rollout_gets '{"workloadTemplates":"mutate"}')
  keep=$(rollout_gets "$KEEP")
  echo "# manifest GETs at creation / at the restart: validate $validate, mutate $mutate, mutate with templateDecisionSeconds $keep" >&3
  # 3 x 102 answers, every one an acceptance (the Pods pinned by the policy under validate).
  [ "$(jq -s '[.[] | select(.allowed == true)] | length' "$ANSWERS")" = 306 ]
  [ "$validate" = "4 4" ]
  [ "$mutate" = "4 4" ]
  [ "$keep" = "4 0" ]
}
