//! The cheapest policy the SDK allows: accepts every request without reading it. `make bench`
//! compares image-arch-affinity's evaluation time with this module's, on the same requests.
//!
//! It also traps on request, as a policy with a bug would, so that the conformance cases
//! (conformance/) hold the embedded host to what kwctl reports for a trap: with the settings
//! `{"trap":"validate_settings"}` in `validate_settings`, with `{"trap":"validate"}` in `validate`
//! (one comparison with the payload's end: the benchmark baseline costs the same).

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

    fn validate(payload: &[u8]) -> CallResult {
        // The host writes the settings last: `{"request":{..},"settings":{..}}`.
        if payload.ends_with(br#""settings":{"trap":"validate"}}"#) {
            panic!("trivial-policy: trap requested by the settings");
        }
        accept_request()
    }

    fn validate_settings(payload: &[u8]) -> CallResult {
        if payload == br#"{"trap":"validate_settings"}"# {
            panic!("trivial-policy: trap requested by the settings");
        }
        Ok(br#"{"valid":true}"#.to_vec())
    }
}
