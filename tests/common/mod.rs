//! Test fixtures: a registry that serves canned host answers and counts the calls, Pods, and the
//! JSON patch the Kubewarden host would compute.
#![allow(dead_code)]

use std::collections::HashMap;

use image_arch_affinity::host::cluster::Cluster;
use image_arch_affinity::host::registry::Registry;
use image_arch_affinity::host::sparse::Sparse;
use image_arch_affinity::policy::{self, Decision, Request, Verdict};
use image_arch_affinity::settings::Settings;
use image_arch_affinity::{Kind, RawRequest};
use serde_json::{json, Value};

/// When every test request is decided (seconds since the Unix epoch): 2026-12-02T00:00:00Z.
pub const NOW: u64 = 1_796_169_600;
pub const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Canned answers by exact lookup string; every call is recorded.
#[derive(Default)]
pub struct FixtureRegistry {
    manifests: HashMap<String, Result<String, String>>,
    configs: HashMap<String, Result<String, String>>,
    pub calls: Vec<String>,
}

impl Registry for FixtureRegistry {
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.calls.push(format!("v1/oci_manifest {image}"));
        answer(&self.manifests, image)
    }

    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.calls.push(format!("v1/oci_manifest_config {image}"));
        answer(&self.configs, image)
    }
}

fn answer(map: &HashMap<String, Result<String, String>>, image: &str) -> Result<Vec<u8>, String> {
    match map.get(image) {
        Some(Ok(body)) => Ok(body.clone().into_bytes()),
        Some(Err(error)) => Err(error.clone()),
        None => Err(format!(
            "Host error: error invoking host capability oci.oci_manifest: {image}: manifest unknown (404 Not Found)"
        )),
    }
}

fn index(media_type: &str, entries: &[Value]) -> String {
    json!({"schemaVersion": 2, "mediaType": media_type, "manifests": entries}).to_string()
}

fn entry(os: &str, arch: &str, variant: Option<&str>) -> Value {
    let mut platform = json!({"architecture": arch, "os": os});
    if let Some(variant) = variant {
        platform["variant"] = json!(variant);
    }
    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": DIGEST, "size": 500, "platform": platform})
}

fn attestation() -> Value {
    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": DIGEST, "size": 800,
        "platform": {"architecture": "unknown", "os": "unknown"},
        "annotations": {"vnd.docker.reference.digest": DIGEST, "vnd.docker.reference.type": "attestation-manifest"}})
}

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

fn single_manifest() -> String {
    json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": DIGEST, "size": 300},
        "layers": []})
    .to_string()
}

fn config(os: &str, arch: &str, variant: Option<&str>) -> String {
    let mut config =
        json!({"architecture": arch, "os": os, "rootfs": {"type": "layers", "diff_ids": []}});
    if let Some(variant) = variant {
        config["variant"] = json!(variant);
    }
    json!({"manifest": serde_json::from_str::<Value>(&single_manifest()).unwrap(), "digest": DIGEST, "config": config}).to_string()
}

impl FixtureRegistry {
    /// The images the tests use, by the canonical reference the policy sends.
    pub fn new() -> FixtureRegistry {
        let mut registry = FixtureRegistry::default();
        let multi = index(
            OCI_INDEX,
            &[
                entry("linux", "amd64", None),
                entry("linux", "arm64", Some("v8")),
                attestation(),
                attestation(),
            ],
        );
        registry.index("docker.io/library/multi:1", &multi);
        registry.index("docker.io/library/busybox:latest", &multi);
        registry.index(&format!("ghcr.io/org/app:1.0@{DIGEST}"), &multi);
        registry.index(&format!("ghcr.io/org/app@{DIGEST}"), &multi);
        registry.index(
            "docker.io/library/list:1",
            &index(
                DOCKER_LIST,
                &[
                    entry("linux", "amd64", None),
                    entry("linux", "arm64", Some("v8")),
                    entry("linux", "arm", Some("v7")),
                    entry("linux", "ppc64le", None),
                    entry("linux", "s390x", None),
                ],
            ),
        );
        registry.index(
            "ghcr.io/org/windows:1",
            &index(OCI_INDEX, &[entry("windows", "amd64", None)]),
        );
        registry.index(
            "ghcr.io/org/windows-linux:1",
            &index(
                OCI_INDEX,
                &[
                    entry("windows", "amd64", None),
                    entry("linux", "amd64", None),
                ],
            ),
        );
        registry.index(
            "ghcr.io/org/linux-windows-multi:1",
            &index(
                OCI_INDEX,
                &[
                    entry("linux", "amd64", None),
                    entry("linux", "arm64", Some("v8")),
                    entry("windows", "amd64", None),
                ],
            ),
        );
        registry.index(
            "127.0.0.1:5000/team/s390x:1.0",
            &index(OCI_INDEX, &[entry("linux", "s390x", None)]),
        );
        registry.index(
            "ghcr.io/org/amd64-only:1",
            &index(OCI_INDEX, &[entry("linux", "amd64", None)]),
        );
        // amd64 and 32-bit arm, which no label selector of the policy names.
        registry.index(
            "ghcr.io/org/amd64-armv7:1",
            &index(
                OCI_INDEX,
                &[
                    entry("linux", "amd64", None),
                    entry("linux", "arm", Some("v7")),
                ],
            ),
        );
        registry.single(
            "ghcr.io/org/arm64-only:1",
            &config("linux", "arm64", Some("v8")),
        );
        registry.single("ghcr.io/org/armv7:1", &config("linux", "arm", Some("v7")));
        // WebAssembly only: runs on any node (a shim runs it).
        registry.index(
            "ghcr.io/org/wasm-index:1",
            &index(OCI_INDEX, &[entry("wasip1", "wasm", None)]),
        );
        registry
    }

    pub fn index(&mut self, image: &str, body: &str) {
        self.manifests
            .insert(image.to_string(), Ok(body.to_string()));
    }

    pub fn single(&mut self, image: &str, config: &str) {
        self.manifests
            .insert(image.to_string(), Ok(single_manifest()));
        self.configs
            .insert(image.to_string(), Ok(config.to_string()));
    }

    /// An image whose manifest is `manifest` (an artifact's, say) and whose
    /// `oci_manifest_config` answer, if any, has `config` as its config.
    pub fn artifact(&mut self, image: &str, manifest: &Value, config: Option<&Value>) {
        self.manifests
            .insert(image.to_string(), Ok(manifest.to_string()));
        if let Some(config) = config {
            let answer = json!({"manifest": manifest, "digest": DIGEST, "config": config});
            self.configs
                .insert(image.to_string(), Ok(answer.to_string()));
        }
    }

    pub fn fail(&mut self, image: &str, error: &str) {
        self.manifests
            .insert(image.to_string(), Err(error.to_string()));
    }
}

/// A Pod with one container per image, and the extra spec fields given.
pub fn pod(images: &[&str], spec: Value) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image, "x-unknown-container-field": true}))
        .collect();
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "p"}},
        "spec": {"containers": containers, "x-unknown-spec-field": {"kept": 1}}
    });
    if let (Some(target), Some(extra)) = (pod["spec"].as_object_mut(), spec.as_object()) {
        for (key, value) in extra {
            target.insert(key.clone(), value.clone());
        }
    }
    pod
}

pub fn settings(json: Value) -> Settings {
    let settings = Settings::from_json(json.to_string().as_bytes()).expect("settings parse");
    settings.validate().expect("settings valid");
    settings
}

/// The outcome of one evaluation, as the host would see it.
#[derive(Debug)]
pub struct Run {
    pub decision: Decision,
    /// The JSON patch the host would send (`json_patch::diff`), if the policy mutated.
    pub patch: Option<Value>,
    pub calls: Vec<String>,
}

