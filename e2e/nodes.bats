#!/usr/bin/env bats
# The node-aware mode (setting readNodes) end to end: the compiled module run by a Kubewarden host
# (e2e/host.bash: the embedded host, or kwctl >= 1.35) with --allow-context-aware and replayed host
# calls
# (--replay-host-capabilities-interactions): Nodes shaped like real ones (e2e/nodes.bash), the
# image lookups replayed too, so no registry nor cluster is needed and every run is the same.
# A request that differs from the recorded one fails the replay, which the policy would report
# in a warning or message: each test asserts the exact response.
#   bats e2e/nodes.bats
# Timings are printed as "# ..." lines.

bats_require_minimum_version 1.5.0
load requests
load nodes
load host

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
}

setup() {
  cd "$BATS_TEST_DIRNAME/.."
  REQUEST="$BATS_TEST_TMPDIR/request.json"
  SESSION="$BATS_TEST_TMPDIR/session.yml"
  SETTINGS='{"readNodes":true}'
  : >"$SESSION"
}

R=registry.example.com

# evaluate: the host's `run` on $REQUEST with $SETTINGS, replaying $SESSION; RESPONSE is its stdout
# line.
evaluate() {
  run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --settings-json "$SETTINGS" \
    --allow-context-aware --replay-host-capabilities-interactions "$SESSION" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
  # Every call was answered from the session, as recorded, and every exchange was called for.
  [[ "$stderr" != *"Replay error"* ]]
  [[ "$stderr" != *"recorded responses is empty"* ]]
  [[ "$stderr" != *"recorded exchanges have not been replayed"* ]]
}

@test "mixed pools: a multi-arch Pod gets no architecture pin (one Linux list that selects no Node), only linux for the Windows Node" {
  oci $R/multi:1.0 linux/amd64 linux/arm64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(win_nodes | node_list)" >>"$SESSION"
  no_karpenter >>"$SESSION"
  pod_request "$(containers $R/multi:1.0)"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(warnings)" = null ]
  # The OS alone: no architecture expression, no annotation.
  [ "$(patch)" = "$(pin_os_patch linux)" ]
  # A cluster of Linux Nodes only (the Windows list is empty): accepted unchanged.
  oci $R/multi:1.0 linux/amd64 linux/arm64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  evaluate
  [ "$RESPONSE" = '{"uid":"e2e","allowed":true,"auditAnnotations":null,"warnings":null}' ]
}

@test "mixed pools: an amd64-only Pod is pinned to amd64 (cordoned and tainted arm64 Nodes count) and to linux (the Windows Node)" {
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(win_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)" >>"$SESSION"
  pod_request "$(containers $R/amd64-only:1.0)"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_os_patch linux amd64)" ]
  # Without the Windows Node: amd64 alone.
  oci $R/amd64-only:1.0 linux/amd64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)" >>"$SESSION"
  no_karpenter >>"$SESSION"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_patch amd64)" ]
}

