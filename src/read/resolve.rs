//! Resolving images to the platforms they are built for: the `imagePlatforms` setting first,
//! else the registry (through the host, after registry mirrors), reading index entries (and the
//! indexes an index lists, by digest) or, for a single-platform image, its config. WebAssembly
//! builds are kept apart from the native platforms (`webassembly`): they run on any architecture.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::host::host_error;
use crate::host::registry::Registry;
use crate::host::sparse::Text;
use crate::image::{self, ImageRef};
use crate::platform::{self, Declared, Platform};
use crate::read::pod::PodImage;
use crate::read::webassembly;
use crate::settings::Settings;

/// What the policy learned about one image of the Pod.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagePlatforms {
    /// The reference as the Pod spells it (for messages).
    pub image: String,
    /// The image volume that mounts it, when no container runs it (for messages).
    pub volume: Option<String>,
    /// Every native runnable platform of the image (its WebAssembly builds apart), or why they
    /// could not be known.
    pub platforms: Result<Vec<Platform>, String>,
    /// The values of the entries left out because no node reports them (`architecture "x y"`).
    pub left_out: Vec<String>,
    /// The image has a WebAssembly build: an index entry or a config of a WebAssembly platform,
    /// or it is a WebAssembly artifact (`webassembly::is_artifact`).
    pub webassembly: bool,
    /// It is an artifact with no platform (`Builds::platformless`) that only image volumes mount.
    pub platformless: bool,
}

impl ImagePlatforms {
    /// Whether the image constrains no architecture in a Pod that runs (`webassembly_runtime`)
    /// or does not run under one of the RuntimeClasses of `wasmRuntimeClasses`: its only builds
    /// are WebAssembly ones, or it has one and the Pod's runtime runs it. (A platform-less
    /// artifact is no image the Pod runs at all: the decision leaves it out.)
    pub fn arch_free(&self, webassembly_runtime: bool) -> bool {
        self.webassembly
            && (webassembly_runtime || self.platforms.as_ref().is_ok_and(Vec::is_empty))
    }
}

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

type Found = Result<Builds, String>;

/// How deep image indexes are followed: the index an image names is at depth 1, an index it
/// lists at depth 2, and so on. An index at this depth that lists another index fails the
/// lookup, and so does an index that lists itself through others (a cycle).
pub const MAX_INDEX_DEPTH: usize = 3;

/// Resolves every image (unique references, in the order given) to its platforms, with one
/// lookup per distinct canonical reference (and per index it nests: no `repository@digest` is
/// fetched twice in one evaluation). A reference that only image volumes name may be an artifact
/// with no platform; the containers' images come first (`pod::images`), so a volume that names a
/// container's image, in any spelling, gets the container's answer.
pub fn resolve_images(
    images: &[PodImage],
    settings: &Settings,
    registry: &mut dyn Registry,
) -> Vec<ImagePlatforms> {
    let mut by_lookup: BTreeMap<String, Found> = BTreeMap::new();
    let mut lookups = Lookups {
        registry,
        manifests: Vec::new(),
    };
    let mut resolved: Vec<ImagePlatforms> = Vec::with_capacity(images.len());
    for image in images {
        let written = image.reference;
        let found = match ImageRef::parse(written) {
            Err(reason) => Err(format!("invalid image reference: {reason}")),
            Ok(reference) => {
                let canonical = reference.to_string();
                if let Some(architectures) = settings.configured_architectures(written, &canonical)
                {
                    Ok(Builds {
                        platforms: architectures.into_iter().map(Platform::any_os).collect(),
                        ..Builds::default()
                    })
                } else {
                    let lookup = match settings.registry_mirrors.get(&reference.registry) {
                        Some(mirror) => reference.mirrored(mirror),
                        None => reference,
                    };
                    let container = image.volume.is_none();
                    by_lookup
                        .entry(lookup.to_string())
                        .or_insert_with_key(|name| {
                            lookups.image(name, &lookup, container).map_err(|reason| {
                                if name.as_str() == written {
                                    reason
                                } else {
                                    // The name first: error chains end with their root cause,
                                    // which messages keep when they are cut.
                                    format!("as {name}: {reason}")
                                }
                            })
                        })
                        .clone()
                }
            }
        };
        let volume = image.volume.map(str::to_string);
        resolved.push(match found {
            Ok(builds) => ImagePlatforms {
                image: written.to_string(),
                volume,
                platforms: Ok(builds.platforms),
                left_out: builds.left_out,
                webassembly: builds.webassembly,
                platformless: builds.platformless,
            },
            Err(reason) => ImagePlatforms {
                image: written.to_string(),
                volume,
                platforms: Err(reason),
                left_out: Vec::new(),
                webassembly: false,
                platformless: false,
            },
        });
    }
    resolved
}

