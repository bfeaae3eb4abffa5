//! `push`: a module pushed to an OCI registry as `kwctl push` pushes it (kwctl's `push` over
//! policy-fetcher's `Registry::push`, v1.35.0), so that the release's push can be rehearsed where
//! kwctl is not installed (`scripts/release.sh`, e2e/release.bats). One layer of type
//! `application/vnd.wasm.content.layer.v1+wasm`, the config `{}` of type
//! `application/vnd.wasm.config.v1+json`, the manifest annotated with the annotations of the
//! module's metadata (an annotated module's custom section): the single-line ones, trimmed, and
//! `org.opencontainers.image.source` from `io.kubewarden.policy.source`. A module that is not
//! annotated is refused unless `--force`, and then pushed without annotations. The same bytes,
//! the same oci-client: the same manifest digest (e2e/publish.bats compares it with kwctl's).
//! Anonymous pushes only (kwctl reads the Docker config for credentials; this host never does).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use oci_client::Reference;
use serde::Deserialize;

use crate::registry::Registry;

/// What `push` reads of a module's metadata.
#[derive(Deserialize)]
struct Annotated {
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// The annotations of the module's `io.kubewarden.metadata` section, None when it has none.
fn module_annotations(module: &[u8]) -> Result<Option<BTreeMap<String, String>>> {
    let Some(section) = crate::policy::metadata_section(module)? else {
        return Ok(None);
    };
    let metadata: Annotated = serde_json::from_slice(section)?;
    Ok(Some(metadata.annotations))
}

/// kwctl's `build_oci_annotations`: multi-line annotations dropped, the others trimmed, the
/// policy's source repeated as `org.opencontainers.image.source`.
fn oci_annotations(annotations: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut kept: BTreeMap<String, String> = annotations
        .into_iter()
        .filter(|(key, value)| {
            let single = value.lines().count() <= 1;
            if !single {
                eprintln!("embedded-host: annotation {key} is a multi-line string, it will be removed from the OCI manifest");
            }
            single
        })
        .map(|(key, value)| (key, value.trim().to_string()))
        .collect();
    if let Some(source) = kept.get("io.kubewarden.policy.source").cloned() {
        kept.entry("org.opencontainers.image.source".into())
            .or_insert(source);
    }
    kept
}

/// policy-fetcher's `build_immutable_ref`: `registry/repository@digest`, the digest taken from
/// the manifest URL the registry answered with.
fn immutable_ref(reference: &Reference, manifest_url: &str) -> Result<String> {
    let digest = manifest_url
        .rsplit_once('/')
        .map(|(_, digest)| digest)
        .ok_or_else(|| {
            anyhow!("Cannot extract manifest digest from the OCI registry response: {manifest_url}")
        })?;
    match digest.split_once(':') {
        Some(("sha256", hex)) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {}
        _ => bail!("The digest of the returned manifest is not valid: {digest}"),
    }
    Ok(format!(
        "{}/{}@{digest}",
        reference.registry(),
        reference.repository()
    ))
}

/// Pushes `module` to `uri` (`registry://` optional) and returns its immutable reference.
pub fn push(module: &Path, uri: &str, sources: Option<&Path>, force: bool) -> Result<String> {
    let bytes = std::fs::read(module).map_err(|e| anyhow!("Cannot open policy file: {e:?}"))?;
    let annotations = match module_annotations(&bytes)? {
        Some(annotations) => Some(oci_annotations(annotations)),
        None if force => {
            eprintln!("Warning: pushing a non-annotated policy!");
            None
        }
        None => bail!(
            "Cannot push a policy that is not annotated. Use `annotate` command or `push --force`"
        ),
    };
    let destination = uri.strip_prefix("registry://").unwrap_or(uri);
    let layers = vec![ImageLayer::new(
        bytes,
        WASM_LAYER_MEDIA_TYPE.to_string(),
        None,
    )];
    let config = Config {
        data: b"{}".to_vec().into(),
        media_type: WASM_CONFIG_MEDIA_TYPE.to_string(),
        annotations: None,
    };
    let manifest = OciImageManifest::build(&layers, &config, annotations);
    let (reference, manifest_url) =
        Registry::new(sources)?.push(destination, &layers, config, manifest)?;
    immutable_ref(&reference, &manifest_url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_as_kwctl_pushes_them() {
        let annotations = BTreeMap::from([
            (
                "io.kubewarden.policy.source".to_string(),
                "https://example.com/src".to_string(),
            ),
            (
                "io.kubewarden.policy.usage".to_string(),
                "two\nlines".to_string(),
            ),
            (
                "io.kubewarden.policy.description".to_string(),
                "ends with a newline\n".to_string(),
            ),
        ]);
        assert_eq!(
            oci_annotations(annotations),
            BTreeMap::from([
                (
                    "io.kubewarden.policy.description".to_string(),
                    "ends with a newline".to_string()
                ),
                (
                    "io.kubewarden.policy.source".to_string(),
                    "https://example.com/src".to_string()
                ),
                (
                    "org.opencontainers.image.source".to_string(),
                    "https://example.com/src".to_string()
                ),
            ])
        );
    }

    #[test]
    fn immutable_reference_from_the_manifest_url() {
        let reference: Reference = "127.0.0.1:5000/policies/p:v1".parse().unwrap();
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            immutable_ref(
                &reference,
                &format!("http://127.0.0.1:5000/v2/policies/p/manifests/{digest}")
            )
            .unwrap(),
            format!("127.0.0.1:5000/policies/p@{digest}")
        );
        assert_eq!(
            immutable_ref(
                &reference,
                "http://127.0.0.1:5000/v2/policies/p/manifests/sha256:zz"
            )
            .unwrap_err()
            .to_string(),
            "The digest of the returned manifest is not valid: sha256:zz"
        );
    }
}
