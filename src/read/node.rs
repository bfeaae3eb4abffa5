//! A Node as the policy reads it from the host's JSON answers (a `NodeList`, or one `Node`):
//! its name, OS, architecture and Windows build, from the labels first, then the kubelet's
//! status. Everything else in the answer is skipped without being built.

use serde::Deserialize;

use crate::host::sparse::Text;
use crate::platform::Architectures;
use crate::settings::names::check_label_value;

/// What the policy reads of a Node besides its metadata (which the host always returns whole):
/// the kubelet's own report of its architecture and OS, for a Node whose labels lack them.
pub const FIELD_MASKS: [&str; 2] = [
    "status.nodeInfo.architecture",
    "status.nodeInfo.operatingSystem",
];

/// One Node as the policy reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    /// `kubernetes.io/os` (else the beta label, else `status.nodeInfo.operatingSystem`).
    pub os: Option<String>,
    /// `kubernetes.io/arch` (else the beta label, else `status.nodeInfo.architecture`).
    pub architecture: Option<String>,
    /// A Windows Node's `node.kubernetes.io/windows-build`.
    pub windows_build: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawList<'a> {
    #[serde(borrow, default)]
    items: Option<Vec<RawNode<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNode<'a> {
    #[serde(borrow)]
    metadata: RawMetadata<'a>,
    #[serde(borrow)]
    status: RawStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMetadata<'a> {
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    labels: Option<RawLabels<'a>>,
}

/// The four labels the policy reads; the others are skipped without being built.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawLabels<'a> {
    #[serde(borrow, rename = "kubernetes.io/arch")]
    arch: Option<Text<'a>>,
    #[serde(borrow, rename = "beta.kubernetes.io/arch")]
    beta_arch: Option<Text<'a>>,
    #[serde(borrow, rename = "kubernetes.io/os")]
    os: Option<Text<'a>>,
    #[serde(borrow, rename = "beta.kubernetes.io/os")]
    beta_os: Option<Text<'a>>,
    #[serde(borrow, rename = "node.kubernetes.io/windows-build")]
    windows_build: Option<Text<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawStatus<'a> {
    #[serde(borrow, rename = "nodeInfo")]
    node_info: RawNodeInfo<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNodeInfo<'a> {
    #[serde(borrow)]
    architecture: Option<Text<'a>>,
    #[serde(borrow, rename = "operatingSystem")]
    operating_system: Option<Text<'a>>,
}

impl RawNode<'_> {
    fn read(self) -> Node {
        let value = |text: Option<Text<'_>>| {
            text.map(|t| t.0.trim().to_string())
                .filter(|t| !t.is_empty())
        };
        let labels = self.metadata.labels.unwrap_or_default();
        let info = self.status.node_info;
        Node {
            name: value(self.metadata.name).unwrap_or_default(),
            os: value(labels.os)
                .or(value(labels.beta_os))
                .or(value(info.operating_system)),
            architecture: value(labels.arch)
                .or(value(labels.beta_arch))
                .or(value(info.architecture)),
            windows_build: value(labels.windows_build),
        }
    }
}

/// The architectures of Nodes. A value that is no label value (`status.nodeInfo` is free text)
/// cannot be told and is left out; any other counts, known or not: a Node labelled with an
/// architecture no image names is one the Pod is kept off. Node values go into messages only,
/// never into a patch or a selector.
pub fn architectures(nodes: &[Node]) -> Architectures {
    nodes
        .iter()
        .filter_map(|node| node.architecture.clone())
        .filter(|arch| check_label_value(arch).is_ok())
        .collect()
}

/// Reads the host's answer to a Node list.
pub fn parse_list(raw: &[u8]) -> Result<Vec<Node>, String> {
    let list: RawList = serde_json::from_slice(raw)
        .map_err(|e| format!("the host's answer is not a NodeList: {e}"))?;
    Ok(list
        .items
        .unwrap_or_default()
        .into_iter()
        .map(RawNode::read)
        .collect())
}

/// Reads the host's answer to a Node get.
pub fn parse_node(raw: &[u8]) -> Result<Node, String> {
    let node: RawNode =
        serde_json::from_slice(raw).map_err(|e| format!("the host's answer is not a Node: {e}"))?;
    Ok(node.read())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_first_then_the_kubelet_status() {
        let nodes = parse_list(
            br#"{"apiVersion":"v1","kind":"NodeList","items":[
            {"metadata":{"name":"a","labels":{"kubernetes.io/arch":"arm64","kubernetes.io/os":"linux","zone":"z"}},
             "status":{"nodeInfo":{"architecture":"amd64","operatingSystem":"linux"}}},
            {"metadata":{"name":"b","labels":{"beta.kubernetes.io/arch":"s390x"}}},
            {"metadata":{"name":"c"},"status":{"nodeInfo":{"architecture":"ppc64le","operatingSystem":"linux"}}},
            {"metadata":{"name":"d","labels":{"kubernetes.io/arch":""}}}]}"#,
        )
        .unwrap();
        let read: Vec<(&str, Option<&str>, Option<&str>)> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.os.as_deref(), n.architecture.as_deref()))
            .collect();
        assert_eq!(
            read,
            [
                ("a", Some("linux"), Some("arm64")),
                ("b", None, Some("s390x")),
                ("c", Some("linux"), Some("ppc64le")),
                ("d", None, None)
            ]
        );
        assert_eq!(parse_list(br#"{"items":null}"#).unwrap(), []);
        assert!(parse_list(br#""not a list""#)
            .unwrap_err()
            .starts_with("the host's answer is not a NodeList: "));
    }
}
