# image-arch-affinity: build, test and run the Kubewarden policy.
SHELL := /bin/bash
SOURCE_FILES := $(shell find src -type f -name '*.rs') Cargo.toml Cargo.lock
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
WASM := $(TARGET_DIR)/wasm32-wasip1/release/image_arch_affinity.wasm
# Kubewarden's kwctl and policy-server (>= 1.35), in .tools/bin when `make deps` (kwctl: also
# `make deps-run`; scripts/install-deps.sh) could link them; where they are not, the embedded host
# (embedded-host/, `make host`) runs the module and the suites that need them are skipped.
KWCTL ?= .tools/bin/kwctl
POLICY_SERVER ?= .tools/bin/policy-server
HOST_BIN := $(TARGET_DIR)/debug/embedded-host

.PHONY: all help deps deps-run fmt clippy lint lint-workflows check-kubewarden-pins check-manifests check host rust-tests host-tests e2e-tests k8s-test k8s-e2e k8s-mutants test run bench-core fuzz clean

## The annotated module (the default target).
all: annotated-policy.wasm

# `make help`: the line after `## ` above each target.
## These lines: one per target.
help:
	@awk '/^## / {text = substr($$0, 4); next} /^[A-Za-z0-9_.\/-]+:/ && text != "" {target = $$1; sub(/:.*/, "", target); printf "  %-38s %s\n", target, text} {text = ""}' $(firstword $(MAKEFILE_LIST))

## The policy compiled to wasm32-wasip1 (release profile).
policy.wasm: $(SOURCE_FILES)
	cargo build --target=wasm32-wasip1 --release
	cp $(WASM) policy.wasm

# The module users run: policy.wasm with metadata.yml and this README as OCI annotations.
## policy.wasm with metadata.yml and README.md embedded by kwctl annotate (needs kwctl).
annotated-policy.wasm: policy.wasm metadata.yml README.md
	$(KWCTL) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# Everything `make test` and CI need (scripts/install-deps.sh: Debian packages, actionlint, cosign
# and syft built from their Go modules, kwctl and policy-server linked from PATH). The targets that
# need them depend on it: lint (actionlint), e2e-tests, k8s-test, k8s-e2e, k8s-mutants.
## Installs what the e2e suites, lint and k8s-judge need (scripts/install-deps.sh all).
deps:
	bash scripts/install-deps.sh all

# Only what `make run` needs: the wasm32-wasip1 target, docker-registry, jq, curl, kwctl if on PATH.
## Installs only what make run needs (scripts/install-deps.sh run).
deps-run:
	bash scripts/install-deps.sh run

# The embedded host: the module run as `kwctl run` runs it (embedded-host/README.md). Prints its
# path last.
## Builds the embedded host (embedded-host/) and prints its path.
host:
	cargo build -q -p embedded-host
	@echo $(HOST_BIN)

# The module that accepts everything (benchmarks) or traps on request (conformance cases).
TRIVIAL := $(TARGET_DIR)/wasm32-wasip1/release/trivial_policy.wasm
$(TRIVIAL): trivial-policy/src/lib.rs trivial-policy/Cargo.toml
	cargo build -q -p trivial-policy --target=wasm32-wasip1 --release

## cargo fmt --check on the workspace.
fmt:
	cargo fmt --all -- --check

## cargo clippy -D warnings on the workspace, every target.
clippy:
	cargo clippy --workspace --all-targets -- -D warnings

# clippy, the GitHub workflows (actionlint, the Kubewarden actions' kwctl verification), the
# version agreement (check-version, below) and the manifests' agreement with metadata.yml.
## deps, then check-version, check-manifests, lint-workflows, check-kubewarden-pins and clippy.
lint: deps check-version check-manifests lint-workflows check-kubewarden-pins clippy

# actionlint (built by `make deps`) over .github/workflows, shellcheck on their run: scripts.
## actionlint and shellcheck over .github/workflows (built by make deps).
lint-workflows:
	@bash scripts/lint-workflows.sh

# Each Kubewarden action that installs kwctl verifies it against the identity it was signed with.
## Each Kubewarden action that installs kwctl verifies the identity it was signed with.
check-kubewarden-pins:
	@bash scripts/check-kubewarden-pins.sh

# The ClusterAdmissionPolicies of README.md, docs/node-aware.md and examples/ route metadata.yml's
# rules, and docs/node-aware.md's is README.md's but for what reading Nodes adds.
## The manifests in README.md, docs/node-aware.md and examples/ agree with metadata.yml.
check-manifests:
	@bash scripts/check-manifests.sh