@test "a Linux Pod in a cluster of Linux and untainted Windows Nodes is pinned to linux and its architectures" {
  # The mixed cluster and an s390x Node: Linux Nodes of amd64, arm64 and s390x, an untainted
  # Windows amd64 Node (the images run on its architecture, not its OS).
  s390x_nodes() { node s390x-1 linux s390x; }
  oci $R/multi:1.0 linux/amd64 linux/arm64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)" "$(s390x_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(win_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64,arm64)" "$( (amd_nodes; arm_nodes) | node_list)" >>"$SESSION"
  pod_request "$(containers $R/multi:1.0)"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_os_patch linux amd64 arm64)" ]
  # Required terms of its own: the OS expression goes only into those that admit a Windows Node
  # (term 0 asks for linux already), after the architecture expression.
  oci $R/multi:1.0 linux/amd64 linux/arm64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)" "$(s390x_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(win_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64,arm64)" "$( (amd_nodes; arm_nodes) | node_list)" >>"$SESSION"
  pod_request '{"containers":[{"name":"c","image":"'$R'/multi:1.0"}],"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
    {"matchExpressions":[{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]},
    {"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["eu-west-1a"]}]}]}}}}'
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(jq -nc '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
    {op: "add", path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
     value: {key: "kubernetes.io/arch", operator: "In", values: ["amd64", "arm64"]}},
    {op: "add", path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/1",
     value: {key: "kubernetes.io/arch", operator: "In", values: ["amd64", "arm64"]}},
    {op: "add", path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/2",
     value: {key: "kubernetes.io/os", operator: "In", values: ["linux"]}}]')" ]
}

@test "an absent architecture: a Pod whose images run on no Node is rejected naming both (the Windows Node is not among them)" {
  oci $R/s390x-only:1.0 linux/s390x >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (s390x)" "$( (amd_nodes; arm_nodes) | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(win_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (s390x)" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  pod_request "$(containers $R/s390x-only:1.0)"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod's images all run only on s390x, but the cluster's nodes are amd64, arm64 (setting readNodes: linux Nodes found of amd64, arm64)" ]
}

@test "an autoscaled arm64 pool with zero Nodes: an arm64 Pod is pinned, not rejected; an autoscaled Windows pool pins linux with no Windows list" {
  oci $R/arm64-only:1.0 linux/arm64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)" "$(amd_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  pod_request "$(containers $R/arm64-only:1.0)"
  SETTINGS='{"readNodes":true,"autoscaledArchitectures":[{"os":"linux","architectures":["arm64"]}]}'
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
  # A Windows pool (at zero Nodes too) says the cluster has Windows Nodes: no Windows list read.
  oci $R/arm64-only:1.0 linux/arm64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)" "$(amd_nodes | node_list)" >>"$SESSION"
  SETTINGS='{"readNodes":true,"autoscaledArchitectures":[{"os":"linux","architectures":["arm64"]},{"os":"windows","architectures":["amd64"]}]}'
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_os_patch linux arm64)" ]
}

@test "a Karpenter NodePool of arm64 at zero Nodes: an arm64-only Pod is pinned; a tainted one it does not tolerate does not count" {
  # conformance case nodes-karpenter-pool: amd64 Nodes only, no Windows Node, none of arm64; the
  # Nodes alone would refuse the Pod, so the NodePools are read (after the Node lists).
  default_pool() { node_pool default '[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]},{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]'; }
  graviton_pool() { node_pool graviton '[{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]},{"key":"kubernetes.io/os","operator":"In","values":["linux"]},{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot","on-demand"],"minValues":1}]'; }
  gpu_pool() { node_pool gpu '[{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]}]' '[{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}]'; }
  oci $R/arm64-only:1.0 linux/arm64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)" "$(amd_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (arm64)" "$EMPTY" >>"$SESSION"
  list_pools "$( (default_pool; graviton_pool; gpu_pool) | pool_list)" >>"$SESSION"
  pod_request "$(containers $R/arm64-only:1.0)"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
  # Without the graviton NodePool, the arm64 one left is tainted (nvidia.com/gpu) and the Pod does
  # not tolerate it: refused as in a cluster without NodePools.
  oci $R/arm64-only:1.0 linux/arm64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)" "$(amd_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (arm64)" "$EMPTY" >>"$SESSION"
  list_pools "$( (default_pool; gpu_pool) | pool_list)" >>"$SESSION"
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 (setting readNodes: linux Nodes found of amd64; Karpenter NodePools can create amd64)" ]
  # A Pod that tolerates the taint counts it: pinned to arm64, and to linux (the gpu NodePool
  # names no OS: Karpenter may create Windows nodes from it).
  oci $R/arm64-only:1.0 linux/arm64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)" "$(amd_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (arm64)" "$EMPTY" >>"$SESSION"
  list_pools "$( (default_pool; gpu_pool) | pool_list)" >>"$SESSION"
  pod_request '{"containers":[{"name":"c","image":"'$R'/arm64-only:1.0"}],"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}'
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_os_patch linux arm64)" ]
}

