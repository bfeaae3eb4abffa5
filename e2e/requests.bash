# Requests, expected answers and recorded host calls shared by the e2e suites (loaded with bats'
# `load`).

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

# pod_update_request SUB_RESOURCE OLD_SPEC SPEC: a Pod UPDATE AdmissionRequest to $REQUEST, on the
# Pod itself (SUB_RESOURCE "") or on pods/ephemeralcontainers (kubectl debug).
pod_update_request() {
  jq -n --arg sub "$1" --argjson old "$2" --argjson spec "$3" \
    'def pod($s): {apiVersion: "v1", kind: "Pod", metadata: {name: "p", namespace: "default"}, spec: $s};
     {uid: "e2e", kind: {group: "", version: "v1", kind: "Pod"},
      resource: {group: "", version: "v1", resource: "pods"},
      operation: "UPDATE", name: "p", namespace: "default", userInfo: {username: "e2e"}}
     + (if $sub == "" then {} else {subResource: $sub} end)
     + {object: pod($spec), oldObject: pod($old)}' >"$REQUEST"
}

# containers IMAGE...: a spec with one container per image.
containers() {
  local images=("$@")
  printf '%s\n' "${images[@]}" | jq -R . | jq -s '{containers: [to_entries[] | {name: "c\(.key)", image: .value}]}'
}

# with_volumes NAME=REFERENCE...: the spec on stdin with one image volume per argument.
with_volumes() {
  local spec
  spec=$(cat)
  printf '%s\n' "$@" | jq -R 'split("=") | {name: .[0], image: {reference: (.[1:] | join("=")), pullPolicy: "IfNotPresent"}}' |
    jq -sc --argjson spec "$spec" '$spec + {volumes: .}'
}

allowed() { echo "$RESPONSE" | jq -r '.allowed'; }
message() { echo "$RESPONSE" | jq -r '.status.message'; }
warnings() { echo "$RESPONSE" | jq -c '.warnings'; }
code() { echo "$RESPONSE" | jq -r '.status.code'; }
warning_count() { echo "$RESPONSE" | jq -r '.warnings // [] | length'; }
warning() { echo "$RESPONSE" | jq -r '.warnings[0] // empty'; }
patch() { echo "$RESPONSE" | jq -r 'if .patch then (.patch | @base64d | fromjson | tojson) else "none" end'; }

# Expected messages. The policy's texts, restated: a host error is kept as its first line; a
# warning fits 256 characters, cut in the middle of its variable part (after its first two thirds,
# keeping the last third, joined by " … ").
REJECTED_LOOKUP="image-arch-affinity: cannot tell which architectures the Pod's images run on"
IGNORED_LOOKUP="was left out of the architecture decision because its lookup failed"
UNPINNED_LOOKUP="image-arch-affinity: the Pod was not pinned to an architecture because a lookup failed"

# cut_middle TEXT MAX: TEXT, or when longer than MAX characters, its first two thirds and last third
# of MAX - 3 characters joined by " … ".
cut_middle() {
  local text=$1 max=$2
  if [ "${#text}" -le "$max" ]; then
    printf '%s' "$text"
    return
  fi
  local tail=$(((max - 3) / 3))
  printf '%s … %s' "${text:0:max-3-tail}" "${text: -tail}"
}

