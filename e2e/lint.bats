#!/usr/bin/env bats
# `make lint` beyond clippy: actionlint over the GitHub workflows (scripts/lint-workflows.sh), the
# version agreement (scripts/check-version.sh) and the manifests' agreement with metadata.yml
# (scripts/check-manifests.sh). Each passes on the tree, and fails, with the exact message, on a
# copy with one error put in: a workflow error, a version that disagrees, a manifest that drifts.
# And what `make check` and `make help` run, and that every mutant patch of k8s-judge/mutants/
# still applies to src/.
# Needs what `make deps` installs: actionlint in .tools/bin, shellcheck. And docs/verify.md's
# verification config is one kwctl reads (on kwctl).

load requests

setup() {
  # The make commands below run as from a shell, also when `make test` runs this suite (a
  # sub-make would print "make[N]: Entering directory" and "make[N]: ***" lines).
  unset MAKEFLAGS MFLAGS MAKELEVEL
  cd "$BATS_TEST_DIRNAME/.."
  REPO=$PWD
  VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
  ACTIONLINT_VERSION=$(sed -n 's/^ACTIONLINT_VERSION=//p' scripts/install-deps.sh)
  SHELLCHECK_VERSION=$(shellcheck --version | sed -n 's/^version: //p')
}

# copy_workflows: the workflows and their lint script in a git repository of their own (actionlint
# resolves the local reusable workflow, ./.github/workflows/ci.yml, in the repository it is run in).
copy_workflows() {
  COPY=$BATS_TEST_TMPDIR/repo
  mkdir -p "$COPY/scripts" "$COPY/.github"
  cp -r .github/workflows "$COPY/.github/"
  cp scripts/lint-workflows.sh "$COPY/scripts/"
  git -C "$COPY" init -q
}

# inject FILE SED_SCRIPT: edits the copy's .github/workflows/FILE, and fails when nothing changed.
inject() {
  sed -i "$2" "$COPY/.github/workflows/$1"
  ! cmp -s "$COPY/.github/workflows/$1" ".github/workflows/$1"
}

lint_copy() {
  run env ACTIONLINT="$REPO/.tools/bin/actionlint" bash "$COPY/scripts/lint-workflows.sh"
  echo "$output"
}

# line_of FILE TEXT: the number of the copy's first line of .github/workflows/FILE holding TEXT.
line_of() {
  grep -nF -- "$2" "$COPY/.github/workflows/$1" | head -n 1 | cut -d: -f1
}

# finding FILE LINE COLUMN MESSAGE MARKER: actionlint's report of one error: where, what, and the
# line quoted with MARKER (^~~~) under it from COLUMN on.
finding() {
  local code pad indent
  code=$(sed -n "${2}p" "$COPY/.github/workflows/$1")
  pad=$(printf '%*s' "${#2}" '')
  indent=$(printf '%*s' "$(($3 - 1))" '')
  printf '.github/workflows/%s:%s:%s: %s\n%s |\n%s | %s\n%s | %s%s' \
    "$1" "$2" "$3" "$4" "$pad" "$2" "$code" "$pad" "$indent" "$5"
}

@test "make lint runs make deps, then check-version, check-manifests, actionlint on the workflows, and clippy" {
  run make -n lint
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = 'bash scripts/install-deps.sh all
bash scripts/check-version.sh ""
bash scripts/check-manifests.sh
bash scripts/lint-workflows.sh
bash scripts/check-kubewarden-pins.sh
cargo clippy --workspace --all-targets -- -D warnings' ]
}

@test "make check runs fmt, clippy, check-version, check-manifests and the policy's tests with fewer oracle cases, nothing of make deps" {
  run make -n check CHECK_CASES=300
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = 'cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
bash scripts/check-version.sh ""
bash scripts/check-manifests.sh
SCHEDULING_CASES=300 cargo test
cargo test -p registry-fixtures' ]
}

