//! The cluster as the decision reads it with `readNodes`: Node lists by label selector, a Node
//! by name, Karpenter's NodePools, each asked of the host once per evaluation and parsed once,
//! failures kept like answers. The decision asks its questions here (several hypotheses read the
//! same lists); this sits above the host's raw calls (`host::cluster::Cluster`).

use crate::host::cluster::Cluster;
use crate::host::host_error;
use crate::platform::{ARCH_LABEL, OS_LABEL};
use crate::read::node::{self, parse_node, Node};
use crate::read::node_pools::{self, NodePool};
use crate::read::selectors::WITHOUT_ARCHITECTURE_SELECTOR;

pub struct ClusterReader<'a> {
    cluster: &'a mut dyn Cluster,
    /// The Node lists read, by label selector, as Nodes (or the host's error).
    lists: Vec<(String, Result<Vec<Node>, String>)>,
    /// The Nodes read by name, as the host answered (raw, or its error).
    gets: Vec<(String, Result<Vec<u8>, String>)>,
    /// The NodePool list, as the host answered.
    node_pools: Option<Result<Vec<u8>, String>>,
    /// The RuntimeClasses read by name: their handler (or the host's error).
    runtime_classes: Vec<(String, Result<Option<String>, String>)>,
}

impl<'a> ClusterReader<'a> {
    pub fn new(cluster: &'a mut dyn Cluster) -> ClusterReader<'a> {
        ClusterReader {
            cluster,
            lists: Vec::new(),
            gets: Vec::new(),
            node_pools: None,
            runtime_classes: Vec::new(),
        }
    }

    /// The Nodes a label selector selects, with `node::FIELD_MASKS`; errors are the host's.
    pub fn nodes(&mut self, selector: &str) -> Result<Vec<Node>, String> {
        if let Some((_, nodes)) = self.lists.iter().find(|(s, _)| s == selector) {
            return nodes.clone();
        }
        let nodes = self
            .cluster
            .list_nodes(selector, &node::FIELD_MASKS)
            .map_err(host_error)
            .and_then(|raw| node::parse_list(&raw));
        self.lists.push((selector.to_string(), nodes.clone()));
        nodes
    }

    /// The host's answer to a get of the Node `name` (with `node::FIELD_MASKS`).
    fn node(&mut self, name: &str) -> Result<Vec<u8>, String> {
        if let Some((_, answer)) = self.gets.iter().find(|(n, _)| n == name) {
            return answer.clone();
        }
        let answer = self.cluster.get_node(name, &node::FIELD_MASKS);
        self.gets.push((name.to_string(), answer.clone()));
        answer
    }

    /// The Node a bound Pod runs on; the error says why it cannot be told.
    pub fn bound_node(&mut self, name: &str) -> Result<Node, String> {
        let node = parse_node(&self.node(name).map_err(host_error)?)?;
        if node.architecture.is_none() {
            return Err(format!(
                "the Node has neither a {ARCH_LABEL} label nor status.nodeInfo.architecture"
            ));
        }
        Ok(node)
    }

    /// Every NodePool Karpenter provisions from: one list (`karpenter.sh/v1` `NodePool`,
    /// cluster-wide). None when Karpenter's CRDs are not installed or the policy may not read
    /// them (`node_pools::none_to_read`); other errors are the host's.
    pub fn node_pools(&mut self) -> Result<Vec<NodePool>, String> {
        let answer = self
            .node_pools
            .get_or_insert_with(|| self.cluster.list_node_pools(&node_pools::FIELD_MASKS))
            .clone();
        match answer {
            Ok(raw) => node_pools::parse_list(&raw),
            Err(error) if node_pools::none_to_read(&error) => Ok(Vec::new()),
            Err(error) => Err(host_error(error)),
        }
    }

    /// The handler of the RuntimeClass `name`: none where it names none, where there is no such
    /// RuntimeClass (the API server refuses the Pod then), or where the policy may not read
    /// RuntimeClasses (not in its `contextAwareResources`). Other errors are the host's.
    pub fn runtime_class_handler(&mut self, name: &str) -> Result<Option<String>, String> {
        if let Some((_, handler)) = self.runtime_classes.iter().find(|(n, _)| n == name) {
            return handler.clone();
        }
        let handler = match self.cluster.get_runtime_class(name) {
            Err(error) if runtime_class_unreadable(&error) => Ok(None),
            answer => answer.map_err(host_error).and_then(|raw| {
                let class: serde_json::Value = serde_json::from_slice(&raw)
                    .map_err(|e| format!("the host's answer is not a RuntimeClass: {e}"))?;
                Ok(class["handler"].as_str().map(str::to_string))
            }),
        };
        self.runtime_classes
            .push((name.to_string(), handler.clone()));
        handler
    }

    /// Whether the cluster has Nodes without an architecture label (one list,
    /// `WITHOUT_ARCHITECTURE_SELECTOR`). Errors are the host's.
    pub fn without_architecture_label(&mut self) -> Result<bool, String> {
        Ok(!self.nodes(WITHOUT_ARCHITECTURE_SELECTOR)?.is_empty())
    }

    /// Whether a Node list read so far failed (its failure was handled per `onLookupFailure`).
    pub fn a_node_list_failed(&self) -> bool {
        self.lists.iter().any(|(_, nodes)| nodes.is_err())
    }

    /// Whether the Node lists of `os` read so far were all read and held no Node (a failed
    /// list has settled the decision per `onLookupFailure` already).
    pub fn read_no_node_of(&self, os: &str) -> bool {
        let prefix = format!("{OS_LABEL}={os}");
        let mut of_os = self.lists.iter().filter(|(selector, _)| {
            selector
                .strip_prefix(&prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(','))
        });
        of_os.all(|(_, nodes)| nodes.as_ref().is_ok_and(Vec::is_empty))
    }
}

/// Whether the host's `error` for a RuntimeClass says there is none of that name (the API
/// server's NotFound; the hosts' "Cannot find node.k8s.io/v1/RuntimeClass named
/// ...", also where the cluster serves no RuntimeClasses), or that the policy may not read them.
fn runtime_class_unreadable(error: &str) -> bool {
    let lower = error.to_ascii_lowercase();
    (lower.contains("notfound") && lower.contains("code: 404"))
        || lower.contains("cannot find node.k8s.io/v1/runtimeclass")
        || lower.contains("cannot find resource node.k8s.io/v1/runtimeclass")
        || lower.contains("has not been granted access to kubernetes node.k8s.io/v1/runtimeclass")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the calls, answers an empty list and a Node.
    #[derive(Default)]
    struct Counting {
        calls: Vec<String>,
    }

    impl Cluster for Counting {
        fn list_nodes(&mut self, selector: &str, _: &[&str]) -> Result<Vec<u8>, String> {
            self.calls.push(format!("list {selector}"));
            Ok(br#"{"items":[]}"#.to_vec())
        }
        fn get_node(&mut self, name: &str, _: &[&str]) -> Result<Vec<u8>, String> {
            self.calls.push(format!("get {name}"));
            Err("Host error: Callback evaluation failure: not found".to_string())
        }
        fn list_node_pools(&mut self, _: &[&str]) -> Result<Vec<u8>, String> {
            self.calls.push("pools".to_string());
            Ok(b"{}".to_vec())
        }
        fn get_runtime_class(&mut self, name: &str) -> Result<Vec<u8>, String> {
            self.calls.push(format!("runtime class {name}"));
            Ok(br#"{"handler":"runhcs-wcow-hypervisor"}"#.to_vec())
        }
    }

    #[test]
    fn a_runtime_class_that_is_not_there_or_not_granted_reads_as_none() {
        for error in [
            "Cannot find node.k8s.io/v1/RuntimeClass named 'spin' inside of namespace 'None'",
            "Cannot find resource node.k8s.io/v1/RuntimeClass",
            "ApiError: runtimeclasses.node.k8s.io \"spin\" not found: NotFound (ErrorResponse { status: \"Failure\", message: \"runtimeclasses.node.k8s.io \\\"spin\\\" not found\", reason: \"NotFound\", code: 404 })",
            "Policy has not been granted access to Kubernetes node.k8s.io/v1/RuntimeClass",
        ] {
            assert!(runtime_class_unreadable(error), "{error}");
        }
        assert!(!runtime_class_unreadable("connection refused"));
        assert!(!runtime_class_unreadable(
            "Cannot find node.k8s.io/v1/Node named 'spin'"
        ));
    }

    #[test]
    fn each_read_reaches_the_host_once() {
        let mut cluster = Counting::default();
        let mut cache = ClusterReader::new(&mut cluster);
        for _ in 0..2 {
            assert_eq!(cache.nodes("kubernetes.io/os=linux"), Ok(Vec::new()));
            assert_eq!(
                cache.node("n1"),
                Err("Host error: Callback evaluation failure: not found".to_string())
            );
            assert_eq!(cache.node_pools(), Ok(Vec::new()));
            assert_eq!(
                cache.runtime_class_handler("hyperv"),
                Ok(Some("runhcs-wcow-hypervisor".to_string()))
            );
        }
        assert!(cache.read_no_node_of("linux"));
        assert!(cache.read_no_node_of("windows"));
        assert_eq!(
            cluster.calls,
            [
                "list kubernetes.io/os=linux",
                "get n1",
                "pools",
                "runtime class hyperv"
            ]
        );
    }
}
