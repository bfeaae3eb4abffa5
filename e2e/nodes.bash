# Replay sessions for the node-aware mode (setting readNodes), loaded by e2e/nodes.bats: Nodes
# shaped like real ones, masked as the Kubewarden host masks them, and the host-call exchanges
# (kwctl --replay-host-capabilities-interactions: strict first-in-first-out, each request compared
# with the recorded one, so a session pins the label selectors and field masks the policy sends).

# The field masks the policy sends (src/nodes.rs FIELD_MASKS).
MASKS_YAML='    field_masks:
    - status.nodeInfo.architecture
    - status.nodeInfo.operatingSystem'

# node NAME OS ARCH [EXTRA_JSON]: a Node as the API server serves it (kubelet labels, annotations,
# spec, status), EXTRA_JSON merged into it (e.g. a taint, a cordon).
node() {
  jq -nc --arg n "$1" --arg os "$2" --arg arch "$3" --argjson extra "${4:-{\}}" '{
    apiVersion: "v1", kind: "Node",
    metadata: {name: $n, uid: ("0f6c-" + $n), resourceVersion: "48213", creationTimestamp: "2026-10-01T08:00:00Z",
      labels: ({"beta.kubernetes.io/arch": $arch, "beta.kubernetes.io/os": $os, "kubernetes.io/arch": $arch,
        "kubernetes.io/os": $os, "kubernetes.io/hostname": $n,
        "node.kubernetes.io/instance-type": (if $arch == "arm64" then "m7g.large" else "m7i.large" end),
        "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1a"}
        + (if $os == "windows" then {"node.kubernetes.io/windows-build": "10.0.20348"} else {} end)),
      annotations: {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
      managedFields: [{manager: "kubelet", operation: "Update", apiVersion: "v1"}]},
    spec: {podCIDR: "10.244.3.0/24", podCIDRs: ["10.244.3.0/24"], providerID: ("aws:///eu-west-1a/i-" + $n)},
    status: {capacity: {cpu: "2", memory: "8012596Ki", pods: "110"}, allocatable: {cpu: "1930m", memory: "7298868Ki", pods: "110"},
      conditions: [{type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status"}],
      addresses: [{type: "InternalIP", address: "10.0.3.17"}, {type: "Hostname", address: $n}],
      nodeInfo: {architecture: $arch, operatingSystem: $os, kubeletVersion: "v1.31.2", kubeProxyVersion: "v1.31.2",
        osImage: (if $os == "windows" then "Windows Server 2022 Datacenter" else "Ubuntu 24.04.1 LTS" end),
        kernelVersion: "6.8.0-1016-aws", containerRuntimeVersion: "containerd://1.7.22",
        machineID: "ec2a", systemUUID: "ec2a", bootID: "b007"},
      images: [{names: ["registry.k8s.io/pause:3.10"], sizeBytes: 320368}]}
  } * $extra'
}

# masked: a Node (stdin, one per line) as the host returns it with the policy's field masks:
# apiVersion, kind, metadata whole but managedFields, status.nodeInfo.{architecture,operatingSystem}.
masked() {
  jq -c '{apiVersion, kind, metadata: (.metadata | del(.managedFields)),
    status: {nodeInfo: {architecture: .status.nodeInfo.architecture, operatingSystem: .status.nodeInfo.operatingSystem}}}'
}

# node_list: a NodeList of the Nodes on stdin (one per line), masked.
node_list() {
  masked | jq -sc '{apiVersion: "v1", kind: "NodeList", metadata: {resourceVersion: "48213"}, items: .}'
}

DIGEST=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef

# oci IMAGE OS/ARCH[@OS_VERSION]...: the exchange of the image's v1/oci_manifest lookup (an OCI
# index; an entry's os.version after @, as Windows builds carry it).
oci() {
  local image=$1
  shift
  local index
  index=$(printf '%s\n' "$@" | jq -R . | jq -sc --arg d "$DIGEST" '{schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [.[] | split("@") as [$p, $v] | ($p | split("/")) |
      {mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d,
      size: 1234, platform: ({os: .[0], architecture: .[1]} + if $v then {"os.version": $v} else {} end)}]}')
  printf -- "- type: Exchange\n  request: |\n    !OciManifest\n    image: %s\n  response:\n    type: Success\n    payload: '%s'\n" \
    "$image" "$index"
}

