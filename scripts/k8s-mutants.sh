#!/usr/bin/env bash
# `make k8s-mutants`: every patch in k8s-judge/mutants/ puts one bug into the policy on purpose;
# the Kubernetes-judged property must catch each. For each: the policy's sources copied to
# target/mutants/<name>, the patch applied, the module built, the property run on it
# (RAPID_CHECKS, default 3000; RAPID_SEED as for k8s-test), and the first violation printed. Fails
# when a patch no longer applies or a mutant survives. Needs what `make k8s-test` builds.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# k8s-judge needs Go 1.26.9 (Karpenter v1.15.0): the approved go1.27.3 from the module proxy.
export GOTOOLCHAIN=go1.27.3
export RAPID_CHECKS=${RAPID_CHECKS:-3000}
survived=()
for patch in ${K8S_MUTANTS:-k8s-judge/mutants/*.patch}; do
  name=$(basename "$patch" .patch)
  dir=target/mutants/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -r src benches Cargo.lock metadata.yml "$dir"/
  # The policy alone: the workspace's other members stay out of the copy.
  sed '/^\[workspace\]/,/^$/d' Cargo.toml >"$dir/Cargo.toml"
  printf '\n[workspace]\n' >>"$dir/Cargo.toml"
  patch -s -p1 -d "$dir" <"$patch" || { echo "k8s-mutants: $patch no longer applies to src/" >&2; exit 1; }
  CARGO_TARGET_DIR=$root/target/mutants/target cargo build -q --manifest-path "$dir/Cargo.toml" \
    --target wasm32-wasip1 --release
  cp target/mutants/target/wasm32-wasip1/release/image_arch_affinity.wasm "$dir/policy.wasm"
  log=$dir/property.log
  if (cd k8s-judge && K8S_JUDGE_MODULE=$root/$dir/policy.wasm go test -count=1 -timeout 60m \
      ./property/ -run TestPolicyJudgedByKubernetes) >"$log" 2>&1; then
    survived+=("$name")
    echo "k8s-mutants: $name SURVIVED $RAPID_CHECKS cases ($log)"
  else
    # A rapid verdict, or a run the minimum shares find vacuous (property_test.go).
    caught=$(grep -m1 -o -e '\[rapid\] failed after [0-9]* tests: .*' -e 'a vacuous run: .*' "$log" || true)
    [ -n "$caught" ] || { echo "k8s-mutants: $name: the property failed without a verdict ($log)" >&2; exit 1; }
    echo "k8s-mutants: $name caught: ${caught#\[rapid\] }"
  fi
done
((${#survived[@]} == 0)) || { echo "k8s-mutants: survived: ${survived[*]}" >&2; exit 1; }
