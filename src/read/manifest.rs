//! The registry's wire format, as far as the policy reads it: an OCI image index or Docker
//! manifest list (its entries' platforms, attestations left out, the indexes it nests), a
//! single-platform manifest (its config's platform), WebAssembly artifacts, and what a read
//! index or config says an image is built for (`Builds`). Untrusted: every value is checked
//! before it names a platform (`platform::declared`).

use serde::Deserialize;

use crate::host::sparse::Text;
use crate::platform::{self, Declared, Platform};
use crate::read::webassembly;

/// What one image is built for: its native platforms, the values of the entries left out, and
/// whether it has a WebAssembly build.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Builds {
    pub platforms: Vec<Platform>,
    pub left_out: Vec<String>,
    pub webassembly: bool,
    /// An artifact with no platform, read for image volumes only: a single manifest whose
    /// config's media type is no container image config's (`IMAGE_CONFIG_MEDIA_TYPES`) nor
    /// WebAssembly's (its `artifactType`, else that media type, names it), or whose image config
    /// names no platform. The kubelet mounts its content on a node of any platform.
    pub platformless: bool,
}

/// What one image (or index) is built for, or why that cannot be told.
pub type Found = Result<Builds, String>;

/// The builds of an index and the indexes it nests (`entries` entries that are no index in
/// all); the error says why none is runnable.
pub fn finish_index(mut builds: Builds, entries: usize) -> Found {
    builds.platforms.sort();
    builds.platforms.dedup();
    builds.left_out.sort();
    builds.left_out.dedup();
    if builds.platforms.is_empty() && !builds.webassembly {
        return Err(if entries == 0 {
            "the image index has no entries".to_string()
        } else if !builds.left_out.is_empty() {
            format!(
                "the image index has no entry a node can run (no node reports {})",
                builds.left_out.join(", ")
            )
        } else {
            format!("the image index has no runnable entry (its {entries} entries are attestations or of unknown platform)")
        });
    }
    Ok(builds)
}

/// A manifest as far as the policy cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Manifest {
    /// An index or manifest list (or a schema 1 manifest, which names its platform).
    Index(Listed),
    /// A single-platform manifest: the platform is in its config. `artifact`: the artifact type
    /// when the config is no container image config (for the message when it names no
    /// platform).
    Single { artifact: Option<String> },
    /// A WebAssembly artifact (`webassembly::is_artifact`): no config to read.
    WebAssembly,
}

/// What an index lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    /// What its entries that are no index are built for.
    pub builds: Builds,
    /// The digests of the entries that are indexes themselves.
    pub nested: Vec<String>,
    /// How many entries are no index (attestations included).
    pub entries: usize,
}

// Strings are borrowed from the host's answer (`Text`: owned only when they had escapes), and
// annotations are only checked for one key: an index is read without allocating per entry.
#[derive(Deserialize)]
struct RawManifest<'a> {
    #[serde(rename = "schemaVersion")]
    schema_version: Option<i64>,
    #[serde(borrow, rename = "artifactType")]
    artifact_type: Option<Text<'a>>,
    #[serde(borrow)]
    manifests: Option<Vec<RawEntry<'a>>>,
    #[serde(borrow)]
    config: Option<RawDescriptor<'a>>,
    /// Docker schema 1 manifests name their architecture at the top.
    #[serde(borrow)]
    architecture: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct RawDescriptor<'a> {
    #[serde(borrow, rename = "mediaType")]
    media_type: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct RawEntry<'a> {
    #[serde(borrow, rename = "mediaType")]
    media_type: Option<Text<'a>>,
    #[serde(borrow)]
    digest: Option<Text<'a>>,
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

/// The media types of an image index and of a Docker manifest list: an index entry of either is
/// looked up by digest and read like the index that lists it.
pub const INDEX_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// The config media types of container images (OCI, Docker).
pub const IMAGE_CONFIG_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
];

/// What an index lists: the indexes it nests (by digest), and its entries' platforms.
fn listed(entries: Vec<RawEntry>) -> Listed {
    let mut listed = Listed::default();
    for entry in entries {
        let is_index = entry
            .media_type
            .as_deref()
            .is_some_and(|media_type| INDEX_MEDIA_TYPES.contains(&media_type));
        if is_index && !entry.annotations.0 {
            listed
                .nested
                .push(entry.digest.as_deref().unwrap_or_default().to_string());
            continue;
        }
        listed.entries += 1;
        let Some(platform) = entry.platform.filter(|_| !entry.annotations.0) else {
            continue;
        };
        match platform::declared(
            platform.os.as_deref(),
            platform.architecture.as_deref(),
            platform.os_version.as_deref(),
        ) {
            Declared::Runnable(platform) => listed.builds.platforms.push(platform),
            Declared::WebAssembly => listed.builds.webassembly = true,
            Declared::Odd(value) => listed.builds.left_out.push(value),
            Declared::NotAnImage => {}
        }
    }
    listed
}