@test "a Windows Pod reads the Windows Nodes, then the Linux ones: pinned to windows beside Linux Nodes; a nodeSelector on windows reads no Linux list" {
  oci $R/windows:1.0 windows/amd64 >>"$SESSION"
  list_nodes "kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux" "$(amd_nodes | node_list)" >>"$SESSION"
  no_karpenter >>"$SESSION"
  pod_request '{"os":{"name":"windows"},"containers":[{"name":"c","image":"'$R'/windows:1.0"}]}'
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  # spec.os is no scheduling constraint: the OS alone (no architecture to pin, no annotation).
  [ "$(patch)" = "$(pin_os_patch windows)" ]
  # A cluster of Windows Nodes only: accepted unchanged.
  oci $R/windows:1.0 windows/amd64 >"$SESSION"
  list_nodes "kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  evaluate
  [ "$RESPONSE" = '{"uid":"e2e","allowed":true,"auditAnnotations":null,"warnings":null}' ]
  # The usual nodeSelector kubernetes.io/os: windows keeps it off Linux Nodes: no Linux list.
  oci $R/windows:1.0 windows/amd64 >"$SESSION"
  list_nodes "kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  pod_request '{"os":{"name":"windows"},"nodeSelector":{"kubernetes.io/os":"windows"},"containers":[{"name":"c","image":"'$R'/windows:1.0"}]}'
  evaluate
  [ "$RESPONSE" = '{"uid":"e2e","allowed":true,"auditAnnotations":null,"warnings":null}' ]
}

@test "a Pod bound to a node of the wrong architecture is rejected naming image, node and architectures" {
  get_node arm-2 "$(arm_nodes | tail -n 1 | masked)" >>"$SESSION"
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  pod_request '{"nodeName":"arm-2","containers":[{"name":"c","image":"'$R'/amd64-only:1.0"}]}'
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod is bound to node \"arm-2\" (linux/arm64), which its images have no build for: \"$R/amd64-only:1.0\" runs only on linux/amd64. Its containers would fail there with exec format error" ]
}

@test "a bound Pod's image volumes are checked against its node, and named" {
  get_node arm-2 "$(arm_nodes | tail -n 1 | masked)" >>"$SESSION"
  oci $R/multi:1.0 linux/amd64 linux/arm64 >>"$SESSION"
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  pod_request '{"nodeName":"arm-2","containers":[{"name":"c","image":"'$R'/multi:1.0"}],"volumes":[{"name":"plugins","image":{"reference":"'$R'/amd64-only:1.0"}}]}'
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod is bound to node \"arm-2\" (linux/arm64), which its images have no build for: volume \"plugins\" image \"$R/amd64-only:1.0\" runs only on linux/amd64. The kubelet cannot mount them there: use images with a build for that platform (an index), or list them in imagePlatforms" ]
}

@test "a Pod bound to a fitting node is accepted unchanged; without readNodes no Node is read" {
  get_node amd-1 "$(amd_nodes | head -n 1 | masked)" >>"$SESSION"
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  pod_request '{"nodeName":"amd-1","containers":[{"name":"c","image":"'$R'/amd64-only:1.0"}]}'
  evaluate
  [ "$RESPONSE" = '{"uid":"e2e","allowed":true,"auditAnnotations":null,"warnings":null}' ]
  # Without readNodes the bound Pod is skipped: no call at all (an empty session answers none).
  : >"$SESSION"
  SETTINGS='{}'
  pod_request '{"nodeName":"arm-2","containers":[{"name":"c","image":"'$R'/amd64-only:1.0"}]}'
  evaluate
  [ "$RESPONSE" = '{"uid":"e2e","allowed":true,"auditAnnotations":null,"warnings":null}' ]
}

@test "a DaemonSet's Pod is checked against its target node" {
  get_node arm-1 "$(arm_nodes | head -n 1 | masked)" >>"$SESSION"
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  pod_request '{"containers":[{"name":"c","image":"'$R'/amd64-only:1.0"}],
    "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchFields":[{"key":"metadata.name","operator":"In","values":["arm-1"]}]}]}}}}' \
    '{"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"agent","uid":"d5","controller":true,"blockOwnerDeletion":true}]}'
  evaluate
  [ "$(message)" = "image-arch-affinity: the Pod is bound to node \"arm-1\" (linux/arm64), which its images have no build for: \"$R/amd64-only:1.0\" runs only on linux/amd64. Its containers would fail there with exec format error" ]
}

