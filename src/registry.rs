//! Registry access: the two host-capability lookups the policy needs, behind a small trait so
//! that the decision core can be tested natively with fixtures.

/// The host's OCI capabilities. Each method returns the host's raw JSON answer, or the host's
/// error text.
pub trait Registry {
    /// `oci/v1/oci_manifest`: the manifest, index or Docker manifest list as the registry serves it.
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String>;
    /// `oci/v1/oci_manifest_config`: `{"manifest":..,"digest":..,"config":..}` of a single-platform
    /// image.
    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String>;
}

/// The Kubewarden host, reached through waPC host calls (binding `kubewarden`, namespace `oci`).
///
/// These are the same calls the SDK's `host_capabilities::oci::get_manifest*` make. The SDK parses
/// the answers into oci-spec types, which reject index entries whose platform has no `os` and
/// cost a full parse of every descriptor; the policy reads only the few fields it needs.
#[cfg(target_arch = "wasm32")]
pub struct HostRegistry;

#[cfg(target_arch = "wasm32")]
impl HostRegistry {
    fn call(operation: &str, image: &str) -> Result<Vec<u8>, String> {
        let payload = serde_json::to_vec(image).map_err(|e| e.to_string())?;
        wapc_guest::host_call("kubewarden", "oci", operation, &payload).map_err(|e| e.to_string())
    }
}

#[cfg(target_arch = "wasm32")]
impl Registry for HostRegistry {
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
        Self::call("v1/oci_manifest", image)
    }

    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
        Self::call("v1/oci_manifest_config", image)
    }
}
