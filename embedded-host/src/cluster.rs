//! The Kubernetes calls (`kubernetes/list_resources_all`, `kubernetes/get_resource`) answered from
//! a real cluster, as kwctl answers them with `--allow-context-aware` and a kubeconfig
//! (`KUBECONFIG`, else `~/.kube/config`, else the in-cluster service account): kube's client,
//! the resource found by discovery, and the objects shaped as policy-evaluator shapes them. A
//! list's items lose `metadata.managedFields` and the `kubectl.kubernetes.io/last-applied-configuration`
//! annotation and keep, of everything but `apiVersion`, `kind` and `metadata`, only the paths of
//! `field_masks`; a get keeps the whole metadata and is masked the same way.
//!
//! Where it differs from kwctl: every call asks the API server (kwctl and policy-server list from
//! watch-based reflectors and keep a get 5 s), so an answer is never stale and never reordered by
//! a cache.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, Result};
use kube::api::{Api, DynamicObject, ListParams, ObjectList};
use kube::core::{GroupVersionKind, TypeMeta};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use serde_json::Value;

pub struct Cluster {
    client: kube::Client,
    runtime: tokio::runtime::Runtime,
    /// Discovery's answer per `(apiVersion, kind)`, asked once.
    resources: std::cell::RefCell<BTreeMap<(String, String), (ApiResource, ApiCapabilities)>>,
}

/// The annotation policy-evaluator removes from listed objects.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

impl Cluster {
    /// The cluster of the kubeconfig kwctl would read. An API server named by an IP address is
    /// verified against `kubernetes.default.svc`, as kwctl does (rustls verifies no IP address).
    pub fn connect() -> Result<Cluster> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = runtime.block_on(async {
            let mut config = kube::Config::infer().await?;
            let ip = config.cluster_url.host().is_some_and(|host| {
                host.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok()
            });
            if ip && config.tls_server_name.is_none() {
                config.tls_server_name = Some("kubernetes.default.svc".into());
            }
            anyhow::Ok(kube::Client::try_from(config)?)
        })?;
        Ok(Cluster {
            client,
            runtime,
            resources: Default::default(),
        })
    }

    fn resource(&self, api_version: &str, kind: &str) -> Result<(ApiResource, ApiCapabilities)> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.resources.borrow().get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let found = self
            .runtime
            .block_on(kube::discovery::pinned_kind(&self.client, &gvk))
            .map_err(|e| match e {
                // policy-server's texts: the kind not served, or discovery's failure.
                kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(_)) => {
                    anyhow!("Cannot find resource {api_version}/{kind}")
                }
                e => anyhow!("error finding resource {api_version} / {kind}: {e}"),
            })?;
        self.resources.borrow_mut().insert(key, found.clone());
        Ok(found)
    }

    /// `list_resources_all`: a `<Kind>List` of the matching objects, every namespace.
    pub fn list_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>> {
        let (resource, _) = self.resource(api_version, kind)?;
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let params = ListParams {
            label_selector: label_selector.map(str::to_string),
            field_selector: field_selector.map(str::to_string),
            ..Default::default()
        };
        let listed = self.runtime.block_on(api.list(&params))?;
        let items = listed
            .items
            .into_iter()
            .map(|mut object| {
                object.metadata.managed_fields = None;
                if let Some(annotations) = object.metadata.annotations.as_mut() {
                    annotations.remove(LAST_APPLIED);
                }
                mask(&mut object.data, field_masks);
                object
            })
            .collect();
        let list = ObjectList {
            types: TypeMeta {
                api_version: api_version.to_string(),
                kind: format!("{kind}List"),
            },
            metadata: Default::default(),
            items,
        };
        Ok(serde_json::to_vec(&list)?)
    }

    /// `get_resource`: the object, or kwctl's error when there is none.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>> {
        let (resource, capabilities) = self.resource(api_version, kind)?;
        let api: Api<DynamicObject> = match (&capabilities.scope, namespace) {
            (Scope::Cluster, _) => Api::all_with(self.client.clone(), &resource),
            (Scope::Namespaced, Some(namespace)) => {
                Api::namespaced_with(self.client.clone(), namespace, &resource)
            }
            (Scope::Namespaced, None) => {
                return Err(anyhow!(
                    "Resource {api_version}/{kind} is namespaced, but no namespace was provided"
                ))
            }
        };
        let mut object = self.runtime.block_on(api.get_opt(name))?.ok_or_else(|| {
            anyhow!("Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'")
        })?;
        mask(&mut object.data, field_masks);
        Ok(serde_json::to_vec(&object)?)
    }
}

/// Keeps, of `data` (an object without `apiVersion`, `kind` and `metadata`), the dot paths of
/// `masks`: a path walks objects by key and every item of an array; a path's end keeps all below.
fn mask(data: &mut Value, masks: Option<&BTreeSet<String>>) {
    #[derive(Default)]
    struct Tree(BTreeMap<String, Tree>);
    fn prune(value: &mut Value, tree: &Tree) {
        if tree.0.is_empty() {
            return;
        }
        match value {
            Value::Object(map) => map.retain(|key, value| match tree.0.get(key) {
                Some(below) => {
                    prune(value, below);
                    true
                }
                None => false,
            }),
            Value::Array(items) => items.iter_mut().for_each(|item| prune(item, tree)),
            _ => {}
        }
    }
    let Some(masks) = masks else { return };
    let mut tree = Tree::default();
    for path in masks {
        path.split('.').fold(&mut tree, |node, part| {
            node.0.entry(part.to_string()).or_default()
        });
    }
    prune(data, &tree);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_walk_objects_and_array_items() {
        let mut data = json!({
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule", "value": "x"}], "podCIDR": "10.0.0.0/24"},
            "status": {"nodeInfo": {"architecture": "arm64", "osImage": "x"}, "capacity": {"cpu": "2"}}
        });
        let masks = ["spec.taints.key", "status.nodeInfo.architecture"]
            .map(String::from)
            .into();
        mask(&mut data, Some(&masks));
        assert_eq!(
            data,
            json!({"spec": {"taints": [{"key": "a"}]}, "status": {"nodeInfo": {"architecture": "arm64"}}})
        );
    }

    #[test]
    fn a_mask_of_metadata_only_empties_the_data_and_no_mask_keeps_it() {
        let original = json!({"spec": {"podCIDR": "x"}, "status": {}});
        let mut data = original.clone();
        mask(&mut data, None);
        assert_eq!(data, original);
        mask(&mut data, Some(&["metadata.name".to_string()].into()));
        assert_eq!(data, json!({}));
    }
}
