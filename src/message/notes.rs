//! Where the architectures a decision counts come from, as refusals name them: the setting
//! `schedulableArchitectures`, the Nodes read (and which were not), the settings' pools and
//! Karpenter's NodePools.

use crate::platform::{self, Architectures, BETA_ARCH_LABEL};

/// `setting schedulableArchitectures: amd64, arm64`.
pub(crate) fn schedulable_note(architectures: &Architectures) -> String {
    format!(
        "setting schedulableArchitectures: {}",
        platform::join(architectures, ", ")
    )
}

/// The Nodes of `os` found (`found`'s architectures); `unread`: those of these architectures
/// were not read (`true`), or only those of these were (`false`).
pub(crate) fn nodes_note(
    os: &str,
    found: &Architectures,
    unread: Option<(bool, &Architectures)>,
) -> String {
    if !found.is_empty() {
        return format!(
            "setting readNodes: {os} Nodes found of {}",
            platform::join(found, ", ")
        );
    }
    match unread {
        Some((true, unread)) => {
            let unread = platform::join(unread, ", ");
            format!(
                "setting readNodes: no {os} Node found outside {unread}; those of {unread} were not read"
            )
        }
        Some((false, read)) => format!(
            "setting readNodes: no {os} Node found of {}; the others were not read",
            platform::join(read, ", ")
        ),
        None => format!("setting readNodes: no {os} Node found"),
    }
}

/// What a refusal says of the pools: `; autoscaledArchitectures: arm64; Karpenter NodePools
/// can create arm64, amd64` (empty when there are none), and the NodePools left out for the Pod.
pub(crate) fn pools_note(
    configured: &Architectures,
    node_pools: &Architectures,
    min_values_unmet: &Architectures,
    karpenter_ignores: Option<&str>,
    beta_label_excluded: &Architectures,
) -> String {
    let mut note = String::new();
    if !configured.is_empty() {
        note.push_str(&format!(
            "; autoscaledArchitectures: {}",
            platform::join(configured, ", ")
        ));
    }
    if !node_pools.is_empty() {
        note.push_str(&format!(
            "; Karpenter NodePools can create {}",
            platform::join(node_pools, ", ")
        ));
    }
    let unmet = platform::join(min_values_unmet, ", ");
    match karpenter_ignores {
        Some(reason) if !min_values_unmet.is_empty() => note.push_str(&format!(
            "; Karpenter NodePools can create {unmet} nodes, but none for this Pod: Karpenter's provisioner ignores a Pod with {reason}"
        )),
        _ if !min_values_unmet.is_empty() => note.push_str(&format!(
            "; Karpenter NodePools of {unmet} serve only Pods that admit, and whose images run on, more of their architectures (minValues on kubernetes.io/arch)"
        )),
        _ => {}
    }
    if !beta_label_excluded.is_empty() {
        note.push_str(&format!(
            "; Karpenter NodePools can create {} nodes too, but with the label {BETA_ARCH_LABEL}, and the Pod admits those architectures only on nodes without it",
            platform::join(beta_label_excluded, ", ")
        ));
    }
    note
}
