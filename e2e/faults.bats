#!/usr/bin/env bats
# Registry faults end to end: the compiled module run by a Kubewarden host (e2e/host.bash: the
# embedded host, or kwctl >= 1.35 with E2E_HOST=kwctl) against a real registry (e2e/registry.bash)
# and the fault registry in front of it (target/debug/fault-registry, see
# registry-fixtures/README.md). Every fault must give what
# onLookupFailure promises, naming the image and the cause, with one lookup per image (counted
# from the host's --record-host-capabilities-interactions file). The causes are the hosts' own
# error texts (first line): the embedded host words them as kwctl does.
#   bats e2e/faults.bats
# Timings are printed as "# ..." lines.

bats_require_minimum_version 1.5.0
load requests
load host
load faults

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  # The host's backtraces on, as when debugging policy-server: warnings stay one line regardless.
  export RUST_BACKTRACE=1
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
  CALLS="$BATS_TEST_TMPDIR/calls.yml"
}

# ---- requests and responses (the rest in e2e/requests.bash) ----

# evaluate [FLAG...]: the host's `run` on $REQUEST; RESPONSE is its stdout line, $CALLS the host
# calls, ELAPSED_MS the wall time of the host's process.
evaluate() {
  rm -f "$CALLS"
  local start
  start=$(date +%s%N)
  run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" \
    --record-host-capabilities-interactions "$CALLS" "$@" "$POLICY"
  ELAPSED_MS=$((($(date +%s%N) - start) / 1000000))
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
}

# bench_mean_micros: mean `validate` time (microseconds) from `kwctl bench` on $REQUEST, lookups
# answered from the host cache after the first evaluation.
bench_mean_micros() {
  run "$KWCTL" bench --num-samples 10 --warm-up-time 1 --measurement-time 2 \
    --request-path "$REQUEST" --sources-path "$SOURCES_ALL" "$POLICY"
  [ "$status" -eq 0 ]
  # "validate [...]:\n\telapsed\t[min mean max]:\t[1.2ms 3.4ms 5.6ms] ..." (ANSI colours)
  echo "$output" | sed 's/\x1b\[[0-9;]*m//g' | awk '
    /^validate / {v = 1; next}
    v && /elapsed/ {
      match($0, /\]:[ \t]*\[[^]]*\]/); split(substr($0, RSTART + 3, RLENGTH - 3), t, " ")
      x = t[2]; gsub(/\[/, "", x)
      if (x ~ /ns$/) m = 0.001; else if (x ~ /µs$/) m = 1; else if (x ~ /ms$/) m = 1000; else m = 1000000
      sub(/[^0-9.]+$/, "", x); printf "%d\n", x * m; exit
    }'
}

# bench_cached WHAT: on kwctl, kwctl bench's mean validate time on $REQUEST (lookups answered from
# the host cache), printed and bounded (under 0.5 s); the embedded host has no bench command.
bench_cached() {
  on_kwctl || return 0
  local us
  us=$(bench_mean_micros)
  echo "# $1: validate from the host cache $us us (kwctl bench mean)" >&3
  [ "$us" -gt 0 ] && [ "$us" -lt 500000 ]
}

GOOD_ARCHES=(amd64 arm64) # of $REGISTRY/multi/oci-index:1.0

# lookup_fails IMAGE CAUSE [FLAG...]: a Pod with IMAGE (failing with CAUSE) and a good image,
# under each onLookupFailure: ignoreImage decides from the good image and warns, accept accepts
# unchanged and warns, reject rejects; each names the image and the cause, checked whole (CAUSE:
# the host's error as the policy keeps it, its first line). One lookup of IMAGE.
lookup_fails() {
  local image=$1 cause=$2
  shift 2
  pod_request "$(containers "$image" "$REGISTRY/multi/oci-index:1.0")"

  evaluate --settings-json '{"onLookupFailure":"ignoreImage"}' "$@"
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch "${GOOD_ARCHES[@]}")" ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(ignored_warning "$image" "$cause")" ]
  [ "$(manifest_calls "$CALLS" "$image")" = 1 ]

  evaluate --settings-json '{"onLookupFailure":"accept"}' "$@"
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(unpinned_warning "$image" "$cause")" ]
  [ "$(manifest_calls "$CALLS" "$image")" = 1 ]

  evaluate --settings-json '{"onLookupFailure":"reject"}' "$@"
  [ "$(allowed)" = false ]
  [ "$(patch)" = none ]
  [ "$(message)" = "$(rejected_lookup "$image" "$cause")" ]
  [ "$(manifest_calls "$CALLS" "$image")" = 1 ]
}

