//! Dev-only registry tooling for the policy's e2e tests (what kwctl cannot do by itself):
//!
//! - [`fixtures`]: the deterministic fixture images; binary `seed-registry` pushes them to a
//!   registry and writes their digests for bats (`e2e/registry.bash`).
//! - [`faults::FaultRegistry`]: a fault-injecting registry (status codes, bad manifests, huge
//!   indexes, slow answers, dropped connections) in front of a real one; binary
//!   `fault-registry` (`e2e/faults.bats`).

pub mod faults;
pub mod fixtures;

pub use faults::{FaultRegistry, FaultRequest};

use sha2::{Digest, Sha256};

/// `sha256:<hex>` of `data`, as registries name blobs and manifests.
pub fn sha256_digest(data: &[u8]) -> String {
    let hash = Sha256::digest(data);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}
