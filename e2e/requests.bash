# Requests, responses and recorded host calls shared by the e2e suites (loaded with bats' `load`).

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

# kwctl runs with RUST_BACKTRACE unset: with it set, the host appends a stack backtrace to the
# error text of a failed lookup, which the policy then quotes in its warnings and messages.
unset RUST_BACKTRACE RUST_LIB_BACKTRACE

# recorded_calls FILE: one "TAG IMAGE" line per host call in a kwctl
# --record-host-capabilities-interactions file, in call order (TAG: OciManifest,
# OciManifestAndConfig, OciManifestDigest).
recorded_calls() {
  [ -f "$1" ] || { echo "no host-call record $1" >&2; return 1; }
  awk '/^    !/ {tag = substr($1, 2)} /^    image: / {print tag, $2}' "$1"
}

# host_calls FILE: "<v1/oci_manifest calls> <v1/oci_manifest_config calls>" recorded in FILE.
host_calls() {
  recorded_calls "$1" | awk '{n[$1]++} END {printf "%d %d\n", n["OciManifest"], n["OciManifestAndConfig"]}'
}

# manifest_calls FILE IMAGE: v1/oci_manifest calls for IMAGE recorded in FILE.
manifest_calls() {
  recorded_calls "$1" | awk -v i="$2" '$1 == "OciManifest" && $2 == i {n++} END {print n + 0}'
}

# manifest_images FILE: the images of the v1/oci_manifest calls recorded in FILE, as a JSON list.
manifest_images() {
  recorded_calls "$1" | awk '$1 == "OciManifest" {print $2}' | jq -R . | jq -sc .
}
