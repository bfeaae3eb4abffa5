#!/usr/bin/env bash
# `make check-version [TAG=vX.Y.Z]`: every place that names the policy's version names the same
# one, Cargo.toml's:
#
# - Cargo.lock's entry for the package (a release builds with --locked);
# - metadata.yml's io.kubewarden.policy.version (kwctl annotate embeds it in the module);
# - artifacthub-pkg.yml's version;
# - each reference to the released module, `image-arch-affinity:vX.Y.Z` and
#   `releases/download/vX.Y.Z/`, in artifacthub-pkg.yml (containersImages, links, install), the
#   README, docs/ and examples/ (the manifests users copy);
# - TAG, when given: the release tag, v<version> (the release workflow passes the pushed tag).
#
# Prints one line when they agree; otherwise each disagreement, on stderr, and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-}

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
if [ -z "$version" ]; then
  echo "version mismatch: Cargo.toml names no version" >&2
  exit 1
fi

mismatches=()
# expect WHAT FOUND: FOUND must be the version.
expect() {
  [ "$2" = "$version" ] || mismatches+=("$1 is ${2:-missing}")
}
expect "Cargo.lock's image-arch-affinity" \
  "$(awk '/^\[\[package\]\]/ { name = "" } /^name = "image-arch-affinity"$/ { name = 1 }
          name && /^version = / { gsub(/"/, "", $3); print $3; exit }' Cargo.lock)"
expect "metadata.yml's io.kubewarden.policy.version" \
  "$(sed -n 's/^  io.kubewarden.policy.version: //p' metadata.yml)"
expect "artifacthub-pkg.yml's version" "$(sed -n 's/^version: //p' artifacthub-pkg.yml)"
if [ -n "$tag" ] && [ "$tag" != "v$version" ]; then
  mismatches+=("the tag is $tag")
fi

references=(artifacthub-pkg.yml README.md docs/*.md examples/*.yaml)
count=0
while IFS=: read -r file line reference; do
  count=$((count + 1))
  case $reference in
    releases/download/v*) named=${reference#releases/download/v}; named=${named%/} ;;
    *) named=${reference#image-arch-affinity:v} ;;
  esac
  [ "$named" = "$version" ] || mismatches+=("$file:$line names $reference")
done < <(grep -noE 'image-arch-affinity:v[0-9][0-9A-Za-z.-]*[0-9A-Za-z]|releases/download/v[^/]+/' \
  "${references[@]}")

if ((${#mismatches[@]})); then
  echo "version mismatch: Cargo.toml's version is $version, but" >&2
  printf '  %s\n' "${mismatches[@]}" >&2
  exit 1
fi
echo "check-version: $version in Cargo.toml, Cargo.lock, metadata.yml, artifacthub-pkg.yml${tag:+, the tag $tag} and $count references to the module"
