//! The policy's settings, as the cluster operator writes them in the ClusterAdmissionPolicy (the
//! wire struct, parsed by `from_json`), and the views of them the decision reads. Their
//! validation when the policy loads is `validate`'s, by concern; Kubernetes' name rules are
//! `names`'.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::platform::Architectures;

pub mod names;
mod validate;

#[derive(Debug, Clone, PartialEq, Hash, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The OS whose platforms count when the Pod does not choose one.
    pub default_operating_system: String,
    /// The architectures of the cluster's nodes; empty means unknown (every architecture counts).
    pub schedulable_architectures: Vec<String>,
    /// The operating systems of the cluster's nodes (`kubernetes.io/os` values); empty means the
    /// Pods' own only. When it lists an OS other than a Pod's, the Pod is pinned to its OS too.
    pub cluster_operating_systems: Vec<String>,
    pub on_no_common_architecture: OnNoCommonArchitecture,
    pub on_lookup_failure: OnLookupFailure,
    /// Registry host -> mirror host (with an optional path prefix) used for the lookups.
    pub registry_mirrors: BTreeMap<String, String>,
    /// Images whose architectures are configured instead of looked up.
    pub image_platforms: Vec<ImagePlatforms>,
    pub preferred_architecture: Option<String>,
    pub preferred_architecture_weight: i64,
    /// Architectures to prefer, each with its weight: a preferred node affinity term for each
    /// the Pod may finally run on (`preferredArchitecture` with its weight is the one-entry form).
    pub preferred_architectures: Vec<WeightedArchitecture>,
    /// Where to pin a Pod none of whose images could be looked up (under `onLookupFailure:
    /// ignoreImage`); empty: such a Pod is left unpinned.
    pub fallback_architectures: Vec<String>,
    /// Architecture -> tolerations that a Pod which may run there needs.
    pub architecture_tolerations: BTreeMap<String, Vec<Toleration>>,
    /// Pod label keys copied into every required node affinity term as `key In [value]`.
    pub match_node_labels: Vec<String>,
    /// What to do with the Pod templates of workloads: only accept or reject, or pin them too.
    pub workload_templates: TemplateMode,
    /// The same for DaemonSets alone (`mutate` here, or in `workloadTemplates`, pins them).
    pub daemon_set_templates: TemplateMode,
    /// No lookup starts after this much time in one evaluation: the images left are lookup
    /// failures. Keep it below the policy's `timeoutEvalSeconds`.
    pub lookup_budget_milliseconds: u64,
    /// Read the architectures (per OS) of the cluster's Nodes through the host's Kubernetes
    /// capabilities instead of `schedulableArchitectures`, and check Pods bound to a node
    /// (`spec.nodeName`, DaemonSet Pods) against their node (`nodes`).
    pub read_nodes: bool,
    /// The node pools that autoscalers create from zero nodes (OS and architectures): with
    /// `readNodes`, they count as present even when no Node of them exists.
    pub autoscaled_architectures: Vec<AutoscaledPools>,
    /// For a Windows Pod, pin `node.kubernetes.io/windows-build` to the OS builds (`os.version`)
    /// all its images share, and reject it when they share none.
    pub pin_windows_build: bool,
    /// RuntimeClasses whose handler is a WebAssembly shim: a Pod under one of them runs the
    /// WebAssembly build of an image that has one, on any architecture (`webassembly`).
    pub wasm_runtime_classes: Vec<String>,
    /// How long (seconds) the Pods created from a Pod template the policy decided under
    /// `mutate` reuse its decision, recorded on the template, without a lookup; 0: never.
    pub template_decision_seconds: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default_operating_system: "linux".to_string(),
            schedulable_architectures: Vec::new(),
            cluster_operating_systems: Vec::new(),
            on_no_common_architecture: OnNoCommonArchitecture::Reject,
            on_lookup_failure: OnLookupFailure::IgnoreImage,
            registry_mirrors: BTreeMap::new(),
            image_platforms: Vec::new(),
            preferred_architecture: None,
            preferred_architecture_weight: DEFAULT_PREFERRED_WEIGHT,
            preferred_architectures: Vec::new(),
            fallback_architectures: Vec::new(),
            architecture_tolerations: BTreeMap::new(),
            match_node_labels: Vec::new(),
            workload_templates: TemplateMode::Validate,
            daemon_set_templates: TemplateMode::Validate,
            lookup_budget_milliseconds: DEFAULT_LOOKUP_BUDGET_MILLISECONDS,
            read_nodes: false,
            autoscaled_architectures: Vec::new(),
            pin_windows_build: false,
            wasm_runtime_classes: Vec::new(),
            template_decision_seconds: DEFAULT_TEMPLATE_DECISION_SECONDS,
        }
    }
}

