#!/usr/bin/env bash
# Benchmarks on the real hosts (`make bench`; docs/performance.md shows the figures):
#  1. `kwctl bench` of image-arch-affinity, the trivial module (trivial-policy/, accepts
#     everything unread) and Kubewarden's pod-privileged policy, on the same requests:
#     a Pod with 3 images (lookups answered by the host's 60 s OCI cache after the first
#     evaluation), a Pod the policy skips (spec.nodeName set), a Deployment with 3 images, and to
#     split the first case's cost: a Pod with 1 image, the 3-image Pod with its architectures
#     configured (imagePlatforms, no lookup). With the number of host calls the policy makes.
#     And a Pod UPDATE that changes only a label (a bound Pod's: controllers send these all the
#     time), which the policy accepts with no host call.
#  2. One policy-server with the modules (policies.yml), and Debian's wrk against each in turn
#     on 127.0.0.1 (the 3-image Pod, and the label-only UPDATE on image-arch-affinity and the
#     trivial module): req/s, p99 and image-arch-affinity's throughput ratios.
# Images are looked up in a local registry (e2e/registry.bash) with the fixture images.
#
# Knobs (environment):
#   KWCTL, POLICY_SERVER   the hosts (default .tools/bin/kwctl, .tools/bin/policy-server)
#   BENCH_SECONDS          length of one wrk run (default 15)
#   BENCH_ROUNDS           wrk runs per policy, interleaved (default 2)
#   BENCH_THREADS, BENCH_CONNECTIONS   wrk's -t and -c (default 2 and 16)
#   BENCH_KWCTL_SECONDS    kwctl bench measurement time per case, whole seconds (default 3)
#   BENCH_CASES            the kwctl bench cases to run (default all)
#   BENCH_OUT              results directory (default target/bench)
#   REFERENCE_MODULE       Kubewarden's pod-privileged policy, annotated (e.g. pulled with
#                          `kwctl pull registry://ghcr.io/kubewarden/policies/pod-privileged:v1.0.8`);
#                          unset or absent: the trivial module stands in, and the tables say so
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export KWCTL="${KWCTL:-.tools/bin/kwctl}"
export POLICY_SERVER="${POLICY_SERVER:-.tools/bin/policy-server}"
BENCH_SECONDS="${BENCH_SECONDS:-15}"
BENCH_ROUNDS="${BENCH_ROUNDS:-2}"
BENCH_THREADS="${BENCH_THREADS:-2}"
BENCH_CONNECTIONS="${BENCH_CONNECTIONS:-16}"
BENCH_KWCTL_SECONDS="${BENCH_KWCTL_SECONDS:-3}"
OUT="${BENCH_OUT:-target/bench}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# kwctl's policy store and wasmtime cache stay out of the user's home.
export XDG_CACHE_HOME="$OUT/cache"

command -v wrk >/dev/null || { echo "bench.sh: wrk not found (apt-get install wrk)" >&2; exit 1; }

# ---- Modules ----
POLICY_MODULE="$ROOT/annotated-policy.wasm"
[ -f "$POLICY_MODULE" ] || { echo "bench.sh: $POLICY_MODULE missing (make annotated-policy.wasm)" >&2; exit 1; }
cargo build -q --target=wasm32-wasip1 --release -p trivial-policy
TRIVIAL_MODULE="$OUT/trivial-policy-annotated.wasm"
"$KWCTL" annotate -m trivial-policy/metadata.yml -o "$TRIVIAL_MODULE" \
  target/wasm32-wasip1/release/trivial_policy.wasm
REFERENCE_MODULE="${REFERENCE_MODULE:-}"
REFERENCE_NAME=pod-privileged
if [ ! -f "$REFERENCE_MODULE" ]; then
  echo "bench.sh: no REFERENCE_MODULE (${REFERENCE_MODULE:-unset}): the trivial module stands in for pod-privileged" >&2
  REFERENCE_MODULE="$TRIVIAL_MODULE"
  REFERENCE_NAME="pod-privileged (absent: trivial module)"
fi
NAMES=(image-arch-affinity trivial pod-privileged)
declare -A MODULE=([image-arch-affinity]="$POLICY_MODULE" [trivial]="$TRIVIAL_MODULE" [pod-privileged]="$REFERENCE_MODULE")