/// Reads a manifest, image index or Docker manifest list.
pub fn parse_manifest(raw: &[u8]) -> Result<Manifest, String> {
    let manifest: RawManifest = serde_json::from_slice(raw)
        .map_err(|e| format!("the registry's answer is not a manifest: {e}"))?;
    if let Some(entries) = manifest.manifests {
        return Ok(Manifest::Index(listed(entries)));
    }
    if let Some(config) = manifest.config {
        let config_type = config.media_type.as_deref().unwrap_or_default();
        let artifact_type = manifest.artifact_type.as_deref();
        if webassembly::is_artifact(config_type)
            || artifact_type.is_some_and(webassembly::is_artifact)
        {
            return Ok(Manifest::WebAssembly);
        }
        let artifact = (!config_type.is_empty()
            && !IMAGE_CONFIG_MEDIA_TYPES.contains(&config_type))
        .then(|| artifact_type.unwrap_or(config_type).to_string());
        return Ok(Manifest::Single { artifact });
    }
    if manifest.schema_version == Some(1) {
        match platform::declared(None, manifest.architecture.as_deref(), None) {
            Declared::Runnable(platform) => {
                return Ok(Manifest::Index(Listed {
                    builds: Builds {
                        platforms: vec![platform],
                        ..Builds::default()
                    },
                    entries: 1,
                    ..Listed::default()
                }))
            }
            Declared::Odd(value) => {
                return Err(format!("the manifest names {value}, which no node reports"))
            }
            Declared::WebAssembly | Declared::NotAnImage => {}
        }
    }
    Err("the registry's answer is neither an image manifest nor an image index".to_string())
}

#[derive(Deserialize)]
struct RawManifestAndConfig<'a> {
    #[serde(borrow)]
    config: RawPlatform<'a>,
}

/// The one label of an image config's runtime part (`config.config.Labels`) the policy reads.
#[derive(Deserialize)]
struct RawBundleConfig {
    config: RawRuntime,
}

#[derive(Deserialize)]
struct RawRuntime {
    config: Option<RawRuntimeLabels>,
}

#[derive(Deserialize)]
struct RawRuntimeLabels {
    #[serde(rename = "Labels")]
    labels: Option<RawBundleLabel>,
}

#[derive(Deserialize)]
struct RawBundleLabel {
    #[serde(rename = "operators.operatorframework.io.bundle.mediatype.v1")]
    mediatype: Option<serde::de::IgnoredAny>,
}

/// Whether the host's `oci_manifest_config` answer is an Operator Lifecycle Manager bundle's: its
/// image config has the label `operators.operatorframework.io.bundle.mediatype.v1`. A bundle
/// holds manifests and no binaries: OLM runs it with a binary it copies in from its own image,
/// of the node's platform, so it runs on every node whatever platform its config names.
pub fn is_operator_bundle(raw: &[u8]) -> bool {
    serde_json::from_slice::<RawBundleConfig>(raw).is_ok_and(|answer| {
        answer
            .config
            .config
            .and_then(|runtime| runtime.labels)
            .is_some_and(|labels| labels.mediatype.is_some())
    })
}

/// Reads what a single-platform image is built for from the host's `oci_manifest_config`
/// answer. `artifact`: the manifest's artifact type when its config is no container image
/// config, named when the config names no platform.
pub fn builds_from_config(raw: &[u8], artifact: Option<&str>) -> Found {
    let answer: RawManifestAndConfig = serde_json::from_slice(raw)
        .map_err(|e| format!("the registry's answer has no image config: {e}"))?;
    match platform::declared(
        answer.config.os.as_deref(),
        answer.config.architecture.as_deref(),
        answer.config.os_version.as_deref(),
    ) {
        Declared::Runnable(platform) => Ok(Builds {
            platforms: vec![platform],
            ..Builds::default()
        }),
        Declared::WebAssembly => Ok(Builds {
            webassembly: true,
            ..Builds::default()
        }),
        Declared::Odd(value) => Err(format!(
            "the image config names {value}, which no node reports"
        )),
        Declared::NotAnImage => Err(match artifact {
            Some(artifact) => format!(
                "the manifest is an artifact of type {}, not a container image",
                platform::quoted(artifact)
            ),
            None => "the image config names no runnable architecture".to_string(),
        }),
    }
}

/// Whether the host's `oci_manifest_config` answer is one whose config names no platform (no
/// architecture, or an `unknown` one), as opposed to one that names a platform no node runs.
pub fn config_names_no_platform(raw: &[u8]) -> bool {
    serde_json::from_slice::<RawManifestAndConfig>(raw).is_ok_and(|answer| {
        matches!(
            platform::declared(
                answer.config.os.as_deref(),
                answer.config.architecture.as_deref(),
                answer.config.os_version.as_deref(),
            ),
            Declared::NotAnImage
        )
    })
}

#[cfg(test)]
mod tests;
