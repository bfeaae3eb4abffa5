#!/usr/bin/env bash
# `make lint-workflows` (part of `make lint`): actionlint over the GitHub workflows in
# .github/workflows, with shellcheck on their run: scripts. Both must be installed (`make deps`:
# actionlint at the version scripts/install-deps.sh pins, in .tools/bin; shellcheck from Debian),
# and pyflakes is never used, so the result does not depend on what else is on PATH. Prints
# actionlint's findings and fails, or one line naming the versions and the files checked.
set -euo pipefail
cd "$(dirname "$0")/.."
ACTIONLINT=${ACTIONLINT:-.tools/bin/actionlint}

if [ ! -x "$ACTIONLINT" ]; then
  echo "lint-workflows: $ACTIONLINT is not installed: run make deps" >&2
  exit 1
fi
if ! shellcheck=$(command -v shellcheck); then
  echo "lint-workflows: shellcheck is not installed: run make deps" >&2
  exit 1
fi
workflows=(.github/workflows/*.yml)
"$ACTIONLINT" -no-color -shellcheck="$shellcheck" -pyflakes= "${workflows[@]}"
echo "lint-workflows: actionlint $("$ACTIONLINT" -version | head -n 1)," \
  "shellcheck $("$shellcheck" --version | sed -n 's/^version: //p'): ${workflows[*]}"