@test "make help names every target with a line of its own" {
  run make -s help
  echo "$output"
  [ "$status" -eq 0 ]
  # Each target of the Makefile but the trivial module's (a path of target/) has its line.
  for target in $(sed -n 's/^\([A-Za-z0-9_.\/-]*\):.*/\1/p' Makefile | grep -v '^\.PHONY$'); do
    grep -qE "^  $target +[A-Za-z]" <<<"$output" || { echo "no help line for $target"; false; }
  done
  [ "${lines[0]}" = "  all                                    The annotated module (the default target)." ]
}

@test "make check-manifests: the README's, docs/node-aware.md's and the example's policies route metadata.yml's rules" {
  run make -s check-manifests
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "check-manifests: README.md, docs/node-aware.md and examples/cluster-admission-policy.yaml route metadata.yml's 5 rules" ]
}

@test "make check-manifests fails, naming each difference, on a manifest that drifts" {
  COPY=$BATS_TEST_TMPDIR/repo
  mkdir -p "$COPY/scripts"
  cp -r README.md docs examples metadata.yml "$COPY/"
  cp scripts/check-manifests.sh "$COPY/scripts/"
  sed -i 's/resources: \["jobs", "cronjobs"\]/resources: ["jobs"]/' "$COPY/docs/node-aware.md"
  sed -i 's/^  mutating: true$/  mutating: false/' "$COPY/examples/cluster-admission-policy.yaml"
  ! cmp -s "$COPY/docs/node-aware.md" docs/node-aware.md
  run bash "$COPY/scripts/check-manifests.sh"
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$output" = "manifests disagree with metadata.yml:
  docs/node-aware.md's rules (< metadata.yml's, > its own):
    < apiGroups=batch;apiVersions=v1;resources=jobs,cronjobs;operations=CREATE,UPDATE
    > apiGroups=batch;apiVersions=v1;resources=jobs;operations=CREATE,UPDATE
  examples/cluster-admission-policy.yaml's mutating (< metadata.yml's, > its own):
    < true
    > false
  docs/node-aware.md's policy but settings, backgroundAudit and contextAwareResources (< README.md's, > its own):
    <       resources: [\"jobs\", \"cronjobs\"]
    >       resources: [\"jobs\"]" ]
}

