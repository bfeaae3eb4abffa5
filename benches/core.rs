//! The native decision core alone, stage by stage, to show where an evaluation's time goes:
//! reading the request JSON (the Pod sparsely), deciding (manifest parsing, intersection, edits),
//! writing the mutated Pod back. `make bench` runs it after the wasm benchmark.

use std::hint::black_box;
use std::time::{Duration, Instant};

use image_arch_affinity::host::cluster::Cluster;
use image_arch_affinity::host::registry::Registry;
use image_arch_affinity::policy::{self, Request};
use image_arch_affinity::Payload;
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

/// A cluster of Linux Nodes of `arches` (each answer to the policy's fixed selectors built once,
/// then served from memory), and `node_pools` Karpenter NodePools (`None`: Karpenter's CRDs not
/// installed).
struct Answers {
    arches: Vec<&'static str>,
    answers: std::collections::HashMap<String, Vec<u8>>,
    node_pools: Option<Vec<u8>>,
}

impl Answers {
    fn new(arches: Vec<&'static str>, node_pools: Option<usize>) -> Answers {
        // All amd64 but the last, of ppc64le; each names its OS and has a taint-free template.
        let pool = |i: usize, arch: &str| {
            json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": format!("pool-{i}")},
                "spec": {"template": {"metadata": {"labels": {"team": format!("t{i}")}}, "spec": {"requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]},
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}],
                    "taints": []}}},
                "status": {"conditions": [{"type": "ValidationSucceeded", "status": "True"},
                    {"type": "NodeClassReady", "status": "True"}, {"type": "Ready", "status": "True"}]}})
        };
        Answers {
            arches,
            answers: Default::default(),
            node_pools: node_pools.map(|n| {
                let items: Vec<Value> = (0..n)
                    .map(|i| pool(i, if i + 1 == n { "ppc64le" } else { "amd64" }))
                    .collect();
                serde_json::to_vec(&json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePoolList", "items": items}))
                    .unwrap()
            }),
        }
    }

    /// The NodeList a selector `kubernetes.io/os=<os>[,kubernetes.io/arch (in|notin) (<a,b>)]`
    /// answers.
    fn answer(&self, selector: &str) -> Vec<u8> {
        let (os, arch) = selector.split_once(',').unwrap_or((selector, ""));
        let (operator, values) = arch
            .trim_start_matches("kubernetes.io/arch ")
            .split_once(' ')
            .unwrap_or(("", ""));
        let values: Vec<&str> = values.trim_matches(['(', ')']).split(',').collect();
        let items: Vec<Value> = self
            .arches
            .iter()
            .enumerate()
            .filter(|_| os == "kubernetes.io/os=linux")
            .filter(|(_, a)| match operator {
                "in" => values.contains(a),
                "notin" => !values.contains(a),
                _ => true,
            })
            .map(|(i, a)| {
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("{a}-{i}"),
                    "labels": {"kubernetes.io/arch": a, "kubernetes.io/os": "linux"}},
                    "status": {"nodeInfo": {"architecture": a, "operatingSystem": "linux"}}})
            })
            .collect();
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "NodeList", "items": items}))
            .unwrap()
    }
}

impl Cluster for Answers {
    fn list_nodes(&mut self, selector: &str, _masks: &[&str]) -> Result<Vec<u8>, String> {
        if let Some(answer) = self.answers.get(selector) {
            return Ok(answer.clone());
        }
        let answer = self.answer(selector);
        self.answers.insert(selector.to_string(), answer.clone());
        Ok(answer)
    }
    fn get_node(&mut self, _name: &str, _masks: &[&str]) -> Result<Vec<u8>, String> {
        Err("not used".into())
    }
    fn list_node_pools(&mut self, _masks: &[&str]) -> Result<Vec<u8>, String> {
        self.node_pools
            .clone()
            .ok_or_else(|| "Cannot find resource karpenter.sh/v1/NodePool".to_string())
    }
    fn get_runtime_class(&mut self, _name: &str) -> Result<Vec<u8>, String> {
        Err("not used".into())
    }
}

fn payload(containers: usize, unique: usize) -> Vec<u8> {
    payload_with(containers, unique, json!({}))
}

