#!/usr/bin/env bash
# The policy at BASE (a commit) and the working tree, on CASES generated requests (differential/,
# default 100,000): every answer and every host call, in order, must be the same. For refactors:
# behaviour kept, over as many cases as you like. SEED repeats a run; each run prints its own.
# DIFFERENTIAL_EXPECT=WORD[,WORD...]: differences are expected (and counted, not failed on) in the
# cases whose JSON holds one of the words, for a change meant to change those answers only.
#
#   scripts/differential.sh BASE [CASES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/differential.sh BASE [CASES] [SEED]}
cases=${2:-100000}
dir=target/differential/base
rm -rf "$dir"
mkdir -p "$dir"
git archive "$base" src Cargo.toml | tar -x -C "$dir"
# The policy alone, as a library named apart from the working tree's.
sed -i -e '/^\[workspace\]/,/^$/d' -e '/^\[\[bench\]\]/,/^$/d' -e '/^\[dev-dependencies\]/,/^$/d' \
  -e 's/^name = "image-arch-affinity"/name = "image-arch-affinity-base"/' \
  -e 's/^crate-type = .*/crate-type = ["rlib"]/' "$dir/Cargo.toml"
sed -i -e '/^\[profile/,$d' "$dir/Cargo.toml"
printf '\n[workspace]\n' >>"$dir/Cargo.toml"
# A base whose host boundary reads RuntimeClasses gets the fake cluster's answers to that call.
if grep -q get_runtime_class "$dir/src/host/cluster.rs"; then
  export RUSTFLAGS="--cfg base_runtime_class"
fi
CARGO_TARGET_DIR=target/differential/target cargo run -q --release \
  --manifest-path differential/Cargo.toml -- "$cases" ${3:+"$3"}
