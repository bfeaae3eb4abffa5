//! What to run, as kwctl reads it: a module (a path or a `file://` URI) with the settings and
//! flags of the command line, or a ClusterAdmissionPolicy / AdmissionPolicy manifest (`.yaml`,
//! `.yml`) with its module, settings, `mutating`, `mode` and `contextAwareResources`.
//! The module's metadata comes from its `io.kubewarden.metadata` custom section (a module
//! annotated by `kwctl annotate`), else, for a plain module, from the `metadata.yml` beside it
//! (this host cannot annotate; kwctl reads no metadata from a plain module).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::capabilities::Resource;

/// The parts of a policy's metadata this host honours.
#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default)]
    pub context_aware_resources: BTreeSet<Resource>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// kwctl's policy id: `policy-from-cli`, or the manifest's name.
    pub id: String,
    pub module: PathBuf,
    pub settings: Map<String, Value>,
    /// Kubernetes resources the policy may read.
    pub resources: BTreeSet<Resource>,
    pub allowed_to_mutate: bool,
    pub monitor: bool,
}

/// kwctl's `PolicySettings::try_from`: an object, or null for none.
fn settings(value: Value) -> Result<Map<String, Value>> {
    match value {
        Value::Null => Ok(Map::new()),
        Value::Object(settings) => Ok(settings),
        _ => bail!("Invalid settings in CRD, not an object"),
    }
}

/// A module path or `file://` URI (kwctl also pulls `registry://` and `https://` modules).
fn module_path(uri: &str) -> Result<PathBuf> {
    match uri.split_once("://") {
        None => Ok(PathBuf::from(uri)),
        Some(("file", path)) => Ok(PathBuf::from(path)),
        Some(_) => bail!("the embedded host runs local modules only (a path or file://): {uri}"),
    }
}

/// The content of the module's `io.kubewarden.metadata` custom section (written by `kwctl
/// annotate`), None when it has none.
pub fn metadata_section(module: &[u8]) -> Result<Option<&[u8]>> {
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::CustomSection(section) = payload? {
            if section.name() == "io.kubewarden.metadata" {
                return Ok(Some(section.data()));
            }
        }
    }
    Ok(None)
}

/// The metadata in the module's custom section, else in `metadata.yml` beside it.
pub fn metadata(module: &[u8], path: &Path) -> Result<Option<Metadata>> {
    if let Some(section) = metadata_section(module)? {
        return Ok(Some(serde_json::from_slice(section)?));
    }
    let beside = path.with_file_name("metadata.yml");
    match std::fs::read_to_string(&beside) {
        Ok(text) => Ok(Some(
            serde_yaml::from_str(&text).with_context(|| format!("{beside:?}"))?,
        )),
        Err(_) => Ok(None),
    }
}

impl Policy {
    /// A module from the command line: kwctl's `policy-from-cli`, allowed to mutate, reading the
    /// resources of its metadata when `--allow-context-aware` is given.
    pub fn from_cli(uri: &str, settings_value: Value, allow_context_aware: bool) -> Result<Policy> {
        let module = module_path(uri)?;
        let bytes = std::fs::read(&module).with_context(|| format!("cannot read {uri}"))?;
        let resources = match (metadata(&bytes, &module)?, allow_context_aware) {
            (Some(metadata), true) => metadata.context_aware_resources,
            _ => BTreeSet::new(),
        };
        Ok(Policy {
            id: "policy-from-cli".into(),
            module,
            settings: settings(settings_value)?,
            resources,
            allowed_to_mutate: true,
            monitor: false,
        })
    }

    /// A ClusterAdmissionPolicy or AdmissionPolicy manifest (one document).
    pub fn from_manifest(path: &Path) -> Result<Policy> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Manifest {
            api_version: String,
            kind: String,
            #[serde(default)]
            metadata: Map<String, Value>,
            spec: Spec,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Spec {
            module: String,
            #[serde(default)]
            settings: Value,
            #[serde(default)]
            mutating: bool,
            mode: Option<String>,
            #[serde(default)]
            context_aware_resources: BTreeSet<Resource>,
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Cannot open YAML file {path:?}: {e}"))?;
        let manifest: Manifest = serde_yaml::from_str(&text)
            .map_err(|e| anyhow!("Cannot parse YAML file {path:?}: {e}"))?;
        if manifest.api_version != "policies.kubewarden.io/v1" {
            bail!("invalid apiVersion {:?}", Some(manifest.api_version));
        }
        let resources = match manifest.kind.as_str() {
            "ClusterAdmissionPolicy" => manifest.spec.context_aware_resources,
            "AdmissionPolicy" => BTreeSet::new(),
            kind => bail!("the embedded host runs ClusterAdmissionPolicy and AdmissionPolicy manifests, not {kind}"),
        };
        let module = module_path(&manifest.spec.module)?;
        Ok(Policy {
            id: manifest
                .metadata
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("crd-without-name")
                .into(),
            module,
            settings: settings(manifest.spec.settings)?,
            resources,
            allowed_to_mutate: manifest.spec.mutating,
            monitor: manifest.spec.mode.as_deref() == Some("monitor"),
        })
    }
}
