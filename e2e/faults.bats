#!/usr/bin/env bats
# Registry faults end to end: policy.wasm run by a kwctl-compatible host (KWCTL: the test host by
# default) against a real registry (e2e/registry.bash) and the fault registry in front of it
# (target/host/fault-registry, see test-host/README.md). Every fault must give what
# onLookupFailure promises, naming the image and the cause, with one lookup per image.
#   bats e2e/faults.bats                  # through target/host/test-host
#   KWCTL=kwctl bats e2e/faults.bats      # through kwctl: the cases that need the fault
#                                         # registry or the time limit are skipped
# Timings are printed as "# ..." lines.

load requests

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  export KWCTL="${KWCTL:-.tools/bin/kwctl}"
  export POLICY="${POLICY:-policy.wasm}"
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
  faults_start
  # A port nothing listens on: the registry is down.
  DEAD="127.0.0.1:$(free_port)"
  export DEAD
  export SOURCES_ALL="$REGISTRY_DIR/sources-faults.yml"
  printf 'insecure_sources: ["%s", "%s", "%s"]\n' "$REGISTRY" "$FAULTS" "$DEAD" >"$SOURCES_ALL"
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
  CALLS="$BATS_TEST_TMPDIR/calls.json"
}

# ---- the fault registry ----

# free_port: a 127.0.0.1 port nothing listens on.
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# faults_start: starts target/debug/fault-registry (FAULT_REGISTRY to override) in front of
# $REGISTRY; exports FAULTS=127.0.0.1:PORT, FAULTS_PID, FAULTS_LOG (one JSON line per request).
faults_start() {
  local bin="${FAULT_REGISTRY:-${CARGO_TARGET_DIR:-target}/debug/fault-registry}"
  if [ ! -x "$bin" ]; then
    echo "building fault-registry (cargo build -p registry-fixtures)" >&2
    cargo build -q -p registry-fixtures --bin fault-registry </dev/null >&2 || return 1
  fi
  mkdir -p "$REGISTRY_DIR/faults"
  export FAULTS_LOG="$REGISTRY_DIR/faults/requests.jsonl"
  # No stdin; output to a file; fd 3 closed so bats does not wait on it.
  "$bin" --upstream "$REGISTRY" --addr-file "$REGISTRY_DIR/faults/addr" --log "$FAULTS_LOG" \
    </dev/null >"$REGISTRY_DIR/faults/out.log" 2>&1 3>&- &
  export FAULTS_PID=$!
  echo "$FAULTS_PID" >"$REGISTRY_DIR/faults/pid"
  for _ in $(seq 1 100); do
    if [ -s "$REGISTRY_DIR/faults/addr" ]; then
      FAULTS="$(cat "$REGISTRY_DIR/faults/addr")"
      export FAULTS
      return 0
    fi
    kill -0 "$FAULTS_PID" 2>/dev/null || break
    sleep 0.05
  done
  cat "$REGISTRY_DIR/faults/out.log" >&2
  return 1
}

faults_stop() {
  local pid="${FAULTS_PID:-}"
  if [ -z "$pid" ] && [ -n "${REGISTRY_DIR:-}" ] && [ -f "$REGISTRY_DIR/faults/pid" ]; then
    pid="$(cat "$REGISTRY_DIR/faults/pid")"
  fi
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset FAULTS_PID
}

# manifest_gets NAME: manifest GETs the fault registry saw for repositories starting with NAME.
manifest_gets() {
  jq -s --arg p "/v2/$1" '[.[] | select(.method == "GET" and (.path | startswith($p)) and (.path | contains("/manifests/")))] | length' "$FAULTS_LOG"
}

is_test_host() { [[ "$(basename "$KWCTL")" == test-host ]]; }

need_test_host() {
  if ! is_test_host; then skip "needs the test host (${1:-the fault registry})"; fi
}

# ---- requests and responses (the rest in e2e/requests.bash) ----

