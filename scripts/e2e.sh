#!/usr/bin/env bash
# `make e2e-tests`: every e2e suite on the embedded host, then on kwctl where it is installed (with
# the suites that need a tool only Kubewarden has: kwctl annotate/push/pull/inspect/scaffold/bench,
# policy-server). What cannot run is named in one line with the reason. Needs policy.wasm and the
# embedded host (`make policy.wasm host`); KWCTL, POLICY_SERVER as in the Makefile.
set -euo pipefail
cd "$(dirname "$0")/.."
KWCTL=${KWCTL:-.tools/bin/kwctl}
POLICY_SERVER=${POLICY_SERVER:-.tools/bin/policy-server}
export KWCTL POLICY_SERVER

# The suites both hosts run (e2e/host.bash picks the host), those that run no host (once), and
# those needing policy-server.
both=(e2e.bats e2e/faults.bats e2e/quotas.bats e2e/nodes.bats e2e/untrusted.bats e2e/webassembly.bats e2e/volumes.bats e2e/release.bats)
once=(e2e/registry.bats e2e/artifacthub.bats e2e/lint.bats)
# publish.bats needs kwctl (push, pull, inspect, scaffold), and policy-server for one case, which
# it skips without it.
kwctl_only=(e2e/publish.bats)
server=(e2e/policy-server.bats e2e/bench.bats)

echo "e2e: on the embedded host"
E2E_HOST=embedded bats "${once[@]}" "${both[@]}"
if [ ! -x "$KWCTL" ]; then
  echo "e2e: skipped the kwctl pass of ${both[*]}, and ${kwctl_only[*]} ${server[*]}: kwctl is not installed ($KWCTL)"
  exit 0
fi
echo "e2e: on $("$KWCTL" --version 2>/dev/null | head -n 1)"
make -s annotated-policy.wasm KWCTL="$KWCTL"
E2E_HOST=kwctl bats "${both[@]}"
E2E_HOST=kwctl POLICY=annotated-policy.wasm bats "${kwctl_only[@]}"
if [ ! -x "$POLICY_SERVER" ]; then
  echo "e2e: skipped ${server[*]}: policy-server is not installed ($POLICY_SERVER)"
  exit 0
fi
E2E_HOST=kwctl POLICY=annotated-policy.wasm bats "${server[@]}"
