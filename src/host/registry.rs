//! Registry access: the two host-capability lookups the policy needs, behind a small trait so
//! that the decision core can be tested natively with fixtures.

use std::time::Duration;

use crate::host::within_budget;

/// The host's OCI capabilities. Each method returns the host's raw JSON answer, or the host's
/// error text.
pub trait Registry {
    /// `oci/v1/oci_manifest`: the manifest, index or Docker manifest list as the registry serves it.
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String>;
    /// `oci/v1/oci_manifest_config`: `{"manifest":..,"digest":..,"config":..}` of a single-platform
    /// image.
    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String>;
}

/// A registry that stops starting lookups once a time budget is spent, so that slow registries
/// turn into lookup failures (handled per `onLookupFailure`) before the host's evaluation time
/// limit rejects the whole request. A lookup already under way cannot be interrupted.
pub struct Budgeted<'a, C: Fn() -> Duration> {
    inner: &'a mut dyn Registry,
    budget: Duration,
    /// Time since the evaluation started.
    elapsed: C,
}

impl<'a, C: Fn() -> Duration> Budgeted<'a, C> {
    pub fn new(inner: &'a mut dyn Registry, budget: Duration, elapsed: C) -> Self {
        Budgeted {
            inner,
            budget,
            elapsed,
        }
    }

    fn check(&self) -> Result<(), String> {
        within_budget(self.budget, (self.elapsed)())
    }
}

impl<C: Fn() -> Duration> Registry for Budgeted<'_, C> {
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.check()?;
        self.inner.manifest(image)
    }

    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.check()?;
        self.inner.manifest_and_config(image)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Counting(u32);

    impl Registry for Counting {
        fn manifest(&mut self, _image: &str) -> Result<Vec<u8>, String> {
            self.0 += 1;
            Ok(b"{}".to_vec())
        }
        fn manifest_and_config(&mut self, _image: &str) -> Result<Vec<u8>, String> {
            self.0 += 1;
            Ok(b"{}".to_vec())
        }
    }

    #[test]
    fn lookups_stop_once_the_budget_is_spent() {
        let mut inner = Counting(0);
        let now = Cell::new(Duration::from_millis(0));
        let mut budgeted = Budgeted::new(&mut inner, Duration::from_millis(1500), || now.get());
        assert!(budgeted.manifest("a").is_ok());
        now.set(Duration::from_millis(1499));
        assert!(budgeted.manifest_and_config("a").is_ok());
        now.set(Duration::from_millis(1700));
        assert_eq!(
            budgeted.manifest("b").unwrap_err(),
            "not looked up: the lookup time budget (lookupBudgetMilliseconds: 1500) was spent after 1700 ms"
        );
        assert_eq!(inner.0, 2);
    }
}
