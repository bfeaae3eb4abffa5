//! Tolerations the Pod needs on the architectures it may run on (setting
//! `architectureTolerations`, e.g. the `kubernetes.io/arch=arm64:NoSchedule` taint of GKE's Arm
//! nodes).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::edit;
use crate::platform::Architectures;
use crate::settings::{same_toleration, Toleration};

/// Adds the tolerations of every architecture in `architectures` that the Pod does not have yet.
/// Returns whether anything was added.
pub fn add_for(
    spec: &mut Value,
    architectures: &Architectures,
    configured: &BTreeMap<String, Vec<Toleration>>,
) -> bool {
    let wanted: Vec<&Toleration> = architectures
        .iter()
        .filter_map(|arch| configured.get(arch))
        .flatten()
        .collect();
    if wanted.is_empty() {
        return false;
    }
    let Some(list) = edit::array_at(spec, &["tolerations"]) else {
        return false;
    };
    let mut present: Vec<Toleration> = list
        .iter()
        .filter_map(|t| serde_json::from_value::<Toleration>(t.clone()).ok())
        .collect();
    let mut changed = false;
    for toleration in wanted {
        if present.iter().any(|p| same_toleration(p, toleration)) {
            continue;
        }
        if let Ok(value) = serde_json::to_value(toleration) {
            list.push(value);
            present.push(toleration.clone());
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn adds_each_missing_toleration_once() {
        let configured: BTreeMap<String, Vec<Toleration>> = serde_json::from_value(json!({
            "arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
            "s390x": [{"key": "dedicated", "operator": "Exists"}],
            "amd64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]
        }))
        .unwrap();
        let mut spec = json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]});
        let archs: Architectures = ["amd64", "arm64", "s390x"].map(String::from).into();
        assert!(add_for(&mut spec, &archs, &configured));
        assert_eq!(
            spec,
            json!({"tolerations": [
                {"key": "dedicated", "operator": "Exists"},
                {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]})
        );
        assert!(!add_for(&mut spec, &archs, &configured));
    }
}
