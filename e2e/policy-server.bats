#!/usr/bin/env bats
# End-to-end in Kubewarden's policy-server (1.35): the annotated module loaded from a policies.yml
# as a PolicyServer loads it in a cluster, AdmissionReviews POSTed to /validate/<policy> the way
# the API server sends them, lookups in a real local registry seeded with the fixture images.
# One server for the file (setup_file), stopped by its process id (teardown_file).

load requests

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  # The host's backtraces on, as when debugging policy-server: the warnings quoting host errors
  # below are exact and stay one line all the same.
  export RUST_BACKTRACE=1
  export POLICY="${POLICY:-annotated-policy.wasm}"
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
  local module="file://$PWD/$POLICY"
  # One entry per situation; the same module in each.
  cat >"$BATS_FILE_TMPDIR/policies.yml" <<YAML
# As a ClusterAdmissionPolicy with mutating: true gets it from the controller.
image-arch-affinity:
  module: $module
  allowedToMutate: true
  hostCapabilities: ["oci/*"]
  settings: {}
mutate-workloads:
  module: $module
  allowedToMutate: true
  hostCapabilities: ["oci/*"]
  settings:
    workloadTemplates: mutate
# No host-capability grant: every lookup is refused by the host.
without-grant:
  module: $module
  allowedToMutate: true
  settings: {}
without-grant-reject:
  module: $module
  allowedToMutate: true
  settings:
    onLookupFailure: reject
# Granted, but not allowed to mutate (a ClusterAdmissionPolicy with mutating: false).
not-mutating:
  module: $module
  hostCapabilities: ["oci/*"]
  settings: {}
YAML
  # The README's ClusterAdmissionPolicy as the controller hands it to policy-server: module,
  # mutating, timeoutEvalSeconds and settings; its selectors have no place in this file (the
  # controller writes them into the webhook configuration, for the API server).
  doc_block README.md '^## Install with Kubewarden' >"$BATS_FILE_TMPDIR/readme-policy.yaml"
  {
    echo "readme:"
    echo "  module: $module"
    echo "  allowedToMutate: $(sed -n 's/^  mutating: \([a-z]*\).*/\1/p' "$BATS_FILE_TMPDIR/readme-policy.yaml")"
    echo '  hostCapabilities: ["*"]'
    sed -n 's/^  \(timeoutEvalSeconds: [0-9]*\).*/  \1/p' "$BATS_FILE_TMPDIR/readme-policy.yaml"
    sed -n '/^  settings:$/,$p' "$BATS_FILE_TMPDIR/readme-policy.yaml"
  } >>"$BATS_FILE_TMPDIR/policies.yml"
  source e2e/policy-server.bash
  policy_server_start "$BATS_FILE_TMPDIR/policies.yml"
}

teardown_file() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/policy-server.bash
  policy_server_stop
  source e2e/registry.bash
  registry_stop
}

setup() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/policy-server.bash
  REQUEST="$BATS_TEST_TMPDIR/request.json"
}

# validate POLICY_ID: the server's answer to $REQUEST in $RESPONSE.
validate() {
  RESPONSE="$(policy_server_validate "$1" "$REQUEST")"
  echo "response: $RESPONSE"
}

# ---- Expected messages: what the current policy answers (its decision, not the host's). ----
no_common_arch_message() { # WHAT ("Pod" or "Pod template") IMAGE ARCHES IMAGE ARCHES
  echo "image-arch-affinity: no linux node architecture runs every image of this $1: \"$2\" $3; \"$4\" $5. Use images built for a common architecture"
}
lookup_left_out_warning() { # IMAGE REASON
  echo "image-arch-affinity: image \"$1\" was left out of the architecture decision because its lookup failed: $2"
}
lookup_failed_message() { # IMAGE REASON (onLookupFailure: reject)
  echo "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"$1\": $2 (setting onLookupFailure: reject)"
}
# ---- What policy-server 1.35 itself says. ----
NOT_GRANTED="Policy has not been granted access to the 'oci/v1/oci_manifest' host capability. The violation has been reported."
NOT_ALLOWED_TO_MUTATE="Request rejected by policy not-mutating. The policy attempted to mutate the request, but it is currently configured to not allow mutations."

@test "every policy loads, granted or not (readiness answered)" {
  [ -n "$POLICY_SERVER_URL" ]
  kill -0 "$POLICY_SERVER_PID"
}