# ---- faults ----

@test "registry down (connection refused): the host's error in its first line only" {
  # The host's error is several lines (its "Caused by:" chain ends in "Connection refused", and a
  # backtrace follows with RUST_BACKTRACE=1, set in setup_file): the policy keeps the first line.
  lookup_fails "$DEAD/app:1.0" "Fail to interact with OCI registry: error sending request"
  # The last evaluation of lookup_fails rejects: the whole message, exactly.
  [ "$(message)" = "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"$DEAD/app:1.0\": Fail to interact with OCI registry: error sending request (setting onLookupFailure: reject)" ]
}

@test "401 (with a WWW-Authenticate challenge) and 403" {
  run curl -sS -D - -o /dev/null "http://$FAULTS/v2/faults/status-401/probe/manifests/1.0"
  [[ "$output" == "HTTP/1.1 401 Unauthorized"* ]]
  [[ "$output" == *"WWW-Authenticate: Bearer realm=\"http://$FAULTS/token\",service=\"fault-registry\",scope=\"repository:faults/status-401/probe:pull\""* ]]
  lookup_fails "$FAULTS/faults/status-401/app:1.0" \
    "Fail to interact with OCI registry: Not authorized:"
  lookup_fails "$FAULTS/faults/status-403/app:1.0" \
    "Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: requested access to the resource is denied]"
  # One registry GET per evaluation: no retry.
  [ "$(manifest_gets faults/status-401/app)" = 3 ]
  [ "$(manifest_gets faults/status-403)" = 3 ]
}

@test "429 (a registry's pull rate limit): named as such, with what to do, under each onLookupFailure" {
  local image="$FAULTS/faults/status-429/app:1.0"
  local cause="rate-limited by its registry (HTTP 429): Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading:"
  local advice="the registry limits its pulls and every lookup counts as one: look images up through a pull-through cache (setting registryMirrors), give the PolicyServer an authenticated imagePullSecret, or list the most used images in imagePlatforms"
  pod_request "$(containers "$image" "$REGISTRY/multi/oci-index:1.0")"

  evaluate --settings-json '{"onLookupFailure":"ignoreImage"}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch "${GOOD_ARCHES[@]}")" ]
  [ "$(warnings)" = "$(jq -cn --arg a "$(ignored_warning "$image" "$cause")" --arg b "image-arch-affinity: $advice" '[$a, $b]')" ]

  evaluate --settings-json '{"onLookupFailure":"accept"}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warnings)" = "$(jq -cn --arg a "$(unpinned_warning "$image" "$cause")" --arg b "image-arch-affinity: $advice" '[$a, $b]')" ]

  evaluate --settings-json '{"onLookupFailure":"reject"}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$image" "$cause"); $advice" ]
  # A refusal is not cached by the host: each evaluation asked the registry once.
  [ "$(manifest_gets faults/status-429)" = 3 ]
}

@test "404 repository and 404 tag (real registry)" {
  unknown="Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: manifest unknown]"
  lookup_fails "$REGISTRY/nope/missing:1.0" "$unknown"
  lookup_fails "$REGISTRY/multi/oci-index:nope" "$unknown"
}