@test "every Kubewarden action that installs kwctl verifies the identity its kwctl version was signed with" {
  run make -s check-kubewarden-pins
  [ "$status" -eq 0 ]
  [ "$output" = "check-kubewarden-pins: 5 Kubewarden actions installing kwctl and 1 policy-server image, each verified against the identity its version was signed with" ]
  copy_workflows
  cp scripts/check-kubewarden-pins.sh "$COPY/scripts/"
  check_copy() { run bash "$COPY/scripts/check-kubewarden-pins.sh"; echo "$output"; }
  signed_by() { echo "https://github.com/kubewarden/$1/.github/workflows/build-kwctl.yml@refs/tags/$2"; }
  # v7.0.1 verifies kwctl 1.35.0 against the repository's new name, which signed only 1.36 on.
  v701=143b9e4b11ddc47370482267383586e6f1bc7efe
  inject release.yml "s/push-artifacthub@[0-9a-f]*/push-artifacthub@$v701/"
  check_copy
  [ "$status" -eq 1 ]
  [ "$output" = "check-kubewarden-pins: .github/workflows/release.yml:$(line_of release.yml push-artifacthub@): kubewarden/github-actions/push-artifacthub@143b9e4 (v7.0.1) verifies kwctl v1.35.0 against $(signed_by adm-controller v1.35.0), but kwctl v1.35.0 was signed by $(signed_by kubewarden-controller v1.35.0)" ]
  # v7.0.0 asked for a kwctl of 1.36, which only the new name signed.
  cp .github/workflows/release.yml "$COPY/.github/workflows/"
  inject ci.yml 's/kwctl-version: v1.35.0/kwctl-version: v1.36.0/'
  check_copy
  [ "$status" -eq 1 ]
  [ "$output" = "check-kubewarden-pins: .github/workflows/ci.yml:$(line_of ci.yml kwctl-installer@): kubewarden/github-actions/kwctl-installer@76e132d (v7.0.0) verifies kwctl v1.36.0 against $(signed_by kubewarden-controller v1.36.0), but kwctl v1.36.0 was signed by $(signed_by adm-controller v1.36.0)" ]
  # policy-server 1.36 verified against the old name's release workflow.
  cp .github/workflows/ci.yml "$COPY/.github/workflows/"
  inject ci.yml 's|policy-server:v1.35.0|policy-server:v1.36.0|'
  check_copy
  [ "$status" -eq 1 ]
  [ "$output" = "check-kubewarden-pins: .github/workflows/ci.yml:$(line_of ci.yml 'IDENTITY: '): policy-server v1.36.0 is verified against https://github.com/kubewarden/kubewarden-controller/.github/workflows/release.yml@refs/tags/v1.35.0, but it was signed by https://github.com/kubewarden/adm-controller/.github/workflows/release.yml@refs/tags/v1.36.0" ]
  # A commit whose action was not read.
  cp .github/workflows/ci.yml "$COPY/.github/workflows/"
  inject ci.yml 's/kwctl-installer@[0-9a-f]*/kwctl-installer@0123456789abcdef0123456789abcdef01234567/'
  check_copy
  [ "$status" -eq 1 ]
  [ "$output" = "check-kubewarden-pins: .github/workflows/ci.yml:$(line_of ci.yml kwctl-installer@): kubewarden/github-actions/kwctl-installer@0123456789abcdef0123456789abcdef01234567 is not a commit whose kwctl verification was read: read its kwctl-installer/action.yml (and push-artifacthub's) and add it to scripts/check-kubewarden-pins.sh" ]
}

@test "make deps built the pinned actionlint" {
  [ -n "$ACTIONLINT_VERSION" ]
  run .tools/bin/actionlint -version
  [ "${lines[0]}" = "v$ACTIONLINT_VERSION" ]
}

@test "the workflows pass actionlint" {
  run make -s lint-workflows
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "lint-workflows: actionlint v$ACTIONLINT_VERSION, shellcheck $SHELLCHECK_VERSION: .github/workflows/ci.yml .github/workflows/mutants.yml .github/workflows/release.yml" ]
  # The copy the tests below break passes as it is.
  copy_workflows
  lint_copy
  [ "$status" -eq 0 ]
}

@test "actionlint fails on an output no job declares" {
  copy_workflows
  inject release.yml 's/needs\.publish\.outputs\.immutable-ref/needs.publish.outputs.immutable_ref/'
  lint_copy
  [ "$status" -eq 1 ]
  [ "$output" = "$(finding release.yml "$(line_of release.yml 'outputs.immutable_ref')" 20 \
    'property "immutable_ref" is not defined in object type {immutable-ref: string} [expression]' \
    '^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~')" ]
}

@test "actionlint fails on a runner label GitHub does not have" {
  copy_workflows
  inject ci.yml 's/runs-on: ubuntu-24.04/runs-on: ubuntu-42.04/'
  lint_copy
  [ "$status" -eq 1 ]
  [ "${lines[0]}" = ".github/workflows/ci.yml:$(line_of ci.yml 'runs-on: ubuntu-42.04'):14: "'label "ubuntu-42.04" is unknown. available labels are "windows-latest", "windows-latest-8-cores", "windows-2025", "windows-2025-vs2026", "windows-2022", "windows-11-arm", "ubuntu-slim", "ubuntu-latest", "ubuntu-latest-4-cores", "ubuntu-latest-8-cores", "ubuntu-latest-16-cores", "ubuntu-24.04", "ubuntu-24.04-arm", "ubuntu-22.04", "ubuntu-22.04-arm", "macos-latest", "macos-latest-xlarge", "macos-latest-large", "macos-26-intel", "macos-26-xlarge", "macos-26-large", "macos-26", "macos-15-intel", "macos-15-xlarge", "macos-15-large", "macos-15", "macos-14-xlarge", "macos-14-large", "macos-14", "self-hosted", "x64", "arm", "arm64", "linux", "macos", "windows". if it is a custom label for self-hosted runner, set list of labels in actionlint.yaml config file [runner-label]' ]
  [ "${#lines[@]}" -eq 4 ]
}

