//! Cluster access: the Kubernetes host-capability calls the node-aware mode needs (setting
//! `readNodes`), on `v1/Node` and Karpenter's `karpenter.sh/v1/NodePool` only, behind a small
//! trait so that the decision core can be tested natively with fixed lists (and the calls
//! counted).

use std::time::Duration;

use serde::Serialize;

use crate::host::within_budget;

/// The host's Kubernetes capabilities, as far as Nodes go. Each method returns the host's raw
/// JSON answer (a `NodeList`, or one `Node`), or the host's error text.
pub trait Cluster {
    /// `kubernetes/list_resources_all` on `v1/Node` with a label selector and field masks.
    fn list_nodes(&mut self, label_selector: &str, field_masks: &[&str])
        -> Result<Vec<u8>, String>;
    /// `kubernetes/get_resource` on `v1/Node` (cluster-scoped) with field masks.
    fn get_node(&mut self, name: &str, field_masks: &[&str]) -> Result<Vec<u8>, String>;
    /// `kubernetes/list_resources_all` on `karpenter.sh/v1/NodePool` (cluster-scoped), with
    /// field masks and no selector.
    fn list_node_pools(&mut self, field_masks: &[&str]) -> Result<Vec<u8>, String>;
    /// `kubernetes/get_resource` on `node.k8s.io/v1/RuntimeClass` (cluster-scoped).
    fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String>;
}

/// No cluster to read: what the decision gets when the node-aware mode is off (it never calls
/// it then) and in tests of everything else.
pub struct NoCluster;

impl Cluster for NoCluster {
    fn list_nodes(&mut self, _: &str, _: &[&str]) -> Result<Vec<u8>, String> {
        Err("the policy reads no Nodes without readNodes: true".to_string())
    }
    fn get_node(&mut self, _: &str, _: &[&str]) -> Result<Vec<u8>, String> {
        Err("the policy reads no Nodes without readNodes: true".to_string())
    }
    fn list_node_pools(&mut self, _: &[&str]) -> Result<Vec<u8>, String> {
        Err("the policy reads no NodePools without readNodes: true".to_string())
    }
    fn get_runtime_class(&mut self, _: &str) -> Result<Vec<u8>, String> {
        Err("the policy reads no RuntimeClasses without readNodes: true".to_string())
    }
}

/// The request of `kubernetes/list_resources_all`, as the SDK's `ListAllResourcesRequest`
/// serializes it (snake_case). Field masks are a set: sorted, each once.
#[derive(Serialize, Debug, PartialEq)]
pub struct ListRequest<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub label_selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
    pub field_masks: Option<Vec<&'a str>>,
}

/// The request of `kubernetes/get_resource` (the SDK's `GetResourceRequest`).
#[derive(Serialize, Debug, PartialEq)]
pub struct GetRequest<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    pub disable_cache: bool,
    pub field_masks: Option<Vec<&'a str>>,
}

fn sorted<'a>(masks: &[&'a str]) -> Option<Vec<&'a str>> {
    let mut masks = masks.to_vec();
    masks.sort_unstable();
    masks.dedup();
    Some(masks)
}

impl<'a> ListRequest<'a> {
    pub fn nodes(label_selector: &'a str, field_masks: &[&'a str]) -> ListRequest<'a> {
        ListRequest {
            api_version: "v1",
            kind: "Node",
            label_selector: Some(label_selector),
            field_selector: None,
            field_masks: sorted(field_masks),
        }
    }

    pub fn node_pools(field_masks: &[&'a str]) -> ListRequest<'a> {
        ListRequest {
            api_version: "karpenter.sh/v1",
            kind: "NodePool",
            label_selector: None,
            field_selector: None,
            field_masks: sorted(field_masks),
        }
    }
}

impl<'a> GetRequest<'a> {
    pub fn node(name: &'a str, field_masks: &[&'a str]) -> GetRequest<'a> {
        GetRequest {
            api_version: "v1",
            kind: "Node",
            name,
            namespace: None,
            disable_cache: false,
            field_masks: sorted(field_masks),
        }
    }

    /// A RuntimeClass, of which the policy reads the `handler`.
    pub fn runtime_class(name: &'a str) -> GetRequest<'a> {
        GetRequest {
            api_version: "node.k8s.io/v1",
            kind: "RuntimeClass",
            name,
            namespace: None,
            disable_cache: false,
            field_masks: sorted(&["handler"]),
        }
    }
}

