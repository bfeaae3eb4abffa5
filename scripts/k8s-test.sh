#!/usr/bin/env bash
# Kubernetes' own code judges the policy (k8s-judge/README.md). Both suites start with gofmt and
# go vet on the harness.
#
#   k8s-test.sh property   `make k8s-test`: the oracles' table tests, then the property over
#                          RAPID_CHECKS (default 10^4) cases on the embedded host, and the first
#                          K8S_KWCTL_CHECKS (default 1000) of the same cases (same RAPID_SEED) on
#                          kwctl where it is installed (KWCTL; one `kwctl run` each, ~0.4 s)
#   k8s-test.sh cluster    `make k8s-e2e`: the control plane with the policy as its webhook,
#                          served by the embedded host behind the test adapter, then by
#                          policy-server where it is installed (POLICY_SERVER); K8S_E2E_SEED.
#                          Each with the static settings (clusterOperatingSystems), then with
#                          docs/node-aware.md's (readNodes), then the Karpenter control plane
#                          (its NodePools and provisioner; embedded host only);
#                          K8S_E2E_SETTINGS=static, node-aware or karpenter runs one
#
# Prints the seeds and each run's counts. Needs policy.wasm, the embedded host and seed-registry
# (the Makefile builds them).
set -euo pipefail
cd "$(dirname "$0")/.."
# k8s-judge imports sigs.k8s.io/karpenter v1.15.0, which needs Go 1.26.9: the go command takes
# the approved go1.27.3 from the module proxy (k8s-judge/README.md).
export GOTOOLCHAIN=go1.27.3
suite=${1:?property or cluster}
KWCTL=$(realpath -m "${KWCTL:-.tools/bin/kwctl}")
POLICY_SERVER=$(realpath -m "${POLICY_SERVER:-.tools/bin/policy-server}")
export RAPID_SEED=${RAPID_SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
export K8S_E2E_SEED=${K8S_E2E_SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
timeout=${K8S_TIMEOUT:-90m}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
export K8S_JUDGE_REPORT=$report

unformatted=$(gofmt -l k8s-judge)
[ -z "$unformatted" ] || { echo "k8s-test: gofmt -l lists $unformatted" >&2; exit 1; }
cd k8s-judge
go vet ./...
status=0
case "$suite" in
  property)
    go test -count=1 -timeout "$timeout" ./oracle/ ./settings/ ./webhook/ ./karpenter/
    go test -count=1 -timeout "$timeout" ./property/ || status=$?
    if [ "$status" -eq 0 ] && [ -x "$KWCTL" ]; then
      make -s -C .. annotated-policy.wasm KWCTL="$KWCTL"
      RAPID_CHECKS=${K8S_KWCTL_CHECKS:-1000} K8S_JUDGE_HOST=kwctl KWCTL=$KWCTL \
        go test -count=1 -timeout "$timeout" ./property/ || status=$?
    elif [ "$status" -eq 0 ]; then
      echo "k8s-judge: skipped the kwctl pass: kwctl is not installed ($KWCTL)" >>"$report"
    fi
    ;;
  cluster)
    modes=${K8S_E2E_SETTINGS:-static node-aware karpenter}
    for mode in $modes; do
      [ "$status" -ne 0 ] || K8S_E2E_SETTINGS=$mode go test -count=1 -timeout "$timeout" ./cluster/ || status=$?
    done
    if [ "$status" -eq 0 ] && [ -x "$POLICY_SERVER" ] && [ -x "$KWCTL" ]; then
      make -s -C .. annotated-policy.wasm KWCTL="$KWCTL"
      for mode in ${modes/karpenter/}; do
        [ "$status" -ne 0 ] || K8S_E2E_SETTINGS=$mode K8S_E2E_SERVER=policy-server POLICY_SERVER=$POLICY_SERVER \
          go test -count=1 -timeout "$timeout" ./cluster/ || status=$?
      done
    elif [ "$status" -eq 0 ]; then
      echo "k8s-e2e: skipped the policy-server pass: policy-server and kwctl are not installed ($POLICY_SERVER, $KWCTL)" >>"$report"
    fi
    ;;
  *)
    echo "k8s-test.sh: property or cluster, not $suite" >&2
    exit 2
    ;;
esac
cat "$report"
exit "$status"