@test "actionlint fails on a needs: naming no job" {
  copy_workflows
  inject release.yml '0,/^    needs: publish$/s//    needs: pubish/'
  lint_copy
  [ "$status" -eq 1 ]
  [ "$output" = "$(finding release.yml "$(line_of release.yml '  github-release:')" 3 \
    'job "github-release" needs job "pubish" which does not exist in this workflow [job-needs]' \
    '^~~~~~~~~~~~~~~')
$(finding release.yml "$(line_of release.yml 'needs.publish.outputs.immutable-ref')" 20 \
      'property "publish" is not defined in object type {} [expression]' \
      '^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~')" ]
}

@test "actionlint runs shellcheck on run: scripts" {
  copy_workflows
  inject release.yml 's/make check-version TAG="\$TAG"/make check-version TAG=$TAG/'
  lint_copy
  [ "$status" -eq 1 ]
  [ "$output" = "$(finding release.yml "$(line_of release.yml 'run: make check-version TAG=$TAG')" 9 \
    'shellcheck reported issue in this script: SC2086:info:1:24: Double quote to prevent globbing and word splitting [shellcheck]' \
    '^~~~')" ]
}

@test "make check-version: every place names Cargo.toml's version, and so does TAG" {
  run make -s check-version
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "check-version: $VERSION in Cargo.toml, Cargo.lock, metadata.yml, artifacthub-pkg.yml and 7 references to the module" ]
  run make -s check-version TAG="v$VERSION"
  [ "$status" -eq 0 ]
  [ "$output" = "check-version: $VERSION in Cargo.toml, Cargo.lock, metadata.yml, artifacthub-pkg.yml, the tag v$VERSION and 7 references to the module" ]
  run make -s check-version TAG=v9.9.9
  echo "$output"
  [ "$status" -ne 0 ]
  [ "${lines[0]}" = "version mismatch: Cargo.toml's version is $VERSION, but" ]
  [ "${lines[1]}" = "  the tag is v9.9.9" ]
  [ "${lines[2]}" = "make: *** [Makefile:$(grep -n 'scripts/check-version.sh' Makefile | cut -d: -f1): check-version] Error 1" ]
  [ "${#lines[@]}" -eq 3 ]
}

# copy_versioned: the files check-version reads, and the Makefile, in a directory of their own.
copy_versioned() {
  COPY=$BATS_TEST_TMPDIR/repo
  mkdir -p "$COPY/scripts" "$COPY/src"
  cp -r Makefile Cargo.toml Cargo.lock metadata.yml artifacthub-pkg.yml README.md docs examples \
    "$COPY/"
  cp scripts/check-version.sh "$COPY/scripts/"
  run make -s -C "$COPY" check-version
  [ "$status" -eq 0 ]
}

@test "make check-version fails on a version that disagrees" {
  copy_versioned
  sed -i "s/^  io.kubewarden.policy.version: $VERSION\$/  io.kubewarden.policy.version: 9.9.9/" \
    "$COPY/metadata.yml"
  sed -i "0,/image-arch-affinity:v$VERSION/s//image-arch-affinity:v9.9.9/" "$COPY/README.md"
  run make -s -C "$COPY" check-version
  echo "$output"
  [ "$status" -ne 0 ]
  [ "${lines[0]}" = "version mismatch: Cargo.toml's version is $VERSION, but" ]
  [ "${lines[1]}" = "  metadata.yml's io.kubewarden.policy.version is 9.9.9" ]
  [ "${lines[2]}" = "  README.md:$(grep -n "image-arch-affinity:v$VERSION" README.md | head -n 1 | cut -d: -f1) names image-arch-affinity:v9.9.9" ]
  [ "${#lines[@]}" -eq 4 ]
}

