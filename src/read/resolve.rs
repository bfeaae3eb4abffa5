//! Resolving images to the platforms they are built for: the `imagePlatforms` setting first,
//! else the registry (through the host, after registry mirrors), one lookup per distinct
//! reference, reading index entries (and the indexes an index lists, by digest) or, for a
//! single-platform image, its config. What an answer means is `manifest`'s; WebAssembly builds
//! are kept apart from the native platforms (`webassembly`): they run on any architecture.

use std::collections::BTreeMap;

use crate::host::host_error;
use crate::host::registry::Registry;
use crate::image::{self, ImageRef};
use crate::platform::Platform;
use crate::read::manifest::{
    builds_from_config, config_names_no_platform, finish_index, is_operator_bundle, parse_manifest,
    Builds, Found, Listed, Manifest,
};
use crate::read::pod::PodImage;
use crate::settings::Settings;

pub use crate::read::image_platforms::{ImagePlatforms, Learned};

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
    let mut lookups = Lookups {
        registry,
        manifests: Vec::new(),
        by_lookup: BTreeMap::new(),
    };
    images
        .iter()
        .map(|image| {
            let found = match lookups.found(image, settings) {
                Ok(builds) if builds.platformless => Learned::Platformless,
                Ok(builds) => Learned::Built {
                    platforms: builds.platforms,
                    left_out: builds.left_out,
                    webassembly: builds.webassembly,
                },
                Err(reason) => Learned::Failed(reason),
            };
            ImagePlatforms {
                image: image.reference.to_string(),
                volume: image.volume.map(str::to_string),
                found,
            }
        })
        .collect()
}

/// The platforms configured for an image by `imagePlatforms` (first matching entry), if any:
/// each of its architectures on each of its `operatingSystems` (none: `defaultOperatingSystem`).
/// `written` is the reference as the Pod spells it, `canonical` its normalized form.
pub fn configured_platforms(
    settings: &Settings,
    written: &str,
    canonical: &str,
) -> Option<Vec<Platform>> {
    let entry = settings.image_platforms.iter().find(|entry| {
        image::glob_match(&entry.image, canonical) || image::glob_match(&entry.image, written)
    })?;
    let default = std::slice::from_ref(&settings.default_operating_system);
    let operating_systems = match entry.operating_systems.as_slice() {
        [] => default,
        listed => listed,
    };
    let mut platforms: Vec<Platform> = operating_systems
        .iter()
        .flat_map(|os| {
            entry
                .architectures
                .iter()
                .map(move |arch| Platform::of(os, arch))
        })
        .collect();
    platforms.sort();
    platforms.dedup();
    Some(platforms)
}

/// The registry lookups of one evaluation. Every `oci/v1/oci_manifest` answer is kept (parsed),
/// by the reference it was asked for, so that an index listed by several images, or by an image
/// and a Pod, is fetched once.
struct Lookups<'r> {
    registry: &'r mut dyn Registry,
    manifests: Vec<(String, Result<Manifest, String>)>,
    /// What each image looked up is built for, by the reference it was looked up as.
    by_lookup: BTreeMap<String, Found>,
}

impl Lookups<'_> {
    /// What `image` is built for: by `imagePlatforms`, else by one lookup per canonical
    /// reference (after the registry's mirror).
    fn found(&mut self, image: &PodImage, settings: &Settings) -> Found {
        let written = image.reference;
        let reference = ImageRef::parse(written)
            .map_err(|reason| format!("invalid image reference: {reason}"))?;
        let canonical = reference.to_string();
        if let Some(platforms) = configured_platforms(settings, written, &canonical) {
            return Ok(Builds {
                platforms,
                ..Builds::default()
            });
        }
        let lookup = match settings.registry_mirrors.get(&reference.registry) {
            Some(mirror) => reference.mirrored(mirror),
            None => reference,
        };
        let name = lookup.to_string();
        if let Some(found) = self.by_lookup.get(&name) {
            return found.clone();
        }
        let found = self
            .image(&name, &lookup, image.volume.is_none())
            .map_err(|reason| match name == written {
                true => reason,
                // The name first: error chains end with their root cause, which messages keep
                // when they are cut.
                false => format!("as {name}: {reason}"),
            });
        self.by_lookup.insert(name, found.clone());
        found
    }

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
                // An Operator Lifecycle Manager bundle runs anywhere: it constrains nothing.
                if is_operator_bundle(&raw) {
                    return Ok(Builds {
                        platformless: true,
                        ..Builds::default()
                    });
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
            .map(|image| match image.found {
                Learned::Built {
                    platforms,
                    left_out,
                    webassembly,
                } => Ok(Builds {
                    platforms,
                    left_out,
                    webassembly,
                    platformless: false,
                }),
                Learned::Platformless => Ok(Builds {
                    platformless: true,
                    ..Builds::default()
                }),
                Learned::Failed(reason) => Err(reason),
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