@test "a missing node follows onLookupFailure: a warning by default, a rejection with reject" {
  local missing='ApiError: nodes "gone-1" not found: NotFound (ErrorResponse { status: "Failure", message: "nodes \"gone-1\" not found", reason: "NotFound", code: 404 })'
  get_node_fails gone-1 "$missing" >>"$SESSION"
  pod_request '{"nodeName":"gone-1","containers":[{"name":"c","image":"'$R'/amd64-only:1.0"}]}'
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warnings)" = "$(jq -nc --arg m "$missing" '["image-arch-affinity: the Pod was not checked against node \"gone-1\", which could not be read: " + $m]')" ]
  get_node_fails gone-1 "$missing" >"$SESSION"
  SETTINGS='{"readNodes":true,"onLookupFailure":"reject"}'
  evaluate
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: cannot read node \"gone-1\", which the Pod is bound to: $missing (setting onLookupFailure: reject)" ]
}

@test "a failing Node list follows onLookupFailure (a Linux one, and the Windows one a Linux Pod reads)" {
  local refused='Get "https://10.96.0.1:443/api/v1/nodes?labelSelector=kubernetes.io%2Fos%3Dlinux": dial tcp 10.96.0.1:443: connect: connection refused'
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  list_fails "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$refused" >>"$SESSION"
  pod_request "$(containers $R/amd64-only:1.0)"
  evaluate
  # ignoreImage (the default): pinned to every architecture the images run on, with a warning.
  [ "$(patch)" = "$(pin_patch amd64)" ]
  [ "$(warning_count)" = 1 ]
  [[ "$(warning)" == "image-arch-affinity: the cluster's Nodes could not be read, so the Pod is pinned to every architecture its images run on: Get \"https://10.96.0.1:443/api/v1/nodes?labelSelector=kubernetes.io%2Fos%3Dlinux\": dial tcp "* ]]
  oci $R/amd64-only:1.0 linux/amd64 >"$SESSION"
  list_fails "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$refused" >>"$SESSION"
  SETTINGS='{"readNodes":true,"onLookupFailure":"reject"}'
  evaluate
  [ "$(message)" = "image-arch-affinity: cannot read the cluster's linux Nodes: Get \"https://10.96.0.1:443/api/v1/nodes?labelSelector=kubernetes.io%2Fos%3Dlinux\": dial tcp 10.96.0.1:443: connect: connection refused (setting onLookupFailure: reject)" ]
  # The Linux Nodes read, the Windows list failing: ignoreImage pins the Pod to linux as well, with
  # a warning; reject refuses it (the Nodes of amd64 read all the same: without any, the refusal
  # would be that no Node runs the images). Under ignoreImage the NodePools are read after the
  # Node lists (the warning differs from a cluster whose pools could create Windows nodes).
  local refused_windows='Get "https://10.96.0.1:443/api/v1/nodes?labelSelector=kubernetes.io%2Fos%3Dwindows": dial tcp 10.96.0.1:443: connect: connection refused'
  oci $R/amd64-only:1.0 linux/amd64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | node_list)" >>"$SESSION"
  list_fails "kubernetes.io/os=windows" "$refused_windows" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)" >>"$SESSION"
  no_karpenter >>"$SESSION"
  SETTINGS='{"readNodes":true}'
  evaluate
  [ "$(patch)" = "$(pin_os_patch linux amd64)" ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(lookup_warning "image-arch-affinity: the cluster's windows Nodes could not be read, so the Pod is pinned to its OS (linux) as in a cluster of several: " "$refused_windows")" ]
  oci $R/amd64-only:1.0 linux/amd64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | node_list)" >>"$SESSION"
  list_fails "kubernetes.io/os=windows" "$refused_windows" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)" >>"$SESSION"
  SETTINGS='{"readNodes":true,"onLookupFailure":"reject"}'
  evaluate
  [ "$(message)" = "image-arch-affinity: cannot read the cluster's windows Nodes: $refused_windows (setting onLookupFailure: reject)" ]
}

