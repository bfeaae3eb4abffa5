//! The host calls a policy makes (waPC binding `kubewarden`), answered as policy-evaluator's
//! `host_callback` answers them: the grant checks and their texts, the SDK's logging, the OCI
//! lookups (`registry`) and the Kubernetes calls (`cluster`, or a replay session), each call
//! through the `session` so that it can be recorded or replayed.

use std::collections::BTreeSet;

use anyhow::{anyhow, Result};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::cluster::Cluster;
use crate::registry::Registry;
use crate::session::{Request, Session};

/// `--allowed-host-capabilities`: `*`, `namespace/*`-style prefixes, or exact operations.
pub struct Grants(Vec<String>);

impl Grants {
    pub fn new(patterns: &[String]) -> Grants {
        Grants(patterns.iter().map(|p| p.trim().to_string()).collect())
    }

    fn allow(&self, capability: &str) -> bool {
        self.0
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => capability.starts_with(prefix),
                None => pattern == capability,
            })
    }
}

/// A Kubernetes resource type a context-aware policy may read (`contextAwareResources`; the
/// Kubernetes calls name it in snake case).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct Resource {
    #[serde(rename = "apiVersion", alias = "api_version")]
    pub api_version: String,
    pub kind: String,
}

pub struct Host {
    pub grants: Grants,
    pub resources: BTreeSet<Resource>,
    pub session: Session,
    pub registry: Registry,
    /// The cluster the Kubernetes calls read (a context-aware policy not replaying a session).
    pub cluster: Option<Cluster>,
}

impl Host {
    /// One host call. The error is the text the guest receives.
    pub fn call(
        &mut self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String> {
        if binding != "kubewarden" {
            return Err(format!("unknown binding: {binding}"));
        }
        let capability = format!("{namespace}/{operation}");
        if namespace != "tracing" && !self.grants.allow(&capability) {
            eprintln!("embedded-host: the policy was not granted host capability {capability}");
            return Err(format!("Policy has not been granted access to the '{capability}' host capability. The violation has been reported."));
        }
        let variant = match capability.as_str() {
            "tracing/log" => {
                eprintln!("{}", String::from_utf8_lossy(payload));
                return Ok(Vec::new());
            }
            "oci/v1/oci_manifest" => "OciManifest",
            "oci/v1/oci_manifest_config" => "OciManifestAndConfig",
            "kubernetes/list_resources_all" => "KubernetesListResourceAll",
            "kubernetes/get_resource" => "KubernetesGetResource",
            _ if ["oci", "kubernetes"].contains(&namespace) => {
                return Err(format!("unknown operation: {operation}"))
            }
            _ => return Err(format!("unknown namespace: {namespace}")),
        };
        // The SDK's payloads are the session's requests, field for field (an image is a string).
        let mut payload: Value = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
        if namespace == "oci" {
            payload = json!({ "image": payload });
        }
        if namespace == "kubernetes" {
            let resource = Resource::deserialize(&payload).map_err(|e| e.to_string())?;
            if !self.resources.contains(&resource) {
                let Resource { api_version, kind } = resource;
                return Err(format!("Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."));
            }
        }
        let request: Request =
            serde_json::from_value(json!({ variant: payload })).map_err(|e| e.to_string())?;
        let (registry, cluster) = (&self.registry, self.cluster.as_ref());
        self.session
            .answer(request, |request| match (request, cluster) {
                (Request::OciManifest { image }, _) => registry.manifest(image),
                (Request::OciManifestAndConfig { image }, _) => registry.manifest_and_config(image),
                (
                    Request::KubernetesListResourceAll {
                        api_version,
                        kind,
                        label_selector,
                        field_selector,
                        field_masks,
                    },
                    Some(cluster),
                ) => cluster.list_all(
                    api_version,
                    kind,
                    label_selector.as_deref(),
                    field_selector.as_deref(),
                    field_masks.as_ref(),
                ),
                (
                    Request::KubernetesGetResource {
                        api_version,
                        kind,
                        name,
                        namespace,
                        field_masks,
                        ..
                    },
                    Some(cluster),
                ) => cluster.get(
                    api_version,
                    kind,
                    name,
                    namespace.as_deref(),
                    field_masks.as_ref(),
                ),
                (_, None) => Err(anyhow!(
                    "the embedded host has no cluster to read: run with --allow-context-aware"
                )),
            })
            .map_err(|error| {
                eprintln!("embedded-host: host call {capability} failed: {error:?}");
                format!("Callback evaluation failure: {error:?}")
            })
    }
}