impl Run {
    pub fn rejection(&self) -> &str {
        match &self.decision.verdict {
            Verdict::Reject(message) => message,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    pub fn assert_accepted_unchanged(&self) {
        assert_eq!(self.decision.verdict, Verdict::Accept, "{self:?}");
    }

    pub fn assert_patch(&self, expected: Value) {
        assert_eq!(self.patch.as_ref(), Some(&expected), "{self:?}");
    }

    /// A template's patch: `expected`, and the record of its decision (made at `NOW`, its
    /// fingerprint 16 hex digits), which the patch adds beside the other annotations.
    pub fn assert_template_patch(&self, expected: Value) {
        let (patch, record) = self.patch.as_ref().map(split_record).unzip();
        assert_eq!(patch.as_ref(), Some(&expected), "{self:?}");
        let record = record
            .flatten()
            .unwrap_or_else(|| panic!("no record: {self:?}"));
        let (at, print) = record
            .split_once('/')
            .expect("a record is TIME/FINGERPRINT");
        assert_eq!(at, NOW.to_string());
        assert!(
            print.len() == 16 && print.chars().all(|c| c.is_ascii_hexdigit()),
            "{record}"
        );
    }
}

/// A patch without the decision record it writes (`add` of the annotation, or of the
/// annotations holding it), and the record.
pub fn split_record(patch: &Value) -> (Value, Option<String>) {
    let key = image_arch_affinity::policy::DECISION_ANNOTATION;
    let escaped = format!("/{}", key.replace('/', "~1"));
    let mut record = None;
    let mut ops = Vec::new();
    for op in patch.as_array().into_iter().flatten() {
        let path = op["path"].as_str().unwrap_or_default();
        if path.ends_with(&escaped) {
            record = op["value"].as_str().map(String::from);
            continue;
        }
        let mut op = op.clone();
        if path.ends_with("/annotations") {
            if let Some(value) = op["value"].as_object_mut().and_then(|a| a.remove(key)) {
                record = value.as_str().map(String::from);
            }
        }
        ops.push(op);
    }
    (Value::Array(ops), record)
}

pub fn run_with(registry: &mut FixtureRegistry, object: &Value, settings: &Settings) -> Run {
    run_request(registry, "Pod", "CREATE", object, settings)
}

pub fn run_request(
    registry: &mut FixtureRegistry,
    kind: &str,
    operation: &str,
    object: &Value,
    settings: &Settings,
) -> Run {
    run_update(registry, kind, operation, object, &Value::Null, settings)
}

pub fn run_update(
    registry: &mut FixtureRegistry,
    kind: &str,
    operation: &str,
    object: &Value,
    old_object: &Value,
    settings: &Settings,
) -> Run {
    let mut cluster = FixtureCluster::default();
    let run = run_in_cluster(
        registry,
        &mut cluster,
        kind,
        operation,
        object,
        old_object,
        settings,
    );
    assert_eq!(
        cluster.calls,
        Vec::<String>::new(),
        "no Node is read without readNodes"
    );
    run
}

/// A cluster of Nodes (JSON as the API server serves them) that answers the policy's Node
/// lists and gets as the Kubewarden host does: label selectors (`k=v`, `k in (..)`,
/// `k notin (..)`, comma-separated) evaluated over the Nodes, field masks applied to `spec` and
/// `status` (metadata always whole). Every call is recorded.
#[derive(Default)]
pub struct FixtureCluster {
    pub nodes: Vec<Value>,
    /// Every call fails with this host error (from call `fail_from` on, 0-based, when set; only
    /// the NodePool list with `fail_node_pools_only`).
    pub failure: Option<String>,
    pub fail_from: Option<usize>,
    pub fail_node_pools_only: bool,
    pub calls: Vec<String>,
    /// The Nodes the answers held, in all.
    pub nodes_read: usize,
    /// Karpenter's NodePools, as the API server serves them; `None`: Karpenter's CRDs are not
    /// installed (the list fails as policy-server's discovery does).
    pub node_pools: Option<Vec<Value>>,
    /// RuntimeClasses by name, with their handler.
    pub runtime_classes: Vec<(String, String)>,
}

/// The call that lists Karpenter's NodePools, as `FixtureCluster::calls` records it.
pub const NODE_POOLS_CALL: &str = "list_resources_all karpenter.sh/v1/NodePool";

/// policy-server's answer to the NodePool list in a cluster without Karpenter's CRDs (its
/// discovery of `karpenter.sh/v1` fails).
pub const NO_KARPENTER: &str = "Host error: error finding resource karpenter.sh/v1 / NodePool: \
    ApiError: \"404 page not found\\n\": Failed to parse error data (ErrorResponse { status: \"404 Not Found\", \
    message: \"\\\"404 page not found\\\\n\\\"\", reason: \"Failed to parse error data\", code: 404 })";

/// A Karpenter NodePool, Ready, with these template requirements and taints.
pub fn node_pool(name: &str, requirements: Value, taints: Value) -> Value {
    json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "4711"},
        "spec": {"template": {"spec": {"requirements": requirements, "taints": taints,
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
            "limits": {"cpu": "1000"}, "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized"}},
        "status": {"conditions": [
            {"type": "ValidationSucceeded", "status": "True"}, {"type": "NodeClassReady", "status": "True"},
            {"type": "Ready", "status": "True"}]}})
}

