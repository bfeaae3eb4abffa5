//! The cost of one admission through the host, for image-arch-affinity and for a trivial
//! accept-everything module built with the same SDK and release profile, on the same requests.
//! Registry answers come from memory, so this measures the policy, not the network.
//!
//!   make bench      (builds both modules, then runs this and the native core benchmark)
//!
//! Env: POLICY_WASM, TRIVIAL_WASM (module paths), BENCH_ITERATIONS (default 300), BENCH_ONLY
//! (one case by name).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use test_host::{Host, InMemorySource};

const REGISTRY: &str = "bench.example.com";

fn index() -> Vec<u8> {
    let entry = |arch: &str| {
        json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": format!("sha256:{}", "a".repeat(64)), "size": 1234,
        "platform": {"architecture": arch, "os": "linux"}})
    };
    let attestation = json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": format!("sha256:{}", "b".repeat(64)), "size": 566,
        "platform": {"architecture": "unknown", "os": "unknown"},
        "annotations": {"vnd.docker.reference.digest": format!("sha256:{}", "a".repeat(64)),
                        "vnd.docker.reference.type": "attestation-manifest"}});
    serde_json::to_vec(&json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [entry("amd64"), entry("arm64"), entry("s390x"), attestation.clone(), attestation.clone(), attestation]}))
    .unwrap()
}

fn image(i: usize) -> String {
    format!("{REGISTRY}/team/app{i}:1.0")
}

fn source(images: usize) -> InMemorySource {
    (0..images).fold(InMemorySource::new(), |source, i| {
        source.with_manifest(image(i), index())
    })
}

fn request(containers: usize, unique: usize, skip: bool) -> Value {
    let containers: Vec<Value> = (0..containers)
        .map(|c| {
            json!({"name": format!("c{c}"), "image": image(c % unique),
            "ports": [{"containerPort": 8080}], "resources": {"requests": {"cpu": "100m"}}})
        })
        .collect();
    let mut spec = json!({"containers": containers, "restartPolicy": "Always"});
    if skip {
        spec["nodeName"] = json!("node-1");
    }
    json!({"uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
        "name": "p", "namespace": "default", "userInfo": {"username": "bench"},
        "object": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": "bench"}}, "spec": spec}})
}

/// A Pod as a ReplicaSet creates it (test_data/pod-realistic.json: 7 KB with env, probes,
/// volumes, managedFields and the API server's defaults), its 3 containers on images 0, 1, 2.
fn realistic_request() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test_data/pod-realistic.json");
    let mut text = std::fs::read_to_string(path).expect("test_data/pod-realistic.json");
    for i in 0..3 {
        text = text.replace(&format!("IMAGE{i}"), &image(i));
    }
    let pod: Value = serde_json::from_str(&text).expect("the realistic Pod is JSON");
    json!({"uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
        "namespace": "shop", "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
        "object": pod})
}

struct Measure {
    total: Duration,
    validate: Duration,
    host_calls: u64,
}

/// Median over `iterations` evaluations, after a warm-up: the whole admission (fresh instance,
/// validate, response and patch) and the `validate` call alone.
fn measure(host: &Host, request: &Value, iterations: usize) -> Measure {
    let settings = json!({});
    let warm = host.evaluate(request, &settings).expect("evaluation");
    let host_calls = warm.host_calls.total();
    let mut totals = Vec::with_capacity(iterations);
    let mut validates = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        let evaluation = host.evaluate(request, &settings).expect("evaluation");
        totals.push(started.elapsed());
        validates.push(evaluation.elapsed);
    }
    totals.sort();
    validates.sort();
    Measure {
        total: totals[iterations / 2],
        validate: validates[iterations / 2],
        host_calls,
    }
}

fn path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(default))
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs with no argument and should not
    // take minutes: one iteration then.
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let iterations: usize = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benchmarking { 300 } else { 1 });
    let policy_path = path("POLICY_WASM", "../policy.wasm");
    let trivial_path = path(
        "TRIVIAL_WASM",
        "../target/wasm32-wasip1/release/trivial_policy.wasm",
    );
    let policy_wasm = std::fs::read(&policy_path).expect("policy.wasm (make policy.wasm)");
    let trivial_wasm = std::fs::read(&trivial_path).expect("trivial module (make bench builds it)");
    let source = Arc::new(source(10));
    let mut policy = Host::new(&policy_wasm, source.clone()).expect("policy loads");
    let mut trivial = Host::new(&trivial_wasm, source.clone()).expect("trivial module loads");
    // Every lookup reaches the (in-memory) source: the cost of the host calls is counted.
    policy.set_cache(false);
    trivial.set_cache(false);

    // (name, containers, unique images, skipped); 0 containers: the realistic Pod.
    let cases: [(&str, usize, usize, bool); 9] = [
        ("skipped Pod (nodeName)", 1, 1, true),
        ("1 container, 1 image", 1, 1, false),
        ("3 containers, 3 images", 3, 3, false),
        ("10 containers, 1 image", 10, 1, false),
        ("10 containers, 10 images", 10, 10, false),
        ("100 containers, 1 image", 100, 1, false),
        ("100 containers, 10 images", 100, 10, false),
        ("3 containers, 2 images", 3, 2, false),
        ("realistic Pod (7 KB), 3 images", 0, 3, false),
    ];
    println!(
        "policy.wasm: {} bytes; trivial module: {} bytes; {iterations} evaluations per case, medians\n",
        policy_wasm.len(),
        trivial_wasm.len()
    );
    println!("| case | host calls | admission (policy) | admission (trivial) | ratio | validate call (policy) | validate call (trivial) |");
    println!("|---|---|---|---|---|---|---|");
    // BENCH_ONLY=<case name>: run that case alone (for instruction counts under valgrind).
    let only = std::env::var("BENCH_ONLY").ok();
    for (name, containers, unique, skip) in cases {
        if only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        let request = if containers == 0 {
            realistic_request()
        } else {
            request(containers, unique, skip)
        };
        let ours = measure(&policy, &request, iterations);
        let base = measure(&trivial, &request, iterations);
        println!(
            "| {name} | {} | {} | {} | {:.2} | {} | {} |",
            ours.host_calls,
            micros(ours.total),
            micros(base.total),
            ours.total.as_secs_f64() / base.total.as_secs_f64(),
            micros(ours.validate),
            micros(base.validate),
        );
    }
    assert!(
        source.misses().is_empty(),
        "unanswered lookups: {:?}",
        source.misses()
    );
}