@test "background audit: a running Pod on a node its images lack fails with that reason; one on a fitting node passes" {
  grep -qx 'backgroundAudit: true' metadata.yml
  get_node arm-2 "$(arm_nodes | tail -n 1 | masked)" >>"$SESSION"
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  audit_request arm-2 $R/amd64-only:1.0
  evaluate
  [ "$(echo "$RESPONSE" | jq -r .uid)" = audit ]
  [ "$(allowed)" = false ]
  [ "$(message)" = "image-arch-affinity: the Pod is bound to node \"arm-2\" (linux/arm64), which its images have no build for: \"$R/amd64-only:1.0\" runs only on linux/amd64. Its containers would fail there with exec format error" ]
  get_node amd-2 "$(amd_nodes | tail -n 1 | masked)" >"$SESSION"
  oci $R/amd64-only:1.0 linux/amd64 >>"$SESSION"
  audit_request amd-2 $R/amd64-only:1.0
  evaluate
  [ "$RESPONSE" = '{"uid":"audit","allowed":true,"auditAnnotations":null,"warnings":null}' ]
}

# big_cluster N [WINDOWS]: N Nodes, one line each (written once per file): the last WINDOWS of
# them (default none) Windows amd64 ones, the others Linux, half amd64, half arm64.
big_cluster() {
  jq -nc --argjson n "$1" --argjson w "${2:-0}" --argjson amd "$(node TEMPLATE linux amd64)" \
    --argjson arm "$(node TEMPLATE linux arm64)" --argjson win "$(node TEMPLATE windows amd64)" '
    range($n) as $i
    | (if $i >= $n - $w then $win elif $i % 2 == 0 then $amd else $arm end) as $t | ("node-\($i)") as $name
    | $t | .metadata.name = $name | .metadata.uid = ("0f6c-" + $name)
    | .metadata.labels["kubernetes.io/hostname"] = $name | .status.addresses[1].address = $name'
}

@test "a 5,000-node cluster with 500 Windows Nodes: the multi-arch Pod reads only the Windows Nodes, the amd64-only Pod those and the Linux Nodes of both pools" {
  local nodes="$BATS_TEST_TMPDIR/nodes.jsonl"
  big_cluster 5000 500 >"$nodes"
  [ "$(wc -l <"$nodes")" -eq 5000 ]
  [ "$(jq -c 'select(.metadata.labels["kubernetes.io/os"] == "windows")' "$nodes" | wc -l)" -eq 500 ]
  linux() { jq -c --arg a "$1" 'select(.metadata.labels["kubernetes.io/os"] == "linux" and .metadata.labels["kubernetes.io/arch"] == $a)' "$nodes"; }
  windows() { jq -c 'select(.metadata.labels["kubernetes.io/os"] == "windows")' "$nodes"; }
  [ "$(linux amd64 | wc -l)" -eq 2250 ]
  [ "$(linux arm64 | wc -l)" -eq 2250 ]
  # Covered: the Linux selector matches none of the 5,000 Nodes, the answer is the 3-node
  # cluster's; the 500 Windows Nodes are read whole (masked), to pin the Pod to linux; then the
  # NodePool list (no Karpenter).
  oci $R/multi:1.0 linux/amd64 linux/arm64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)" "$EMPTY" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(windows | node_list)" >>"$SESSION"
  no_karpenter >>"$SESSION"
  echo "# 5,000-node session, multi-arch Pod (500 Nodes read): $(stat -c %s "$SESSION") bytes" >&3
  pod_request "$(containers $R/multi:1.0)"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_os_patch linux)" ]
  # Pinned: 2,250 arm64 Nodes, the 500 Windows Nodes, then 2,250 amd64 Nodes, masked (metadata
  # whole): every Node of the cluster.
  oci $R/amd64-only:1.0 linux/amd64 >"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(linux arm64 | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$(windows | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(linux amd64 | node_list)" >>"$SESSION"
  echo "# 5,000-node session, amd64-only Pod (5,000 Nodes read): $(stat -c %s "$SESSION") bytes" >&3
  pod_request "$(containers $R/amd64-only:1.0)"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_os_patch linux amd64)" ]
}

