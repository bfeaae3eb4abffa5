//! The cache of what one evaluation read from the cluster: each Node list (by label selector)
//! asked once and parsed once, each Node get and the NodePool list asked once, failures kept
//! like answers. The decision weighs several clusters (`nodes::decide_from_nodes`, the NodePool
//! hypotheses) that read the same lists: they all read through one `ClusterCache`, which sits
//! below the reads and above the host's raw calls (`host::cluster::Cluster`).

use crate::host::cluster::Cluster;
use crate::host::host_error;
use crate::host::registry::Registry;
use crate::platform::OS_LABEL;
use crate::read::node::{self, Node};

pub struct ClusterCache<'a> {
    cluster: &'a mut dyn Cluster,
    /// The Node lists read, by label selector, as Nodes (or the host's error).
    lists: Vec<(String, Result<Vec<Node>, String>)>,
    /// The Nodes read by name, as the host answered (raw, or its error).
    gets: Vec<(String, Result<Vec<u8>, String>)>,
    /// The NodePool list, as the host answered.
    node_pools: Option<Result<Vec<u8>, String>>,
}

impl<'a> ClusterCache<'a> {
    pub fn new(cluster: &'a mut dyn Cluster) -> ClusterCache<'a> {
        ClusterCache {
            cluster,
            lists: Vec::new(),
            gets: Vec::new(),
            node_pools: None,
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
    pub fn node(&mut self, name: &str) -> Result<Vec<u8>, String> {
        if let Some((_, answer)) = self.gets.iter().find(|(n, _)| n == name) {
            return answer.clone();
        }
        let answer = self.cluster.get_node(name, &node::FIELD_MASKS);
        self.gets.push((name.to_string(), answer.clone()));
        answer
    }

    /// The host's answer to the NodePool list with `masks`.
    pub fn node_pools(&mut self, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.node_pools
            .get_or_insert_with(|| self.cluster.list_node_pools(masks))
            .clone()
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

/// A registry call: with the config (`manifest_and_config`) or not, and the image.
type Asked = (bool, String);

/// The registry's answers of one evaluation, each asked once (failures kept like answers): a
/// decision that weighs the same images twice (a gated Pod's pin, then, where the API server
/// would not take that pin, its judgement after admission) reads them through one
/// `RegistryCache`.
pub struct RegistryCache<'a> {
    registry: &'a mut dyn Registry,
    answers: Vec<(Asked, Result<Vec<u8>, String>)>,
}

impl<'a> RegistryCache<'a> {
    pub fn new(registry: &'a mut dyn Registry) -> RegistryCache<'a> {
        RegistryCache {
            registry,
            answers: Vec::new(),
        }
    }

    fn answer(&mut self, config: bool, image: &str) -> Result<Vec<u8>, String> {
        let key = (config, image.to_string());
        if let Some((_, answer)) = self.answers.iter().find(|(k, _)| *k == key) {
            return answer.clone();
        }
        let answer = match config {
            false => self.registry.manifest(image),
            true => self.registry.manifest_and_config(image),
        };
        self.answers.push((key, answer.clone()));
        answer
    }
}

impl Registry for RegistryCache<'_> {
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.answer(false, image)
    }

    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.answer(true, image)
    }
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
    }

    #[test]
    fn each_read_reaches_the_host_once() {
        let mut cluster = Counting::default();
        let mut cache = ClusterCache::new(&mut cluster);
        for _ in 0..2 {
            assert_eq!(cache.nodes("kubernetes.io/os=linux"), Ok(Vec::new()));
            assert_eq!(
                cache.node("n1"),
                Err("Host error: Callback evaluation failure: not found".to_string())
            );
            assert_eq!(cache.node_pools(&[]), Ok(b"{}".to_vec()));
        }
        assert!(cache.read_no_node_of("linux"));
        assert!(cache.read_no_node_of("windows"));
        assert_eq!(
            cluster.calls,
            ["list kubernetes.io/os=linux", "get n1", "pools"]
        );
    }
}
