# image-arch-affinity: build, test and run the Kubewarden policy.
SOURCE_FILES := $(shell find src -type f -name '*.rs') Cargo.toml Cargo.lock
WASM := target/wasm32-wasip1/release/image_arch_affinity.wasm
# The dev-only test host (a kwctl-compatible `run`) and the registry seeder, see test-host/.
HOST_BIN := target/host/test-host
# e2e.bats runs against any kwctl-compatible runner: `make e2e-tests KWCTL=kwctl` uses kwctl.
KWCTL ?= $(HOST_BIN)
POLICY ?= policy.wasm

.PHONY: all deps host fmt lint unit-tests e2e-tests test run bench bench-instructions fuzz clean

all: policy.wasm

policy.wasm: $(SOURCE_FILES)
	cargo build --target=wasm32-wasip1 --release
	cp $(WASM) policy.wasm

annotated-policy.wasm: policy.wasm metadata.yml README.md
	kwctl annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

deps:
	bash scripts/install-deps.sh

host:
	cargo build -p test-host --profile host --bins

fmt:
	cargo fmt --all -- --check

lint:
	cargo clippy --workspace --all-targets -- -D warnings

unit-tests: policy.wasm
	cargo test
	cargo test -p test-host --profile host

e2e-tests: policy.wasm host
	bats e2e/registry.bats
	KWCTL="$(KWCTL)" POLICY="$(POLICY)" bats e2e.bats e2e/faults.bats

# Everything CI checks.
test: deps fmt lint unit-tests e2e-tests

# The policy on an example Pod, with real lookups in a local registry.
run: deps policy.wasm host
	bash scripts/run-example.sh

# Evaluation cost: the policy against a trivial accept-everything module through the test host
# (answers from memory), then the native decision core stage by stage.
bench: policy.wasm host
	cargo build --target=wasm32-wasip1 --release -p trivial-policy
	cargo bench -p test-host --profile host --bench admission
	cargo bench --profile host --bench core

# Deterministic instructions per admission (valgrind), policy and trivial module, every case.
bench-instructions: bench
	command -v valgrind >/dev/null || apt-get install -y -qq valgrind
	scripts/count-instructions.sh

# Fuzz each target for FUZZ_SECONDS (nightly toolchain, cargo-fuzz). New inputs go to
# fuzz/corpus/<target> (not committed); crashes to fuzz/artifacts/<target>.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := validate validate_settings image_reference
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		mkdir -p corpus/$$target && \
		cargo +nightly fuzz run $$target corpus/$$target seeds/$$target -- \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done

clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm
