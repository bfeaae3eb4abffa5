//! Resolving images to the platforms they are built for: the `imagePlatforms` setting first,
//! else the registry (through the host, after registry mirrors), reading index entries or, for a
//! single-platform image, its config.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::image::ImageRef;
use crate::platform::{self, Declared, Platform};
use crate::registry::Registry;
use crate::settings::Settings;
use crate::sparse::Text;

/// What the policy learned about one image of the Pod.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagePlatforms {
    /// The reference as the Pod spells it (for messages).
    pub image: String,
    /// Every runnable platform of the image, or why they could not be known.
    pub platforms: Result<Vec<Platform>, String>,
    /// The values of the entries left out because no node reports them (`architecture "x y"`).
    pub left_out: Vec<String>,
}

/// The platforms read from one manifest, and the values of the entries left out.
type Found = Result<(Vec<Platform>, Vec<String>), String>;

/// Resolves every image (unique references, in the order given) to its platforms, with one
/// lookup per distinct canonical reference.
pub fn resolve_images(
    images: &[&str],
    settings: &Settings,
    registry: &mut dyn Registry,
) -> Vec<ImagePlatforms> {
    let mut by_lookup: BTreeMap<String, Found> = BTreeMap::new();
    let mut resolved: Vec<ImagePlatforms> = Vec::with_capacity(images.len());
    for &written in images {
        let platforms = match ImageRef::parse(written) {
            Err(reason) => Err(format!("invalid image reference: {reason}")),
            Ok(reference) => {
                let canonical = reference.to_string();
                if let Some(architectures) = settings.configured_architectures(written, &canonical)
                {
                    Ok((
                        architectures.into_iter().map(Platform::any_os).collect(),
                        Vec::new(),
                    ))
                } else {
                    let lookup = match settings.registry_mirrors.get(&reference.registry) {
                        Some(mirror) => reference.mirrored(mirror).to_string(),
                        None => canonical,
                    };
                    by_lookup
                        .entry(lookup)
                        .or_insert_with_key(|lookup| {
                            lookup_platforms(lookup, registry).map_err(|reason| {
                                if lookup.as_str() == written {
                                    reason
                                } else {
                                    // The name first: error chains end with their root cause,
                                    // which messages keep when they are cut.
                                    format!("as {lookup}: {reason}")
                                }
                            })
                        })
                        .clone()
                }
            }
        };
        let (platforms, left_out) = match platforms {
            Ok((platforms, left_out)) => (Ok(platforms), left_out),
            Err(reason) => (Err(reason), Vec::new()),
        };
        resolved.push(ImagePlatforms {
            image: written.to_string(),
            platforms,
            left_out,
        });
    }
    resolved
}

/// The runnable platforms of one image, from the registry, and the values of the entries left
/// out.
pub fn lookup_platforms(image: &str, registry: &mut dyn Registry) -> Found {
    let raw = registry.manifest(image).map_err(host_error)?;
    match parse_manifest(&raw)? {
        Manifest::Platforms {
            platforms,
            left_out,
        } => Ok((platforms, left_out)),
        Manifest::Single => {
            let raw = registry.manifest_and_config(image).map_err(host_error)?;
            platform_from_config(&raw).map(|platform| (vec![platform], Vec::new()))
        }
    }
}

/// A manifest as far as the policy cares.
#[derive(Debug, PartialEq)]
pub enum Manifest {
    /// An index or manifest list (its runnable entries, and the values of the entries left out
    /// because no node reports them), or a schema 1 manifest.
    Platforms {
        platforms: Vec<Platform>,
        left_out: Vec<String>,
    },
    /// A single-platform manifest: the platform is in its config.
    Single,
}

// Strings are borrowed from the host's answer (`Text`: owned only when they had escapes), and
// annotations are only checked for one key: an index is read without allocating per entry.
#[derive(Deserialize)]
struct RawManifest<'a> {
    #[serde(rename = "schemaVersion")]
    schema_version: Option<i64>,
    #[serde(borrow)]
    manifests: Option<Vec<RawEntry<'a>>>,
    config: Option<serde::de::IgnoredAny>,
    /// Docker schema 1 manifests name their architecture at the top.
    #[serde(borrow)]
    architecture: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct RawEntry<'a> {
    #[serde(borrow)]
    platform: Option<RawPlatform<'a>>,
    #[serde(default)]
    annotations: NotAnImage,
}

