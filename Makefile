# image-arch-affinity: build, test and run the Kubewarden policy.
SOURCE_FILES := $(shell find src -type f -name '*.rs') Cargo.toml Cargo.lock
WASM := target/wasm32-wasip1/release/image_arch_affinity.wasm
# Kubewarden's kwctl and policy-server (>= 1.35), installed by `make deps` (scripts/install-deps.sh).
KWCTL ?= .tools/bin/kwctl
POLICY_SERVER ?= .tools/bin/policy-server

.PHONY: all deps fmt lint unit-tests e2e-tests test run bench fuzz clean

all: annotated-policy.wasm

policy.wasm: $(SOURCE_FILES)
	cargo build --target=wasm32-wasip1 --release
	cp $(WASM) policy.wasm

# The module users run: policy.wasm with metadata.yml and this README as OCI annotations.
annotated-policy.wasm: policy.wasm metadata.yml README.md
	$(KWCTL) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

deps:
	bash scripts/install-deps.sh

fmt:
	cargo fmt --all -- --check

lint:
	cargo clippy --workspace --all-targets -- -D warnings

unit-tests:
	cargo test
	cargo test -p registry-fixtures

# Every e2e suite, on kwctl (and policy-server) with the annotated module.
e2e-tests: annotated-policy.wasm
	cargo build -q -p registry-fixtures --bins
	KWCTL="$(KWCTL)" POLICY_SERVER="$(POLICY_SERVER)" POLICY=annotated-policy.wasm bats e2e.bats e2e/*.bats

# Everything CI checks.
test: deps fmt lint unit-tests e2e-tests

# The policy on an example Pod (test_data/pod-multi-arch.json) with kwctl and real lookups in a
# local registry.
run: deps annotated-policy.wasm
	KWCTL="$(KWCTL)" bash scripts/run-example.sh

# The native decision core stage by stage (benches/core.rs).
bench:
	cargo bench --bench core

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
