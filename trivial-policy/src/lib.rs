//! The cheapest policy the SDK allows: accepts every request without reading it. `make bench`
//! compares image-arch-affinity's evaluation time with this module's, on the same requests.

#[cfg(target_arch = "wasm32")]
mod guest {
    use kubewarden_policy_sdk::{accept_request, protocol_version_guest};
    use wapc_guest::{register_function, CallResult};

    #[no_mangle]
    pub extern "C" fn wapc_init() {
        register_function("validate", validate);
        register_function("validate_settings", validate_settings);
        register_function("protocol_version", protocol_version_guest);
    }

    fn validate(_payload: &[u8]) -> CallResult {
        accept_request()
    }

    fn validate_settings(_payload: &[u8]) -> CallResult {
        Ok(br#"{"valid":true}"#.to_vec())
    }
}