/// The registry lookups of one evaluation. Every `oci/v1/oci_manifest` answer is kept (parsed),
/// by the reference it was asked for, so that an index listed by several images, or by an image
/// and a Pod, is fetched once.
struct Lookups<'r> {
    registry: &'r mut dyn Registry,
    manifests: Vec<(String, Result<Manifest, String>)>,
}

impl Lookups<'_> {
    /// `oci/v1/oci_manifest` of `name`, parsed, at most once per evaluation.
    fn manifest(&mut self, name: &str) -> Result<Manifest, String> {
        // Sorted by name: a binary search (a map would add more code to the module).
        let at = match self
            .manifests
            .binary_search_by(|(known, _)| known.as_str().cmp(name))
        {
            Ok(at) => return self.manifests[at].1.clone(),
            Err(at) => at,
        };
        let parsed = self
            .registry
            .manifest(name)
            .map_err(host_error)
            .and_then(|raw| parse_manifest(&raw));
        self.manifests
            .insert(at, (name.to_string(), parsed.clone()));
        parsed
    }

    /// What the image `name` (`reference` parsed) is built for; `container`: a container runs
    /// it (else only image volumes mount it, and an artifact is platform-less).
    fn image(&mut self, name: &str, reference: &ImageRef, container: bool) -> Found {
        match self.manifest(name)? {
            Manifest::Index(index) => {
                let mut builds = Builds::default();
                // An image named by digest starts the path: an index listing it is a cycle.
                let mut walk = Walk {
                    path: reference.digest.iter().cloned().collect(),
                    walked: Vec::new(),
                };
                let entries = self.index(reference, index, 1, &mut walk, &mut builds)?;
                finish_index(builds, entries)
            }
            Manifest::WebAssembly => Ok(Builds {
                webassembly: true,
                ..Builds::default()
            }),
            Manifest::Single {
                artifact: Some(_), ..
            } if !container => Ok(Builds {
                platformless: true,
                ..Builds::default()
            }),
            Manifest::Single { artifact } => {
                let raw = self
                    .registry
                    .manifest_and_config(name)
                    .map_err(host_error)?;
                let builds = builds_from_config(&raw, artifact.as_deref());
                // An image config that names no platform (`{}`, as `oras push` writes one)
                // holds data only an image volume mounts: it runs nowhere, and mounts anywhere.
                match builds {
                    Err(_) if !container && config_names_no_platform(&raw) => Ok(Builds {
                        platformless: true,
                        ..Builds::default()
                    }),
                    builds => builds,
                }
            }
        }
    }

    /// Adds what `index` (at `depth`) lists to `builds`, following the indexes it lists (by
    /// digest, in `reference`'s repository) unless they are on the walk's path (the digests of
    /// the indexes that led to it: a cycle) or were walked already (an index listed many times
    /// is read once). Returns the number of entries read that are no index.
    fn index(
        &mut self,
        reference: &ImageRef,
        index: Listed,
        depth: usize,
        walk: &mut Walk,
        builds: &mut Builds,
    ) -> Result<usize, String> {
        builds.platforms.extend(index.builds.platforms);
        builds.left_out.extend(index.builds.left_out);
        builds.webassembly |= index.builds.webassembly;
        let mut entries = index.entries;
        for digest in index.nested {
            image::check_digest(&digest).map_err(|e| {
                format!("the image index lists an index whose digest is invalid: {e}")
            })?;
            // Messages name a nested index by the start of its digest (they are cut to fit).
            let short = digest.get(..19).unwrap_or(&digest);
            if walk.path.contains(&digest) {
                return Err(format!(
                    "the image index nests indexes in a cycle: index {short}… lists itself through the indexes it lists"
                ));
            }
            let Err(unwalked) = walk.walked.binary_search(&digest) else {
                continue;
            };
            if depth >= MAX_INDEX_DEPTH {
                return Err(format!(
                    "the image index nests indexes more than {MAX_INDEX_DEPTH} deep: index {short}… is not followed"
                ));
            }
            let nested = ImageRef {
                tag: None,
                digest: Some(digest.clone()),
                ..reference.clone()
            }
            .to_string();
            let listed = match self.manifest(&nested) {
                Ok(Manifest::Index(listed)) => listed,
                Ok(_) => {
                    return Err(format!(
                        "the image index lists {short}… as an index, but it is an image manifest"
                    ))
                }
                Err(reason) => return Err(format!("nested index {short}…: {reason}")),
            };
            walk.walked.insert(unwalked, digest.clone());
            walk.path.push(digest);
            entries += self.index(reference, listed, depth + 1, walk, builds)?;
            walk.path.pop();
        }
        Ok(entries)
    }
}

