#!/usr/bin/env bash
# Benchmarks on the real hosts (`make bench`; docs/performance.md shows the figures):
#  1. `kwctl bench` of image-arch-affinity, the trivial module (trivial-policy/, accepts
#     everything unread) and Kubewarden's pod-privileged policy, on the same requests:
#     a Pod with 3 images (lookups answered by the host's 60 s OCI cache after the first
#     evaluation), a Pod the policy skips (spec.nodeName set), a Deployment with 3 images.
#  2. One policy-server with the three modules (policies.yml) and Debian's wrk against each,
#     one after the other, on 127.0.0.1, BENCH_SECONDS each: req/s, p99 and the ratios.
# Images are looked up in a local registry (e2e/registry.bash) with the fixture images.
#
# Knobs (environment): KWCTL, POLICY_SERVER (default .tools/bin/...), BENCH_SECONDS (wrk run
# length, default 15), BENCH_THREADS (2), BENCH_CONNECTIONS (16), BENCH_KWCTL_SECONDS (kwctl
# bench measurement time per case, default 3), BENCH_OUT (results directory, target/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export KWCTL="${KWCTL:-.tools/bin/kwctl}"
export POLICY_SERVER="${POLICY_SERVER:-.tools/bin/policy-server}"
BENCH_SECONDS="${BENCH_SECONDS:-15}"
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
REFERENCE_MODULE="$ROOT/../shared/kubewarden/pod-privileged-v1.0.8-annotated.wasm"
REFERENCE_NAME=pod-privileged
if [ ! -f "$REFERENCE_MODULE" ]; then
  echo "bench.sh: $REFERENCE_MODULE absent: the trivial module stands in for pod-privileged" >&2
  REFERENCE_MODULE="$TRIVIAL_MODULE"
  REFERENCE_NAME="pod-privileged (absent: trivial module)"
fi
NAMES=(image-arch-affinity trivial pod-privileged)
declare -A MODULE=([image-arch-affinity]="$POLICY_MODULE" [trivial]="$TRIVIAL_MODULE" [pod-privileged]="$REFERENCE_MODULE")

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
CASES=(pod-3-images pod-skipped deployment-3-images)
REQUEST="$OUT/pod-3-images.json"
pod_request "$(containers "${IMAGES[@]}")"
REQUEST="$OUT/pod-skipped.json"
pod_request "$(containers "${IMAGES[@]}" | jq -c '. + {nodeName: "node-1"}')"
REQUEST="$OUT/deployment-3-images.json"
workload_request Deployment CREATE "$(containers "${IMAGES[@]}")"

# ---- 1. kwctl bench ----
# to_us 12.3µs|450ns|1.2ms|1.1s: the duration in microseconds.
to_us() {
  awk -v d="$1" 'BEGIN {
    match(d, /^[0-9.]+/); v = substr(d, 1, RLENGTH); u = substr(d, RLENGTH + 1)
    if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000; else if (u == "s") v *= 1e6
    printf "%.1f", v }'
}

# kwctl_bench MODULE REQUEST: "mean median" of `validate` in microseconds. kwctl prints
#   validate [N iterations in T with S samples]:
#   	elapsed	[min mean max]:	[8.35µs 16.91µs 57.20µs] (sample data: med = 15.21µs, ...)
kwctl_bench() {
  local line min mean max median
  line="$("$KWCTL" --no-color bench --sources-path "$SOURCES" --warm-up-time 1 \
    --measurement-time "$BENCH_KWCTL_SECONDS" -r "$2" "$1" 2>/dev/null \
    | grep -A1 '^validate \[' | grep 'elapsed')" || return 1
  read -r min mean max median < <(echo "$line" \
    | sed -E 's/.*\]:[[:space:]]*\[([^]]*)\].*med = ([^,]+),.*/\1 \2/')
  echo "$(to_us "$mean") $(to_us "$median")"
}

{
  echo "## kwctl bench: validate, mean (median) per evaluation, us"
  echo
  echo "| request | image-arch-affinity | trivial | $REFERENCE_NAME |"
  echo "|---|---|---|---|"
} | tee "$OUT/kwctl-bench.md"
for case in "${CASES[@]}"; do
  row="| $case |"
  for name in "${NAMES[@]}"; do
    read -r mean median < <(kwctl_bench "${MODULE[$name]}" "$OUT/$case.json")
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
YAML
policy_server_start "$OUT/policies.yml"

# The AdmissionReview wrk POSTs: the 3-image Pod.
BODY="$(policy_server_review "$OUT/pod-3-images.json")"
cat >"$OUT/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[$BODY]==]
LUA

# Each policy answers the request as expected before it is loaded.
for name in "${NAMES[@]}"; do
  answer="$(policy_server_validate "$name" "$OUT/pod-3-images.json")"
  [ "$(echo "$answer" | jq -r .allowed)" = true ] \
    || { echo "bench.sh: $name did not accept the Pod: $answer" >&2; exit 1; }
done
[ "$(policy_server_validate image-arch-affinity "$OUT/pod-3-images.json" | jq -r '.patch | @base64d | fromjson | length')" = 2 ] \
  || { echo "bench.sh: image-arch-affinity did not pin the Pod" >&2; exit 1; }

# wrk_run NAME: "req/s p99_ms" for /validate/NAME.
wrk_run() {
  wrk -t "$BENCH_THREADS" -c "$BENCH_CONNECTIONS" -d "${BENCH_SECONDS}s" --latency \
    -s "$OUT/post.lua" "$POLICY_SERVER_URL/validate/$1" >"$OUT/wrk-$1.txt"
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

declare -A RPS P99
for name in "${NAMES[@]}"; do
  read -r RPS[$name] P99[$name] < <(wrk_run "$name")
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
{
  echo
  echo "## policy-server $("$POLICY_SERVER" --version | awk '{print $NF}') + wrk: 3-image Pod, ${BENCH_THREADS} threads x ${BENCH_CONNECTIONS} connections, ${BENCH_SECONDS} s each, $(nproc) cores"
  echo
  echo "| policy | req/s | p99 (ms) | image-arch-affinity's throughput relative to it |"
  echo "|---|---|---|---|"
  for name in "${NAMES[@]}"; do
    label="$name"
    [ "$name" = pod-privileged ] && label="$REFERENCE_NAME"
    echo "| $label | ${RPS[$name]} | ${P99[$name]} | $(ratio "${RPS[image-arch-affinity]}" "${RPS[$name]}")x |"
  done
} | tee "$OUT/wrk.md"
echo
echo "bench.sh: results in $OUT (kwctl-bench.md, wrk.md, wrk-*.txt)"
