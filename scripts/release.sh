#!/usr/bin/env bash
# The release's publishing steps, one subcommand each. The release workflow runs them on GitHub,
# signing keyless (a Fulcio certificate for the workflow's OIDC token, logged in Rekor);
# e2e/release.bats runs the same commands here against a local registry with a throwaway key
# (the dry run of docs/release.md).
#
#   scripts/release.sh sbom NAME REVISION    an SPDX SBOM of REVISION's sources (syft) in
#                                            policy-sbom.spdx.json, signed (cosign sign-blob) in
#                                            policy-sbom.spdx.json.bundle.sigstore
#   scripts/release.sh push MODULE URI [FLAG...]
#                                            `kwctl push` of MODULE to URI (registry://...); prints
#                                            the immutable reference REGISTRY/REPOSITORY@sha256:...
#   scripts/release.sh sign REF              cosign signs the digest REF twice: cosign's
#                                            sha256-<digest>.sig tag (what kwctl and policy-server
#                                            1.35 read) and cosign 3's bundle
#   scripts/release.sh verify REF            cosign verify of both signatures of REF
#   scripts/release.sh verify-sbom           cosign verify-blob of the SBOM with its bundle
#
# Environment:
#   KWCTL        what pushes (default: kwctl on PATH); the dry run gives the embedded host
#                (`embedded-host push`, the same manifest) where kwctl is not installed
#   COSIGN, SYFT the tools (default: on PATH)
#   SIGNING_KEY  a cosign private key (COSIGN_PASSWORD its password): sign with it and log
#                nothing in Rekor. Unset: keyless.
#   VERIFY_KEY   its public key for verify and verify-sbom. Unset: keyless, the certificate must
#                name IDENTITY (this repository's release workflow at the tag) issued by GitHub's
#                OIDC issuer.
#   SOURCES      kwctl's sources.yml: a registry it lists under insecure_sources is spoken to
#                over plain HTTP, by kwctl and by cosign
set -euo pipefail

KWCTL=${KWCTL:-kwctl}
COSIGN=${COSIGN:-cosign}
SYFT=${SYFT:-syft}
SBOM=policy-sbom.spdx.json
BUNDLE=$SBOM.bundle.sigstore
ISSUER=https://token.actions.githubusercontent.com

die() {
  echo "release.sh: $*" >&2
  exit 1
}

# cosign's flags for signing in FORMAT (new: cosign 3's bundle; old: the .sig tag). With
# SIGNING_KEY: the key and no transparency log (nothing leaves the machine). Without: keyless with
# Sigstore's public instances, as Kubewarden's release action signs (the signing config from TUF
# for the bundle; cosign's defaults for the .sig tag, which the signing config does not serve).
sign_flags() {
  local format=$1
  if [ "$format" = new ]; then echo --new-bundle-format=true; else echo --new-bundle-format=false; fi
  if [ -n "${SIGNING_KEY:-}" ]; then
    printf '%s\n' --key "$SIGNING_KEY" --tlog-upload=false --use-signing-config=false
  elif [ "$format" = new ]; then
    echo --use-signing-config=true
  else
    echo --use-signing-config=false
  fi
}

# cosign's flags for verifying: the public key (no Rekor entry to check), or the identity.
verify_flags() {
  if [ -n "${VERIFY_KEY:-}" ]; then
    printf '%s\n' --key "$VERIFY_KEY" --insecure-ignore-tlog=true
  else
    [ -n "${IDENTITY:-}" ] || die "set VERIFY_KEY, or IDENTITY (the certificate's identity)"
    printf '%s\n' --certificate-identity "$IDENTITY" --certificate-oidc-issuer "$ISSUER"
  fi
}

# --allow-http-registry for a REF on a registry kwctl's sources.yml lists as insecure.
registry_flags() {
  local registry=${1%%/*}
  if [ -n "${SOURCES:-}" ] && grep -qF -- "- $registry" "$SOURCES"; then
    echo --allow-http-registry
  fi
}

[ $# -ge 1 ] || die "usage: release.sh sbom|push|sign|verify|verify-sbom ARGS"
command=$1
shift
case "$command" in
sbom)
  [ $# -eq 2 ] || die "usage: release.sh sbom NAME REVISION"
  # The sources of REVISION as git holds them (not a work tree's build outputs and tools):
  # Cargo.lock's crates (syft's Rust cataloger), the Go test harness's modules.
  sources=$(mktemp -d)
  trap 'rm -rf "$sources"' EXIT
  git -C "$(dirname "$0")/.." archive "$2" | tar -x -C "$sources"
  "$SYFT" scan --quiet --output "spdx-json=$SBOM" --source-name "$1" --source-version "$2" "dir:$sources"
  mapfile -t flags < <(sign_flags new)
  "$COSIGN" sign-blob --yes "${flags[@]}" --bundle "$BUNDLE" "$SBOM" >/dev/null
  echo "$SBOM $BUNDLE"
  ;;
push)
  [ $# -ge 2 ] || die "usage: release.sh push MODULE URI [FLAG...]"
  module=$1 uri=$2
  shift 2
  ref=$("$KWCTL" push ${SOURCES:+--sources-path "$SOURCES"} "$@" -o json "$module" "$uri" | jq -r .immutable_ref)
  [[ "$ref" == */*@sha256:* ]] || die "$KWCTL push gave no digest: $ref"
  echo "$ref"
  ;;
sign)
  [ $# -eq 1 ] || die "usage: release.sh sign REF"
  [[ "$1" == *@sha256:* ]] || die "sign a digest, not a tag: $1"
  mapfile -t registry < <(registry_flags "$1")
  for format in old new; do
    mapfile -t flags < <(sign_flags "$format")
    "$COSIGN" sign --yes "${registry[@]}" "${flags[@]}" "$1"
  done
  ;;
verify)
  [ $# -eq 1 ] || die "usage: release.sh verify REF"
  mapfile -t flags < <(verify_flags)
  mapfile -t registry < <(registry_flags "$1")
  "$COSIGN" verify "${registry[@]}" "${flags[@]}" --new-bundle-format=false "$1" >/dev/null
  "$COSIGN" verify "${registry[@]}" "${flags[@]}" --new-bundle-format=true "$1" >/dev/null
  ;;
verify-sbom)
  [ $# -eq 0 ] || die "usage: release.sh verify-sbom"
  mapfile -t flags < <(verify_flags)
  "$COSIGN" verify-blob "${flags[@]}" --bundle "$BUNDLE" "$SBOM"
  ;;
*)
  die "unknown command $command (sbom, push, sign, verify, verify-sbom)"
  ;;
esac