/// A Node shaped like a real one (kubelet labels, a taint or a cordon when asked, status).
pub fn node(name: &str, os: &str, arch: &str) -> Value {
    let mut labels = json!({
        "beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": os,
        "kubernetes.io/arch": arch, "kubernetes.io/os": os, "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": "m6g.large", "topology.kubernetes.io/zone": "eu-west-1a"});
    if os == "windows" {
        labels["node.kubernetes.io/windows-build"] = json!("10.0.20348");
    }
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "4711",
            "creationTimestamp": "2026-11-01T00:00:00Z", "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": "10.244.1.0/24", "providerID": format!("aws:///eu-west-1a/{name}")},
        "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"architecture": arch, "operatingSystem": os, "kubeletVersion": "v1.31.2",
                "osImage": "Ubuntu 24.04 LTS", "containerRuntimeVersion": "containerd://1.7.22"}}})
}

fn label_matches(node: &Value, requirement: &str) -> bool {
    let labels = &node["metadata"]["labels"];
    let set = |values: &str| -> Vec<String> {
        values
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|v| v.trim().to_string())
            .collect()
    };
    if let Some(key) = requirement.strip_prefix('!') {
        return labels[key].is_null();
    }
    if let Some((key, values)) = requirement.split_once(" notin ") {
        return labels[key.trim()]
            .as_str()
            .is_none_or(|v| !set(values).iter().any(|x| x == v));
    }
    if let Some((key, values)) = requirement.split_once(" in ") {
        return labels[key.trim()]
            .as_str()
            .is_some_and(|v| set(values).iter().any(|x| x == v));
    }
    let (key, value) = requirement.split_once('=').expect("k=v");
    labels[key] == value
}

/// Splits a selector at the commas outside parentheses.
fn requirements(selector: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&selector[start..]);
    parts
}

fn masked(node: &Value, masks: &[&str]) -> Value {
    let mut out = json!({"apiVersion": node["apiVersion"], "kind": node["kind"], "metadata": node["metadata"]});
    for mask in masks {
        let path: Vec<&str> = mask.split('.').collect();
        let mut source = node;
        for key in &path {
            source = &source[*key];
        }
        if source.is_null() {
            continue;
        }
        let mut target = &mut out;
        for key in &path[..path.len() - 1] {
            target = target
                .as_object_mut()
                .expect("object")
                .entry(key.to_string())
                .or_insert_with(|| json!({}));
        }
        target[path[path.len() - 1]] = source.clone();
    }
    out
}

impl FixtureCluster {
    pub fn of(nodes: Vec<Value>) -> FixtureCluster {
        FixtureCluster {
            nodes,
            ..FixtureCluster::default()
        }
    }
}

impl Cluster for FixtureCluster {
    fn list_nodes(&mut self, selector: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.calls.push(format!(
            "list_resources_all v1/Node {selector} masks {}",
            masks.join(",")
        ));
        if let Some(failure) = self.failure.as_ref().filter(|_| !self.fail_node_pools_only) {
            if self.fail_from.is_none_or(|from| self.calls.len() > from) {
                return Err(failure.clone());
            }
        }
        let items: Vec<Value> = self
            .nodes
            .iter()
            .filter(|node| {
                requirements(selector)
                    .iter()
                    .all(|r| label_matches(node, r))
            })
            .map(|node| masked(node, masks))
            .collect();
        self.nodes_read += items.len();
        Ok(json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": items})
            .to_string()
            .into_bytes())
    }