# The hosts run without Rust backtraces, as policy servers do in production, whatever the
# caller's environment says (RUST_BACKTRACE=1 makes them capture one for every error they make).
unset RUST_BACKTRACE RUST_LIB_BACKTRACE

# ---- Registry and requests ----
source e2e/registry.bash
source e2e/policy-server.bash
source e2e/requests.bash
cleanup() {
  policy_server_stop
  registry_stop
}
trap cleanup EXIT
registry_start
registry_seed >/dev/null

IMAGES=("$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/docker-list:1.0" "$REGISTRY/single/arm64-oci:1.0")
# Each case: a request, and the settings image-arch-affinity gets (the other modules get none).
# The last two cases split the first one's cost: one image (one lookup), and the same 3 images
# with their architectures configured (imagePlatforms: no lookup, the guest's work alone).
CASES=(pod-3-images pod-skipped deployment-3-images pod-1-image pod-3-images-configured pod-update-label)
if [ -n "${BENCH_CASES:-}" ]; then
  read -r -a CASES <<<"$BENCH_CASES"
fi
CONFIGURED='{"imagePlatforms":[{"image":"'"$REGISTRY"'/*","architectures":["arm64"]}]}'
declare -A CASE_REQUEST=([pod-3-images]=pod-3-images [pod-skipped]=pod-skipped
  [deployment-3-images]=deployment-3-images [pod-1-image]=pod-1-image
  [pod-3-images-configured]=pod-3-images [pod-update-label]=pod-update-label)
declare -A CASE_SETTINGS=([pod-3-images-configured]="$CONFIGURED")
REQUEST="$OUT/pod-3-images.json"
pod_request "$(containers "${IMAGES[@]}")"
REQUEST="$OUT/pod-skipped.json"
pod_request "$(containers "${IMAGES[@]}" | jq -c '. + {nodeName: "node-1"}')"
REQUEST="$OUT/deployment-3-images.json"
workload_request Deployment CREATE "$(containers "${IMAGES[@]}")"
REQUEST="$OUT/pod-1-image.json"
pod_request "$(containers "${IMAGES[0]}")"
REQUEST="$OUT/pod-update-label.json"
BOUND="$(containers "${IMAGES[@]}" | jq -c '. + {nodeName: "node-1"}')"
pod_update_request "" "$BOUND" "$BOUND"
jq '.oldObject.metadata.labels = {app: "p"} | .object.metadata.labels = {app: "p", rollout: "2"}' \
  "$REQUEST" >"$REQUEST.tmp" && mv "$REQUEST.tmp" "$REQUEST"

# ---- 1. kwctl bench ----
# to_us 12.3µs|450ns|1.2ms|1.1s: the duration in microseconds.
to_us() {
  awk -v d="$1" 'BEGIN {
    match(d, /^[0-9.]+/); v = substr(d, 1, RLENGTH); u = substr(d, RLENGTH + 1)
    if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000; else if (u == "s") v *= 1e6
    printf "%.1f", v }'
}

# policy_host_calls REQUEST [SETTINGS_JSON]: how many host calls image-arch-affinity makes for it
# (kwctl's recording of the host-capability interactions).
policy_host_calls() {
  local record="$OUT/host-calls.yml"
  rm -f "$record"
  "$KWCTL" run --sources-path "$SOURCES" --settings-json "${2:-{\}}" -r "$1" \
    --record-host-capabilities-interactions "$record" "${MODULE[image-arch-affinity]}" \
    >/dev/null 2>&1 || return 1
  if [ -f "$record" ]; then grep -c '^- type: Exchange' "$record" || true; else echo 0; fi
}