# evaluate [FLAG...]: runs the host; RESPONSE is its stdout line. With the test host, the
# host-call report goes to $CALLS.
evaluate() {
  local extra=()
  if is_test_host; then extra=(--host-calls-report "$CALLS"); fi
  run "$KWCTL" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" "${extra[@]}" "$@" "$POLICY"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

# manifest_calls IMAGE: v1/oci_manifest calls of the last evaluation for IMAGE (test host).
manifest_calls() {
  jq --arg i "$1" '[.calls[] | select(.operation == "v1/oci_manifest" and .image == $i)] | length' "$CALLS"
}

GOOD_ARCHES=(amd64 arm64) # of $REGISTRY/multi/oci-index:1.0

# lookup_fails IMAGE CAUSE [FLAG...]: a Pod with IMAGE (failing with CAUSE) and a good image,
# under each onLookupFailure: ignoreImage decides from the good image and warns, accept accepts
# unchanged and warns, reject rejects; each names the image and the cause. One lookup of IMAGE.
lookup_fails() {
  local image=$1 cause=$2
  shift 2
  pod_request "$(containers "$image" "$REGISTRY/multi/oci-index:1.0")"

  evaluate --settings-json '{"onLookupFailure":"ignoreImage"}' "$@"
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch "${GOOD_ARCHES[@]}")" ]
  [ "$(warning_count)" = 1 ]
  [[ "$(warning)" == "image-arch-affinity: image \"$image\" was left out of the architecture decision because its lookup failed: "*"$cause"* ]]
  if is_test_host; then [ "$(manifest_calls "$image")" = 1 ]; fi

  evaluate --settings-json '{"onLookupFailure":"accept"}' "$@"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warning_count)" = 1 ]
  [[ "$(warning)" == "image-arch-affinity: the Pod was not pinned to an architecture because a lookup failed: image \"$image\": "*"$cause"* ]]
  if is_test_host; then [ "$(manifest_calls "$image")" = 1 ]; fi

  evaluate --settings-json '{"onLookupFailure":"reject"}' "$@"
  [ "$(allowed)" = false ]
  [ "$(patch)" = none ]
  [[ "$(message)" == "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"$image\": "*"$cause"*" (setting onLookupFailure: reject)" ]]
  if is_test_host; then [ "$(manifest_calls "$image")" = 1 ]; fi
}

# ---- faults ----

@test "registry down (connection refused)" {
  lookup_fails "$DEAD/app:1.0" "Connection refused"
}

@test "401 (with a WWW-Authenticate challenge) and 403" {
  need_test_host
  run curl -sS -D - -o /dev/null "http://$FAULTS/v2/faults/status-401/probe/manifests/1.0"
  [[ "$output" == "HTTP/1.1 401 Unauthorized"* ]]
  [[ "$output" == *"WWW-Authenticate: Bearer realm=\"http://$FAULTS/token\",service=\"fault-registry\",scope=\"repository:faults/status-401/probe:pull\""* ]]
  lookup_fails "$FAULTS/faults/status-401/app:1.0" \
    "Not authorized"
  lookup_fails "$FAULTS/faults/status-403/app:1.0" \
    "OCI API error: requested access to the resource is denied"
  # One registry GET per evaluation: no retry.
  [ "$(manifest_gets faults/status-401/app)" = 3 ]
  [ "$(manifest_gets faults/status-403)" = 3 ]
}

@test "404 repository and 404 tag (real registry)" {
  lookup_fails "$REGISTRY/nope/missing:1.0" "manifest unknown"
  lookup_fails "$REGISTRY/multi/oci-index:nope" "manifest unknown"
}

@test "500, and a proxy's 503 page" {
  need_test_host
  lookup_fails "$FAULTS/faults/status-500/app:1.0" "code: 500"
  lookup_fails "$FAULTS/faults/status-503/app:1.0" "code: 503, message: <html>"
  [ "$(manifest_gets faults/status-500)" = 3 ]
}

@test "a manifest that is not JSON, JSON that is not an image, an OCI artifact" {
  need_test_host
  lookup_fails "$FAULTS/faults/not-json/app:1.0" "the registry's answer is not a manifest: expected value at line 1 column 1"
  lookup_fails "$FAULTS/faults/not-an-image/app:1.0" "the registry's answer is neither an image manifest nor an image index"
  lookup_fails "$FAULTS/faults/oci-artifact/app:1.0" "the image config names no runnable architecture"
  # Where the host re-parses the manifest (policy-evaluator), the host itself fails the lookup.
  lookup_fails "$FAULTS/faults/not-json/app2:1.0" "Failed to parse manifest: expected value at line 1 column 1" --reserialize-manifests
  lookup_fails "$FAULTS/faults/not-an-image/app2:1.0" "Failed to parse manifest: missing field \`schemaVersion\`" --reserialize-manifests
  lookup_fails "$FAULTS/faults/oci-artifact/app2:1.0" "the image config names no runnable architecture" --reserialize-manifests
}

@test "an index with zero entries, an index of attestations only" {
  lookup_fails "$REGISTRY/multi/empty-index:1.0" "the image index has no entries"
  lookup_fails "$REGISTRY/multi/attestations-only:1.0" \
    "the image index has no runnable entry (its 2 entries are attestations or of unknown platform)"
}