# bench_mean_us SESSION: kwctl bench's mean time per validate evaluation (µs) on $REQUEST,
# replaying SESSION (5,050 evaluations and one warm-up: those past the session's end find it
# empty, their lookups fail and they decide nothing).
bench_mean_us() {
  run --separate-stderr "$KWCTL" bench --request-path "$REQUEST" --settings-json "$SETTINGS" \
    --allow-context-aware --replay-host-capabilities-interactions "$1" \
    --warm-up-time 0 --measurement-time 0 --num-samples 1 --num-resamples 1 "$POLICY"
  [ "$status" -eq 0 ]
  [[ "$stderr" != *"Replay error"* ]]
  echo "$output" | sed 's/\x1b\[[0-9;]*m//g' | awk '/^validate \[/ {found = 1; next} found && /elapsed/ {print; exit}' |
    grep -Eo '\[[0-9.]+[^] ]* [0-9.]+[^] ]* [0-9.]+[^] ]*\]' | awk '{
      v = $2; u = v; gsub(/[0-9.]/, "", u); gsub(/[^0-9.]/, "", v)
      if (u == "ms") v *= 1000; else if (u == "ns") v /= 1000; else if (u == "s") v *= 1000000
      print v }'
}

@test "kwctl bench: the amd64-only Pod's evaluation reading 5,000 Nodes vs 3 Nodes" {
  needs_kwctl bench
  local nodes="$BATS_TEST_TMPDIR/nodes.jsonl" one="$BATS_TEST_TMPDIR/one.yml" empty="$BATS_TEST_TMPDIR/empty.yml"
  pod_request "$(containers $R/amd64-only:1.0)"
  : >"$empty"
  # A session can hold only a few 5,000-node evaluations (3 MB each): K of them, then the
  # session is empty. The mean over all evaluations less that of an empty session gives theirs.
  local k=30 n=5050
  measure() {
    for _ in $(seq 1 $((k + 1))); do cat "$one"; done >"$SESSION"
    local mixed idle
    mixed=$(bench_mean_us "$SESSION")
    idle=$(bench_mean_us "$empty")
    awk -v m="$mixed" -v i="$idle" -v k="$k" -v n="$n" 'BEGIN {printf "%.0f", (m * n - i * (n - k)) / k}'
  }
  big_cluster 5000 >"$nodes"
  { oci $R/amd64-only:1.0 linux/amd64
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" \
      "$(jq -c 'select(.metadata.labels["kubernetes.io/arch"] == "arm64")' "$nodes" | node_list)"
    list_nodes "kubernetes.io/os=windows" "$EMPTY"
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" \
      "$(jq -c 'select(.metadata.labels["kubernetes.io/arch"] == "amd64")' "$nodes" | node_list)"
    no_karpenter
    no_unlabelled; } >"$one"
  big=$(measure)
  # 3 Nodes: every evaluation from the session.
  { oci $R/amd64-only:1.0 linux/amd64
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | head -n 1 | node_list)"
    list_nodes "kubernetes.io/os=windows" "$EMPTY"
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)"
    no_karpenter
    no_unlabelled; } >"$one"
  for _ in $(seq 1 5200); do cat "$one"; done >"$SESSION"
  small=$(bench_mean_us "$SESSION")
  echo "# kwctl bench, amd64-only Pod pinned (3 Node lists, the Windows one empty, the NodePool list of a cluster without Karpenter, and the empty list of Nodes without an architecture label): 5,000 Nodes ${big} µs, 3 Nodes ${small} µs per evaluation" >&3
  [ "$big" -gt 0 ]
}