@test "500, and a proxy's 503 page" {
  lookup_fails "$FAULTS/faults/status-500/app:1.0" \
    "Fail to interact with OCI registry: Server error: code: 500, message: {\"errors\":[{\"code\":\"UNKNOWN\",\"detail\":\"fault-registry: injected 500\",\"message\":\"unknown error\"}]}"
  lookup_fails "$FAULTS/faults/status-503/app:1.0" \
    "Fail to interact with OCI registry: Server error: code: 503, message: <html>"
  [ "$(manifest_gets faults/status-500)" = 3 ]
}

@test "a manifest that is not JSON, JSON that is not an image, an OCI artifact" {
  # The host parses the manifest itself: the first two fail inside the host.
  lookup_fails "$FAULTS/faults/not-json/app:1.0" \
    "Fail to interact with OCI registry: Failed to parse manifest: expected value at line 1 column 1"
  lookup_fails "$FAULTS/faults/not-an-image/app:1.0" \
    "Fail to interact with OCI registry: Failed to parse manifest: missing field \`schemaVersion\` at line 1 column 17"
  # An artifact is a valid image manifest to the host; the policy names its artifact type.
  lookup_fails "$FAULTS/faults/oci-artifact/app:1.0" 'the manifest is an artifact of type "application/spdx+json", not a container image'
}

@test "an index with zero entries, an index of attestations only" {
  lookup_fails "$REGISTRY/multi/empty-index:1.0" "the image index has no entries"
  lookup_fails "$REGISTRY/multi/attestations-only:1.0" \
    "the image index has no runnable entry (its 2 entries are attestations or of unknown platform)"
}

@test "an index of 10,000 entries: evaluated correctly and fast" {
  # 1,000 linux/arm64/v8, 999 windows/amd64, 8,000 attestations, the last one linux/riscv64.
  pod_request "$(containers "$FAULTS/faults/huge-index:1.0")"
  evaluate
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch arm64 riscv64)" ]
  [ "$(manifest_calls "$CALLS" "$FAULTS/faults/huge-index:1.0")" = 1 ]
  echo "# 10,000-entry index: $E2E_HOST run ${ELAPSED_MS} ms (process, registry lookup included)" >&3
  [ "$ELAPSED_MS" -lt 10000 ]
  bench_cached "10,000-entry index"
}

@test "a registry slower than lookupBudgetMilliseconds: later images are not looked up (kwctl has no time limit)" {
  # kwctl run (and the embedded host) has no evaluation time limit (policy-server's
  # --policy-timeout / timeoutEvalSeconds has no kwctl counterpart); the policy's own budget
  # bounds the lookups.
  slow="$FAULTS/faults/slow-1500/multi/oci-index:1.0"
  other="$REGISTRY/multi/docker-list:1.0"
  pod_request "$(containers "$slow" "$other")"
  # The cause, whole, with the milliseconds spent (at least the budget) read from TEXT.
  spent() {
    [[ "$1" =~ "was spent after "([0-9]+)" ms" ]] && [ "${BASH_REMATCH[1]}" -ge 1000 ] &&
      echo "not looked up: the lookup time budget (lookupBudgetMilliseconds: 1000) was spent after ${BASH_REMATCH[1]} ms"
  }

  before=$(manifest_gets faults/slow-1500)
  evaluate --settings-json '{"onLookupFailure":"ignoreImage","lookupBudgetMilliseconds":1000}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(ignored_warning "$other" "$(spent "$(warning)")")" ]
  # One call, for the slow image; the other image was never asked for.
  [ "$(manifest_images "$CALLS")" = "[\"$slow\"]" ]
  [ "$(host_calls "$CALLS")" = "1 0" ]
  [ "$(manifest_gets faults/slow-1500)" = $((before + 1)) ]
  echo "# slow registry (1.5 s), budget 1 s, ignoreImage: $E2E_HOST run ${ELAPSED_MS} ms" >&3

  evaluate --settings-json '{"onLookupFailure":"accept","lookupBudgetMilliseconds":1000}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = none ]
  [ "$(warning_count)" = 1 ]
  [ "$(warning)" = "$(unpinned_warning "$other" "$(spent "$(warning)")")" ]
  [ "$(host_calls "$CALLS")" = "1 0" ]

  evaluate --settings-json '{"onLookupFailure":"reject","lookupBudgetMilliseconds":1000}'
  [ "$(allowed)" = false ]
  [ "$(message)" = "$(rejected_lookup "$other" "$(spent "$(message)")")" ]
  [ "$(host_calls "$CALLS")" = "1 0" ]

  # A budget above the registry's delay: both images looked up, nothing aborts the evaluation.
  evaluate --settings-json '{"lookupBudgetMilliseconds":5000}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warnings)" = null ]
  [ "$(host_calls "$CALLS")" = "2 0" ]
  [ "$ELAPSED_MS" -ge 1500 ]
}

