//! WebAssembly workloads: the images a container runtime's WebAssembly shim runs (runwasi's
//! shims, SpinKube's containerd-shim-spin) on a node of any CPU architecture, and the Pods that
//! run under such a shim (setting `wasmRuntimeClasses`).
//!
//! An image is a WebAssembly build when an index entry or its config names a WebAssembly
//! platform (`platform::WEBASSEMBLY_OPERATING_SYSTEMS` with architecture `wasm`), or when its
//! manifest is a WebAssembly artifact: its artifact type (the manifest's `artifactType`, or its
//! config's media type, as the OCI image spec defines an artifact's type) is Spin's application
//! config or in the `application/vnd.wasm.` tree (`application/vnd.wasm.config.v0+json` of the
//! CNCF Wasm OCI artifact layout, `application/vnd.wasm.config.v1+json` of wasm-to-oci). Layer
//! media types are not read: a manifest with a container image config is an image whatever its
//! layers hold, and its config names its platform.

use crate::settings::Settings;

/// The config media type of a Spin application (`spin registry push`), which SpinKube runs.
pub const SPIN_APPLICATION: &str = "application/vnd.fermyon.spin.application.v1+config";

/// The media type tree of WebAssembly content: configs (`application/vnd.wasm.config.v0+json`,
/// `...v1+json`) and layers (`application/vnd.wasm.content.layer.v1+wasm`).
pub const WASM_MEDIA_TYPES: &str = "application/vnd.wasm.";

/// Whether an artifact type (a manifest's `artifactType` or config media type) is a WebAssembly
/// application's.
pub fn is_artifact(media_type: &str) -> bool {
    media_type == SPIN_APPLICATION || media_type.starts_with(WASM_MEDIA_TYPES)
}

/// Whether a Pod (or Pod template) of RuntimeClass `runtime_class` runs under one of the
/// RuntimeClasses of `wasmRuntimeClasses`: its runtime runs the WebAssembly build of an image
/// that has one.
pub fn runtime(runtime_class: Option<&str>, settings: &Settings) -> bool {
    runtime_class.is_some_and(|name| settings.wasm_runtime_classes.iter().any(|c| c == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webassembly_artifact_types() {
        for media_type in [
            SPIN_APPLICATION,
            "application/vnd.wasm.config.v0+json",
            "application/vnd.wasm.config.v1+json",
            "application/vnd.wasm.content.layer.v1+wasm",
        ] {
            assert!(is_artifact(media_type), "{media_type}");
        }
        for media_type in [
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.cncf.helm.config.v1+json",
            "application/vnd.oci.empty.v1+json",
            "application/wasm",
            "application/vnd.fermyon.spin.application.v1+configx",
        ] {
            assert!(!is_artifact(media_type), "{media_type}");
        }
    }

    #[test]
    fn the_runtime_class_must_be_listed() {
        let settings = Settings {
            wasm_runtime_classes: vec!["wasmtime-spin-v2".into()],
            ..Settings::default()
        };
        assert!(runtime(Some("wasmtime-spin-v2"), &settings));
        assert!(!runtime(Some("runc"), &settings));
        assert!(!runtime(None, &settings));
        assert!(!runtime(Some("wasmtime-spin-v2"), &Settings::default()));
    }
}
