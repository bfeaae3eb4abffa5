#!/usr/bin/env bats
# Registry answers and Pod values are untrusted, end to end on a Kubewarden host
# (e2e/host.bash): index entries whose values no node reports are left out with a warning, a
# Pod constraint on such a value admits no node, no patch carries a value that is no label value,
# and with readNodes every Node label selector is one of the fixed set (the replay sessions
# compare each request with the recorded one: another selector would fail the replay).
#   bats e2e/untrusted.bats

bats_require_minimum_version 1.5.0
load requests
load nodes
load host

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
}

teardown_file() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/registry.bash
  registry_stop
}

setup() {
  cd "$BATS_TEST_DIRNAME/.."
  REQUEST="$BATS_TEST_TMPDIR/request.json"
  SESSION="$BATS_TEST_TMPDIR/session.yml"
}

# evaluate [FLAG...]: the host's `run` on $REQUEST against the local registry.
evaluate() {
  run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES" "$@" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

# replay SETTINGS: the host's `run` on $REQUEST, Nodes and images from $SESSION.
replay() {
  run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --settings-json "$1" \
    --allow-context-aware --replay-host-capabilities-interactions "$SESSION" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
  [[ "$stderr" != *"Replay error"* ]]
  [[ "$stderr" != *"recorded responses is empty"* ]]
  [[ "$stderr" != *"recorded exchanges have not been replayed"* ]]
}

# label_values: every value the response's patch gives a node label (expression values,
# toleration values), one per line.
label_values() {
  echo "$RESPONSE" | jq -r 'if .patch then (.patch | @base64d | fromjson) else [] end
    | [.. | objects | select(has("operator")) | (.values[]?, .value?)] | .[] | select(. != null)'
}

# The rule a node label value follows (Kubernetes' validation).
valid_label_values() {
  local value
  while IFS= read -r value; do
    [[ ${#value} -le 63 && "$value" =~ ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$ ]] || { echo "invalid: $value"; return 1; }
  done
}

@test "an index whose entries name architectures no node reports: those entries left out, with a warning" {
  pod_request "$(containers "$REGISTRY/multi/odd-values:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64)" ]
  [ "$(warning_count)" = 1 ]
  # Each value quoted and cut to 40 characters, the listing cut to fit 256.
  [ "$(warning)" = "$(left_out_warning "$REGISTRY/multi/odd-values:1.0" \
    'architecture "aaaaaaaaaaaaaaaaaaaaaaaaaa…aaaaaaaaaaaa", architecture "arm 64", architecture "s390x),pool in (zz", architecture "sparc64"')" ]
  label_values | valid_label_values
}

@test "a Windows entry whose os.version carries selector syntax: left out, the build of the other pinned" {
  pod_request "$(containers "$REGISTRY/multi/windows-odd-build:1.0" | jq -c '. + {os: {name: "windows"}}')"
  evaluate --settings-json '{"pinWindowsBuild":true}'
  [ "$(patch)" = "$(jq -nc '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64"}},
    {op: "add", path: "/spec/affinity", value: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
      {nodeSelectorTerms: [{matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["amd64"]},
        {key: "node.kubernetes.io/windows-build", operator: "In", values: ["10.0.20348"]}]}]}}}}]')" ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(left_out_warning "$REGISTRY/multi/windows-odd-build:1.0" 'os.version "10.0.17763),node.kubernete…-build in (1"')" ]
  label_values | valid_label_values
}

@test "a Pod whose nodeSelector or terms name values no node reports" {
  # An architecture no node reports: no node is admitted.
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeSelector: {"kubernetes.io/arch": "x86 64"}}')"
  evaluate
  [ "$(message)" = "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=x86 64 admits no linux node of any architecture; its images all run on: amd64, arm64" ]
  # An OS no node runs: refused before any lookup.
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {nodeSelector: {"kubernetes.io/os": "linux),x in (y"}}')"
  run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES" \
    --record-host-capabilities-interactions "$BATS_TEST_TMPDIR/calls.yml" "$POLICY"
  RESPONSE=$(echo "$output" | tail -n 1)
  [ "$(message)" = 'image-arch-affinity: the Pod asks for nodes of OS "linux),x in (y", which no node reports (nodes run linux or windows)' ]
  [ "$(cat "$BATS_TEST_TMPDIR/calls.yml")" = "[]" ]
  # Terms with such values beside known ones: the known ones count, the patch holds only those.
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" | jq -c '. + {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
    {matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["arm64", "s390x),pool in (zz"]}]},
    {matchExpressions: [{key: "kubernetes.io/arch", operator: "NotIn", values: ["x86 64"]}, {key: "zone", operator: "In", values: ["a"]}]}]}}}}')"
  evaluate
  [ "$(patch)" = "$(jq -nc '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
    {op: "add", path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/2",
     value: {key: "kubernetes.io/arch", operator: "In", values: ["amd64", "arm64"]}}]')" ]
}

@test "readNodes: odd images and hostile Pod values send only the fixed selectors" {
  R=registry.example.com
  # The odd image's runnable entry (amd64); the Pod's terms name random values: the Nodes are
  # read with selectors of the images' architectures only, and the Windows ones (the mixed
  # cluster's Windows Node pins the Pod to linux too) with the plain OS selector.
  printf -- "- type: Exchange\n  request: |\n    !OciManifest\n    image: %s\n  response:\n    type: Success\n    payload: '%s'\n" \
    "$R/odd:1.0" '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"'"$DIGEST"'","size":1,"platform":{"os":"linux","architecture":"amd64"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"'"$DIGEST"'","size":1,"platform":{"os":"linux","architecture":"s390x),pool in (zz"}}]}' >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(win_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)" >>"$SESSION"
  no_unlabelled >>"$SESSION"
  pod_request '{"containers":[{"name":"c","image":"'$R'/odd:1.0"}],"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
    {"matchExpressions":[{"key":"kubernetes.io/arch","operator":"NotIn","values":["riscv64","x y","loong64"]}]}]}}}}'
  replay '{"readNodes":true}'
  [ "$(patch)" = "$(jq -nc '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64"}},
    {op: "add", path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
     value: {key: "kubernetes.io/arch", operator: "In", values: ["amd64"]}},
    {op: "add", path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/2",
     value: {key: "kubernetes.io/os", operator: "In", values: ["linux"]}}]')" ]
  [ "$(warning_count)" = 1 ]
  label_values | valid_label_values
}