@test "an index of 10,000 entries: evaluated correctly and fast" {
  need_test_host
  # 1,000 linux/arm64/v8, 999 windows/amd64, 8,000 attestations, the last one linux/riscv64.
  pod_request "$(containers "$FAULTS/faults/huge-index:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch arm64 riscv64)" ]
  [ "$(manifest_calls "$FAULTS/faults/huge-index:1.0")" = 1 ]
  run "$KWCTL" bench --iterations 5 --request-path "$REQUEST" --sources-path "$SOURCES_ALL" "$POLICY"
  [ "$status" -eq 0 ]
  bench=$(echo "$output" | tail -n 1)
  first_ms=$(echo "$bench" | jq '.first_micros / 1000 | floor')
  cached_ms=$(echo "$bench" | jq '.median_micros / 1000 | floor')
  echo "# 10,000-entry index: ${first_ms} ms with the registry lookup, ${cached_ms} ms from the host cache" >&3
  [ "$first_ms" -lt 1000 ]
}

@test "a registry slower than the evaluation time limit: aborted by the host after one call" {
  need_test_host "--timeout-eval-seconds"
  slow="$FAULTS/faults/slow-1500/multi/oci-index:1.0"
  pod_request "$(containers "$slow" "$REGISTRY/multi/docker-list:1.0")"
  for setting in ignoreImage accept reject; do
    before=$(manifest_gets faults/slow-1500)
    start=$(date +%s%N)
    evaluate --timeout-eval-seconds 1 --settings-json "{\"onLookupFailure\":\"$setting\"}"
    ms=$((($(date +%s%N) - start) / 1000000))
    [ "$(allowed)" = false ]
    [ "$(code)" = 500 ]
    [ "$(message)" = "internal server error: Guest call failure: guest code interrupted, execution deadline exceeded" ]
    [[ "$output" == *"test-host: evaluation aborted by the time limit (1s) after 1."* ]]
    # One call, for the slow image; the other image was never asked for.
    [ "$(jq -c '.images' "$CALLS")" = "[\"$slow\"]" ]
    [ "$(jq '.["v1/oci_manifest"]' "$CALLS")" = 1 ]
    [ "$(manifest_gets faults/slow-1500)" = $((before + 1)) ]
    echo "# slow registry (1.5 s) vs 1 s limit, onLookupFailure $setting: aborted, process ${ms} ms" >&3
  done
  # No limit (kwctl's behaviour): evaluated normally, in 1.5 s.
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
}

@test "1,000 containers of 50 images: 50 lookups, well within 2 s" {
  # 50 distinct images: 25 more tags of the OCI index, 25 of the Docker list.
  images=()
  for repo in multi/oci-index multi/docker-list; do
    accept=application/vnd.oci.image.index.v1+json
    [ "$repo" = multi/docker-list ] && accept=application/vnd.docker.distribution.manifest.list.v2+json
    curl -fsS -H "Accept: $accept" -o "$BATS_TEST_TMPDIR/manifest" "http://$REGISTRY/v2/$repo/manifests/1.0"
    for i in $(seq 0 24); do
      curl -fsS -X PUT -H "Content-Type: $accept" --data-binary "@$BATS_TEST_TMPDIR/manifest" \
        "http://$REGISTRY/v2/$repo/manifests/t$i"
      images+=("$REGISTRY/$repo:t$i")
    done
  done
  list=$(printf '%s\n' "${images[@]}" | jq -R . | jq -sc .)
  pod_request "$(jq -nc --argjson imgs "$list" '{containers: [range(1000) as $i | {name: "c\($i)", image: $imgs[$i % 50]}]}')"
  if is_test_host; then
    evaluate --timeout-eval-seconds 2
    [ "$(jq '.["v1/oci_manifest"]' "$CALLS")" = 50 ]
    [ "$(jq '.["v1/oci_manifest_config"]' "$CALLS")" = 0 ]
    [ "$(jq -c '.images' "$CALLS")" = "$list" ]
  else
    evaluate
  fi
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  if is_test_host; then
    run "$KWCTL" bench --iterations 5 --request-path "$REQUEST" --sources-path "$SOURCES_ALL" "$POLICY"
    [ "$status" -eq 0 ]
    bench=$(echo "$output" | tail -n 1)
    first_ms=$(echo "$bench" | jq '.first_micros / 1000 | floor')
    cached_ms=$(echo "$bench" | jq '.median_micros / 1000 | floor')
    echo "# 1,000 containers / 50 images: ${first_ms} ms with 50 registry lookups, ${cached_ms} ms from the host cache" >&3
    [ "$first_ms" -lt 1000 ]
  fi
}