pub const DEFAULT_PREFERRED_WEIGHT: i64 = 50;
/// Three quarters of policy-server's default evaluation time limit (2 s).
pub const DEFAULT_LOOKUP_BUDGET_MILLISECONDS: u64 = 1500;
/// Never, unless the operator says: a decision reused is not looked up again, and a tag pushed
/// again with other platforms reaches the Pods only after it.
pub const DEFAULT_TEMPLATE_DECISION_SECONDS: u64 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum OnNoCommonArchitecture {
    #[default]
    Reject,
    Accept,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum OnLookupFailure {
    #[default]
    IgnoreImage,
    Accept,
    Reject,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum TemplateMode {
    /// Accept or reject the workload, never change it (GitOps tools see no drift).
    #[default]
    Validate,
    /// Write the constraints into the Pod template, so Pods arrive already pinned.
    Mutate,
}

/// An architecture to prefer, and the weight (1..100) of its preferred node affinity term.
#[derive(Debug, Clone, PartialEq, Hash, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightedArchitecture {
    pub architecture: String,
    pub weight: i64,
}

/// Node pools of one OS that autoscalers create from zero nodes.
#[derive(Debug, Clone, PartialEq, Hash, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoscaledPools {
    /// A `kubernetes.io/os` value.
    pub os: String,
    /// Their `kubernetes.io/arch` values.
    pub architectures: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Hash, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImagePlatforms {
    /// Image reference pattern; `*` matches any characters.
    pub image: String,
    pub architectures: Vec<String>,
    /// The `kubernetes.io/os` values the images are built for; none: `defaultOperatingSystem`.
    #[serde(default)]
    pub operating_systems: Vec<String>,
}

/// A Kubernetes toleration, as written in the settings and added to Pods.
#[derive(Debug, Clone, PartialEq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

impl Settings {
    /// Parses settings JSON; the error is a message for the operator.
    pub fn from_json(payload: &[u8]) -> Result<Settings, String> {
        serde_json::from_slice(payload).map_err(|e| format!("invalid settings: {e}"))
    }

    /// Whether the cluster has nodes of an OS other than `os`, as `clusterOperatingSystems` says
    /// (without `readNodes`).
    pub fn other_operating_system(&self, os: &str) -> bool {
        self.cluster_operating_systems
            .iter()
            .any(|listed| listed != os)
    }

    /// The architectures of `os` node pools that autoscalers create from zero nodes.
    pub fn autoscaled(&self, os: &str) -> Architectures {
        self.autoscaled_architectures
            .iter()
            .filter(|pools| pools.os == os)
            .flat_map(|pools| pools.architectures.iter().cloned())
            .collect()
    }

    /// The schedulable architectures as a set (empty: unknown).
    pub fn schedulable(&self) -> Architectures {
        self.schedulable_architectures.iter().cloned().collect()
    }

    /// The architectures to prefer and their weights, in order: `preferredArchitectures`, or
    /// `preferredArchitecture` with `preferredArchitectureWeight`.
    pub fn preferences(&self) -> Vec<(&str, i64)> {
        match &self.preferred_architecture {
            Some(preferred) => vec![(preferred.as_str(), self.preferred_architecture_weight)],
            None => self
                .preferred_architectures
                .iter()
                .map(|entry| (entry.architecture.as_str(), entry.weight))
                .collect(),
        }
    }
}

/// Whether two tolerations are the same, with Kubernetes' defaults filled in.
pub fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    fn norm(t: &Toleration) -> (&str, &str, &str, &str, Option<i64>) {
        (
            t.key.as_deref().unwrap_or(""),
            t.operator.as_deref().unwrap_or("Equal"),
            t.value.as_deref().unwrap_or(""),
            t.effect.as_deref().unwrap_or(""),
            t.toleration_seconds,
        )
    }
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests;
