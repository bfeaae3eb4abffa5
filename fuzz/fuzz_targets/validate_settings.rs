//! `validate_settings` with arbitrary bytes: always a well-formed answer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let response = image_arch_affinity::validate_settings_payload(data);
    let value: serde_json::Value = serde_json::from_slice(&response).expect("response is JSON");
    assert!(value["valid"].is_boolean(), "{value}");
    if value["valid"] == false {
        assert!(value["message"].is_string(), "{value}");
    }
});