@test "1,000 containers of 50 images: one lookup per distinct image" {
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
  # An uncached lookup of an insecure (plain HTTP) source costs kwctl tens of milliseconds
  # (policy-fetcher tries HTTPS, then HTTPS without verification, then HTTP; the embedded host
  # goes to HTTP at once): 50 of them do not fit the default 1.5 s budget here, so this case
  # raises it.
  evaluate --settings-json '{"lookupBudgetMilliseconds":10000}'
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
  [ "$(warnings)" = null ]
  [ "$(host_calls "$CALLS")" = "50 0" ]
  [ "$(manifest_images "$CALLS")" = "$list" ]
  echo "# 1,000 containers / 50 images: $E2E_HOST run ${ELAPSED_MS} ms (process, 50 uncached registry lookups)" >&3
  bench_cached "1,000 containers / 50 images"
}

@test "live lookups: the host asks and answers what kwctl 1.35.0 recorded in the conformance corpus" {
  # Every case of conformance/cases/ recorded against the registries (live), run again here
  # with --record-host-capabilities-interactions: the same calls, the same answers (the
  # registry's manifests as the host re-serializes them, its errors as the host words them).
  # The corpus names the registries 127.0.0.1:55001 (fixtures), :55002 (faults) and :55003 (down).
  local live=0 case
  for case in conformance/cases/*/; do
    [ "$(jq -r '.live and .module != "trivial"' "$case/case.json")" = true ] || continue
    live=$((live + 1))
    sed -e "s/127\.0\.0\.1:55001/$REGISTRY/g" -e "s/127\.0\.0\.1:55002/$FAULTS/g" -e "s/127\.0\.0\.1:55003/$DEAD/g" \
      "$case/request.json" >"$REQUEST"
    local module=$POLICY
    if [ "$(jq -r .module "$case/case.json")" = manifest ]; then
      module="$BATS_TEST_TMPDIR/manifest.yaml"
      sed "s|MODULE|file://$PWD/$POLICY|" "$case/manifest.yaml" >"$module"
    fi
    # Settings may name a registry too (an imagePlatforms pattern).
    mapfile -t flags < <(jq -r '.flags[]' "$case/case.json" | sed -e "s/127\.0\.0\.1:55001/$REGISTRY/g" \
      -e "s/127\.0\.0\.1:55002/$FAULTS/g" -e "s/127\.0\.0\.1:55003/$DEAD/g")
    rm -f "$CALLS"
    run "$HOST_BIN" run --request-path "$REQUEST" --sources-path "$SOURCES_ALL" \
      --record-host-capabilities-interactions "$CALLS" "${flags[@]}" "$module"
    sed -e "s/${REGISTRY//./\\.}/127.0.0.1:55001/g" -e "s/${FAULTS//./\\.}/127.0.0.1:55002/g" \
      -e "s/${DEAD//./\\.}/127.0.0.1:55003/g" "$CALLS" >"$BATS_TEST_TMPDIR/session.yml" 2>/dev/null || echo '[]' >"$BATS_TEST_TMPDIR/session.yml"
    diff -u "$case/session.yml" "$BATS_TEST_TMPDIR/session.yml" || { echo "case $case"; false; }
  done
  echo "# $live live cases: the same host calls and answers as kwctl recorded" >&3
  [ "$live" -ge 30 ]
}