# lookup_warning LEAD CAUSE: the warning LEAD then CAUSE, CAUSE cut to what fits (at least 80).
lookup_warning() {
  local room=$((256 - ${#1}))
  [ "$room" -ge 80 ] || room=80
  printf '%s%s' "$1" "$(cut_middle "$2" "$room")"
}

# ignored_warning IMAGE CAUSE / unpinned_warning IMAGE CAUSE / rejected_lookup IMAGE CAUSE...: the
# onLookupFailure ignoreImage and accept warnings, and the reject message (one IMAGE CAUSE pair per
# failed image), for lookups that failed with CAUSE.
ignored_warning() { lookup_warning "image-arch-affinity: image \"$1\" $IGNORED_LOOKUP: " "$2"; }
unpinned_warning() { lookup_warning "$UNPINNED_LOOKUP: image \"$1\": " "$2"; }
rejected_lookup() {
  local all=""
  while [ "$#" -ge 2 ]; do
    all+="${all:+; }image \"$1\": $2"
    shift 2
  done
  printf '%s: %s (setting onLookupFailure: reject)' "$REJECTED_LOOKUP" "$all"
}

# no_common_warning LEAD LISTING TAIL: the onNoCommonArchitecture: accept warning for the refusal
# LEAD LISTING TAIL, LISTING cut to what fits.
no_common_warning() {
  local tail="$3 (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"
  local room=$((256 - ${#1} - ${#tail}))
  [ "$room" -ge 40 ] || room=40
  printf '%s%s%s' "$1" "$(cut_middle "$2" "$room")" "$tail"
}

# capped LEAD MIDDLE TAIL: the policy's warning of LEAD, MIDDLE and TAIL that fits 256
# characters: MIDDLE cut in its middle first (at least 40 kept), then what precedes TAIL; TAIL
# whole. Counted in characters (jq), as the policy counts them.
capped() {
  jq -nr --arg lead "$1" --arg middle "$2" --arg tail "$3" '
    def cut($s; $max): if ($s | length) <= $max then $s
      else ((($max - 3) / 3) | floor) as $t | $s[0:($max - 3 - $t)] + " … " + $s[($s | length) - $t:] end;
    ([256 - ($lead | length) - ($tail | length), 40] | max) as $room
    | cut($lead + cut($middle; $room); 256 - ($tail | length)) + $tail'
}

# left_out_warning IMAGE VALUES: the warning for an image's index entries left out because no
# node reports VALUES (`architecture "x y", os "plan9"`).
left_out_warning() {
  capped "image-arch-affinity: image \"$1\": index entries left out of the architecture decision (no node reports " "$2" ")"
}

# The patch for a Pod without affinity nor annotations pinned to ARCH...
pin_patch() {
  local arches
  arches=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
  jq -nc --argjson a "$arches" '[
    {op: "add", path: "/metadata/annotations", value: {"image-arch-affinity.kubewarden.io/architectures": ($a | join(","))}},
    {op: "add", path: "/spec/affinity", value: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
      {nodeSelectorTerms: [{matchExpressions: [{key: "kubernetes.io/arch", operator: "In", values: $a}]}]}}}}]'
}

# workload_request KIND OPERATION TEMPLATE_SPEC [OLD_TEMPLATE_SPEC]: a workload AdmissionRequest.
workload_request() {
  local kind=$1 operation=$2 spec=$3 old=${4:-null}
  jq -n --arg kind "$kind" --arg op "$operation" --argjson spec "$spec" --argjson old "$old" '
    def template($s): {metadata: {labels: {app: "w"}}, spec: $s};
    def body($s): if $kind == "CronJob"
      then {schedule: "* * * * *", jobTemplate: {spec: {template: template($s)}}}
      else {replicas: 1, selector: {matchLabels: {app: "w"}}, template: template($s)} end;
    def group: {Job: "batch", CronJob: "batch", ReplicationController: ""}[$kind] // "apps";
    def api_version: if group == "" then "v1" else group + "/v1" end;
    {uid: "e2e", kind: {group: group, version: "v1", kind: $kind},
     resource: {group: group, version: "v1", resource: (($kind | ascii_downcase) + "s")}, operation: $op,
     name: "w", namespace: "default", userInfo: {username: "e2e"},
     object: {apiVersion: api_version, kind: $kind, metadata: {name: "w", namespace: "default"}, spec: body($spec)},
     oldObject: (if $old == null then null else
       {apiVersion: api_version, kind: $kind, metadata: {name: "w", namespace: "default"}, spec: (body($old) + {replicas: 3})} end)}' >"$REQUEST"
}

# The patch pinning a workload's template at PATH to ARCH...
template_patch() {
  local at=$1
  shift
  pin_patch "$@" | jq -c --arg at "$at" 'map(.path = $at + .path)'
}


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

# doc_block FILE HEADING_REGEX: the first ``` block after the first line of FILE matching the
# regex (the README's and docs' blocks that the suites run).
doc_block() {
  awk -v re="$2" 'f == 0 && $0 ~ re {f = 1; next} f == 1 && /^```/ {f = 2; next} f == 2 && /^```/ {exit} f == 2' "$1"
}
