#!/usr/bin/env bats
# Publishing: `make publish` pushes the annotated module to an OCI registry (here a local,
# plain-HTTP one, empty but for the policy); kwctl pulls and inspects it, kwctl runs it from
# registry://, and policy-server loads it from registry:// and serves a request (skipped where
# policy-server is not installed: the other cases need kwctl only).

load requests

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  export KWCTL="${KWCTL:-.tools/bin/kwctl}"
  # kwctl's policy store, away from the user's (~/.cache/kubewarden).
  export XDG_CACHE_HOME="$BATS_FILE_TMPDIR/cache"
  source e2e/registry.bash
  registry_start
  registry_seed >/dev/null
  VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
  export VERSION
  export POLICY_URI="registry://$REGISTRY/image-arch-affinity:v$VERSION"
  make -s publish REGISTRY="$REGISTRY" SOURCES="$SOURCES" KWCTL="$KWCTL" >"$BATS_FILE_TMPDIR/publish.log" 2>&1 \
    || { cat "$BATS_FILE_TMPDIR/publish.log" >&2; return 1; }
}

teardown_file() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/registry.bash
  registry_stop
}

setup() {
  cd "$BATS_TEST_DIRNAME/.."
  REQUEST="$BATS_TEST_TMPDIR/request.json"
}

# The policy-server a test started, stopped by its process id even when the test failed.
teardown() {
  source e2e/policy-server.bash
  policy_server_stop
}

# Settings that configure the images' architectures: the Pod is decided without a lookup.
SETTINGS='{"imagePlatforms":[{"image":"example.com/*","architectures":["arm64","amd64"]}]}'

@test "make publish pushes v\$VERSION (Cargo.toml's) to the registry" {
  grep -q "^Policy successfully pushed: $REGISTRY/image-arch-affinity@sha256:" "$BATS_FILE_TMPDIR/publish.log"
  run curl -fsS "http://$REGISTRY/v2/image-arch-affinity/tags/list"
  [ "$output" = "{\"name\":\"image-arch-affinity\",\"tags\":[\"v$VERSION\"]}" ]
}

@test "kwctl pull, then kwctl inspect shows our metadata" {
  run "$KWCTL" pull --sources-path "$SOURCES" "$POLICY_URI"
  [ "$status" -eq 0 ]
  run "$KWCTL" policies
  # Mutating, and context-aware (it may read Nodes: readNodes).
  [[ "$output" == *"| $POLICY_URI | yes      | yes           |"* ]]
  "$KWCTL" inspect --sources-path "$SOURCES" -o yaml "$POLICY_URI" >"$BATS_TEST_TMPDIR/published.yml"
  # Exactly the metadata of the module we built and annotated.
  "$KWCTL" inspect -o yaml annotated-policy.wasm >"$BATS_TEST_TMPDIR/local.yml"
  diff -u "$BATS_TEST_TMPDIR/local.yml" "$BATS_TEST_TMPDIR/published.yml"
  grep -qx "  io.kubewarden.policy.version: $VERSION" "$BATS_TEST_TMPDIR/published.yml"
  grep -qx '  io.kubewarden.policy.title: image-arch-affinity' "$BATS_TEST_TMPDIR/published.yml"
  grep -qx 'mutating: true' "$BATS_TEST_TMPDIR/published.yml"
  [ "$(sed -n '/^hostCapabilities:/,$p' "$BATS_TEST_TMPDIR/published.yml")" = "hostCapabilities:
- kubernetes/get_resource
- kubernetes/list_resources_all
- oci/v1/oci_manifest
- oci/v1/oci_manifest_config" ]
  grep -qx 'backgroundAudit: true' "$BATS_TEST_TMPDIR/published.yml"
}

@test "kwctl run registry://... evaluates a Pod" {
  pod_request "$(containers example.com/app:1.0 example.com/tool:2)"
  run "$KWCTL" run --sources-path "$SOURCES" --settings-json "$SETTINGS" -r "$REQUEST" "$POLICY_URI"
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
}

@test "policy-server loads module: registry://... and serves a request" {
  [ -x "${POLICY_SERVER:-.tools/bin/policy-server}" ] || skip "needs policy-server: it is not installed (${POLICY_SERVER:-.tools/bin/policy-server})"
  cat >"$BATS_TEST_TMPDIR/policies.yml" <<YAML
image-arch-affinity:
  module: $POLICY_URI
  allowedToMutate: true
  hostCapabilities: ["oci/*"]
  settings: $SETTINGS
YAML
  source e2e/policy-server.bash
  policy_server_start "$BATS_TEST_TMPDIR/policies.yml"
  pod_request "$(containers example.com/app:1.0 example.com/tool:2)"
  RESPONSE="$(policy_server_validate image-arch-affinity "$REQUEST")"
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
}

@test "examples/cluster-admission-policy.yaml is what kwctl scaffold manifest writes (make cluster-admission-policy)" {
  make -s cluster-admission-policy OUT="$BATS_TEST_TMPDIR/cap.yaml"
  diff -u examples/cluster-admission-policy.yaml "$BATS_TEST_TMPDIR/cap.yaml"
}

@test "the ClusterAdmissionPolicy scaffolded from the published module is the committed one, and kwctl runs it" {
  oci_url="$(sed -n 's/^  io.kubewarden.policy.ociUrl: //p' metadata.yml)"
  "$KWCTL" scaffold manifest -t ClusterAdmissionPolicy --title image-arch-affinity \
    --sources-path "$SOURCES" "$POLICY_URI" >"$BATS_TEST_TMPDIR/scaffolded.yaml"
  # The same manifest but for the registry it names.
  sed "s|^  module: registry://$oci_url:|  module: registry://$REGISTRY/image-arch-affinity:|" \
    examples/cluster-admission-policy.yaml | grep -v '^#' >"$BATS_TEST_TMPDIR/expected.yaml"
  diff -u "$BATS_TEST_TMPDIR/expected.yaml" "$BATS_TEST_TMPDIR/scaffolded.yaml"
  # kwctl evaluates the policy a ClusterAdmissionPolicy manifest declares.
  pod_request "$(containers "$REGISTRY/multi/oci-index:1.0" "$REGISTRY/multi/docker-list:1.0")"
  run "$KWCTL" run --sources-path "$SOURCES" -r "$REQUEST" "$BATS_TEST_TMPDIR/expected.yaml"
  echo "$output" | grep -v "^ "
  [ "$status" -eq 0 ]
  RESPONSE=$(echo "$output" | tail -n 1)
  [ "$(allowed)" = true ]
  [ "$(patch)" = "$(pin_patch amd64 arm64)" ]
}
