//! Dev-only stand-in for the Kubewarden host, for this policy's tests and benchmarks.
//!
//! - [`host::Host`]: loads a policy with wapc + wasmtime-provider (WASI on), calls
//!   `validate_settings` / `validate`, answers `kubewarden/oci/*` host calls, counts them, and
//!   builds the AdmissionResponse (and JSON patch) the way policy-evaluator / `kwctl run` does.
//! - [`source::ManifestSource`]: where registry answers come from: [`source::RegistrySource`]
//!   (a real registry through oci-client) or [`source::InMemorySource`] (canned answers).
//! - [`fixtures`]: the deterministic e2e fixture images `seed-registry` pushes.
//! - [`faults::FaultRegistry`]: a fault-injecting registry (status codes, bad manifests, huge
//!   indexes, slow answers) in front of a real one; binary `fault-registry`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use test_host::{fixtures, Host};
//! let wasm = std::fs::read("policy.wasm").unwrap();
//! let host = Host::new(&wasm, Arc::new(fixtures::in_memory_source("127.0.0.1:5000"))).unwrap();
//! let request = serde_json::json!({"uid": "1", "object": {}});
//! let eval = host.evaluate(&request, &serde_json::json!({})).unwrap();
//! println!("{} {:?}", eval.response_line(), eval.host_calls.counts());
//! ```

pub mod faults;
pub mod fixtures;
pub mod host;
pub mod local_registry;
pub mod source;

pub use faults::{FaultRegistry, FaultRequest};
pub use host::{
    AdmissionResponse, Evaluation, Host, HostCall, HostCalls, RunOutcome, SettingsValidation,
};
pub use source::{
    InMemorySource, ManifestFidelity, ManifestSource, Operation, RegistrySource, Sources,
};
