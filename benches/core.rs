//! The native decision core alone, stage by stage, to show where an evaluation's time goes:
//! reading the request JSON, deciding (manifest parsing, intersection, patch building), writing
//! the response. `make bench` runs it after the wasm benchmark.

use std::hint::black_box;
use std::time::{Duration, Instant};

use image_arch_affinity::policy::{self, Request};
use image_arch_affinity::registry::Registry;
use image_arch_affinity::settings::Settings;
use kubewarden_policy_sdk::request::ValidationRequest;
use serde_json::{json, Value};

struct Memory {
    index: Vec<u8>,
}

impl Registry for Memory {
    fn manifest(&mut self, _image: &str) -> Result<Vec<u8>, String> {
        Ok(self.index.clone())
    }
    fn manifest_and_config(&mut self, _image: &str) -> Result<Vec<u8>, String> {
        Err("not used".into())
    }
}

fn payload(containers: usize, unique: usize) -> Vec<u8> {
    let containers: Vec<Value> = (0..containers)
        .map(|c| json!({"name": format!("c{c}"), "image": format!("bench.example.com/team/app{}:1.0", c % unique),
            "ports": [{"containerPort": 8080}], "resources": {"requests": {"cpu": "100m"}}}))
        .collect();
    serde_json::to_vec(&json!({"settings": {}, "request": {"uid": "bench",
        "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
        "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   "spec": {"containers": containers}}}}))
    .unwrap()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(iterations: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..iterations)
            .map(|_| {
                let started = Instant::now();
                black_box(f());
                started.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let iterations = if benchmarking { 2000 } else { 1 };
    let entry = |arch: &str| {
        json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": format!("sha256:{}", "a".repeat(64)), "size": 1234, "platform": {"architecture": arch, "os": "linux"}})
    };
    let index = serde_json::to_vec(&json!({"schemaVersion": 2, "manifests": [entry("amd64"), entry("arm64"), entry("s390x"),
        {"platform": {"architecture": "unknown", "os": "unknown"}, "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}]}))
    .unwrap();
    println!("| case (native) | read request | decide | write response | whole validate |");
    println!("|---|---|---|---|---|");
    for (containers, unique) in [(1, 1), (3, 3), (10, 10), (100, 1), (100, 10)] {
        let payload = payload(containers, unique);
        let mut registry = Memory {
            index: index.clone(),
        };
        let read = time(iterations, || {
            ValidationRequest::<Settings>::new(&payload).unwrap()
        });
        let parsed = ValidationRequest::<Settings>::new(&payload).unwrap();
        let decide_once = |registry: &mut Memory| {
            let admission = parsed.request.clone();
            policy::evaluate(
                Request {
                    kind: &admission.kind.kind,
                    operation: &admission.operation,
                    sub_resource: &admission.sub_resource,
                    object: admission.object,
                    old_object: &admission.old_object,
                },
                &parsed.settings,
                registry,
            )
        };
        let decide = time(iterations, || decide_once(&mut registry));
        let decision = decide_once(&mut registry);
        let mutated = match &decision.verdict {
            policy::Verdict::Mutate(object) => object.clone(),
            _ => Value::Null,
        };
        let write = time(iterations, || serde_json::to_vec(&mutated).unwrap());
        let whole = time(iterations, || {
            image_arch_affinity::validate_payload(&payload, &mut registry)
        });
        println!(
            "| {containers} containers, {unique} images | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs |",
            read.as_secs_f64() * 1e6,
            decide.as_secs_f64() * 1e6,
            write.as_secs_f64() * 1e6,
            whole.as_secs_f64() * 1e6
        );
    }
}
