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
mod tests {
    use super::*;

    fn platforms(raw: &str) -> Vec<String> {
        match parse_manifest(raw.as_bytes()).unwrap() {
            Manifest::Index(listed) => listed
                .builds
                .platforms
                .iter()
                .map(ToString::to_string)
                .collect(),
            Manifest::Single { .. } => vec!["single".into()],
            Manifest::WebAssembly => vec!["webassembly".into()],
        }
    }

    /// `index` of one image, read like a lookup reads it.
    fn finished(raw: &str) -> Found {
        match parse_manifest(raw.as_bytes())? {
            Manifest::Index(listed) => finish_index(listed.builds, listed.entries),
            other => panic!("not an index: {other:?}"),
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
        let list = finished(raw).unwrap().platforms;
        let names: Vec<String> = list.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["linux/arm", "linux/s390x", "windows/amd64"]);
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

    fn manifest_with(config_type: &str, artifact_type: Option<&str>) -> Manifest {
        let mut manifest = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": config_type, "digest": "sha256:a", "size": 2}, "layers": []});
        if let Some(artifact_type) = artifact_type {
            manifest["artifactType"] = artifact_type.into();
        }
        parse_manifest(manifest.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn webassembly_artifacts_are_known_from_their_manifest() {
        for config_type in [
            "application/vnd.fermyon.spin.application.v1+config",
            "application/vnd.wasm.config.v0+json",
            "application/vnd.wasm.config.v1+json",
        ] {
            assert_eq!(
                manifest_with(config_type, None),
                Manifest::WebAssembly,
                "{config_type}"
            );
        }
        assert_eq!(
            manifest_with(
                "application/vnd.oci.empty.v1+json",
                Some("application/vnd.wasm.config.v0+json")
            ),
            Manifest::WebAssembly
        );
        // Container images are read from their config; other artifacts too, named if that
        // names no platform.
        assert_eq!(
            manifest_with("application/vnd.docker.container.image.v1+json", None),
            Manifest::Single { artifact: None }
        );
        assert_eq!(
            manifest_with("application/vnd.cncf.helm.config.v1+json", None),
            Manifest::Single {
                artifact: Some("application/vnd.cncf.helm.config.v1+json".into())
            }
        );
        assert_eq!(
            manifest_with(
                "application/vnd.oci.empty.v1+json",
                Some("application/spdx+json")
            ),
            Manifest::Single {
                artifact: Some("application/spdx+json".into())
            }
        );
    }

    #[test]
    fn webassembly_entries_are_apart_from_the_native_ones() {
        let mixed = r#"{"manifests":[{"platform":{"architecture":"amd64","os":"linux"}},{"platform":{"architecture":"wasm","os":"wasip1"}}]}"#;
        let builds = finished(mixed).unwrap();
        assert!(builds.webassembly);
        assert_eq!(builds.platforms.len(), 1);
        assert_eq!(builds.left_out, Vec::<String>::new());
        let only = r#"{"manifests":[{"platform":{"architecture":"wasm","os":"wasi"}}]}"#;
        assert_eq!(
            finished(only),
            Ok(Builds {
                webassembly: true,
                ..Builds::default()
            })
        );
    }

    #[test]
    fn unusable_answers_say_why() {
        assert_eq!(
            finished(r#"{"schemaVersion":2,"manifests":[]}"#).unwrap_err(),
            "the image index has no entries"
        );
        assert_eq!(
            finished(r#"{"manifests":[{"platform":{"architecture":"unknown","os":"unknown"}},{"platform":{"architecture":"unknown","os":"unknown"}}]}"#).unwrap_err(),
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
        let platform = |raw: &[u8]| builds_from_config(raw, None).map(|b| b.platforms);
        let raw = br#"{"manifest":{},"digest":"sha256:a","config":{"architecture":"arm","os":"linux","variant":"v7","rootfs":{}}}"#;
        assert_eq!(platform(raw).unwrap()[0].to_string(), "linux/arm");
        let windows =
            br#"{"config":{"architecture":"amd64","os":"windows","os.version":"10.0.20348.2527"}}"#;
        assert_eq!(
            platform(windows).unwrap()[0].os_build.as_deref(),
            Some("10.0.20348")
        );
        assert_eq!(
            platform(br#"{"config":{"os":"linux"}}"#).unwrap_err(),
            "the image config names no runnable architecture"
        );
        assert_eq!(
            builds_from_config(br#"{"config":{"architecture":"wasm","os":"wasip1"}}"#, None),
            Ok(Builds {
                webassembly: true,
                ..Builds::default()
            })
        );
        assert!(is_operator_bundle(
            br#"{"config":{"architecture":"amd64","os":"linux","config":{"Labels":{
                "operators.operatorframework.io.bundle.mediatype.v1":"registry+v1"}}}}"#
        ));
        for other in [
            &br#"{"config":{"architecture":"amd64","os":"linux","config":{"Labels":{"a":"b"}}}}"#[..],
            br#"{"config":{"architecture":"amd64","os":"linux","config":{"Labels":null}}}"#,
            br#"{"config":{"architecture":"amd64","os":"linux"}}"#,
            br#"{"config":"operators.operatorframework.io.bundle.mediatype.v1"}"#,
        ] {
            assert!(!is_operator_bundle(other));
        }
        assert_eq!(
            builds_from_config(
                br#"{"config":{"name":"chart","version":"1.0.0"}}"#,
                Some("application/vnd.cncf.helm.config.v1+json")
            )
            .unwrap_err(),
            r#"the manifest is an artifact of type "application/vnd.cncf.helm.config.v1+json", not a container image"#
        );
    }
}