# kwctl_bench MODULE REQUEST [SETTINGS_JSON]: "mean median" of `validate` in microseconds. kwctl prints
#   validate [N iterations in T with S samples]:
#   	elapsed	[min mean max]:	[8.35µs 16.91µs 57.20µs] (sample data: med = 15.21µs, ...)
kwctl_bench() {
  local line min mean max median
  "$KWCTL" --no-color bench --sources-path "$SOURCES" --warm-up-time 1 \
    --measurement-time "$BENCH_KWCTL_SECONDS" --settings-json "${3:-{\}}" -r "$2" "$1" \
    >"$OUT/kwctl-bench.raw" 2>&1 \
    || { cat "$OUT/kwctl-bench.raw" >&2; return 1; }
  # kwctl bench colours its report even with --no-color.
  sed 's/\x1b\[[0-9;]*m//g' "$OUT/kwctl-bench.raw" >"$OUT/kwctl-bench.log"
  line="$(grep -A1 '^validate \[' "$OUT/kwctl-bench.log" | grep 'elapsed')" \
    || { cat "$OUT/kwctl-bench.log" >&2; return 1; }
  read -r min mean max median < <(echo "$line" \
    | sed -E 's/.*\]:[[:space:]]*\[([^]]*)\].*med = ([^,]+),.*/\1 \2/')
  echo "$(to_us "$mean") $(to_us "$median")"
}

{
  echo "## kwctl bench: validate, mean (median) per evaluation, us"
  echo
  echo "| request | image-arch-affinity's host calls | image-arch-affinity | trivial | $REFERENCE_NAME |"
  echo "|---|---|---|---|---|"
} | tee "$OUT/kwctl-bench.md"
for case in "${CASES[@]}"; do
  request="$OUT/${CASE_REQUEST[$case]}.json"
  settings="${CASE_SETTINGS[$case]:-}"
  row="| $case | $(policy_host_calls "$request" "$settings") |"
  for name in "${NAMES[@]}"; do
    if [ "$name" = image-arch-affinity ]; then
      result="$(kwctl_bench "${MODULE[$name]}" "$request" "$settings")"
    else
      result="$(kwctl_bench "${MODULE[$name]}" "$request")"
    fi
    read -r mean median <<<"$result"
    row="$row $mean ($median) |"
  done
  echo "$row" | tee -a "$OUT/kwctl-bench.md"
done

# ---- 2. policy-server + wrk ----
cat >"$OUT/policies.yml" <<YAML
image-arch-affinity:
  module: file://${MODULE[image-arch-affinity]}
  allowedToMutate: true
  hostCapabilities: ["oci/*"]
  settings: {}
trivial:
  module: file://${MODULE[trivial]}
  settings: {}
pod-privileged:
  module: file://${MODULE[pod-privileged]}
  settings: {}
# The same Pod decided without lookups (imagePlatforms): what the host calls cost.
image-arch-affinity-configured:
  module: file://${MODULE[image-arch-affinity]}
  allowedToMutate: true
  hostCapabilities: ["oci/*"]
  settings: $CONFIGURED
YAML
policy_server_start "$OUT/policies.yml"

# The AdmissionReviews wrk POSTs: the 3-image Pod, and the skipped Pod for one extra run.
for case in pod-3-images pod-skipped pod-update-label; do
  cat >"$OUT/$case.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[$(policy_server_review "$OUT/$case.json")]==]
LUA
done

# Each policy answers the request as expected before it is loaded.
for name in "${NAMES[@]}" image-arch-affinity-configured; do
  answer="$(policy_server_validate "$name" "$OUT/pod-3-images.json")"
  [ "$(echo "$answer" | jq -r .allowed)" = true ] \
    || { echo "bench.sh: $name did not accept the Pod: $answer" >&2; exit 1; }
done
[ "$(policy_server_validate image-arch-affinity "$OUT/pod-3-images.json" | jq -r '.patch | @base64d | fromjson | length')" = 2 ] \
  || { echo "bench.sh: image-arch-affinity did not pin the Pod" >&2; exit 1; }
answer="$(policy_server_validate image-arch-affinity "$OUT/pod-update-label.json")"
[ "$(echo "$answer" | jq -r '.allowed and (.patch == null)')" = true ] \
  || { echo "bench.sh: image-arch-affinity did not accept the label-only UPDATE unchanged: $answer" >&2; exit 1; }

