//! The settings checked when the policy loads, by concern, in the order the operator reads
//! them: every error names the setting and the bad value, and says what to write instead.

use crate::image;
use crate::platform;
use crate::settings::names::{check_dns_subdomain, check_label_key, check_label_value};
use crate::settings::{OnLookupFailure, Settings, Toleration};

/// The longest a decision recorded on a Pod template lasts: a week.
const MAX_TEMPLATE_DECISION_SECONDS: u64 = 7 * 24 * 3600;

impl Settings {
    /// Checks every setting; the error names the setting and the bad value.
    pub fn validate(&self) -> Result<(), String> {
        self.check_cluster()?;
        self.check_images()?;
        self.check_preferences()?;
        self.check_fallback()?;
        self.check_tolerations()?;
        self.check_runtime()?;
        self.check_cluster_source()
    }

    /// `defaultOperatingSystem` and `schedulableArchitectures`: known names.
    fn check_cluster(&self) -> Result<(), String> {
        let os = self.default_operating_system.as_str();
        if !platform::KNOWN_OPERATING_SYSTEMS.contains(&os) {
            return Err(format!(
                "defaultOperatingSystem: unknown operating system {os:?}; use one of: {}",
                platform::KNOWN_OPERATING_SYSTEMS.join(", ")
            ));
        }
        for arch in &self.schedulable_architectures {
            platform::check_known_architecture("schedulableArchitectures", arch)?;
        }
        Ok(())
    }

    /// The lookups: `registryMirrors` (hosts, never a Docker Hub alias as a key) and
    /// `imagePlatforms` (patterns with known architectures).
    fn check_images(&self) -> Result<(), String> {
        for (registry, mirror) in &self.registry_mirrors {
            image::check_host(registry)
                .map_err(|e| format!("registryMirrors: key {registry:?}: {e}"))?;
            if image::DOCKER_HUB_ALIASES.contains(&registry.as_str()) {
                return Err(format!(
                    "registryMirrors: key {registry:?} is Docker Hub, which image references name docker.io \
                     (busybox is docker.io/library/busybox): this key would match no image; use \"docker.io\" instead"
                ));
            }
            check_mirror(mirror).map_err(|e| format!("registryMirrors[{registry:?}]: {e}"))?;
        }
        for (index, entry) in self.image_platforms.iter().enumerate() {
            image::check_pattern(&entry.image)
                .map_err(|e| format!("imagePlatforms[{index}].image: {e}"))?;
            if entry.architectures.is_empty() {
                return Err(format!(
                    "imagePlatforms[{index}].architectures: list the architectures that images matching {:?} run on",
                    entry.image
                ));
            }
            for arch in &entry.architectures {
                platform::check_known_architecture(
                    &format!("imagePlatforms[{index}].architectures"),
                    arch,
                )?;
            }
            check_node_operating_systems(
                &format!("imagePlatforms[{index}].operatingSystems"),
                &entry.operating_systems,
            )?;
        }
        Ok(())
    }

    /// Where the Pod is preferred to run: `preferredArchitecture(s)` with their weights.
    fn check_preferences(&self) -> Result<(), String> {
        if let Some(preferred) = &self.preferred_architecture {
            platform::check_known_architecture("preferredArchitecture", preferred)?;
            if !self.schedulable_architectures.is_empty()
                && !self.schedulable_architectures.contains(preferred)
            {
                return Err(format!(
                    "preferredArchitecture: {preferred:?} is not one of schedulableArchitectures ({})",
                    self.schedulable_architectures.join(", ")
                ));
            }
        }
        if !(1..=100).contains(&self.preferred_architecture_weight) {
            return Err(format!(
                "preferredArchitectureWeight: {} is outside 1..100 (the weight of a preferred node affinity term)",
                self.preferred_architecture_weight
            ));
        }
        if let (Some(preferred), false) = (
            &self.preferred_architecture,
            self.preferred_architectures.is_empty(),
        ) {
            return Err(format!(
                "preferredArchitecture and preferredArchitectures exclude each other: preferredArchitecture: {preferred} \
                 with preferredArchitectureWeight: {weight} is preferredArchitectures: [{{architecture: {preferred}, weight: {weight}}}]",
                weight = self.preferred_architecture_weight
            ));
        }
        for (index, entry) in self.preferred_architectures.iter().enumerate() {
            let field = format!("preferredArchitectures[{index}]");
            self.check_architecture(&format!("{field}.architecture"), &entry.architecture)?;
            if !(1..=100).contains(&entry.weight) {
                return Err(format!(
                    "{field}.weight: {} is outside 1..100 (the weight of a preferred node affinity term)",
                    entry.weight
                ));
            }
        }
        let preferred: Vec<&String> = self
            .preferred_architectures
            .iter()
            .map(|entry| &entry.architecture)
            .collect();
        no_duplicates("preferredArchitectures", &preferred)
    }

