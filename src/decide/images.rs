//! Steps 3 and 4 of docs/design.md, as decisions: which images looked up constrain the Pod
//! (`known_images`, `constraining`: failed lookups handled per `onLookupFailure`, WebAssembly
//! builds apart) and the architectures they all run on for an OS (`image_architectures`).

use std::ops::ControlFlow;

use crate::message::{self, Failure, Refusal};
use crate::platform::Architectures;
use crate::read::resolve::{ImagePlatforms, Learned};
use crate::settings::Settings;

use super::answer::{on_lookup_failure, Answer, Step};

/// Step 4: of the images looked up, those that constrain the Pod's architecture: all but the
/// WebAssembly ones that run on any node (only WebAssembly builds, or a WebAssembly build and a
/// Pod under one of `wasmRuntimeClasses`).
pub(super) fn constraining(
    known: Vec<&ImagePlatforms>,
    webassembly_runtime: bool,
) -> Vec<&ImagePlatforms> {
    known
        .into_iter()
        .filter(|image| !image.arch_free(webassembly_runtime))
        .collect()
}

/// Steps 3 and 4: the images whose platforms are known (platform-less artifacts left out),
/// and those whose lookup failed (as `message::named` names them), after the failures were
/// handled per `onLookupFailure` (warnings added to `warnings`), or the answer when they settle
/// it.
pub(super) fn known_images<'a>(
    resolved: &'a [ImagePlatforms],
    subject: &str,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Step<(Vec<&'a ImagePlatforms>, Vec<String>)> {
    // A platform-less artifact that only image volumes mount says nothing of where the Pod runs:
    // the Pod is decided as if it had no such volume.
    let (known, failed): (Vec<&ImagePlatforms>, Vec<&ImagePlatforms>) = resolved
        .iter()
        .filter(|image| image.found != Learned::Platformless)
        .partition(|image| image.failure().is_none());
    warnings.extend(
        known
            .iter()
            .filter(|image| !image.left_out().is_empty())
            .map(|image| message::left_out(image)),
    );
    if failed.is_empty() {
        return ControlFlow::Continue((known, Vec::new()));
    }
    let failures: Vec<(String, &str)> = failed
        .iter()
        .map(|image| {
            let cause = image.failure().unwrap_or_default();
            (message::labelled(image), cause)
        })
        .collect();
    on_lookup_failure(Failure::images(subject, &failures), settings, warnings)?;
    // No image left: unchanged, unless `fallbackArchitectures` stand in for them.
    if known.is_empty() && settings.fallback_architectures.is_empty() {
        return ControlFlow::Break(Answer::Unchanged(std::mem::take(warnings)));
    }
    ControlFlow::Continue((known, failed.into_iter().map(message::named).collect()))
}

/// The architectures on which every known image runs for `os`; the error is the rejection
/// message naming each image and what it has.
pub(super) fn image_architectures(
    known: &[&ImagePlatforms],
    os: &str,
    subject: &str,
) -> Result<Architectures, Refusal> {
    let per_image: Vec<(&ImagePlatforms, Architectures)> = known
        .iter()
        .map(|image| (*image, image.architectures_on(os)))
        .collect();
    let mut common: Option<Architectures> = None;
    for (_, architectures) in &per_image {
        common = Some(match common {
            None => architectures.clone(),
            Some(so_far) => so_far.intersection(architectures).cloned().collect(),
        });
    }
    let common = common.unwrap_or_default();
    if common.is_empty() {
        return Err(message::no_common_architecture(&per_image, os, subject));
    }
    Ok(common)
}