@test "multi-arch Pod: pinned to the architectures its images share (exact patch)" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/docker-list:1.0")"
  validate image-arch-affinity
  [ "$(allowed)" = true ]
  [ "$(echo "$RESPONSE" | jq -r .patchType)" = JSONPatch ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  # A Pod the policy skips (already bound to a node): accepted, no patch.
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeName: "node-1"}')"
  validate image-arch-affinity
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
}

@test "Windows-only image on a linux Pod: rejected with the message naming each image" {
  pod_request "$(containers "$REGISTRY/multi/windows-only:1.0" "$REGISTRY/multi/oci-index:1.0")"
  validate image-arch-affinity
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(no_common_arch_message Pod "$REGISTRY/multi/windows-only:1.0" "has no linux build (only windows/amd64)" "$REGISTRY/multi/oci-index:1.0" "runs on amd64, arm64")" ]
}

@test "Deployment: rejected when its images share no architecture, pinned with workloadTemplates: mutate" {
  workload_request Deployment CREATE "$(containers "$REGISTRY/multi/s390x-only:1.0" "$REGISTRY/single/arm64-oci:1.0")"
  validate image-arch-affinity
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(no_common_arch_message "Pod template" "$REGISTRY/multi/s390x-only:1.0" "runs on s390x" "$REGISTRY/single/arm64-oci:1.0" "runs on arm64")" ]
  workload_request Deployment CREATE "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/docker-list:1.0")"
  validate image-arch-affinity
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  validate mutate-workloads
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(template_patch /spec/template amd64 arm64)" ]
}

@test "without the hostCapabilities grant: the policy loads, every lookup is refused" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  # Default onLookupFailure (ignoreImage): accepted unchanged, the warning carries the refusal.
  validate without-grant
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warnings)" = "$(jq -nc --arg w "$(lookup_left_out_warning "$REGISTRY/multi/oci-index:1.0" "$NOT_GRANTED")" '[$w]')" ]
  # onLookupFailure: reject: rejected, the message carries the refusal.
  validate without-grant-reject
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(lookup_failed_message "$REGISTRY/multi/oci-index:1.0" "$NOT_GRANTED")" ]
  # The server logs each refused call.
  sed 's/\x1b\[[0-9;]*m//g' "$POLICY_SERVER_LOG" | grep -qF \
    "ERROR policy_evaluator::runtimes::callback: Policy tried to use a host capability it doesn't have access to policy=\"without-grant\" capability=\"oci/v1/oci_manifest\" allowed_capabilities=[]"
}

@test "not allowed to mutate: policy-server turns the pinning into a rejection" {
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  validate not-mutating
  [ "$(allowed)" = false ]
  [ "$(message)" = "$NOT_ALLOWED_TO_MUTATE" ]
}

@test "the README's policy in policy-server: its settings apply; the skip label is the API server's business" {
  grep -qxF '  allowedToMutate: true' "$BATS_FILE_TMPDIR/policies.yml"
  grep -qxF '  timeoutEvalSeconds: 10' "$BATS_FILE_TMPDIR/policies.yml"
  # The opt-out the README documents: an objectSelector and a namespaceSelector on the label.
  grep -qxF '  objectSelector:         # opt-out: Pods and workloads labelled image-arch-affinity.kubewarden.io/skip=true' \
    "$BATS_FILE_TMPDIR/readme-policy.yaml"
  [ "$(grep -cxF '      - {key: image-arch-affinity.kubewarden.io/skip, operator: NotIn, values: ["true"]}' \
    "$BATS_FILE_TMPDIR/readme-policy.yaml")" -eq 2 ]
  # The README's settings (schedulableArchitectures: [amd64, arm64]): an amd64 and arm64 Pod is
  # left unpinned, an arm64-only one pinned.
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0")"
  validate readme
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  pod_request "$(containers "$REGISTRY/single/arm64-oci:1.0" "$REGISTRY/multi/oci-index:1.0")"
  validate readme
  [ "$(patch)" = "$(pin_patch arm64)" ]
  # A Pod carrying the skip label that reaches policy-server is evaluated like any other:
  # policy-server has no selector of its own; the API server never sends it the exempt ones.
  pod_request "$(containers "$REGISTRY/single/arm64-oci:1.0" "$REGISTRY/multi/oci-index:1.0")" \
    '{"labels": {"image-arch-affinity.kubewarden.io/skip": "true"}}'
  validate readme
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
}
