//! The generated cases: settings, an admission request (a Pod or a workload, created or updated),
//! the registry's catalog and the cluster's Nodes and NodePools. Drawn wide rather than
//! realistic: every input the decision reads takes odd values too.

use serde_json::{json, Value};

/// splitmix64: small, fast, and the same sequence everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() - 1)].clone()
    }

    /// Some of `items`, in their order.
    pub fn some<T: Clone>(&mut self, items: &[T], percent: u64) -> Vec<T> {
        items
            .iter()
            .filter(|_| self.chance(percent))
            .cloned()
            .collect()
    }
}

const ARCHES: [&str; 6] = ["amd64", "arm64", "s390x", "ppc64le", "arm", "riscv64"];
const NESTED: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The registry: images by name (the last path segment of a reference, before its tag or
/// digest), each an index of platforms, a single manifest and its config, or a failure.
pub struct Catalog;

fn entry(os: Option<&str>, arch: &str, version: Option<&str>) -> Value {
    let mut platform = json!({"architecture": arch});
    if let Some(os) = os {
        platform["os"] = json!(os);
    }
    if let Some(version) = version {
        platform["os.version"] = json!(version);
    }
    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": DIGEST, "size": 1, "platform": platform})
}

fn index(entries: Vec<Value>) -> Value {
    json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries})
}

const SINGLE: &str = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":1},"layers":[]}"#;

/// The images every case may use.
pub const IMAGES: [&str; 26] = [
    "amd64",
    "arm64",
    "multi",
    "all",
    "s390x",
    "armv7",
    "win17763",
    "win20348",
    "winboth",
    "winany",
    "winarm",
    "linwin",
    "linwin17763",
    "noos",
    "wasm",
    "wasmlin",
    "spin",
    "helm",
    "odd",
    "riscv",
    "missing",
    "broken",
    "limited",
    "ppc",
    "nested",
    "cfg",
];

impl Catalog {
    fn name(image: &str) -> &str {
        let last = image.rsplit('/').next().unwrap_or(image);
        let last = last.split('@').next().unwrap_or(last);
        last.split(':').next().unwrap_or(last)
    }