# bench SESSION_EXCHANGES: kwctl bench on $REQUEST with the exchanges of one evaluation repeated
# for every iteration (the replay is consumed: one copy per evaluation); prints the mean.
bench() {
  local one="$BATS_TEST_TMPDIR/one.yml"
  cat >"$one"
  for _ in $(seq 1 5200); do cat "$one"; done >"$SESSION"
  run --separate-stderr "$KWCTL" bench --request-path "$REQUEST" --settings-json "$SETTINGS" \
    --allow-context-aware --replay-host-capabilities-interactions "$SESSION" \
    --warm-up-time 0 --measurement-time 0 --num-samples 1 --num-resamples 1 "$POLICY"
  [ "$status" -eq 0 ]
  [[ "$stderr" != *"Replay error"* ]]
  [[ "$stderr" != *"recorded responses is empty"* ]]
  # The validate line: "[min mean max]:	[87.17µs 132.16µs 248.18µs]".
  echo "$output" | sed 's/\x1b\[[0-9;]*m//g' | awk '/^validate \[/ {found = 1; next} found && /elapsed/ {print; exit}' |
    grep -Eo '\[[0-9.]+[^] ]* [0-9.]+[^] ]* [0-9.]+[^] ]*\]'
}

@test "kwctl bench: time per evaluation with replayed Nodes (covered: the same answer at any size; pinned on 3 Nodes)" {
  needs_kwctl bench
  pod_request "$(containers $R/multi:1.0)"
  covered=$( { oci $R/multi:1.0 linux/amd64 linux/arm64
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)" "$EMPTY"
    list_nodes "kubernetes.io/os=windows" "$EMPTY"
    no_karpenter; } | bench)
  pod_request "$(containers $R/amd64-only:1.0)"
  pinned=$( { oci $R/amd64-only:1.0 linux/amd64
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)" "$(arm_nodes | head -n 1 | node_list)"
    list_nodes "kubernetes.io/os=windows" "$EMPTY"
    list_nodes "kubernetes.io/os=linux,kubernetes.io/arch in (amd64)" "$(amd_nodes | node_list)"
    no_karpenter
    no_unlabelled; } | bench)
  SETTINGS='{}'
  without=$(oci $R/amd64-only:1.0 linux/amd64 | bench)
  echo "# kwctl bench (min mean max): covered, any cluster size: $covered; pinned, 3 Nodes: $pinned; without readNodes: $without" >&3
}

@test "docs/node-aware.md's ClusterAdmissionPolicy runs on the host with replayed Nodes" {
  doc_block docs/node-aware.md '^## Install$' >"$BATS_TEST_TMPDIR/policy.yaml"
  grep -q '^kind: ClusterAdmissionPolicy$' "$BATS_TEST_TMPDIR/policy.yaml"
  grep -q '^    readNodes: true$' "$BATS_TEST_TMPDIR/policy.yaml"
  sed -i "s|^  module: registry://.*|  module: file://$PWD/$POLICY|" "$BATS_TEST_TMPDIR/policy.yaml"
  # The autoscaled arm64 pool: an arm64 Pod in a cluster of amd64 Linux Nodes is pinned after one
  # list of them, an empty Windows one and an empty one of Nodes without an architecture label.
  oci $R/arm64-only:1.0 linux/arm64 >>"$SESSION"
  list_nodes "kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)" "$(amd_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=windows" "$EMPTY" >>"$SESSION"
  no_unlabelled >>"$SESSION"
  pod_request "$(containers $R/arm64-only:1.0)"
  run --separate-stderr "$HOST_BIN" run --request-path "$REQUEST" --allow-context-aware \
    --replay-host-capabilities-interactions "$SESSION" "$BATS_TEST_TMPDIR/policy.yaml"
  [ "$status" -eq 0 ]
  [[ "$stderr" != *"Replay error"* ]]
  [[ "$stderr" != *"recorded responses is empty"* ]]
  [[ "$stderr" != *"recorded exchanges have not been replayed"* ]]
  RESPONSE=$(echo "$output" | tail -n 1)
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(pin_patch arm64)" ]
}

