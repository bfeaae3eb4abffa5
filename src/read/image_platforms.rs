//! What the policy learned about each image of the Pod (`ImagePlatforms`): its native
//! platforms, or that it is a platform-less artifact, or why it could not be known. `resolve`
//! finds it out; the decision reads it.

use crate::platform::{Architectures, Platform};

/// What the policy learned about one image of the Pod.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagePlatforms {
    /// The reference as the Pod spells it (for messages).
    pub image: String,
    /// The image volume that mounts it, when no container runs it (for messages).
    pub volume: Option<String>,
    pub found: Learned,
}

/// What one image turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Learned {
    /// Built for these native runnable platforms (its WebAssembly builds apart), with the values
    /// of the entries left out because no node reports them (`architecture "x y"`), and whether
    /// it has a WebAssembly build (an index entry or a config of a WebAssembly platform, or a
    /// WebAssembly artifact: `webassembly::is_artifact`).
    Built {
        platforms: Vec<Platform>,
        left_out: Vec<String>,
        webassembly: bool,
    },
    /// An artifact with no platform (`Builds::platformless`) that only image volumes mount, or
    /// an OLM bundle (manifests, run with a binary of the node's platform): no image that
    /// constrains where the Pod runs.
    Platformless,
    /// Why its platforms could not be known.
    Failed(String),
}

impl ImagePlatforms {
    /// Its native runnable platforms: none unless it was `Learned::Built`.
    pub fn platforms(&self) -> &[Platform] {
        match &self.found {
            Learned::Built { platforms, .. } => platforms,
            _ => &[],
        }
    }

    /// The architectures of its platforms that run on nodes of `os`.
    pub fn architectures_on(&self, os: &str) -> Architectures {
        self.platforms()
            .iter()
            .filter(|platform| platform.runs_on(os))
            .map(|platform| platform.architecture.clone())
            .collect()
    }

    /// The values of the entries left out because no node reports them.
    pub fn left_out(&self) -> &[String] {
        match &self.found {
            Learned::Built { left_out, .. } => left_out,
            _ => &[],
        }
    }

    /// Why its platforms could not be known, when they could not.
    pub fn failure(&self) -> Option<&str> {
        match &self.found {
            Learned::Failed(reason) => Some(reason),
            _ => None,
        }
    }

    /// Whether the image constrains no architecture in a Pod that runs (`webassembly_runtime`)
    /// or does not run under one of the RuntimeClasses of `wasmRuntimeClasses`: its only builds
    /// are WebAssembly ones, or it has one and the Pod's runtime runs it. (A platform-less
    /// artifact is no image the Pod runs at all: the decision leaves it out.)
    pub fn arch_free(&self, webassembly_runtime: bool) -> bool {
        match &self.found {
            Learned::Built {
                platforms,
                webassembly,
                ..
            } => *webassembly && (webassembly_runtime || platforms.is_empty()),
            _ => false,
        }
    }
}
