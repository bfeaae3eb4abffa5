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
mod tests;
