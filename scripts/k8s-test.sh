#!/usr/bin/env bash
# `make k8s-test`: Kubernetes' own code judges the policy (k8s-judge/README.md). gofmt and go vet
# on the harness, the oracles' table tests, then the property over RAPID_CHECKS (default 10^4)
# cases on the embedded host, and the same cases (same seed) on kwctl where it is installed
# (KWCTL). Prints the seed and each host's counts. Needs policy.wasm, the embedded host and
# seed-registry (the Makefile builds them).
set -euo pipefail
cd "$(dirname "$0")/.."
KWCTL=$(realpath -m "${KWCTL:-.tools/bin/kwctl}")
export RAPID_SEED=${RAPID_SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
timeout=${K8S_TIMEOUT:-90m}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
export K8S_JUDGE_REPORT=$report

unformatted=$(gofmt -l k8s-judge)
[ -z "$unformatted" ] || { echo "k8s-test: gofmt -l lists $unformatted" >&2; exit 1; }
cd k8s-judge
go vet ./...
go test -count=1 -timeout "$timeout" ./oracle/
status=0
go test -count=1 -timeout "$timeout" ./property/ || status=$?
if [ "$status" -eq 0 ] && [ -x "$KWCTL" ]; then
  make -s -C .. annotated-policy.wasm KWCTL="$KWCTL"
  K8S_JUDGE_HOST=kwctl KWCTL=$KWCTL go test -count=1 -timeout "$timeout" ./property/ || status=$?
elif [ "$status" -eq 0 ]; then
  echo "k8s-judge: skipped the kwctl pass: kwctl is not installed ($KWCTL)" >>"$report"
fi
cat "$report"
exit "$status"