# The quick check before a commit: no Go, no kwctl, no release tool, no module build. The
# scheduling oracles of tests/scheduling.rs run CHECK_CASES cases per property instead of 10^4
# (SCHEDULING_CASES; the proptest properties keep the case counts their files set).
CHECK_CASES ?= 500
## fmt, clippy, check-version, check-manifests, the policy's tests with CHECK_CASES oracle cases.
check: fmt clippy check-version check-manifests
	SCHEDULING_CASES=$(CHECK_CASES) cargo test
	cargo test -p registry-fixtures

# The policy crate's unit tests and tests/*.rs at full size (the scheduling oracles over 10^4
# generated Pods and templates per property), and the fixture registry's tests.
## The policy's unit and integration tests, oracles at 10^4 cases; registry-fixtures' tests.
rust-tests:
	cargo test
	cargo test -p registry-fixtures

# The embedded host's tests, and the cases recorded with kwctl 1.35.0 (conformance/) replayed
# through it: same verdicts, messages, warnings and patched objects.
## cargo test -p embedded-host: its tests, and the conformance/ cases replayed through it.
host-tests: policy.wasm $(TRIVIAL)
	cargo test -p embedded-host

# Re-records conformance/ with kwctl (needs kwctl >= 1.35) and shows what changed.
## Re-records conformance/ with kwctl (>= 1.35) and shows what changed.
conformance-record: policy.wasm annotated-policy.wasm $(TRIVIAL)
	cargo build -q -p registry-fixtures --bins
	KWCTL="$(KWCTL)" bash conformance/record.sh

# Every e2e suite on the embedded host, and again on kwctl (and policy-server) where installed.
## Every bats suite on the embedded host, then on kwctl and policy-server where installed.
e2e-tests: deps policy.wasm host
	cargo build -q -p registry-fixtures --bins
	KWCTL="$(KWCTL)" POLICY_SERVER="$(POLICY_SERVER)" bash scripts/e2e.sh

# Kubernetes' own code judges the policy (k8s-judge/README.md): gofmt and go vet, the table tests
# (the oracles, the typed settings, the webhook adapter), and the property over RAPID_CHECKS
# (default 10^4) cases on the embedded host, then the same cases on kwctl where it is installed
# (scripts/k8s-test.sh). RAPID_SEED repeats a run.
## k8s-judge: gofmt, go vet, the table tests and the property (RAPID_CHECKS cases).
k8s-test: deps policy.wasm host
	cargo build -q -p registry-fixtures --bins
	KWCTL="$(KWCTL)" bash scripts/k8s-test.sh property

# A real control plane in the test process (k8s-judge/cluster/README.md): kube-apiserver on embedded
# etcd, kube-scheduler and the workload controllers, the policy as its mutating webhook; >= 200
# random workloads and Pods applied (K8S_E2E_OBJECTS), a sidecar injected after the policy, the
# webhook down. K8S_E2E_SEED repeats a run.
## k8s-judge: the control planes (API server, scheduler, controllers, Karpenter) with the policy.
k8s-e2e: deps policy.wasm host
	cargo build -q -p registry-fixtures --bins
	POLICY_SERVER="$(POLICY_SERVER)" bash scripts/k8s-test.sh cluster

# The property catches each bug of k8s-judge/mutants/ (not part of make test: a module build each).
## k8s-judge: the property must catch each bug of k8s-judge/mutants/ (not in make test).
k8s-mutants: deps policy.wasm host
	cargo build -q -p registry-fixtures --bins
	bash scripts/k8s-mutants.sh

# Everything CI checks (.ci/run, .github/workflows/ci.yml). The parts that need the tools of
# `make deps` depend on it; lint comes first, so that deps installs rustfmt before fmt runs.
## Everything CI runs: lint, fmt, rust-tests, host-tests, e2e-tests, k8s-test, k8s-e2e.
test: lint fmt rust-tests host-tests e2e-tests k8s-test k8s-e2e

# The policy on an example Pod (test_data/pod-multi-arch.json) with real lookups in a local
# registry, on kwctl when installed, else on the embedded host (RUN_HOST=kwctl|embedded picks).
RUN_HOST ?= $(if $(wildcard $(KWCTL)),kwctl,embedded)
## The policy on an example Pod with real lookups in a local registry (REQUEST, SETTINGS).
run: deps-run policy.wasm
	@$(MAKE) -s $(if $(filter kwctl,$(RUN_HOST)),annotated-policy.wasm,host) >/dev/null
	RUN_HOST=$(RUN_HOST) KWCTL="$(KWCTL)" EMBEDDED_HOST="$(HOST_BIN)" bash scripts/run-example.sh