    fn list_node_pools(&mut self, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.calls.push(NODE_POOLS_CALL.to_string());
        assert_eq!(masks, image_arch_affinity::read::node_pools::FIELD_MASKS);
        if let Some(failure) = &self.failure {
            if self.fail_from.is_none_or(|from| self.calls.len() > from) {
                return Err(failure.clone());
            }
        }
        match &self.node_pools {
            None => Err(NO_KARPENTER.to_string()),
            Some(pools) => Ok(
                json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePoolList",
                "metadata": {"resourceVersion": "1"}, "items": pools})
                .to_string()
                .into_bytes(),
            ),
        }
    }

    fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
        self.calls.push(format!(
            "get_resource node.k8s.io/v1/RuntimeClass {name} masks handler"
        ));
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        self.runtime_classes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, handler)| {
                json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                    "metadata": {"name": n}, "handler": handler})
                .to_string()
                .into_bytes()
            })
            .ok_or_else(|| format!("Host error: error invoking host capability kubernetes.get_resource: \
                ApiError: runtimeclasses.node.k8s.io \"{name}\" not found: NotFound (ErrorResponse {{ status: \"Failure\", \
                message: \"runtimeclasses.node.k8s.io \\\"{name}\\\" not found\", reason: \"NotFound\", code: 404 }})"))
    }

    fn get_node(&mut self, name: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.calls.push(format!(
            "get_resource v1/Node {name} masks {}",
            masks.join(",")
        ));
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        self.nodes
            .iter()
            .find(|node| node["metadata"]["name"] == name)
            .map(|node| masked(node, masks).to_string().into_bytes())
            .ok_or_else(|| {
                format!("Host error: error invoking host capability kubernetes.get_resource: nodes \"{name}\" not found")
            })
    }
}

/// `run_in_cluster` of a Pod CREATE with `readNodes: true` added to `settings_json`.
pub fn node_aware(cluster: &mut FixtureCluster, object: &Value, settings_json: Value) -> Run {
    let mut settings_json = settings_json;
    settings_json["readNodes"] = json!(true);
    run_in_cluster(
        &mut FixtureRegistry::new(),
        cluster,
        "Pod",
        "CREATE",
        object,
        &Value::Null,
        &settings(settings_json),
    )
}

/// A DaemonSet whose Pod template is `template`'s, created with `readNodes` in `cluster`.
pub fn node_aware_daemon_set(cluster: &mut FixtureCluster, template: &Value) -> Run {
    let daemon_set = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"metadata": template["metadata"], "spec": template["spec"]}}});
    run_in_cluster(
        &mut FixtureRegistry::new(),
        cluster,
        "DaemonSet",
        "CREATE",
        &daemon_set,
        &Value::Null,
        &settings(json!({"readNodes": true})),
    )
}

/// One evaluation in a cluster (read only with `readNodes`): the whole object and the sparse
/// reading, which must decide alike after the same host calls.
pub fn run_in_cluster(
    registry: &mut FixtureRegistry,
    cluster: &mut FixtureCluster,
    kind: &str,
    operation: &str,
    object: &Value,
    old_object: &Value,
    settings: &Settings,
) -> Run {
    run_subresource(
        registry, cluster, kind, operation, "", object, old_object, settings,
    )
}

/// A Pod UPDATE (`sub_resource`: "" for the Pod itself, `ephemeralcontainers` for `kubectl
/// debug`), in a cluster read only with `readNodes`.
pub fn run_pod_update(
    cluster: &mut FixtureCluster,
    sub_resource: &str,
    object: &Value,
    old_object: &Value,
    settings_json: Value,
) -> Run {
    run_subresource(
        &mut FixtureRegistry::new(),
        cluster,
        "Pod",
        "UPDATE",
        sub_resource,
        object,
        old_object,
        &settings(settings_json),
    )
}

