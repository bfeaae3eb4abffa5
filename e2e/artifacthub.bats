#!/usr/bin/env bats
# The Artifact Hub files: artifacthub-pkg.yml is exactly what `kwctl scaffold artifacthub` writes
# from metadata.yml and questions-ui.yml (createdAt aside, see scripts/artifacthub-pkg.sh). That
# its version and module references agree with Cargo.toml's: e2e/lint.bats (make check-version).

load host

setup() {
  cd "$BATS_TEST_DIRNAME/.."
}

@test "artifacthub-pkg.yml is up to date (make artifacthub regenerates it)" {
  [ -x "$KWCTL" ] || skip "needs kwctl scaffold artifacthub: kwctl is not installed"
  run make -s artifacthub OUT="$BATS_TEST_TMPDIR/artifacthub-pkg.yml"
  [ "$status" -eq 0 ]
  run diff -u artifacthub-pkg.yml "$BATS_TEST_TMPDIR/artifacthub-pkg.yml"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "the license metadata.yml declares is the one LICENSE holds" {
  grep -qx '  io.kubewarden.policy.license: Apache-2.0' metadata.yml
  grep -qx 'license: Apache-2.0' artifacthub-pkg.yml
  [ "$(sed -n '2p' LICENSE | xargs)" = "Version 2.0, January 2004" ]
  [ "$(sed -n '1p' LICENSE | xargs)" = "Apache License" ]
}
