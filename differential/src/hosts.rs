//! The host the case describes, for both crates: a registry answering from the case's catalog
//! and a cluster answering label selectors over the case's Nodes, each recording its calls.

use serde_json::{json, Value};

use crate::gen::Case;

pub struct FakeRegistry<'a> {
    case: &'a Case,
    pub calls: Vec<String>,
}

pub struct FakeCluster<'a> {
    case: &'a Case,
    pub calls: Vec<String>,
}

impl<'a> FakeRegistry<'a> {
    pub fn new(case: &'a Case) -> FakeRegistry<'a> {
        FakeRegistry {
            case,
            calls: Vec::new(),
        }
    }

    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.calls.push(format!("oci_manifest {image}"));
        self.case.catalog.manifest(image)
    }

    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.calls.push(format!("oci_manifest_config {image}"));
        self.case.catalog.config(image)
    }
}

impl<'a> FakeCluster<'a> {
    pub fn new(case: &'a Case) -> FakeCluster<'a> {
        FakeCluster {
            case,
            calls: Vec::new(),
        }
    }

    fn failing(&self) -> Option<String> {
        let (error, from) = self.case.cluster.failure.as_ref()?;
        (self.calls.len() > *from).then(|| error.clone())
    }

    fn list_nodes(&mut self, selector: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.calls
            .push(format!("list Node {selector} masks {}", masks.join(",")));
        if let Some(error) = self.failing() {
            return Err(error);
        }
        let items: Vec<Value> = self
            .case
            .cluster
            .nodes
            .iter()
            .filter(|node| requirements(selector).iter().all(|r| matches(node, r)))
            .map(|node| masked(node, masks))
            .collect();
        Ok(
            json!({"apiVersion": "v1", "kind": "NodeList", "items": items})
                .to_string()
                .into_bytes(),
        )
    }

    fn get_node(&mut self, name: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.calls
            .push(format!("get Node {name} masks {}", masks.join(",")));
        if let Some(error) = self.failing() {
            return Err(error);
        }
        self.case
            .cluster
            .nodes
            .iter()
            .find(|node| node["metadata"]["name"] == name)
            .map(|node| masked(node, masks).to_string().into_bytes())
            .ok_or_else(|| format!("Host error: error invoking host capability kubernetes.get_resource: nodes \"{name}\" not found"))
    }

    fn list_node_pools(&mut self, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.calls
            .push(format!("list NodePool masks {}", masks.join(",")));
        if let Some(error) = self.failing() {
            return Err(error);
        }
        match &self.case.cluster.node_pools {
            Err(error) => Err(error.clone()),
            Ok(pools) => Ok(
                json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePoolList", "items": pools})
                    .to_string()
                    .into_bytes(),
            ),
        }
    }
}

/// A selector's requirements: split at the commas outside parentheses.
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

/// Whether a Node passes one requirement of the forms the policy sends: `k=v`, `!k`,
/// `k in (a,b)`, `k notin (a,b)`.
fn matches(node: &Value, requirement: &str) -> bool {
    let labels = &node["metadata"]["labels"];
    if let Some(key) = requirement.strip_prefix('!') {
        return labels[key].is_null();
    }
    if let Some((key, value)) = requirement.split_once('=') {
        return labels[key] == value;
    }
    let mut words = requirement.splitn(3, ' ');
    let (key, operator, values) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    let values: Vec<&str> = values.trim_matches(['(', ')']).split(',').collect();
    let value = labels[key].as_str();
    match operator {
        "in" => value.is_some_and(|v| values.contains(&v)),
        "notin" => value.is_none_or(|v| !values.contains(&v)),
        _ => panic!("selector requirement {requirement:?}"),
    }
}

/// What the host returns of a Node: its kind and metadata, and the masked paths.
fn masked(node: &Value, masks: &[&str]) -> Value {
    let mut out = json!({"apiVersion": "v1", "kind": "Node", "metadata": node["metadata"]});
    for mask in masks {
        let path: Vec<&str> = mask.split('.').collect();
        let source = path.iter().fold(node, |value, key| &value[*key]);
        if source.is_null() {
            continue;
        }
        let mut target = &mut out;
        for key in &path[..path.len() - 1] {
            target = target
                .as_object_mut()
                .expect("an object")
                .entry(key.to_string())
                .or_insert_with(|| json!({}));
        }
        target[path[path.len() - 1]] = source.clone();
    }
    out
}

macro_rules! registry_for {
    ($krate:ident $(, $($extra:tt)*)?) => {
        impl $krate::host::registry::Registry for FakeRegistry<'_> {
            fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
                FakeRegistry::manifest(self, image)
            }
            fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
                FakeRegistry::manifest_and_config(self, image)
            }
        }
        impl $krate::host::cluster::Cluster for FakeCluster<'_> {
            fn list_nodes(&mut self, selector: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
                FakeCluster::list_nodes(self, selector, masks)
            }
            fn get_node(&mut self, name: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
                FakeCluster::get_node(self, name, masks)
            }
            fn list_node_pools(&mut self, masks: &[&str]) -> Result<Vec<u8>, String> {
                FakeCluster::list_node_pools(self, masks)
            }
            $($($extra)*)?
        }
    };
}

#[cfg(not(base_runtime_class))]
registry_for!(base);
// A base that reads RuntimeClasses (its Cluster trait has the call).
#[cfg(base_runtime_class)]
registry_for!(
    base,
    fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
        self.runtime_class(name)
    }
);
registry_for!(
    new,
    fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
        self.runtime_class(name)
    }
);

impl FakeCluster<'_> {
    fn runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
        self.calls.push(format!("get RuntimeClass {name}"));
        if let Some(error) = self.failing() {
            return Err(error);
        }
        Ok(json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
            "handler": if name == "hyperv" { "runhcs-wcow-hypervisor" } else { "runhcs-wcow-process" }})
            .to_string()
            .into_bytes())
    }
}
