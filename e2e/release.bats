#!/usr/bin/env bats
# The release's dry run (docs/release.md): the commands the release workflow runs
# (scripts/release.sh), run here against a local plain-HTTP registry with a throwaway cosign key
# instead of GitHub's OIDC token, and nothing sent to Sigstore's public instances. cosign and
# syft are built from their Go modules by `make deps` (scripts/install-deps.sh).
#
# On kwctl (E2E_HOST=kwctl) kwctl pushes annotated-policy.wasm, as the release does, and kwctl
# verify checks the signature. On the embedded host, which cannot annotate, `embedded-host push
# --force` pushes policy.wasm: the manifest kwctl pushes for the same bytes (the last case shows
# it where kwctl is installed).

load host

setup_file() {
  cd "$BATS_TEST_DIRNAME/.."
  export COSIGN="${COSIGN:-$PWD/.tools/bin/cosign}" SYFT="${SYFT:-$PWD/.tools/bin/syft}"
  for tool in "$COSIGN" "$SYFT"; do
    [ -x "$tool" ] || { echo "release.bats: $tool is not built: run make deps" >&2; return 1; }
  done
  source e2e/registry.bash
  registry_start
  export WORK="$BATS_FILE_TMPDIR"
  # The throwaway key pairs: the one that signs, and another that must not verify.
  export COSIGN_PASSWORD=""
  (cd "$WORK" && "$COSIGN" generate-key-pair --output-key-prefix release >/dev/null 2>&1 \
    && "$COSIGN" generate-key-pair --output-key-prefix other >/dev/null 2>&1)
  export SIGNING_KEY="$WORK/release.key"
  VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
  export VERSION
  export URI="registry://$REGISTRY/policies/image-arch-affinity:v$VERSION"
  if on_kwctl; then
    export PUSHER="$KWCTL" PUSH_FLAGS=""
  else
    export PUSHER="$PWD/${EMBEDDED_HOST:-target/debug/embedded-host}" PUSH_FLAGS="--force"
  fi
  # shellcheck disable=SC2086 # PUSH_FLAGS: zero or one word
  REF=$(KWCTL="$PUSHER" scripts/release.sh push "$POLICY" "$URI" $PUSH_FLAGS 2>"$WORK/push.log") \
    || { cat "$WORK/push.log" >&2; return 1; }
  export REF
  KWCTL="$PUSHER" scripts/release.sh sign "$REF" >"$WORK/sign.log" 2>&1 \
    || { cat "$WORK/sign.log" >&2; return 1; }
  (cd "$WORK" && "$OLDPWD/scripts/release.sh" sbom "image-arch-affinity-v$VERSION" HEAD \
    >sbom.log 2>&1) || { cat "$WORK/sbom.log" >&2; return 1; }
}

teardown_file() {
  cd "$BATS_TEST_DIRNAME/.."
  source e2e/registry.bash
  registry_stop
}

setup() {
  cd "$BATS_TEST_DIRNAME/.."
}

# digest_of REF: the sha256 hex of REG/REPO@sha256:HEX.
digest_of() {
  echo "${1##*@sha256:}"
}

@test "release.sh push: the module at the tag, the immutable reference naming its manifest" {
  [[ "$REF" == "$REGISTRY/policies/image-arch-affinity@sha256:"* ]]
  manifest=$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$REGISTRY/v2/policies/image-arch-affinity/manifests/v$VERSION")
  [ "$(printf '%s' "$manifest" | sha256sum | cut -d ' ' -f 1)" = "$(digest_of "$REF")" ]
  [ "$(echo "$manifest" | jq -r '.config.mediaType')" = application/vnd.wasm.config.v1+json ]
  [ "$(echo "$manifest" | jq -c '[.layers[] | [.mediaType, .digest]]')" = \
    "[[\"application/vnd.wasm.content.layer.v1+wasm\",\"sha256:$(sha256sum "$POLICY" | cut -d ' ' -f 1)\"]]" ]
}

