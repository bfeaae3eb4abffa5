# Requests and responses shared by e2e.bats and e2e/faults.bats (loaded with bats' `load`).

# pod_request SPEC_JSON [METADATA_JSON]: writes a Pod CREATE AdmissionRequest to $REQUEST.
pod_request() {
  jq -n --argjson spec "$1" --argjson metadata "${2:-{\}}" \
    '{uid: "e2e", kind: {group: "", version: "v1", kind: "Pod"},
      resource: {group: "", version: "v1", resource: "pods"},
      operation: "CREATE", name: "p", namespace: "default",
      userInfo: {username: "e2e"},
      object: {apiVersion: "v1", kind: "Pod",
               metadata: ({name: "p", namespace: "default"} + $metadata), spec: $spec}}' >"$REQUEST"
}

# containers IMAGE...: a spec with one container per image.
containers() {
  local images=("$@")
  printf '%s\n' "${images[@]}" | jq -R . | jq -s '{containers: [to_entries[] | {name: "c\(.key)", image: .value}]}'
}

allowed() { echo "$RESPONSE" | jq -r '.allowed'; }
message() { echo "$RESPONSE" | jq -r '.status.message'; }
warnings() { echo "$RESPONSE" | jq -c '.warnings'; }
code() { echo "$RESPONSE" | jq -r '.status.code'; }
warning_count() { echo "$RESPONSE" | jq -r '.warnings // [] | length'; }
warning() { echo "$RESPONSE" | jq -r '.warnings[0] // empty'; }
patch() { echo "$RESPONSE" | jq -r 'if .patch then (.patch | @base64d | fromjson | tojson) else "none" end'; }

# The patch for a Pod without affinity nor annotations pinned to ARCH...
pin_patch() {
  local arches
  arches=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
  jq -nc --argjson a "$arches" '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": ($a | join(","))}},
    {op: "add", path: "/spec/affinity", value: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
      {nodeSelectorTerms: [{matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: $a}]}]}}}}]'
}