# The native decision core stage by stage (benches/core.rs). `make bench` (below) measures the
# module in kwctl and policy-server.
## cargo bench --bench core: the native decision core stage by stage.
bench-core:
	cargo bench --bench core

# Fuzz each target for FUZZ_SECONDS on the stable toolchain these machines have (cargo-fuzz with
# RUSTC_BOOTSTRAP=1 and no sanitizer: `cargo +nightly` does not exist here). New inputs go to
# fuzz/corpus/<target> (not committed); crashes to fuzz/artifacts/<target>. Prints each target's
# executions (libFuzzer's final stats).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := validate validate_settings image_reference
## Fuzzes each target of fuzz/ for FUZZ_SECONDS (cargo-fuzz).
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		mkdir -p corpus/$$target && \
		RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none $$target corpus/$$target seeds/$$target -- \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 2>&1 | \
			grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|panicked|deadly' \
			| sed "s/^/$$target: /"; \
		[ "$${PIPESTATUS[0]}" -eq 0 ] || exit 1; \
	done

## cargo clean, and the modules built here.
clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm

# ---- Release, Artifact Hub and benchmarks on the real host (kwctl, policy-server 1.35) ----
# docs/release.md and docs/performance.md describe these targets.
# The version released: Cargo.toml's, which every other place must name (check-version).
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n 1)
# Where `make publish` pushes: registry://$(REGISTRY)/image-arch-affinity:v$(VERSION).
REGISTRY ?= ghcr.io/image-arch-affinity/policies
# A sources.yml for kwctl (e.g. `insecure_sources: ["127.0.0.1:5000"]` for a plain-HTTP registry).
SOURCES ?=

.PHONY: check-version publish artifacthub cluster-admission-policy bench

# Cargo.toml, Cargo.lock, metadata.yml, artifacthub-pkg.yml and the module references in the docs
# name the same version, and TAG (a release tag, vX.Y.Z: the release workflow's) names it too.
TAG ?=
## Every place that names the version names Cargo.toml's (and TAG's).
check-version:
	@bash scripts/check-version.sh "$(TAG)"

## kwctl push of annotated-policy.wasm to REGISTRY.
publish: check-version annotated-policy.wasm
	$(KWCTL) push $(if $(SOURCES),--sources-path $(SOURCES)) \
		annotated-policy.wasm registry://$(REGISTRY)/image-arch-affinity:v$(VERSION)

# Artifact Hub package file, generated by kwctl from metadata.yml and questions-ui.yml
# (scripts/artifacthub-pkg.sh keeps the committed createdAt unless CREATED_AT is set).
## Artifact Hub's package file, generated by kwctl from metadata.yml and questions-ui.yml.
artifacthub-pkg.yml: metadata.yml questions-ui.yml
	KWCTL=$(KWCTL) scripts/artifacthub-pkg.sh

# OUT: where to write instead of the committed file (the e2e tests compare the two).
OUT ?=
## artifacthub-pkg.yml regenerated (to OUT when set).
artifacthub:
	KWCTL=$(KWCTL) scripts/artifacthub-pkg.sh $(OUT)

# The ClusterAdmissionPolicy users apply (kwctl scaffold manifest, module at the released URI).
## examples/cluster-admission-policy.yaml, kwctl scaffold manifest from the annotated module.
examples/cluster-admission-policy.yaml: annotated-policy.wasm
	KWCTL=$(KWCTL) scripts/cluster-admission-policy.sh

## examples/cluster-admission-policy.yaml regenerated (to OUT when set).
cluster-admission-policy:
	KWCTL=$(KWCTL) scripts/cluster-admission-policy.sh $(OUT)

# kwctl bench and a policy-server + wrk load run: the policy against the trivial module and
# Kubewarden's pod-privileged policy (not part of `make test`; BENCH_SECONDS per wrk run).
BENCH_SECONDS ?= 15
## kwctl bench and policy-server + wrk against the trivial module and pod-privileged.
bench: annotated-policy.wasm
	KWCTL=$(KWCTL) POLICY_SERVER=$(POLICY_SERVER) BENCH_SECONDS=$(BENCH_SECONDS) scripts/bench.sh