@test "release.sh sign: cosign's .sig tag and cosign 3's bundle, both verified with the key" {
  digest=$(digest_of "$REF")
  # The .sig tag, and the referrers tag schema's sha256-<digest> (distribution 2.8 has no
  # referrers API) that points at cosign 3's bundle.
  tags=$(curl -fsS "http://$REGISTRY/v2/policies/image-arch-affinity/tags/list" | jq -c '.tags | sort')
  [ "$tags" = "[\"sha256-$digest\",\"sha256-$digest.sig\",\"v$VERSION\"]" ]
  # That tag's index lists one Sigstore bundle (cosign verify accepts either signature: this is
  # what shows the bundle was written).
  index=$(curl -fsS -H 'Accept: application/vnd.oci.image.index.v1+json' \
    "http://$REGISTRY/v2/policies/image-arch-affinity/manifests/sha256-$digest")
  [ "$(echo "$index" | jq -r '[.manifests[].artifactType] | join(",")')" = application/vnd.dev.sigstore.bundle.v0.3+json ]
  bundle_manifest=$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$REGISTRY/v2/policies/image-arch-affinity/manifests/$(echo "$index" | jq -r '.manifests[0].digest')")
  [ "$(echo "$bundle_manifest" | jq -r .subject.digest)" = "sha256:$digest" ]
  bundle=$(curl -fsS "http://$REGISTRY/v2/policies/image-arch-affinity/blobs/$(echo "$bundle_manifest" | jq -r '.layers[0].digest')")
  [ "$(echo "$bundle" | jq -r .mediaType)" = "application/vnd.dev.sigstore.bundle.v0.3+json" ]
  # Signed with the key: no certificate, and no transparency log entry.
  [ "$(echo "$bundle" | jq -c '[(.verificationMaterial | has("certificate")), (.verificationMaterial.tlogEntries // [] | length)]')" = "[false,0]" ]
  VERIFY_KEY="$WORK/release.pub" run scripts/release.sh verify "$REF"
  [ "$status" -eq 0 ]
}

@test "release.sh verify refuses the signatures with another key" {
  VERIFY_KEY="$WORK/other.pub" run scripts/release.sh verify "$REF"
  [ "$status" -ne 0 ]
  [[ "$output" == *"no matching signatures"* ]]
}

@test "kwctl verify accepts the module with the key, and refuses it with another" {
  needs_kwctl verify
  # kwctl verifies a key's signature against a trust root that must hold a CA: a throwaway one,
  # so that nothing is fetched from Sigstore's TUF repository.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=dry-run -keyout "$BATS_TEST_TMPDIR/ca.key" -out "$BATS_TEST_TMPDIR/ca.pem" 2>/dev/null
  ca=$(openssl x509 -in "$BATS_TEST_TMPDIR/ca.pem" -outform DER | base64 -w 0)
  jq -n --arg ca "$ca" '{
    mediaType: "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
    trustedRoot: {mediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
      tlogs: [], ctlogs: [], timestampAuthorities: [],
      certificateAuthorities: [{subject: {commonName: "dry-run"}, uri: "https://ca.invalid",
        certChain: {certificates: [{rawBytes: $ca}]}, validFor: {start: "2020-01-01T00:00:00Z"}}]},
    signingConfig: {mediaType: "application/vnd.dev.sigstore.signingconfig.v0.2+json",
      caUrls: [], oidcUrls: [], rekorTlogUrls: [], tsaUrls: [],
      rekorTlogConfig: {selector: "ANY"}, tsaConfig: {selector: "ANY"}}}' >"$BATS_TEST_TMPDIR/trust.json"
  verify=("$KWCTL" verify --sources-path "$SOURCES" --sigstore-trust-config "$BATS_TEST_TMPDIR/trust.json")
  run "${verify[@]}" -k "$WORK/release.pub" "registry://$REF"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Policy successfully verified"* ]]
  run "${verify[@]}" -k "$WORK/other.pub" "registry://$REF"
  [ "$status" -ne 0 ]
  [[ "$output" == *"cannot be validated"* ]]
}