# list_nodes SELECTOR PAYLOAD: the exchange of a kubernetes/list_resources_all on v1/Node.
list_nodes() {
  printf -- "- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n    api_version: v1\n    kind: Node\n    label_selector: %s\n    field_selector: null\n%s\n  response:\n    type: Success\n    payload: '%s'\n" \
    "$1" "$MASKS_YAML" "$2"
}

# list_fails SELECTOR MESSAGE: a failing kubernetes/list_resources_all.
list_fails() {
  printf -- "- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n    api_version: v1\n    kind: Node\n    label_selector: %s\n    field_selector: null\n%s\n  response:\n    type: Error\n    message: '%s'\n" \
    "$1" "$MASKS_YAML" "$2"
}

# The field masks the policy sends with the NodePool list (src/node_pools.rs FIELD_MASKS).
POOL_MASKS_YAML='    field_masks:
    - spec.replicas
    - spec.template.metadata.labels
    - spec.template.spec.requirements
    - spec.template.spec.taints
    - status.conditions'

# node_pool NAME REQUIREMENTS_JSON [TAINTS_JSON]: a Ready Karpenter NodePool (karpenter.sh/v1) as
# the API server serves it.
node_pool() {
  jq -nc --arg n "$1" --argjson req "$2" --argjson taints "${3:-[]}" '{
    apiVersion: "karpenter.sh/v1", kind: "NodePool",
    metadata: {name: $n, uid: ("9a1e-" + $n), resourceVersion: "48213", generation: 1,
      creationTimestamp: "2026-10-01T08:00:00Z", annotations: {"karpenter.sh/nodepool-hash": "1234567890"},
      managedFields: [{manager: "kubectl", operation: "Apply", apiVersion: "karpenter.sh/v1"}]},
    spec: {template: {metadata: {labels: {team: "platform"}},
        spec: {requirements: $req, taints: $taints, expireAfter: "720h",
          nodeClassRef: {group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default"}}},
      limits: {cpu: "1000"}, disruption: {consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m",
        budgets: [{nodes: "10%"}]}},
    status: {resources: {cpu: "0", nodes: "0"}, conditions: [
      {type: "ValidationSucceeded", status: "True", reason: "ValidationSucceeded", lastTransitionTime: "2026-10-01T08:00:05Z"},
      {type: "NodeClassReady", status: "True", reason: "NodeClassReady", lastTransitionTime: "2026-10-01T08:00:05Z"},
      {type: "Ready", status: "True", reason: "Ready", lastTransitionTime: "2026-10-01T08:00:05Z"}]}}'
}

# pool_list: a NodePoolList of the NodePools on stdin (one per line), masked as the host masks
# them: metadata whole but managedFields, and the masked fields.
pool_list() {
  jq -c '{apiVersion, kind, metadata: (.metadata | del(.managedFields)),
    spec: {template: {metadata: {labels: .spec.template.metadata.labels},
      spec: {requirements: .spec.template.spec.requirements, taints: .spec.template.spec.taints}}},
    status: {conditions: .status.conditions}}' |
    jq -sc '{apiVersion: "karpenter.sh/v1", kind: "NodePoolList", metadata: {resourceVersion: "48213"}, items: .}'
}

# list_pools PAYLOAD: the exchange of a kubernetes/list_resources_all on karpenter.sh/v1 NodePool.
list_pools() {
  printf -- "- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n    api_version: karpenter.sh/v1\n    kind: NodePool\n    label_selector: null\n    field_selector: null\n%s\n  response:\n    type: Success\n    payload: '%s'\n" \
    "$POOL_MASKS_YAML" "$1"
}

# no_unlabelled: the list of the Nodes without a kubernetes.io/arch label (virtual-kubelet's),
# empty: what a Pod whose terms the policy pins reads last (quoted: a YAML tag otherwise).
no_unlabelled() {
  list_nodes "'!kubernetes.io/arch,!beta.kubernetes.io/arch'" "$EMPTY"
}

# no_karpenter: the NodePool list in a cluster without Karpenter's CRDs, as policy-server answers
# it (its discovery of karpenter.sh/v1 finds nothing).
no_karpenter() {
  printf -- "- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n    api_version: karpenter.sh/v1\n    kind: NodePool\n    label_selector: null\n    field_selector: null\n%s\n  response:\n    type: Error\n    message: '%s'\n" \
    "$POOL_MASKS_YAML" 'error finding resource karpenter.sh/v1 / NodePool: ApiError: "404 page not found\n": Failed to parse error data (ErrorResponse { status: "404 Not Found", message: "\"404 page not found\\n\"", reason: "Failed to parse error data", code: 404 })'
}

# get_node NAME PAYLOAD: the exchange of a kubernetes/get_resource of one Node.
get_node() {
  printf -- "- type: Exchange\n  request: |\n    !KubernetesGetResource\n    api_version: v1\n    kind: Node\n    name: %s\n    namespace: null\n    disable_cache: false\n%s\n  response:\n    type: Success\n    payload: '%s'\n" \
    "$1" "$MASKS_YAML" "$2"
}

# get_node_fails NAME MESSAGE: a failing kubernetes/get_resource.
get_node_fails() {
  printf -- "- type: Exchange\n  request: |\n    !KubernetesGetResource\n    api_version: v1\n    kind: Node\n    name: %s\n    namespace: null\n    disable_cache: false\n%s\n  response:\n    type: Error\n    message: '%s'\n" \
    "$1" "$MASKS_YAML" "$2"
}

# oci_windows IMAGE OS_VERSION...: the v1/oci_manifest exchange of a Windows amd64 image (a Docker
# manifest list) with one entry per OS version.
oci_windows() {
  local image=$1
  shift
  local index
  index=$(printf '%s\n' "$@" | jq -R . | jq -sc --arg d "$DIGEST" '{schemaVersion: 2,
    mediaType: "application/vnd.docker.distribution.manifest.list.v2+json",
    manifests: [.[] | {mediaType: "application/vnd.docker.distribution.manifest.v2+json", digest: $d,
      size: 1234, platform: {architecture: "amd64", os: "windows", "os.version": .}}]}')
  printf -- "- type: Exchange\n  request: |\n    !OciManifest\n    image: %s\n  response:\n    type: Success\n    payload: '%s'\n" \
    "$image" "$index"
}

# The mixed cluster: two amd64 Linux Nodes, two arm64 ones (one cordoned, one tainted), a
# Windows Node.
amd_nodes() {
  node amd-1 linux amd64
  node amd-2 linux amd64
}
arm_nodes() {
  node arm-1 linux arm64 '{"spec":{"unschedulable":true,"taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule","timeAdded":"2026-11-20T10:00:00Z"}]}}'
  node arm-2 linux arm64 '{"spec":{"taints":[{"key":"dedicated","value":"arm","effect":"NoSchedule"}]}}'
}
win_nodes() { node win-1 windows amd64; }

EMPTY='{"apiVersion":"v1","kind":"NodeList","metadata":{"resourceVersion":"48213"},"items":[]}'

# pin_os_patch OS [ARCH...]: the patch for a Pod without affinity nor annotations pinned to OS (a
# cluster with Nodes of another OS) and to ARCH...: the OS expression after the architecture one,
# and the annotation only when an architecture is pinned.
pin_os_patch() {
  local os=$1
  shift
  local arches
  arches=$(printf '%s\n' "$@" | jq -R 'select(. != "")' | jq -sc .)
  jq -nc --arg os "$os" --argjson a "$arches" '
    (if ($a | length) > 0 then [{key: "kubernetes.io/arch", operator: "In", values: $a}] else [] end) as $arch
    | (if ($a | length) > 0
       then [{op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": ($a | join(","))}}]
       else [] end)
    + [{op: "add", path: "/spec/affinity", value: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
        {nodeSelectorTerms: [{matchExpressions: ($arch + [{key: "kubernetes.io/os", operator: "In", values: [$os]}])}]}}}}]'
}

# audit_request NODE IMAGE: what the audit scanner sends for a running Pod: a CREATE of the live
# object (spec.nodeName, status), no user.
audit_request() {
  jq -n --arg node "$1" --arg image "$2" '{uid: "audit", kind: {group: "", version: "v1", kind: "Pod"},
    resource: {group: "", version: "v1", resource: "pods"}, operation: "CREATE", name: "web-7d4b9", namespace: "shop",
    userInfo: {}, dryRun: false,
    object: {apiVersion: "v1", kind: "Pod",
      metadata: {name: "web-7d4b9", namespace: "shop", uid: "7d4b9", resourceVersion: "99812",
        ownerReferences: [{apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-5f6", uid: "5f6", controller: true}]},
      spec: {nodeName: $node, schedulerName: "default-scheduler", containers: [{name: "web", image: $image}]},
      status: {phase: "Running", hostIP: "10.0.3.17", podIP: "10.244.3.9", startTime: "2026-11-20T10:00:00Z",
        containerStatuses: [{name: "web", ready: false, restartCount: 14, image: $image,
          state: {waiting: {reason: "CrashLoopBackOff"}}}]}}}' >"$REQUEST"
}
