//! The host boundary: the raw calls to Kubewarden's host capabilities behind small traits
//! (`registry`: OCI manifests; `cluster`: Nodes and NodePools), each answering raw bytes or the
//! host's error text, the lookup time budget both share, and the sparse view of the admission
//! request (`sparse`). Nothing here knows what an answer means: `read` parses them.

pub mod cluster;
pub mod registry;
pub mod sparse;

use std::time::Duration;

/// Whether a host call may start `elapsed` into an evaluation whose lookups have `budget`; the
/// error says why not.
pub fn within_budget(budget: Duration, elapsed: Duration) -> Result<(), String> {
    if elapsed < budget {
        return Ok(());
    }
    Err(format!(
        "not looked up: the lookup time budget (lookupBudgetMilliseconds: {}) was spent after {} ms",
        budget.as_millis(),
        elapsed.as_millis()
    ))
}

/// The host's error text, without the waPC prefix and the host's callback wrapper (so that a
/// nested index's error reads like an image's).
pub fn host_error(error: String) -> String {
    let text = error.strip_prefix("Host error: ").unwrap_or(&error);
    text.strip_prefix("Callback evaluation failure: ")
        .unwrap_or(text)
        .to_string()
}