@test "pinWindowsBuild: a Windows Pod is pinned to the OS build its images share; bound to a node of another build, rejected" {
  oci_windows $R/win-both:1.0 10.0.17763.6054 10.0.20348.2582 >>"$SESSION"
  oci_windows $R/win-2022:1.0 10.0.20348.2527 >>"$SESSION"
  pod_request '{"os":{"name":"windows"},"containers":[{"name":"a","image":"'$R'/win-both:1.0"},{"name":"b","image":"'$R'/win-2022:1.0"}]}'
  SETTINGS='{"pinWindowsBuild":true}'
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(jq -nc '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64"}},
    {op: "add", path: "/spec/affinity", value: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
      {nodeSelectorTerms: [{matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: ["amd64"]},
        {key: "node.kubernetes.io/windows-build", operator: "In", values: ["10.0.20348"]}]}]}}}}]')" ]
  # A 2019 image bound to the Windows Server 2022 node.
  get_node win-1 "$(win_nodes | masked)" >"$SESSION"
  oci_windows $R/win-2019:1.0 10.0.17763.6054 >>"$SESSION"
  pod_request '{"os":{"name":"windows"},"nodeName":"win-1","containers":[{"name":"a","image":"'$R'/win-2019:1.0"}]}'
  SETTINGS='{"readNodes":true,"pinWindowsBuild":true}'
  evaluate
  [ "$(message)" = "image-arch-affinity: the Pod is bound to node \"win-1\" (windows/amd64, OS build 10.0.20348), which its images have no build for: \"$R/win-2019:1.0\" runs only on windows/amd64 10.0.17763. Its containers cannot start there (a process-isolated Windows container needs the node's architecture and OS build)" ]
}

@test "pinWindowsBuild with readNodes: the builds the Windows Nodes report (none other: unpinned; mixed: pinned to the one present; absent: rejected)" {
  SETTINGS='{"readNodes":true,"pinWindowsBuild":true}'
  # The Windows Nodes are read with the fixed selectors (no image's build in a selector), their
  # builds compared in the policy; then the Linux Nodes (none here: no OS pin), unless refused.
  OTHER="kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)"
  AMD64="kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"
  win_2019() { node win-2 windows amd64 '{"metadata":{"labels":{"node.kubernetes.io/windows-build":"10.0.17763"}},"status":{"nodeInfo":{"osImage":"Windows Server 2019 Datacenter"}}}'; }
  # Only Windows Server 2022 Nodes: no pin.
  oci_windows $R/win-2022:1.0 10.0.20348.2527 >>"$SESSION"
  list_nodes "$OTHER" "$EMPTY" >>"$SESSION"
  list_nodes "$AMD64" "$(win_nodes | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  pod_request '{"os":{"name":"windows"},"containers":[{"name":"a","image":"'$R'/win-2022:1.0"}]}'
  evaluate
  [ "$RESPONSE" = '{"uid":"e2e","allowed":true,"auditAnnotations":null,"warnings":null}' ]
  # 2019 and 2022 Nodes: pinned to 10.0.20348.
  oci_windows $R/win-2022:1.0 10.0.20348.2527 >"$SESSION"
  list_nodes "$OTHER" "$EMPTY" >>"$SESSION"
  list_nodes "$AMD64" "$( (win_2019; win_nodes) | node_list)" >>"$SESSION"
  list_nodes "kubernetes.io/os=linux" "$EMPTY" >>"$SESSION"
  no_karpenter >>"$SESSION"
  no_unlabelled >>"$SESSION"
  evaluate
  [ "$(warnings)" = null ]
  [ "$(patch)" = "$(jq -nc '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": "amd64"}},
    {op: "add", path: "/spec/affinity", value: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
      {nodeSelectorTerms: [{matchExpressions: [
        {key: "node.kubernetes.io/windows-build", operator: "In", values: ["10.0.20348"]}]}]}}}}]')" ]
  # Only 2019 Nodes: rejected naming both builds.
  oci_windows $R/win-2022:1.0 10.0.20348.2527 >"$SESSION"
  list_nodes "$OTHER" "$EMPTY" >>"$SESSION"
  list_nodes "$AMD64" "$(win_2019 | node_list)" >>"$SESSION"
  no_karpenter >>"$SESSION"
  evaluate
  [ "$(message)" = "image-arch-affinity: no Windows amd64 Node has an OS build of the Pod's images: images 10.0.20348; Nodes 10.0.17763 (node.kubernetes.io/windows-build; settings pinWindowsBuild, readNodes)" ]
}
