//! The host calls a policy makes (waPC binding `kubewarden`), answered as policy-evaluator's
//! `host_callback` answers them: the grant checks and their texts, the SDK's logging, the OCI
//! lookups (`registry`) and the Kubernetes calls (from a replay session), each call through the
//! `session` so that it can be recorded or replayed.

use std::collections::BTreeSet;

use anyhow::{anyhow, Result};
use serde::Deserialize;
use serde_json::{json, Value};

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
            "oci/v1/manifest_digest" => "OciManifestDigest",
            "kubernetes/list_resources_all" => "KubernetesListResourceAll",
            "kubernetes/list_resources_by_namespace" => "KubernetesListResourceNamespace",
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
        let registry = &self.registry;
        self.session
            .answer(request, |request| match request {
                Request::OciManifest { image } => registry.manifest(image),
                Request::OciManifestAndConfig { image } => registry.manifest_and_config(image),
                Request::OciManifestDigest { image } => registry.manifest_digest(image),
                _ => Err(anyhow!("the embedded host reads no cluster: Kubernetes calls are answered from --replay-host-capabilities-interactions only")),
            })
            .map_err(|error| {
                eprintln!("embedded-host: host call {capability} failed: {error:?}");
                format!("Callback evaluation failure: {error:?}")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(grants: &[&str], resources: &[(&str, &str)]) -> Host {
        let replay = "- type: Exchange\n  request: |\n    !KubernetesGetResource\n    api_version: v1\n    kind: Node\n    name: n1\n    namespace: null\n    disable_cache: false\n    field_masks: null\n  response:\n    type: Success\n    payload: '{}'\n";
        let path = std::env::temp_dir().join(format!("capabilities-{}.yml", std::process::id()));
        std::fs::write(&path, replay).unwrap();
        let session = Session::replay(&path).unwrap();
        std::fs::remove_file(path).unwrap();
        Host {
            grants: Grants::new(&grants.iter().map(|g| g.to_string()).collect::<Vec<_>>()),
            resources: resources
                .iter()
                .map(|(api_version, kind)| Resource {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                })
                .collect(),
            session,
            registry: Registry::new(None).unwrap(),
        }
    }

    const GET_N1: &[u8] =
        br#"{"api_version":"v1","kind":"Node","name":"n1","namespace":null,"disable_cache":false}"#;

    #[test]
    fn calls_are_checked_against_the_grants_and_the_readable_resources() {
        let mut h = host(&["oci/v1/oci_manifest"], &[("v1", "Node")]);
        assert_eq!(
            h.call("kubewarden", "oci", "v1/oci_manifest_config", b"\"a\""),
            Err("Policy has not been granted access to the 'oci/v1/oci_manifest_config' host capability. The violation has been reported.".into())
        );
        assert_eq!(
            h.call("kubewarden", "kubernetes", "get_resource", GET_N1),
            Err("Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported.".into())
        );
        let mut h = host(&["kubernetes/*"], &[("v1", "Pod")]);
        assert_eq!(
            h.call("kubewarden", "kubernetes", "get_resource", GET_N1),
            Err("Policy has not been granted access to Kubernetes v1/Node resources. The violation has been reported.".into())
        );
        let mut h = host(&["*"], &[("v1", "Node")]);
        assert_eq!(
            h.call("other", "oci", "v1/oci_manifest", b"\"a\""),
            Err("unknown binding: other".into())
        );
        assert_eq!(h.call("kubewarden", "tracing", "log", b"{}"), Ok(vec![]));
        assert_eq!(
            h.call("kubewarden", "kubernetes", "get_resource", GET_N1),
            Ok(b"{}".to_vec())
        );
        // The error as the guest gets it (a backtrace follows with RUST_BACKTRACE=1, as in kwctl).
        let empty = h.call("kubewarden", "kubernetes", "get_resource", GET_N1);
        assert_eq!(
            empty.unwrap_err().lines().next(),
            Some("Callback evaluation failure: the list of recorded responses is empty")
        );
    }
}