@test "make check-version fails on a new Cargo.toml version the rest does not name" {
  copy_versioned
  sed -i "0,/^version = \"$VERSION\"\$/s//version = \"9.9.9\"/" "$COPY/Cargo.toml"
  run make -s -C "$COPY" check-version TAG=v9.9.9
  echo "$output"
  [ "$status" -ne 0 ]
  [ "${lines[0]}" = "version mismatch: Cargo.toml's version is 9.9.9, but" ]
  [ "${lines[1]}" = "  Cargo.lock's image-arch-affinity is $VERSION" ]
  [ "${lines[2]}" = "  metadata.yml's io.kubewarden.policy.version is $VERSION" ]
  [ "${lines[3]}" = "  artifacthub-pkg.yml's version is $VERSION" ]
  # Then each reference to the module, artifacthub-pkg.yml's first.
  [ "${lines[4]}" = "  artifacthub-pkg.yml:$(grep -n "image-arch-affinity:v$VERSION" artifacthub-pkg.yml | head -n 1 | cut -d: -f1) names image-arch-affinity:v$VERSION" ]
  [ "$(grep -c "  .* names .*v$VERSION" <<<"$output")" -eq 7 ]
}

@test "docs/verify.md's verification config is one kwctl reads" {
  KWCTL=${KWCTL:-.tools/bin/kwctl}
  [ -x "$KWCTL" ] || skip "needs kwctl verify: kwctl is not installed"
  doc_block docs/verify.md '^## Enforcing it in the cluster' >"$BATS_TEST_TMPDIR/verification.yml"
  grep -qx 'apiVersion: v1' "$BATS_TEST_TMPDIR/verification.yml"
  # A config kwctl cannot read is refused before anything is fetched; this one gets further (to
  # Sigstore's trust root, or without a network to its first fetch) and fails there: nothing
  # listens on 127.0.0.1:1.
  sed 's/kind: githubAction /kind: githubActions /' "$BATS_TEST_TMPDIR/verification.yml" \
    >"$BATS_TEST_TMPDIR/broken.yml"
  run env HOME="$BATS_TEST_TMPDIR" RUST_BACKTRACE=0 "$KWCTL" verify \
    --verification-config-path "$BATS_TEST_TMPDIR/broken.yml" registry://127.0.0.1:1/none:v0
  [ "$status" -ne 0 ]
  [ "${lines[0]}" = 'Error: Not a valid configuration file: unknown variant `githubActions`, expected one of `pubKey`, `genericIssuer`, `githubAction`' ]
  run env HOME="$BATS_TEST_TMPDIR" RUST_BACKTRACE=0 "$KWCTL" verify \
    --verification-config-path "$BATS_TEST_TMPDIR/verification.yml" registry://127.0.0.1:1/none:v0
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "${lines[0]}" == "Error: "* ]]
  [[ "$output" != *"Not a valid configuration file"* ]]
}

@test "every mutant of k8s-judge/mutants/ applies to src/ (make k8s-mutants, which CI runs weekly, builds and judges them)" {
  # A change of src/ that a mutant patches updates the patch with it, not weeks later.
  local patch broken=() n=0
  for patch in k8s-judge/mutants/*.patch; do
    n=$((n + 1))
    git apply --check "$patch" 2>/dev/null || broken+=("$(basename "$patch")")
  done
  echo "no longer apply: ${broken[*]}"
  [ "${#broken[@]}" -eq 0 ]
  [ "$n" -ge 39 ]
}