/// A cluster that stops starting calls once the evaluation's lookup time budget is spent (the
/// same budget as the registry lookups: `lookupBudgetMilliseconds`).
pub struct Budgeted<'a, C: Fn() -> Duration> {
    inner: &'a mut dyn Cluster,
    budget: Duration,
    elapsed: C,
}

impl<'a, C: Fn() -> Duration> Budgeted<'a, C> {
    pub fn new(inner: &'a mut dyn Cluster, budget: Duration, elapsed: C) -> Self {
        Budgeted {
            inner,
            budget,
            elapsed,
        }
    }
}

impl<C: Fn() -> Duration> Cluster for Budgeted<'_, C> {
    fn list_nodes(&mut self, selector: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        within_budget(self.budget, (self.elapsed)())?;
        self.inner.list_nodes(selector, masks)
    }
    fn get_node(&mut self, name: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        within_budget(self.budget, (self.elapsed)())?;
        self.inner.get_node(name, masks)
    }
    fn list_node_pools(&mut self, masks: &[&str]) -> Result<Vec<u8>, String> {
        within_budget(self.budget, (self.elapsed)())?;
        self.inner.list_node_pools(masks)
    }
    fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
        within_budget(self.budget, (self.elapsed)())?;
        self.inner.get_runtime_class(name)
    }
}

/// The Kubewarden host, reached through waPC host calls (binding `kubewarden`, namespace
/// `kubernetes`), with the payloads the SDK's `host_capabilities::kubernetes` functions send
/// (the SDK's functions need k8s-openapi's typed Nodes; the policy reads a few labels).
#[cfg(target_arch = "wasm32")]
pub struct HostCluster;

#[cfg(target_arch = "wasm32")]
impl HostCluster {
    fn call(operation: &str, payload: serde_json::Result<Vec<u8>>) -> Result<Vec<u8>, String> {
        let payload = payload.map_err(|e| e.to_string())?;
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload)
            .map_err(|e| e.to_string())
    }
}

#[cfg(target_arch = "wasm32")]
impl Cluster for HostCluster {
    fn list_nodes(&mut self, selector: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        let request = ListRequest::nodes(selector, masks);
        Self::call("list_resources_all", serde_json::to_vec(&request))
    }
    fn get_node(&mut self, name: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        let request = GetRequest::node(name, masks);
        Self::call("get_resource", serde_json::to_vec(&request))
    }
    fn list_node_pools(&mut self, masks: &[&str]) -> Result<Vec<u8>, String> {
        let request = ListRequest::node_pools(masks);
        Self::call("list_resources_all", serde_json::to_vec(&request))
    }
    fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
        let request = GetRequest::runtime_class(name);
        Self::call("get_resource", serde_json::to_vec(&request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_serialize_as_the_sdk_does() {
        let list = ListRequest::nodes("kubernetes.io/os=linux", &["b", "a", "a"]);
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"{"api_version":"v1","kind":"Node","label_selector":"kubernetes.io/os=linux","field_selector":null,"field_masks":["a","b"]}"#
        );
        let pools = ListRequest::node_pools(&["status.conditions"]);
        assert_eq!(
            serde_json::to_string(&pools).unwrap(),
            r#"{"api_version":"karpenter.sh/v1","kind":"NodePool","label_selector":null,"field_selector":null,"field_masks":["status.conditions"]}"#
        );
        let get = GetRequest::node("n1", &["x"]);
        assert_eq!(
            serde_json::to_string(&get).unwrap(),
            r#"{"api_version":"v1","kind":"Node","name":"n1","namespace":null,"disable_cache":false,"field_masks":["x"]}"#
        );
    }

    #[test]
    fn no_call_starts_once_the_budget_is_spent() {
        let mut inner = NoCluster;
        let mut budgeted = Budgeted::new(&mut inner, Duration::from_millis(10), || {
            Duration::from_millis(11)
        });
        assert_eq!(
            budgeted.list_nodes("s", &[]).unwrap_err(),
            "not looked up: the lookup time budget (lookupBudgetMilliseconds: 10) was spent after 11 ms"
        );
    }
}