/// `run_in_cluster` for a request on `sub_resource`.
#[allow(clippy::too_many_arguments)]
pub fn run_subresource(
    registry: &mut FixtureRegistry,
    cluster: &mut FixtureCluster,
    kind: &str,
    operation: &str,
    sub_resource: &str,
    object: &Value,
    old_object: &Value,
    settings: &Settings,
) -> Run {
    registry.calls.clear();
    cluster.calls.clear();
    let nodes_read = cluster.nodes_read;
    let decision = policy::evaluate(
        Request {
            kind,
            operation,
            sub_resource,
            object: object.clone(),
            old_object,
            now: NOW,
        },
        settings,
        registry,
        cluster,
    );
    // The same request as the module reads it (objects as raw JSON, read sparsely): the same
    // decision and, when mutated, the same object, after the same lookups.
    let calls = std::mem::take(&mut registry.calls);
    let cluster_calls = std::mem::take(&mut cluster.calls);
    // Counted for one evaluation.
    let read_once = cluster.nodes_read;
    let json = |value: &Value| serde_json::to_string(value).expect("JSON");
    let (object_json, old_object_json) = (json(object), json(old_object));
    fn read(json: &str) -> Option<Sparse<'_>> {
        serde_json::from_str(json).expect("the object reads")
    }
    let sparse = image_arch_affinity::decide_in_cluster(
        RawRequest {
            kind: Kind { kind: kind.into() },
            operation: operation.into(),
            sub_resource: sub_resource.into(),
            object: read(&object_json),
            old_object: read(&old_object_json),
        },
        settings,
        registry,
        cluster,
        NOW,
    )
    .expect("the request reads");
    let sparse_verdict = match sparse.verdict {
        Verdict::Accept => Verdict::Accept,
        Verdict::Reject(message) => Verdict::Reject(message),
        Verdict::Mutate(json) => {
            Verdict::Mutate(serde_json::from_slice(&json).expect("the mutated object is JSON"))
        }
    };
    assert_eq!(
        (&sparse_verdict, &sparse.warnings),
        (&decision.verdict, &decision.warnings),
        "the sparse reading decides as the whole object"
    );
    assert_eq!(
        registry.calls, calls,
        "the sparse reading looks up the same images"
    );
    assert_eq!(
        cluster.calls, cluster_calls,
        "the sparse reading reads the same Nodes"
    );
    assert_eq!(cluster.nodes_read - read_once, read_once - nodes_read);
    cluster.nodes_read = read_once;
    let patch = match &decision.verdict {
        Verdict::Mutate(mutated) => {
            Some(serde_json::to_value(json_patch::diff(object, mutated)).expect("patch serializes"))
        }
        _ => None,
    };
    Run {
        decision,
        patch,
        calls: registry.calls.clone(),
    }
}

pub fn run(object: &Value, settings_json: Value) -> Run {
    run_with(
        &mut FixtureRegistry::new(),
        object,
        &settings(settings_json),
    )
}

/// Applies the run's patch to `object` (the host's job), for idempotency checks.
pub fn apply(object: &Value, patch: &Value) -> Value {
    let mut patched = object.clone();
    let patch: json_patch::Patch = serde_json::from_value(patch.clone()).expect("patch parses");
    json_patch::patch(&mut patched, &patch).expect("patch applies");
    patched
}

/// The affinity patch operation for a Pod without any affinity.
pub fn add_required(architectures: &[&str]) -> Value {
    json!({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": architectures}]}]}}}})
}

/// As `add_required`, with `kubernetes.io/os In [os]` after the architectures (none: the OS
/// alone), as a Pod gets in a cluster of several OSes.
pub fn add_required_os(architectures: &[&str], os: &str) -> Value {
    let mut expressions = Vec::new();
    if !architectures.is_empty() {
        expressions
            .push(json!({"key": "kubernetes.io/arch", "operator": "In", "values": architectures}));
    }
    expressions.push(json!({"key": "kubernetes.io/os", "operator": "In", "values": [os]}));
    json!({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": expressions}]}}}})
}

/// The annotation patch operation for a Pod without annotations.
pub fn add_annotation(architectures: &str) -> Value {
    json!({"op": "add", "path": "/metadata/annotations", "value": {
        "image-arch-affinity.kubewarden.io/architectures": architectures}})
}