#[derive(Deserialize)]
struct RawPlatform<'a> {
    #[serde(borrow)]
    os: Option<Text<'a>>,
    #[serde(borrow)]
    architecture: Option<Text<'a>>,
    /// Windows images' OS version; the host writes the key as `os.version`.
    #[serde(borrow, rename = "os.version")]
    os_version: Option<Text<'a>>,
}

/// Whether an index entry's annotations mark it as no image (`REFERENCE_TYPE_ANNOTATION`).
#[derive(Default)]
struct NotAnImage(bool);

impl<'de> Deserialize<'de> for NotAnImage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Annotations;
        impl<'de> serde::de::Visitor<'de> for Annotations {
            type Value = NotAnImage;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a map of annotations")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<NotAnImage, A::Error> {
                let mut found = false;
                while let Some(Text(key)) = map.next_key()? {
                    found |= key == REFERENCE_TYPE_ANNOTATION;
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                Ok(NotAnImage(found))
            }
            fn visit_unit<E>(self) -> Result<NotAnImage, E> {
                Ok(NotAnImage(false))
            }
        }
        deserializer.deserialize_any(Annotations)
    }
}

/// Annotation BuildKit (and others) put on index entries that are not images: attestations,
/// signatures, SBOMs.
const REFERENCE_TYPE_ANNOTATION: &str = "vnd.docker.reference.type";

/// Reads a manifest, image index or Docker manifest list.
pub fn parse_manifest(raw: &[u8]) -> Result<Manifest, String> {
    let manifest: RawManifest = serde_json::from_slice(raw)
        .map_err(|e| format!("the registry's answer is not a manifest: {e}"))?;
    if let Some(entries) = manifest.manifests {
        let total = entries.len();
        let (mut platforms, mut left_out) = (Vec::new(), Vec::new());
        for platform in entries
            .into_iter()
            .filter(|entry| !entry.annotations.0)
            .filter_map(|entry| entry.platform)
        {
            match platform::declared(
                platform.os.as_deref(),
                platform.architecture.as_deref(),
                platform.os_version.as_deref(),
            ) {
                Declared::Runnable(platform) => platforms.push(platform),
                Declared::Odd(value) => left_out.push(value),
                Declared::NotAnImage => {}
            }
        }
        platforms.sort();
        platforms.dedup();
        left_out.sort();
        left_out.dedup();
        if platforms.is_empty() {
            return Err(if total == 0 {
                "the image index has no entries".to_string()
            } else if !left_out.is_empty() {
                format!(
                    "the image index has no entry a node can run (no node reports {})",
                    left_out.join(", ")
                )
            } else {
                format!("the image index has no runnable entry (its {total} entries are attestations or of unknown platform)")
            });
        }
        return Ok(Manifest::Platforms {
            platforms,
            left_out,
        });
    }
    if manifest.config.is_some() {
        return Ok(Manifest::Single);
    }
    if manifest.schema_version == Some(1) {
        match platform::declared(None, manifest.architecture.as_deref(), None) {
            Declared::Runnable(platform) => {
                return Ok(Manifest::Platforms {
                    platforms: vec![platform],
                    left_out: Vec::new(),
                })
            }
            Declared::Odd(value) => {
                return Err(format!("the manifest names {value}, which no node reports"))
            }
            Declared::NotAnImage => {}
        }
    }
    Err("the registry's answer is neither an image manifest nor an image index".to_string())
}

#[derive(Deserialize)]
struct RawManifestAndConfig<'a> {
    #[serde(borrow)]
    config: RawPlatform<'a>,
}

/// Reads the platform of a single-platform image from the host's `oci_manifest_config` answer.
pub fn platform_from_config(raw: &[u8]) -> Result<Platform, String> {
    let answer: RawManifestAndConfig = serde_json::from_slice(raw)
        .map_err(|e| format!("the registry's answer has no image config: {e}"))?;
    match platform::declared(
        answer.config.os.as_deref(),
        answer.config.architecture.as_deref(),
        answer.config.os_version.as_deref(),
    ) {
        Declared::Runnable(platform) => Ok(platform),
        Declared::Odd(value) => Err(format!(
            "the image config names {value}, which no node reports"
        )),
        Declared::NotAnImage => Err("the image config names no runnable architecture".to_string()),
    }
}