fn payload_with(containers: usize, unique: usize, settings: Value) -> Vec<u8> {
    let containers: Vec<Value> = (0..containers)
        .map(|c| json!({"name": format!("c{c}"), "image": format!("bench.example.com/team/app{}:1.0", c % unique),
            "ports": [{"containerPort": 8080}], "resources": {"requests": {"cpu": "100m"}}}))
        .collect();
    serde_json::to_vec(&json!({"settings": settings, "request": {"uid": "bench",
        "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
        "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   "spec": {"containers": containers}}}}))
    .unwrap()
}

/// test_data/pod-realistic.json (a Pod as a ReplicaSet creates it) with images 0, 1, 2.
fn realistic_payload() -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test_data/pod-realistic.json");
    let mut text = std::fs::read_to_string(path).unwrap();
    for i in 0..3 {
        text = text.replace(
            &format!("IMAGE{i}"),
            &format!("bench.example.com/team/app{i}:1.0"),
        );
    }
    let pod: Value = serde_json::from_str(&text).unwrap();
    serde_json::to_vec(&json!({"settings": {}, "request": {"uid": "bench",
        "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
        "object": pod}}))
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
    let entry = |arch: &str, os: &str| {
        json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": format!("sha256:{}", "a".repeat(64)), "size": 1234, "platform": {"architecture": arch, "os": os}})
    };
    let attestation = json!({"platform": {"architecture": "unknown", "os": "unknown"},
        "annotations": {"vnd.docker.reference.type": "attestation-manifest"}});
    let index = serde_json::to_vec(
        &json!({"schemaVersion": 2, "manifests": [entry("amd64", "linux"),
        entry("arm64", "linux"), entry("s390x", "linux"), attestation]}),
    )
    .unwrap();
    // Linux and Windows builds in one index, in a cluster of both OSes: one term per OS.
    let both = serde_json::to_vec(
        &json!({"schemaVersion": 2, "manifests": [entry("amd64", "linux"),
        entry("arm64", "linux"), entry("s390x", "linux"), entry("amd64", "windows"), attestation]}),
    )
    .unwrap();
    let two_oses = json!({"clusterOperatingSystems": ["linux", "windows"],
        "schedulableArchitectures": ["amd64", "arm64"]});
    println!("| case (native) | read request | decide | write object | whole validate |");
    println!("|---|---|---|---|---|");
    let realistic = realistic_payload();
    let cases = [
        ("1 container, 1 image", payload(1, 1), &index),
        ("3 containers, 3 images", payload(3, 3), &index),
        ("10 containers, 10 images", payload(10, 10), &index),
        ("100 containers, 1 image", payload(100, 1), &index),
        ("100 containers, 10 images", payload(100, 10), &index),
        ("realistic Pod (7 KB), 3 images", realistic, &index),
        (
            "3 Linux images, Linux and Windows nodes",
            payload_with(3, 3, two_oses.clone()),
            &index,
        ),
        (
            "3 Linux and Windows images, both kept",
            payload_with(3, 3, two_oses),
            &both,
        ),
    ];
    for (name, payload, index) in cases {
        let mut registry = Memory {
            index: index.clone(),
        };
        // Reading: the request parsed, the Pod read sparsely (src/host/sparse.rs).
        let read = time(iterations, || {
            serde_json::from_slice::<Payload>(&payload).unwrap()
        });
        let parsed: Payload = serde_json::from_slice(&payload).unwrap();
        let request = &parsed.request;
        let pod = request.object.as_ref().unwrap();
        // Deciding on the view: lookups (from memory), manifest parsing, intersection, edits.
        let decide_once = |registry: &mut Memory| {
            policy::evaluate(
                Request {
                    kind: &request.kind.kind,
                    operation: &request.operation,
                    sub_resource: &request.sub_resource,
                    object: pod.view.clone(),
                    old_object: &Value::Null,
                    now: 0,
                },
                &parsed.settings,
                registry,
                &mut image_arch_affinity::host::cluster::NoCluster,
            )
        };
        let decide = time(iterations, || decide_once(&mut registry));
        let mutated = match decide_once(&mut registry).verdict {
            policy::Verdict::Mutate(view) => view,
            _ => Value::Null,
        };
        // Writing the mutated Pod back: the view's edits spliced into the request's text.
        let write = time(iterations, || pod.write(&mutated).unwrap());
        let whole = time(iterations, || {
            image_arch_affinity::validate_payload(&payload, &mut registry)
        });
        println!(
            "| {name} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs |",
            read.as_secs_f64() * 1e6,
            decide.as_secs_f64() * 1e6,
            write.as_secs_f64() * 1e6,
            whole.as_secs_f64() * 1e6
        );
    }
    // readNodes: three amd64 Nodes, an index of amd64, arm64 and s390x builds. Without Karpenter
    // the NodePool list fails as not found (accepted: every Node runs it); with 20 NodePools (one
    // of ppc64le, which no image runs on) the Pod is pinned to amd64. Then 2,500 amd64 and 2,500
    // arm64 Nodes and amd64-only images: pinned to amd64, both Node lists read. The host's
    // answers come from memory: this is the policy's own work.
    println!();
    println!("| readNodes case (native, answers from memory) | decide |");
    println!("|---|---|");
    let node_aware = payload_with(3, 3, json!({"readNodes": true}));
    let parsed: Payload = serde_json::from_slice(&node_aware).unwrap();
    let pod = parsed.request.object.as_ref().unwrap();
    let amd64_only = serde_json::to_vec(
        &json!({"schemaVersion": 2, "manifests": [entry("amd64", "linux"), attestation]}),
    )
    .unwrap();
    let amd64 = || vec!["amd64"; 3];
    let half_and_half = || (0..5000).map(|i| ["amd64", "arm64"][i % 2]).collect();
    for (name, arches, node_pools, index) in [
        ("3 amd64 Nodes, no Karpenter", amd64(), None, &index),
        ("3 amd64 Nodes, 20 NodePools", amd64(), Some(20), &index),
        (
            "5,000 amd64 and arm64 Nodes, amd64-only images, no Karpenter",
            half_and_half(),
            None,
            &amd64_only,
        ),
        (
            "5,000 amd64 and arm64 Nodes, amd64-only images, 20 NodePools",
            half_and_half(),
            Some(20),
            &amd64_only,
        ),
    ] {
        let mut registry = Memory {
            index: index.clone(),
        };
        let mut cluster = Answers::new(arches, node_pools);
        let mut decide_once = |cluster: &mut Answers| {
            policy::evaluate(
                Request {
                    kind: &parsed.request.kind.kind,
                    operation: &parsed.request.operation,
                    sub_resource: &parsed.request.sub_resource,
                    object: pod.view.clone(),
                    old_object: &Value::Null,
                    now: 0,
                },
                &parsed.settings,
                &mut registry,
                cluster,
            )
        };
        let decide = time(iterations, || decide_once(&mut cluster));
        let verdict = match decide_once(&mut cluster).verdict {
            policy::Verdict::Mutate(_) => "pinned",
            policy::Verdict::Accept => "accepted",
            policy::Verdict::Reject(_) => "rejected",
        };
        println!(
            "| {name} ({verdict}) | {:.1} µs |",
            decide.as_secs_f64() * 1e6
        );
    }
    // After admission: the realistic Pod bound to a Node, updated with a label only (no new image,
    // so no host call), against the same Pod's CREATE (a bound Pod is skipped without readNodes):
    // the whole validate, JSON in and out.
    println!();
    println!("| request (native, whole validate) | time |");
    println!("|---|---|");
    let mut bound: Value = serde_json::from_slice(&realistic_payload()).unwrap();
    bound["request"]["object"]["spec"]["nodeName"] = json!("node-1");
    let mut update = bound.clone();
    update["request"]["operation"] = json!("UPDATE");
    update["request"]["oldObject"] = bound["request"]["object"].clone();
    update["request"]["object"]["metadata"]["labels"]["updated"] = json!("yes");
    let mut registry = Memory {
        index: index.clone(),
    };
    for (name, request) in [
        ("Pod CREATE, bound to a Node (skipped)", &bound),
        ("Pod UPDATE, a label only (no new image)", &update),
    ] {
        let payload = serde_json::to_vec(request).unwrap();
        let whole = time(iterations, || {
            image_arch_affinity::validate_payload(&payload, &mut registry)
        });
        println!("| {name} | {:.1} µs |", whole.as_secs_f64() * 1e6);
    }
}
