#!/usr/bin/env bash
# `make check-kubewarden-pins` (part of `make lint`): every Kubewarden action the GitHub workflows
# use that installs kwctl (kubewarden/github-actions' kwctl-installer, and push-artifacthub, which
# runs kwctl-installer with its default version) verifies the kwctl it downloads against the
# identity that kwctl was signed with, and so does the verification of policy-server's image (a
# container image signed by the monorepo's release.yml). Fails, naming the workflow line, the
# identity verified and the one the version was signed with, or an action commit not read yet.
#
# What the actions verify, read from kubewarden/github-actions at each commit (docs/release.md):
# kwctl-installer runs `cosign verify-blob --certificate-identity=https://github.com/kubewarden/
# REPO/.github/workflows/build-kwctl.yml@refs/tags/VERSION` (an exact match), where REPO is the
# repository below; kwctl-version defaults to v1.35.0 at both, and push-artifacthub passes none.
# Who signed each kwctl: its release ran build-kwctl.yml in kubewarden/kubewarden-controller up to
# v1.35.0 (tagged 2026-04-27), and in the same repository renamed kubewarden/adm-controller for
# every tag after the rename of 2026-04-29 (v1.36.0-alpha on); a keyless certificate names the
# repository the workflow ran in.
#   bash scripts/check-kubewarden-pins.sh [WORKFLOW...]   # default .github/workflows/*.yml
set -euo pipefail
cd "$(dirname "$0")/.."

# commit tag REPO: the repository whose identity that commit's kwctl-installer (and the
# kwctl-installer its push-artifacthub runs) verifies.
read_actions='
76e132dd50cc7c1ac64c436338f0474af096a601 v7.0.0 kubewarden-controller
143b9e4b11ddc47370482267383586e6f1bc7efe v7.0.1 adm-controller
'
DEFAULT_VERSION=v1.35.0

# signer VERSION: the repository whose build-kwctl.yml signed kwctl VERSION: v1.35.0 and every
# earlier release, or one tagged after the rename (1.36's pre-releases, and any 1.35 patch).
signer() {
  local release=${1%%-*}
  if [ "$(printf '%s\n%s\n' "$release" v1.35.0 | sort -V | tail -n 1)" = v1.35.0 ]; then
    echo kubewarden-controller
  else
    echo adm-controller
  fi
}

identity() { echo "https://github.com/kubewarden/$1/.github/workflows/build-kwctl.yml@refs/tags/$2"; }

workflows=("$@")
((${#workflows[@]})) || workflows=(.github/workflows/*.yml)
# One "FILE LINE ACTION COMMIT VERSION" per use: the kwctl-version of the step's `with:`, else the
# default.
uses=$(awk -v default="$DEFAULT_VERSION" '
  function flush() { if (action != "") print FILENAME, at, action, commit, version; action = "" }
  FNR == 1 { flush() }
  # A new step, or a new job: the use before it has ended.
  /^[[:space:]]*-[[:space:]]/ || /^  [a-zA-Z_-]+:[[:space:]]*$/ { flush() }
  match($0, /kubewarden\/github-actions\/(kwctl-installer|push-artifacthub)@[0-9a-f]+/) {
    flush()
    split(substr($0, RSTART, RLENGTH), part, "@")
    action = part[1]; commit = part[2]; at = FNR; version = default
  }
  /^[[:space:]]*kwctl-version:/ && action != "" { version = $2; gsub(/["\047]/, "", version) }
  END { flush() }
' "${workflows[@]}")

failed=0
checked=0
while read -r file line action commit version; do
  [ -n "$file" ] || continue
  checked=$((checked + 1))
  read -r _ tag repo < <(awk -v c="$commit" '$1 == c' <<<"$read_actions") || true
  if [ -z "${repo:-}" ]; then
    echo "check-kubewarden-pins: $file:$line: $action@$commit is not a commit whose kwctl verification was read: read its kwctl-installer/action.yml (and push-artifacthub's) and add it to scripts/check-kubewarden-pins.sh"
    failed=1
    continue
  fi
  signed_by=$(signer "$version")
  if [ "$repo" != "$signed_by" ]; then
    echo "check-kubewarden-pins: $file:$line: $action@${commit:0:7} ($tag) verifies kwctl $version against $(identity "$repo" "$version"), but kwctl $version was signed by $(identity "$signed_by" "$version")"
    failed=1
  fi
  unset repo
done <<<"$uses"

# policy-server's image: each workflow that verifies ghcr.io/kubewarden/policy-server:VERSION
# (cosign verify, env IMAGE and IDENTITY of one step) names the release workflow of the
# repository that signed that version, at its tag.
images=0
for file in "${workflows[@]}"; do
  image=$(sed -n 's/^[[:space:]]*IMAGE: ghcr.io\/kubewarden\/policy-server:\(v[^[:space:]]*\)$/\1/p' "$file" | head -n 1)
  [ -n "$image" ] || continue
  images=$((images + 1))
  line=$(grep -n '^[[:space:]]*IDENTITY: ' "$file" | head -n 1 | cut -d: -f1)
  named=$(sed -n "${line:-0}s/^[[:space:]]*IDENTITY: //p" "$file")
  expected="https://github.com/kubewarden/$(signer "$image")/.github/workflows/release.yml@refs/tags/$image"
  if [ "$named" != "$expected" ]; then
    echo "check-kubewarden-pins: $file:${line:-?}: policy-server $image is verified against ${named:-no identity}, but it was signed by $expected"
    failed=1
  fi
done
((failed == 0)) || exit 1
echo "check-kubewarden-pins: $checked Kubewarden actions installing kwctl and $images policy-server image, each verified against the identity its version was signed with"
