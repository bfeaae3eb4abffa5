#!/usr/bin/env bash
# Writes the Artifact Hub package file (default: artifacthub-pkg.yml) with
# `kwctl scaffold artifacthub` from metadata.yml and questions-ui.yml.
#
# kwctl stamps `createdAt` with the current time. To make the file reproducible, the stamp is
# replaced by CREATED_AT when set (a release sets it, see docs/release.md), else by the
# `createdAt` of the committed artifacthub-pkg.yml, else kept. Everything else is kwctl's output.
#
#   scripts/artifacthub-pkg.sh [OUTPUT]
#   KWCTL=path/to/kwctl CREATED_AT=2026-12-01T00:00:00Z scripts/artifacthub-pkg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KWCTL="${KWCTL:-.tools/bin/kwctl}"
output="${1:-artifacthub-pkg.yml}"

created_at="${CREATED_AT:-}"
if [ -z "$created_at" ] && [ -f artifacthub-pkg.yml ]; then
  created_at="$(sed -n 's/^createdAt: //p' artifacthub-pkg.yml)"
fi

generated="$(mktemp)"
trap 'rm -f "$generated"' EXIT
"$KWCTL" scaffold artifacthub --metadata-path metadata.yml --questions-path questions-ui.yml \
  --output "$generated"
if [ -n "$created_at" ]; then
  sed -i "s/^createdAt: .*/createdAt: $created_at/" "$generated"
fi
cp "$generated" "$output"