/// Where the reading of one image's nested indexes is: the digests of the indexes that led to
/// the one being read (`path`), and those already read (`walked`, sorted).
struct Walk {
    path: Vec<String>,
    walked: Vec<String>,
}

/// The builds of an index and the indexes it nests (`entries` entries that are no index in
/// all); the error says why none is runnable.
fn finish_index(mut builds: Builds, entries: usize) -> Found {
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

/// Reads a manifest, image index or Docker manifest list.
pub fn parse_manifest(raw: &[u8]) -> Result<Manifest, String> {
    let manifest: RawManifest = serde_json::from_slice(raw)
        .map_err(|e| format!("the registry's answer is not a manifest: {e}"))?;
    if let Some(entries) = manifest.manifests {
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
        return Ok(Manifest::Index(listed));
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
fn config_names_no_platform(raw: &[u8]) -> bool {
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
    use std::collections::HashMap;

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
        assert_eq!(
            builds_from_config(
                br#"{"config":{"name":"chart","version":"1.0.0"}}"#,
                Some("application/vnd.cncf.helm.config.v1+json")
            )
            .unwrap_err(),
            r#"the manifest is an artifact of type "application/vnd.cncf.helm.config.v1+json", not a container image"#
        );
    }

    // ---- nested indexes ----

    /// Manifests by reference; every call is counted.
    #[derive(Default)]
    struct Manifests(HashMap<String, String>, Vec<String>);

    impl Registry for Manifests {
        fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
            self.1.push(image.to_string());
            self.0
                .get(image)
                .map(|body| body.clone().into_bytes())
                .ok_or_else(|| "Host error: manifest unknown".to_string())
        }
        fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
            Err(format!("no config for {image}"))
        }
    }

    fn short(n: u8) -> String {
        digest(n)[..19].to_string() + "…"
    }

    fn digest(n: u8) -> String {
        format!(
            "sha256:{}",
            format!("{n:x}")
                .repeat(64)
                .chars()
                .take(64)
                .collect::<String>()
        )
    }

    fn nested_entry(n: u8) -> String {
        format!(
            r#"{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"{}","size":1}}"#,
            digest(n)
        )
    }

    fn platform_entry(os: &str, arch: &str) -> String {
        format!(
            r#"{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":1,"platform":{{"os":"{os}","architecture":"{arch}"}}}}"#,
            digest(0xe)
        )
    }

    fn index_of(entries: &[String]) -> String {
        format!(
            r#"{{"schemaVersion":2,"manifests":[{}]}}"#,
            entries.join(",")
        )
    }

    fn resolve(registry: &mut Manifests, images: &[&str]) -> Vec<Result<Builds, String>> {
        let images: Vec<PodImage> = images
            .iter()
            .map(|&reference| PodImage {
                reference,
                volume: None,
            })
            .collect();
        resolve_images(&images, &Settings::default(), registry)
            .into_iter()
            .map(|image| {
                image.platforms.map(|platforms| Builds {
                    platforms,
                    left_out: image.left_out,
                    webassembly: image.webassembly,
                    platformless: image.platformless,
                })
            })
            .collect()
    }

    fn at(n: u8) -> String {
        format!("r.example.com/app@{}", digest(n))
    }

    #[test]
    fn nested_indexes_are_read_by_digest_once_each() {
        let mut registry = Manifests::default();
        registry.0.insert(
            "r.example.com/app:1".into(),
            index_of(&[
                platform_entry("linux", "amd64"),
                nested_entry(1),
                nested_entry(2),
            ]),
        );
        registry
            .0
            .insert("r.example.com/app:2".into(), index_of(&[nested_entry(2)]));
        registry.0.insert(
            at(1),
            index_of(&[platform_entry("linux", "arm64"), nested_entry(2)]),
        );
        registry
            .0
            .insert(at(2), index_of(&[platform_entry("wasip1", "wasm")]));
        let found = resolve(
            &mut registry,
            &["r.example.com/app:1", "r.example.com/app:2"],
        );
        let one = found[0].as_ref().unwrap();
        let names: Vec<String> = one.platforms.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["linux/amd64", "linux/arm64"]);
        assert!(one.webassembly);
        assert_eq!(
            found[1],
            Ok(Builds {
                webassembly: true,
                ..Builds::default()
            })
        );
        // Index 2 is listed three times: fetched once.
        assert_eq!(
            registry.1,
            [
                "r.example.com/app:1".to_string(),
                at(1),
                at(2),
                "r.example.com/app:2".into()
            ]
        );
    }

    #[test]
    fn an_index_listed_many_times_is_read_once() {
        // app:fan lists index 1 forty times, which lists index 2 forty times, which has two
        // attestations: read once each, 2 entries (walked each time: 40 * 40 * 2 = 3200).
        let mut registry = Manifests::default();
        registry.0.insert(
            "r.example.com/app:fan".into(),
            index_of(&vec![nested_entry(1); 40]),
        );
        registry
            .0
            .insert(at(1), index_of(&vec![nested_entry(2); 40]));
        registry.0.insert(
            at(2),
            index_of(&[
                platform_entry("unknown", "unknown"),
                platform_entry("unknown", "unknown"),
            ]),
        );
        assert_eq!(
            resolve(&mut registry, &["r.example.com/app:fan"]),
            [Err("the image index has no runnable entry (its 2 entries are attestations or of unknown platform)".to_string())]
        );
        assert_eq!(
            registry.1,
            ["r.example.com/app:fan".to_string(), at(1), at(2)]
        );
    }

    #[test]
    fn nesting_deeper_than_the_limit_or_in_a_cycle_fails_the_lookup() {
        let mut registry = Manifests::default();
        // app:deep -> 1 -> 2 -> 3 (depth 4): 3 is not looked up.
        registry.0.insert(
            "r.example.com/app:deep".into(),
            index_of(&[nested_entry(1)]),
        );
        registry.0.insert(at(1), index_of(&[nested_entry(2)]));
        registry.0.insert(
            at(2),
            index_of(&[platform_entry("linux", "amd64"), nested_entry(3)]),
        );
        // app:ok -> 2's sibling 4 -> 5: depth 3.
        registry
            .0
            .insert("r.example.com/app:ok".into(), index_of(&[nested_entry(4)]));
        registry.0.insert(at(4), index_of(&[nested_entry(5)]));
        registry
            .0
            .insert(at(5), index_of(&[platform_entry("linux", "s390x")]));
        // app:cycle -> 6 -> 7 -> 6 (a registry that does not check digests).
        registry.0.insert(
            "r.example.com/app:cycle".into(),
            index_of(&[nested_entry(6)]),
        );
        registry.0.insert(at(6), index_of(&[nested_entry(7)]));
        registry.0.insert(at(7), index_of(&[nested_entry(6)]));
        // An image named by its digest, listed again below itself.
        registry.0.insert(at(8), index_of(&[nested_entry(8)]));
        let found = resolve(
            &mut registry,
            &[
                "r.example.com/app:deep",
                "r.example.com/app:ok",
                "r.example.com/app:cycle",
                &at(8),
            ],
        );
        assert_eq!(
            found[0],
            Err(format!(
                "the image index nests indexes more than 3 deep: index {} is not followed",
                short(3)
            ))
        );
        assert_eq!(
            found[1].as_ref().unwrap().platforms[0].to_string(),
            "linux/s390x"
        );
        assert_eq!(
            found[2],
            Err(format!("the image index nests indexes in a cycle: index {} lists itself through the indexes it lists", short(6)))
        );
        assert_eq!(
            found[3],
            Err(format!("the image index nests indexes in a cycle: index {} lists itself through the indexes it lists", short(8)))
        );
        assert!(!registry.1.contains(&at(3)));
        assert_eq!(registry.1.iter().filter(|call| **call == at(6)).count(), 1);
    }

    #[test]
    fn a_nested_index_that_fails_or_is_no_index_fails_the_lookup() {
        let mut registry = Manifests::default();
        registry.0.insert(
            "r.example.com/app:missing".into(),
            index_of(&[platform_entry("linux", "amd64"), nested_entry(1)]),
        );
        registry.0.insert(
            "r.example.com/app:image".into(),
            index_of(&[nested_entry(2)]),
        );
        registry.0.insert(
            at(2),
            r#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json"},"layers":[]}"#.into(),
        );
        registry.0.insert(
            "r.example.com/app:bad".into(),
            r#"{"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:../x"}]}"#.into(),
        );
        let found = resolve(
            &mut registry,
            &[
                "r.example.com/app:missing",
                "r.example.com/app:image",
                "r.example.com/app:bad",
            ],
        );
        assert_eq!(
            found[0],
            Err(format!("nested index {}: manifest unknown", short(1)))
        );
        assert_eq!(
            found[1],
            Err(format!(
                "the image index lists {} as an index, but it is an image manifest",
                short(2)
            ))
        );
        assert_eq!(
            found[2],
            Err("the image index lists an index whose digest is invalid: \"sha256:../x\" is not a valid digest (expected sha256:<64 hex digits>)".into())
        );
    }
}