# wrk_run RUN: "req/s p99_ms" for the run's policy and request (RUN_POLICY, RUN_CASE).
wrk_run() {
  wrk -t "$BENCH_THREADS" -c "$BENCH_CONNECTIONS" -d "${BENCH_SECONDS}s" --latency \
    -s "$OUT/${RUN_CASE[$1]}.lua" "$POLICY_SERVER_URL/validate/${RUN_POLICY[$1]}" >"$OUT/wrk-$1.txt"
  if grep -q 'Non-2xx' "$OUT/wrk-$1.txt"; then
    echo "bench.sh: errors answering $1:" >&2
    cat "$OUT/wrk-$1.txt" >&2
    return 1
  fi
  awk '
    function ms(s) { if (s ~ /us$/) return s / 1000; if (s ~ /ms$/) return s + 0; if (s ~ /s$/) return s * 1000; return s }
    /^Requests\/sec:/ { rps = $2 }
    /^ +99%/ { p99 = ms($2) }
    END { printf "%.0f %.2f\n", rps, p99 }' "$OUT/wrk-$1.txt"
}

# BENCH_ROUNDS rounds, each running wrk once per policy in turn, so that a change in the
# machine's load (it is shared) weighs on every policy alike; req/s and p99 are the means of the
# rounds.
# The runs: the 3-image Pod on each policy, then two that split image-arch-affinity's cost: the
# same Pod with configured architectures (no host call, same patch size), and the skipped Pod
# (no host call, no patch).
declare -A RPS P99
WRK_NAMES=("${NAMES[@]}" image-arch-affinity-configured image-arch-affinity-skipped-pod
  image-arch-affinity-label-update trivial-label-update)
declare -A RUN_POLICY=([image-arch-affinity]=image-arch-affinity [trivial]=trivial
  [pod-privileged]=pod-privileged [image-arch-affinity-configured]=image-arch-affinity-configured
  [image-arch-affinity-skipped-pod]=image-arch-affinity
  [image-arch-affinity-label-update]=image-arch-affinity [trivial-label-update]=trivial)
declare -A RUN_CASE=([image-arch-affinity]=pod-3-images [trivial]=pod-3-images
  [pod-privileged]=pod-3-images [image-arch-affinity-configured]=pod-3-images
  [image-arch-affinity-skipped-pod]=pod-skipped
  [image-arch-affinity-label-update]=pod-update-label [trivial-label-update]=pod-update-label)
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$BENCH_ROUNDS"); do
  for name in "${WRK_NAMES[@]}"; do
    result="$(wrk_run "$name")"
    cp "$OUT/wrk-$name.txt" "$OUT/wrk-$name-round$round.txt"
    read -r rps p99 <<<"$result"
    RPS[$name]="$(awk -v a="${RPS[$name]:-0}" -v b="$rps" -v n="$BENCH_ROUNDS" 'BEGIN { printf "%.0f", a + b / n }')"
    P99[$name]="$(awk -v a="${P99[$name]:-0}" -v b="$p99" -v n="$BENCH_ROUNDS" 'BEGIN { printf "%.2f", a + b / n }')"
  done
done
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
{
  echo
  echo "## policy-server $("$POLICY_SERVER" --version | head -n 1 | awk '{print $NF}') + wrk: 3-image Pod, ${BENCH_THREADS} threads x ${BENCH_CONNECTIONS} connections, ${BENCH_ROUNDS} rounds of ${BENCH_SECONDS} s per policy, $(nproc) cores"
  echo
  echo "Load average (1, 5, 15 min) before: $LOAD_BEFORE; after: $LOAD_AFTER."
  echo
  echo "| policy | request | req/s | p99 (ms) | image-arch-affinity's throughput relative to it |"
  echo "|---|---|---|---|---|"
  for name in "${WRK_NAMES[@]}"; do
    label="${RUN_POLICY[$name]}"
    [ "$label" = pod-privileged ] && label="$REFERENCE_NAME"
    echo "| $label | ${RUN_CASE[$name]} | ${RPS[$name]} | ${P99[$name]} | $(ratio "${RPS[image-arch-affinity]}" "${RPS[$name]}")x |"
  done
  echo
  echo "Label-only Pod UPDATE: image-arch-affinity's throughput is $(ratio "${RPS[image-arch-affinity-label-update]}" "${RPS[trivial-label-update]}")x the trivial module's."
} | tee "$OUT/wrk.md"
echo
echo "bench.sh: results in $OUT (kwctl-bench.md, wrk.md, wrk-*.txt)"