    /// `fallbackArchitectures`: known architectures, under `onLookupFailure: ignoreImage` only.
    fn check_fallback(&self) -> Result<(), String> {
        for (index, arch) in self.fallback_architectures.iter().enumerate() {
            self.check_architecture(&format!("fallbackArchitectures[{index}]"), arch)?;
        }
        no_duplicates(
            "fallbackArchitectures",
            &self.fallback_architectures.iter().collect::<Vec<_>>(),
        )?;
        if !self.fallback_architectures.is_empty()
            && self.on_lookup_failure != OnLookupFailure::IgnoreImage
        {
            return Err(
                "fallbackArchitectures applies under onLookupFailure: ignoreImage only (with accept a Pod whose \
                 lookups fail is left unpinned, with reject it is rejected)"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// `architectureTolerations`: known architectures, tolerations the API server accepts.
    fn check_tolerations(&self) -> Result<(), String> {
        for (arch, tolerations) in &self.architecture_tolerations {
            platform::check_known_architecture("architectureTolerations", arch)?;
            for (index, toleration) in tolerations.iter().enumerate() {
                toleration
                    .validate()
                    .map_err(|e| format!("architectureTolerations[{arch:?}][{index}]: {e}"))?;
            }
        }
        Ok(())
    }

    /// What bounds an evaluation and names the Pod's runtime and labels:
    /// `lookupBudgetMilliseconds`, `templateDecisionSeconds`, `wasmRuntimeClasses`,
    /// `matchNodeLabels`.
    fn check_runtime(&self) -> Result<(), String> {
        if !(1..=30_000).contains(&self.lookup_budget_milliseconds) {
            return Err(format!(
                "lookupBudgetMilliseconds: {} is outside 1..30000 (keep it below the policy's timeoutEvalSeconds, at most 30 s)",
                self.lookup_budget_milliseconds
            ));
        }
        if self.template_decision_seconds > MAX_TEMPLATE_DECISION_SECONDS {
            return Err(format!(
                "templateDecisionSeconds: {} is outside 0..604800 (a week at most; 0: Pods never reuse their template's decision)",
                self.template_decision_seconds
            ));
        }
        for (index, name) in self.wasm_runtime_classes.iter().enumerate() {
            check_dns_subdomain(name)
                .map_err(|e| format!("wasmRuntimeClasses[{index}]: {e} (a RuntimeClass name)"))?;
        }
        no_duplicates(
            "wasmRuntimeClasses",
            &self.wasm_runtime_classes.iter().collect::<Vec<_>>(),
        )?;
        for key in &self.match_node_labels {
            check_label_key(key).map_err(|e| format!("matchNodeLabels: {e}"))?;
        }
        Ok(())
    }

    /// Where the cluster's platforms come from: configured (`schedulableArchitectures`,
    /// `clusterOperatingSystems`) or read from the Nodes (`readNodes`, with
    /// `autoscaledArchitectures`), never both.
    fn check_cluster_source(&self) -> Result<(), String> {
        if self.read_nodes && !self.schedulable_architectures.is_empty() {
            return Err(
                "schedulableArchitectures and readNodes: true exclude each other: readNodes reads the architectures \
                 from the cluster's Nodes (list node pools that autoscalers create from zero nodes in autoscaledArchitectures)"
                    .to_string(),
            );
        }
        self.check_cluster_operating_systems()?;
        if !self.read_nodes && !self.autoscaled_architectures.is_empty() {
            return Err(
                "autoscaledArchitectures is read only with readNodes: true (without it, list every architecture \
                 of the cluster in schedulableArchitectures)"
                    .to_string(),
            );
        }
        for (index, pools) in self.autoscaled_architectures.iter().enumerate() {
            let os = &pools.os;
            if !platform::KNOWN_OPERATING_SYSTEMS.contains(&os.as_str()) {
                return Err(format!(
                    "autoscaledArchitectures[{index}].os: {os:?} is not an operating system (a node `kubernetes.io/os` value); use one of: {}",
                    platform::KNOWN_OPERATING_SYSTEMS.join(", ")
                ));
            }
            if pools.architectures.is_empty() {
                return Err(format!(
                    "autoscaledArchitectures[{index}].architectures: list the architectures of the {os} node pools that autoscalers create from zero nodes"
                ));
            }
            for arch in &pools.architectures {
                platform::check_known_architecture(
                    &format!("autoscaledArchitectures[{index}].architectures"),
                    arch,
                )?;
            }
        }
        Ok(())
    }

    /// `clusterOperatingSystems`: node OSes, each once, with `defaultOperatingSystem` among them,
    /// and only without `readNodes` (which reads them from the Nodes).
    fn check_cluster_operating_systems(&self) -> Result<(), String> {
        let listed = &self.cluster_operating_systems;
        if listed.is_empty() {
            return Ok(());
        }
        if self.read_nodes {
            return Err(
                "clusterOperatingSystems and readNodes: true exclude each other: readNodes reads the operating systems \
                 from the cluster's Nodes (and autoscaledArchitectures)"
                    .to_string(),
            );
        }
        check_node_operating_systems("clusterOperatingSystems", listed)?;
        let default = &self.default_operating_system;
        if !listed.contains(default) {
            return Err(format!(
                "clusterOperatingSystems: {} has no Node of defaultOperatingSystem ({default}), where the Pods that state no OS run; add it, or change defaultOperatingSystem",
                listed.join(", ")
            ));
        }
        Ok(())
    }

    /// A known architecture, within `schedulableArchitectures` when they are set.
    fn check_architecture(&self, setting: &str, arch: &str) -> Result<(), String> {
        platform::check_known_architecture(setting, arch)?;
        if !self.schedulable_architectures.is_empty()
            && !self.schedulable_architectures.iter().any(|a| a == arch)
        {
            return Err(format!(
                "{setting}: {arch:?} is not one of schedulableArchitectures ({})",
                self.schedulable_architectures.join(", ")
            ));
        }
        Ok(())
    }
}

/// The error names the setting and the value listed twice.
/// Node OSes (`kubernetes.io/os` values a node carries), each once.
fn check_node_operating_systems(setting: &str, listed: &[String]) -> Result<(), String> {
    for os in listed {
        if !platform::NODE_OPERATING_SYSTEMS.contains(&os.as_str()) {
            return Err(format!(
                "{setting}: {os:?} is no node operating system; use a node `kubernetes.io/os` value: {}",
                platform::NODE_OPERATING_SYSTEMS.join(", ")
            ));
        }
    }
    no_duplicates(setting, &listed.iter().collect::<Vec<_>>())
}

fn no_duplicates(setting: &str, values: &[&String]) -> Result<(), String> {
    for (index, value) in values.iter().enumerate() {
        if values[..index].contains(value) {
            return Err(format!("{setting}: {value:?} is listed twice"));
        }
    }
    Ok(())
}

fn check_mirror(mirror: &str) -> Result<(), String> {
    let (host, prefix) = match mirror.split_once('/') {
        Some((host, prefix)) => (host, Some(prefix)),
        None => (mirror, None),
    };
    image::check_host(host)?;
    if let Some(prefix) = prefix {
        let ok = prefix.trim_end_matches('/').split('/').all(|c| {
            !c.is_empty()
                && c.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
        });
        if !ok {
            return Err(format!(
                "{mirror:?} is not a mirror (host[:port] with an optional lowercase path prefix)"
            ));
        }
    }
    Ok(())
}

impl Toleration {
    fn validate(&self) -> Result<(), String> {
        let key = self.key.as_deref().unwrap_or("");
        if !key.is_empty() {
            check_label_key(key).map_err(|e| format!("key: {e}"))?;
        }
        let operator = self.operator.as_deref().unwrap_or("Equal");
        match operator {
            "Equal" => {
                if key.is_empty() {
                    return Err(
                        "operator Equal needs a key (only Exists may leave the key empty)".into(),
                    );
                }
                if let Some(value) = &self.value {
                    check_label_value(value).map_err(|e| format!("value: {e}"))?;
                }
            }
            "Exists" => {
                if self.value.as_deref().is_some_and(|v| !v.is_empty()) {
                    return Err("operator Exists takes no value".into());
                }
            }
            other => return Err(format!("operator {other:?} is not Equal or Exists")),
        }
        let effect = self.effect.as_deref().unwrap_or("");
        if !["", "NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
            return Err(format!(
                "effect {effect:?} is not NoSchedule, PreferNoSchedule or NoExecute"
            ));
        }
        if self.toleration_seconds.is_some() && effect != "NoExecute" {
            return Err("tolerationSeconds needs effect NoExecute".into());
        }
        Ok(())
    }
}