    pub fn manifest(&self, image: &str) -> Result<Vec<u8>, String> {
        fn w(v: &str) -> Option<&str> {
            Some(v)
        }
        let body = match Catalog::name(image) {
            "nested" if image.contains(NESTED) => index(vec![entry(w("linux"), "arm64", None)]),
            "amd64" => index(vec![entry(w("linux"), "amd64", None)]),
            "multi" => index(vec![
                entry(w("linux"), "amd64", None),
                entry(w("linux"), "arm64", None),
                json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": DIGEST, "size": 1,
                    "platform": {"architecture": "unknown", "os": "unknown"}}),
            ]),
            "all" => index(
                ["amd64", "arm64", "arm", "ppc64le", "s390x"]
                    .iter()
                    .map(|a| entry(w("linux"), a, None))
                    .collect(),
            ),
            "s390x" => index(vec![entry(w("linux"), "s390x", None)]),
            "ppc" => index(vec![entry(w("linux"), "ppc64le", None), entry(w("linux"), "amd64", None)]),
            "riscv" => index(vec![entry(w("linux"), "riscv64", None)]),
            "win17763" => index(vec![entry(w("windows"), "amd64", w("10.0.17763.1"))]),
            "win20348" => index(vec![entry(w("windows"), "amd64", w("10.0.20348.5"))]),
            "winboth" => index(vec![
                entry(w("windows"), "amd64", w("10.0.17763.1")),
                entry(w("windows"), "amd64", w("10.0.20348.5")),
            ]),
            "winany" => index(vec![entry(w("windows"), "amd64", None)]),
            "winarm" => index(vec![
                entry(w("windows"), "arm64", w("10.0.20348.5")),
                entry(w("windows"), "amd64", w("10.0.20348.5")),
            ]),
            "linwin" => index(vec![
                entry(w("linux"), "amd64", None),
                entry(w("linux"), "arm64", None),
                entry(w("windows"), "amd64", w("10.0.20348.5")),
            ]),
            "linwin17763" => index(vec![
                entry(w("linux"), "amd64", None),
                entry(w("windows"), "amd64", w("10.0.17763.1")),
            ]),
            "noos" => index(vec![entry(None, "amd64", None), entry(None, "arm64", None)]),
            "wasm" => index(vec![entry(w("wasip1"), "wasm", None)]),
            "wasmlin" => index(vec![entry(w("wasip1"), "wasm", None), entry(w("linux"), "amd64", None)]),
            "odd" => index(vec![entry(w("linux"), "x86 64", None), entry(w("linux"), "amd64", None)]),
            "nested" => index(vec![
                json!({"mediaType": "application/vnd.oci.image.index.v1+json", "digest": NESTED, "size": 1}),
                entry(w("linux"), "s390x", None),
            ]),
            "arm64" | "armv7" | "cfg" => return Ok(SINGLE.as_bytes().to_vec()),
            "spin" => json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.fermyon.spin.application.v1+config", "digest": DIGEST, "size": 1}, "layers": []}),
            "helm" => json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json", "digest": DIGEST, "size": 1}, "layers": []}),
            "broken" => return Err("Host error: error invoking host capability oci.oci_manifest: 500 Internal Server Error".into()),
            "limited" => return Err("Host error: error invoking host capability oci.oci_manifest: toomanyrequests: You have reached your pull rate limit (429 Too Many Requests)".into()),
            _ => return Err(format!("Host error: error invoking host capability oci.oci_manifest: {image}: manifest unknown (404 Not Found)")),
        };
        Ok(body.to_string().into_bytes())
    }

    pub fn config(&self, image: &str) -> Result<Vec<u8>, String> {
        let (os, arch, variant) = match Catalog::name(image) {
            "arm64" => ("linux", "arm64", Some("v8")),
            "armv7" => ("linux", "arm", Some("v7")),
            "cfg" => ("linux", "amd64", None),
            "helm" => return Ok(json!({"manifest": {}, "digest": DIGEST, "config": {}}).to_string().into_bytes()),
            _ => return Err(format!("Host error: error invoking host capability oci.oci_manifest_config: {image}: no config")),
        };
        let mut config = json!({"architecture": arch, "os": os});
        if let Some(variant) = variant {
            config["variant"] = json!(variant);
        }
        Ok(json!({"manifest": serde_json::from_str::<Value>(SINGLE).unwrap_or_default(), "digest": DIGEST, "config": config})
            .to_string()
            .into_bytes())
    }
}

/// The cluster: its Nodes, its NodePool list (or the host's error), and a failure from the
/// call after `.1` on.
pub struct Cluster {
    pub nodes: Vec<Value>,
    pub node_pools: Result<Vec<Value>, String>,
    pub failure: Option<(String, usize)>,
}

pub struct Case {
    pub settings: Value,
    pub request: Value,
    pub catalog: Catalog,
    pub cluster: Cluster,
}

impl Case {
    pub fn generate(rng: &mut Rng) -> Case {
        let settings = settings(rng);
        let cluster = cluster(rng);
        let names: Vec<String> = cluster
            .nodes
            .iter()
            .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        let request = request(rng, &names);
        Case {
            settings,
            request,
            catalog: Catalog,
            cluster,
        }
    }

    pub fn payload(&self) -> Vec<u8> {
        json!({"settings": self.settings, "request": self.request})
            .to_string()
            .into_bytes()
    }

    pub fn read_nodes(&self) -> bool {
        self.settings["readNodes"] == true
    }