@test "release.sh sbom: an SPDX 2.3 document of the sources naming every crate of Cargo.lock" {
  sbom="$WORK/policy-sbom.spdx.json"
  [ "$(jq -r .spdxVersion "$sbom")" = SPDX-2.3 ]
  [ "$(jq -r .name "$sbom")" = "image-arch-affinity-v$VERSION" ]
  # Every crate Cargo.lock pins from crates.io, with its version (name@version, sorted).
  awk '/^\[\[package\]\]/{name=""; version=""} /^name = /{name=$3} /^version = /{version=$3}
       /^source = "registry\+https:\/\/github.com\/rust-lang\/crates.io-index"/{print name "@" version}' \
    Cargo.lock | tr -d '"' | sort -u >"$BATS_TEST_TMPDIR/locked"
  jq -r '.packages[] | select(any(.externalRefs[]?; .referenceLocator | startswith("pkg:cargo/")))
         | "\(.name)@\(.versionInfo)"' "$sbom" | sort -u >"$BATS_TEST_TMPDIR/listed"
  [ "$(wc -l <"$BATS_TEST_TMPDIR/locked")" -gt 100 ]
  comm -23 "$BATS_TEST_TMPDIR/locked" "$BATS_TEST_TMPDIR/listed" >"$BATS_TEST_TMPDIR/missing"
  [ ! -s "$BATS_TEST_TMPDIR/missing" ] || { cat "$BATS_TEST_TMPDIR/missing"; false; }
  # The crates the module is built from, by name and version.
  sdk=$(grep -A1 '^name = "kubewarden-policy-sdk"' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
  grep -qx "kubewarden-policy-sdk@$sdk" "$BATS_TEST_TMPDIR/listed"
}

@test "release.sh verify-sbom: the SBOM's bundle verifies with the key, and an altered SBOM does not" {
  cd "$WORK"
  VERIFY_KEY="$WORK/release.pub" run "$OLDPWD/scripts/release.sh" verify-sbom
  [ "$status" -eq 0 ]
  [[ "$output" == *"Verified OK"* ]]
  cp policy-sbom.spdx.json "$BATS_TEST_TMPDIR/sbom"
  sed -i 's/SPDX-2.3/SPDX-2.2/' policy-sbom.spdx.json
  VERIFY_KEY="$WORK/release.pub" run "$OLDPWD/scripts/release.sh" verify-sbom
  cp "$BATS_TEST_TMPDIR/sbom" policy-sbom.spdx.json
  [ "$status" -ne 0 ]
}

@test "the release workflow runs these commands, with the cosign and syft built here" {
  workflow=.github/workflows/release.yml
  for command in "sbom" "push annotated-policy.wasm" "sign" "verify" "verify-sbom"; do
    grep -q "scripts/release.sh $command" "$workflow" || { echo "release.yml never runs release.sh $command"; false; }
  done
  cosign_version=$(sed -n 's/^COSIGN_VERSION=//p' scripts/install-deps.sh)
  syft_version=$(sed -n 's/^SYFT_VERSION=//p' scripts/install-deps.sh)
  [ "$(sed -n 's/^ *cosign-release: //p' "$workflow" | sort -u)" = "$cosign_version" ]
  [ "$(grep -o 'anchore/syft/cmd/syft@[^ ]*' "$workflow" | sort -u)" = "anchore/syft/cmd/syft@$syft_version" ]
  [ "$(go version -m "$COSIGN" | awk '$1 == "mod" { print $3 }')" = "$cosign_version" ]
  [ "$(go version -m "$SYFT" | awk '$1 == "mod" { print $3 }')" = "$syft_version" ]
}

@test "embedded-host push pushes the manifest kwctl push pushes" {
  needs_kwctl push
  host_ref=$(target/debug/embedded-host push --sources-path "$SOURCES" -o json "$POLICY" \
    "registry://$REGISTRY/embedded/image-arch-affinity:v$VERSION" | jq -r .immutable_ref)
  [ "$(digest_of "$host_ref")" = "$(digest_of "$REF")" ]
}