/// The host's error text, without the waPC prefix.
pub(crate) fn host_error(error: String) -> String {
    error
        .strip_prefix("Host error: ")
        .map(str::to_string)
        .unwrap_or(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platforms(raw: &str) -> Vec<String> {
        match parse_manifest(raw.as_bytes()).unwrap() {
            Manifest::Platforms { platforms, .. } => {
                platforms.iter().map(ToString::to_string).collect()
            }
            Manifest::Single => vec!["single".into()],
        }
    }

    #[test]
    fn index_entries_without_attestations() {
        let raw = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
          {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:a","size":1,"platform":{"architecture":"amd64","os":"linux"}},
          {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:b","size":1,"platform":{"architecture":"arm64","os":"linux","variant":"v8"}},
          {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:c","size":1,"platform":{"architecture":"unknown","os":"unknown"},
           "annotations":{"vnd.docker.reference.digest":"sha256:a","vnd.docker.reference.type":"attestation-manifest"}},
          {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:d","size":1,"platform":{"architecture":"amd64","os":"linux"},
           "annotations":{"vnd.docker.reference.type":"attestation-manifest"}}]}"#;
        assert_eq!(platforms(raw), ["linux/amd64", "linux/arm64"]);
    }

    #[test]
    fn docker_list_with_variants() {
        let raw = r#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[
          {"platform":{"architecture":"arm","os":"linux","variant":"v7"}},
          {"platform":{"architecture":"arm","os":"linux","variant":"v6"}},
          {"platform":{"architecture":"s390x","os":"linux"}},
          {"platform":{"architecture":"amd64","os":"windows","os.version":"10.0.17763.1"}}]}"#;
        assert_eq!(
            platforms(raw),
            ["linux/arm", "linux/s390x", "windows/amd64"]
        );
        let Manifest::Platforms {
            platforms: list, ..
        } = parse_manifest(raw.as_bytes()).unwrap()
        else {
            panic!("an index");
        };
        assert_eq!(list[2].os_build.as_deref(), Some("10.0.17763"));
    }

    #[test]
    fn entries_without_os_count_for_every_os() {
        let raw = r#"{"manifests":[{"platform":{"architecture":"amd64"}},{"platform":{"architecture":"arm64"}},{"digest":"sha256:x"}]}"#;
        assert_eq!(platforms(raw), ["amd64", "arm64"]);
    }

    #[test]
    fn single_manifests_need_their_config() {
        let oci = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:a","size":2},"layers":[]}"#;
        assert_eq!(platforms(oci), ["single"]);
        let schema1 =
            r#"{"schemaVersion":1,"name":"a","tag":"1","architecture":"amd64","fsLayers":[]}"#;
        assert_eq!(platforms(schema1), ["amd64"]);
    }

    #[test]
    fn unusable_answers_say_why() {
        assert_eq!(
            parse_manifest(br#"{"schemaVersion":2,"manifests":[]}"#).unwrap_err(),
            "the image index has no entries"
        );
        assert_eq!(
            parse_manifest(br#"{"manifests":[{"platform":{"architecture":"unknown","os":"unknown"}},{"platform":{"architecture":"unknown","os":"unknown"}}]}"#).unwrap_err(),
            "the image index has no runnable entry (its 2 entries are attestations or of unknown platform)"
        );
        assert_eq!(
            parse_manifest(br#"{"errors":[]}"#).unwrap_err(),
            "the registry's answer is neither an image manifest nor an image index"
        );
        assert!(parse_manifest(b"<html>")
            .unwrap_err()
            .starts_with("the registry's answer is not a manifest: "));
    }

    #[test]
    fn config_platform() {
        let raw = br#"{"manifest":{},"digest":"sha256:a","config":{"architecture":"arm","os":"linux","variant":"v7","rootfs":{}}}"#;
        assert_eq!(platform_from_config(raw).unwrap().to_string(), "linux/arm");
        let windows =
            br#"{"config":{"architecture":"amd64","os":"windows","os.version":"10.0.20348.2527"}}"#;
        assert_eq!(
            platform_from_config(windows).unwrap().os_build.as_deref(),
            Some("10.0.20348")
        );
        assert_eq!(
            platform_from_config(br#"{"config":{"os":"linux"}}"#).unwrap_err(),
            "the image config names no runnable architecture"
        );
    }
}