    pub fn kind(&self) -> String {
        self.request["kind"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn operation(&self) -> String {
        let operation = self.request["operation"].as_str().unwrap_or_default();
        match self.request["subResource"].as_str() {
            Some(sub) if !sub.is_empty() => format!("{operation}/{sub}"),
            _ => operation.to_string(),
        }
    }

    pub fn describe(&self) -> String {
        let what = format!("{} {}", self.kind(), self.operation());
        json!({"what": what, "settings": self.settings, "request": self.request, "nodes": self.cluster.nodes,
            "nodePools": match &self.cluster.node_pools { Ok(p) => json!(p), Err(e) => json!(e) },
            "failure": self.cluster.failure})
        .to_string()
    }
}

fn arch_list(rng: &mut Rng, percent: u64) -> Vec<&'static str> {
    rng.some(&ARCHES, percent)
}

fn toleration(rng: &mut Rng) -> Value {
    rng.pick(&[
        json!({"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}),
        json!({"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}),
        json!({"key": "dedicated", "operator": "Exists"}),
        json!({"key": "kubernetes.io/arch", "value": "amd64", "effect": "NoSchedule"}),
        json!({"operator": "Exists"}),
        json!({"key": "gpu", "value": "true", "effect": "NoExecute", "tolerationSeconds": 30}),
    ])
}

fn settings(rng: &mut Rng) -> Value {
    let mut s = json!({});
    let read_nodes = rng.chance(55);
    if read_nodes {
        s["readNodes"] = json!(true);
        if rng.chance(25) {
            s["autoscaledArchitectures"] = json!([{"os": rng.pick(&["linux", "windows"]), "architectures": arch_list(rng, 30)}]);
        }
    } else {
        if rng.chance(50) {
            s["schedulableArchitectures"] = json!(arch_list(rng, 50));
        }
        if rng.chance(35) {
            s["clusterOperatingSystems"] =
                json!(rng.pick(&[vec!["linux"], vec!["linux", "windows"], vec!["windows"]]));
        }
    }
    if rng.chance(10) {
        s["defaultOperatingSystem"] = json!("windows");
    }
    if rng.chance(25) {
        s["onNoCommonArchitecture"] = json!("accept");
    }
    if rng.chance(40) {
        s["onLookupFailure"] = json!(rng.pick(&["ignoreImage", "accept", "reject"]));
    }
    if rng.chance(8) {
        s["registryMirrors"] = json!({"r.example": "mirror.example/pfx"});
    }
    if rng.chance(10) {
        s["imagePlatforms"] = json!([{"image": "r.example/cfg*", "architectures": arch_list(rng, 40),
            "operatingSystems": rng.some(&["linux", "windows"], 50)}]);
    }
    match rng.range(0, 9) {
        0 => s["preferredArchitecture"] = json!(rng.pick(&ARCHES)),
        1 => {
            s["preferredArchitectures"] = json!([{"architecture": "arm64", "weight": 60}, {"architecture": "amd64", "weight": 10}])
        }
        _ => {}
    }
    if rng.chance(15) {
        s["fallbackArchitectures"] = json!(arch_list(rng, 40));
    }
    if rng.chance(25) {
        let mut tolerations = json!({});
        for arch in arch_list(rng, 40) {
            tolerations[arch] = json!([toleration(rng)]);
        }
        s["architectureTolerations"] = tolerations;
    }
    if rng.chance(15) {
        s["matchNodeLabels"] = json!(rng.pick(&[
            vec!["team"],
            vec!["team", "zone"],
            vec!["kubernetes.io/arch"]
        ]));
    }
    if rng.chance(40) {
        s["workloadTemplates"] = json!("mutate");
    }
    if rng.chance(30) {
        s["daemonSetTemplates"] = json!("mutate");
    }
    if rng.chance(25) {
        s["pinWindowsBuild"] = json!(true);
    }
    if rng.chance(10) {
        s["wasmRuntimeClasses"] = json!(["wasm"]);
    }
    s
}

fn node(rng: &mut Rng, index: usize) -> Value {
    let os = rng.pick(&["linux", "linux", "linux", "windows"]);
    let arch = rng.pick(&[
        "amd64", "amd64", "arm64", "arm64", "s390x", "ppc64le", "arm", "riscv64",
    ]);
    let mut labels = json!({"zone": rng.pick(&["a", "b"]), "team": "blue"});
    match rng.range(0, 19) {
        // A virtual node: no architecture label.
        0 | 1 => labels["type"] = json!("virtual-kubelet"),
        2 => labels["kubernetes.io/arch"] = json!("x86 64"),
        3 => labels["beta.kubernetes.io/arch"] = json!(arch),
        _ => {
            labels["kubernetes.io/arch"] = json!(arch);
            if rng.chance(50) {
                labels["beta.kubernetes.io/arch"] = json!(arch);
            }
        }
    }
    if !rng.chance(5) {
        labels["kubernetes.io/os"] = json!(os);
        if rng.chance(50) {
            labels["beta.kubernetes.io/os"] = json!(os);
        }
    }
    if os == "windows" {
        let build = rng.pick(&[
            Some("10.0.17763"),
            Some("10.0.20348"),
            Some("10.0.20348"),
            None,
            Some("x"),
        ]);
        if let Some(build) = build {
            labels["node.kubernetes.io/windows-build"] = json!(build);
        }
    }
    let mut node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n{index}"), "labels": labels}});
    if rng.chance(80) {
        node["status"] = json!({"nodeInfo": {"architecture": arch, "operatingSystem": os}});
    }
    if rng.chance(20) {
        node["spec"] = json!({"taints": [{"key": "kubernetes.io/arch", "value": arch, "effect": "NoSchedule"}]});
    }
    node
}

fn requirement(rng: &mut Rng) -> Value {
    let key = rng.pick(&[
        "kubernetes.io/arch",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "karpenter.sh/capacity-type",
        "zone",
    ]);
    let values: Vec<&str> = match key {
        "kubernetes.io/os" => rng.some(&["linux", "windows"], 60),
        "karpenter.sh/capacity-type" => vec!["spot"],
        "zone" => vec!["a"],
        _ => arch_list(rng, 35),
    };
    let operator = rng.pick(&["In", "In", "In", "NotIn", "Exists", "DoesNotExist", "Gt"]);
    let mut r = json!({"key": key, "operator": operator, "values": values});
    if rng.chance(25) {
        r["minValues"] = json!(rng.range(1, 3));
    }
    r
}

fn node_pool(rng: &mut Rng, index: usize) -> Value {
    let requirements: Vec<Value> = (0..rng.range(0, 3)).map(|_| requirement(rng)).collect();
    let mut pool = json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": format!("p{index}")},
        "spec": {"template": {"spec": {"requirements": requirements}}},
        "status": {"conditions": [{"type": "Ready", "status": if rng.chance(85) { "True" } else { "False" }}]}});
    if rng.chance(15) {
        pool["spec"]["template"]["metadata"] =
            json!({"labels": {"kubernetes.io/arch": rng.pick(&ARCHES)}});
    }
    if rng.chance(30) {
        pool["spec"]["template"]["spec"]["taints"] = json!([rng.pick(&[
            json!({"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}),
            json!({"key": "dedicated", "value": "x", "effect": "NoExecute"}),
            json!({"key": "soft", "effect": "PreferNoSchedule"}),
        ])]);
    }
    if rng.chance(5) {
        pool["spec"]["replicas"] = json!(2);
    }
    if rng.chance(5) {
        pool["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    pool
}

fn cluster(rng: &mut Rng) -> Cluster {
    let nodes = (0..rng.range(0, 6)).map(|i| node(rng, i)).collect();
    let node_pools = match rng.range(0, 9) {
        0..=3 => Err("Host error: error invoking host capability kubernetes.list_resources_all: Cannot find resource karpenter.sh/v1/NodePool".to_string()),
        4 => Err("Host error: error invoking host capability kubernetes.list_resources_all: 500 Internal Server Error".to_string()),
        _ => Ok((0..rng.range(0, 3)).map(|i| node_pool(rng, i)).collect()),
    };
    let failure = rng.chance(8).then(|| {
        (
            "Host error: Callback evaluation failure: the API server is down".to_string(),
            rng.range(0, 4),
        )
    });
    Cluster {
        nodes,
        node_pools,
        failure,
    }
}

fn image(rng: &mut Rng) -> String {
    // Mostly images that share architectures, so that most Pods get pinned rather than refused.
    let name = match rng.range(0, 2) {
        0 => rng.pick(&IMAGES),
        _ => rng.pick(&[
            "multi", "multi", "all", "all", "amd64", "noos", "linwin", "winboth", "ppc",
        ]),
    };
    match rng.range(0, 19) {
        0 => format!("r.example/{name}@{DIGEST}"),
        1 => format!("r.example/{name}:1@{DIGEST}"),
        2 => name.to_string(),
        3 => format!("R.example/{name}:1"),
        _ => format!("r.example/{name}:1"),
    }
}

fn expression(rng: &mut Rng) -> Value {
    let key = rng.pick(&[
        "kubernetes.io/arch",
        "kubernetes.io/arch",
        "beta.kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/os",
        "zone",
        "team",
        "node.kubernetes.io/windows-build",
        "karpenter.sh/nodepool",
        "kubernetes.io/hostname",
    ]);
    let operator = rng.pick(&[
        "In",
        "In",
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Lt",
    ]);
    let values: Vec<String> = match (key, operator) {
        (_, "Exists" | "DoesNotExist") => return json!({"key": key, "operator": operator}),
        (_, "Gt" | "Lt") => vec![rng.pick(&["1", "300", "x"]).to_string()],
        ("kubernetes.io/os" | "beta.kubernetes.io/os", _) => rng
            .some(&["linux", "windows", "plan9"], 50)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ("node.kubernetes.io/windows-build", _) => rng
            .some(&["10.0.17763", "10.0.20348"], 50)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ("zone" | "team" | "karpenter.sh/nodepool" | "kubernetes.io/hostname", _) => {
            vec![rng.pick(&["a", "b", "blue"]).to_string()]
        }
        _ => arch_list(rng, 35).iter().map(|s| s.to_string()).collect(),
    };
    json!({"key": key, "operator": operator, "values": values})
}

fn term(rng: &mut Rng, names: &[String]) -> Value {
    let mut term = json!({});
    if !rng.chance(8) {
        term["matchExpressions"] = json!((0..rng.range(0, 3))
            .map(|_| expression(rng))
            .collect::<Vec<_>>());
    }
    if rng.chance(8) {
        let name = names.first().cloned().unwrap_or_else(|| "n0".to_string());
        term["matchFields"] = json!([{"key": "metadata.name", "operator": rng.pick(&["In", "NotIn"]), "values": [name]}]);
    }
    term
}

fn affinity(rng: &mut Rng, names: &[String]) -> Value {
    let mut affinity = json!({"nodeAffinity": {}});
    match rng.range(0, 19) {
        0..=8 => {}
        9 => affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({}),
        10 => {
            affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
                json!({"nodeSelectorTerms": []})
        }
        11 => {
            affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
                json!({"nodeSelectorTerms": [1, "x"]})
        }
        _ => {
            let mut terms: Vec<Value> = (0..rng.range(1, 3)).map(|_| term(rng, names)).collect();
            if rng.chance(15) {
                // A copy for Nodes without an architecture label, as the policy writes one.
                let mut copy = terms[0].clone();
                if let Some(list) = copy["matchExpressions"].as_array_mut() {
                    list.push(json!({"key": "kubernetes.io/arch", "operator": "DoesNotExist"}));
                    list.push(
                        json!({"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}),
                    );
                }
                terms.push(copy);
            }
            affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
                json!({"nodeSelectorTerms": terms});
        }
    }
    if rng.chance(15) {
        affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = json!([
            {"weight": rng.range(1, 100), "preference": {"matchExpressions": [expression(rng)]}}]);
    }
    if rng.chance(3) {
        return json!("garbage");
    }
    affinity
}

fn containers(rng: &mut Rng, count: usize, prefix: &str) -> Vec<Value> {
    (0..count)
        .map(|i| json!({"name": format!("{prefix}{i}"), "image": image(rng)}))
        .collect()
}

fn pod_spec(rng: &mut Rng, names: &[String]) -> Value {
    let count = rng.pick(&[1, 1, 1, 2, 2, 3]);
    let mut spec = json!({"containers": containers(rng, count, "c")});
    if rng.chance(20) {
        spec["initContainers"] = json!(containers(rng, 1, "i"));
    }
    if rng.chance(5) {
        spec["ephemeralContainers"] = json!(containers(rng, 1, "e"));
    }
    if rng.chance(8) {
        spec["volumes"] = json!([{"name": "v", "image": {"reference": image(rng)}}]);
    }
    let mut selector = json!({});
    for (key, values) in [
        ("kubernetes.io/os", &["linux", "windows", "plan9", ""][..]),
        (
            "kubernetes.io/arch",
            &["amd64", "arm64", "s390x", "x86 64"][..],
        ),
        ("beta.kubernetes.io/arch", &["amd64", "arm64"][..]),
        ("beta.kubernetes.io/os", &["linux", "windows"][..]),
        ("zone", &["a"][..]),
        ("team", &["blue"][..]),
        (
            "node.kubernetes.io/windows-build",
            &["10.0.17763", "10.0.20348"][..],
        ),
    ] {
        if rng.chance(7) {
            selector[key] = json!(rng.pick(values));
        }
    }
    if selector.as_object().is_some_and(|o| !o.is_empty()) {
        spec["nodeSelector"] = selector;
    }
    if rng.chance(10) {
        spec["os"] = json!({"name": rng.pick(&["linux", "windows", ""])});
    }
    let affinity = affinity(rng, names);
    if affinity != json!({"nodeAffinity": {}}) {
        spec["affinity"] = affinity;
    }
    if rng.chance(30) {
        spec["tolerations"] = json!((0..rng.range(1, 2))
            .map(|_| toleration(rng))
            .collect::<Vec<_>>());
    }
    if rng.chance(2) {
        spec["tolerations"] = json!("garbage");
    }
    if rng.chance(8) {
        spec["runtimeClassName"] = json!(rng.pick(&["wasm", "runc", "hyperv"]));
    }
    spec
}

fn metadata(rng: &mut Rng) -> Value {
    let mut metadata = json!({"name": "p", "namespace": "default"});
    if rng.chance(12) {
        metadata["annotations"] = json!({"image-arch-affinity.kubewarden.io/preferred-architecture": rng.pick(&["arm64", "amd64", "x86"])});
    }
    if rng.chance(25) {
        metadata["labels"] = json!({"team": rng.pick(&["blue", "not a value!"]), "zone": "a"});
    }
    metadata
}

fn pod(rng: &mut Rng, names: &[String]) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata(rng), "spec": pod_spec(rng, names)});
    if rng.chance(6) {
        pod["spec"]["nodeName"] = json!(rng.pick(&[
            names.first().cloned().unwrap_or_default(),
            "gone".to_string()
        ]));
    }
    if rng.chance(5) {
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u", "controller": true}]);
        if let Some(name) = names.first() {
            pod["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}}});
        }
    }
    if rng.chance(8) {
        pod["spec"]["schedulingGates"] = json!([{"name": "example.com/gate"}]);
    }
    pod
}

/// A Pod after an UPDATE: an image swapped, an ephemeral container added, or nothing changed.
fn updated(rng: &mut Rng, old: &Value) -> Value {
    let mut new = old.clone();
    match rng.range(0, 4) {
        0 | 1 => new["spec"]["containers"][0]["image"] = json!(image(rng)),
        2 => {
            let debug = json!({"name": "debugger", "image": image(rng)});
            match new["spec"]["ephemeralContainers"].as_array_mut() {
                Some(list) => list.push(debug),
                None => new["spec"]["ephemeralContainers"] = json!([debug]),
            }
        }
        3 => {
            if let Some(spec) = new["spec"].as_object_mut() {
                spec.remove("schedulingGates");
            }
        }
        _ => {}
    }
    new
}

fn request(rng: &mut Rng, names: &[String]) -> Value {
    let kind = rng.pick(&[
        "Pod",
        "Pod",
        "Pod",
        "Pod",
        "Pod",
        "Pod",
        "Deployment",
        "DaemonSet",
        "StatefulSet",
        "CronJob",
        "ReplicaSet",
        "Job",
        "Service",
    ]);
    let operation = rng.pick(&["CREATE", "CREATE", "CREATE", "UPDATE", "UPDATE", "DELETE"]);
    let mut sub_resource = "";
    let (object, old) = if kind == "Pod" {
        let old = pod(rng, names);
        match operation {
            "UPDATE" => {
                sub_resource = rng.pick(&["", "", "ephemeralcontainers", "status"]);
                (updated(rng, &old), old)
            }
            _ => (old, Value::Null),
        }
    } else {
        let template = json!({"metadata": metadata(rng), "spec": pod_spec(rng, names)});
        let template = match kind {
            "CronJob" => json!({"jobTemplate": {"spec": {"template": template}}}),
            _ => json!({"template": template}),
        };
        let mut object = json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "default"}, "spec": template});
        if kind == "ReplicaSet" && rng.chance(50) {
            object["metadata"]["ownerReferences"] =
                json!([{"kind": "Deployment", "name": "d", "uid": "u", "controller": true}]);
        }
        match operation {
            "UPDATE" => {
                let mut old = object.clone();
                let path = match kind {
                    "CronJob" => "/spec/jobTemplate/spec/template/spec/containers/0/image",
                    _ => "/spec/template/spec/containers/0/image",
                };
                if rng.chance(60) {
                    if let Some(image) = old.pointer_mut(path) {
                        *image = json!("r.example/multi:1");
                    }
                }
                (object, old)
            }
            _ => (object, Value::Null),
        }
    };
    json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": kind}, "operation": operation,
        "subResource": sub_resource, "object": object, "oldObject": old})
}
