#!/usr/bin/env bats
# Self-test of e2e/registry.bash and the seeded fixtures (no policy needed):
#   bats e2e/registry.bats

setup_file() {
  load registry.bash
  registry_start
  registry_seed
  export ACCEPT="application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"
}

teardown_file() {
  load registry.bash
  local pid="$REGISTRY_PID"
  registry_stop
  ! kill -0 "$pid" 2>/dev/null
}

# prints "<content-type> <digest>" of a manifest
manifest_head() {
  curl -fsS -o /dev/null -D - -H "Accept: $ACCEPT" "http://$REGISTRY/v2/$1/manifests/$2" |
    tr -d '\r' | awk -F': ' 'tolower($1)=="content-type"{t=$2} tolower($1)=="docker-content-digest"{d=$2} END{print t, d}'
}

@test "registry answers and sources.yml lists it as insecure" {
  run curl -fsS "http://$REGISTRY/v2/"
  [ "$status" -eq 0 ]
  grep -qF "insecure_sources: [\"$REGISTRY\"]" "$SOURCES"
}

@test "digests are exported and served" {
  [ -n "$MULTI_OCI_INDEX_DIGEST" ] && [ -n "$MULTI_DOCKER_LIST_DIGEST" ] && [ -n "$SINGLE_ARM64_OCI_DIGEST" ]
  [ "$(manifest_head multi/oci-index 1.0)" = "application/vnd.oci.image.index.v1+json $MULTI_OCI_INDEX_DIGEST" ]
  [ "$(manifest_head multi/docker-list 1.0)" = "application/vnd.docker.distribution.manifest.list.v2+json $MULTI_DOCKER_LIST_DIGEST" ]
  [ "$(manifest_head single/arm64-oci 1.0)" = "application/vnd.oci.image.manifest.v1+json $SINGLE_ARM64_OCI_DIGEST" ]
  [ "$(manifest_head single/amd64-docker 1.0)" = "application/vnd.docker.distribution.manifest.v2+json $SINGLE_AMD64_DOCKER_DIGEST" ]
  [ "$(manifest_head multi/oci-index "$MULTI_OCI_INDEX_LINUX_ARM64_V8_DIGEST")" = "application/vnd.oci.image.manifest.v1+json $MULTI_OCI_INDEX_LINUX_ARM64_V8_DIGEST" ]
}

@test "every fixture tag exists" {
  for ref in multi/oci-index multi/docker-list single/arm64-oci single/amd64-docker \
             multi/windows-linux multi/windows-only single/armv7 multi/no-os multi/empty-os \
             multi/attestations-only multi/empty-index multi/s390x-only multi/odd-values \
             multi/windows-odd-build single/olm-bundle; do
    run manifest_head "$ref" 1.0
    [ "$status" -eq 0 ] || { echo "missing $ref"; false; }
  done
}

@test "index contents" {
  run bash -c "curl -fsS -H 'Accept: $ACCEPT' http://$REGISTRY/v2/multi/oci-index/manifests/1.0 | jq -c '[.manifests[] | .platform.os + \"/\" + .platform.architecture]'"
  [ "$output" = '["linux/amd64","linux/arm64","unknown/unknown","unknown/unknown"]' ]
  run bash -c "curl -fsS -H 'Accept: $ACCEPT' http://$REGISTRY/v2/multi/no-os/manifests/1.0 | jq -c '[.manifests[].platform | has(\"os\")]'"
  [ "$output" = '[false,false]' ]
  run bash -c "curl -fsS -H 'Accept: $ACCEPT' http://$REGISTRY/v2/multi/empty-os/manifests/1.0 | jq -c '[.manifests[].platform.os]'"
  [ "$output" = '["",""]' ]
  run bash -c "curl -fsS -H 'Accept: $ACCEPT' http://$REGISTRY/v2/multi/empty-index/manifests/1.0 | jq '.manifests | length'"
  [ "$output" = 0 ]
}

@test "missing repository and missing tag are 404" {
  run curl -s -o /dev/null -w '%{http_code}' -H "Accept: $ACCEPT" "http://$REGISTRY/v2/nope/missing/manifests/1.0"
  [ "$output" = 404 ]
  run curl -s -o /dev/null -w '%{http_code}' -H "Accept: $ACCEPT" "http://$REGISTRY/v2/multi/oci-index/manifests/nope"
  [ "$output" = 404 ]
}
