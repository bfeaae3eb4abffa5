//! What is decided: a Pod being created, a Pod after admission, a gated Pod's pin, or a
//! workload's Pod template under its mode. Each case reads the cluster and writes its answer
//! differently; messages name the first three "Pod", the last "Pod template".

use crate::settings::TemplateMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A Pod being created: pinned.
    Pod,
    /// A Pod after admission (an UPDATE: an image swapped in, `kubectl debug`), whose node
    /// affinity can no longer change: judged against where it is or may go, never edited.
    /// NodePools count for it even where Karpenter's provisioner ignores it, as when it was
    /// admitted.
    AfterAdmission,
    /// A Pod with scheduling gates, on UPDATE: pinned as on CREATE (Karpenter reads it only once
    /// its gates are removed), where the pin only narrows its node affinity.
    GatedPin,
    /// A workload's Pod template: pinned under `mutate`, judged under `validate`. A DaemonSet's
    /// controller creates Pods only on the Nodes it selects, none where the cluster has no node
    /// of its OS.
    Template {
        mode: TemplateMode,
        daemon_set: bool,
    },
}

impl Subject {
    /// As messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Subject::Template { .. } => "Pod template",
            _ => "Pod",
        }
    }

    /// A DaemonSet's template under `validate`: warned about the nodes its Pods will fail on.
    pub fn warns_daemon_set(self) -> bool {
        let validate = TemplateMode::Validate;
        matches!(self, Subject::Template { mode, daemon_set: true } if mode == validate)
    }

    /// A DaemonSet's template, under either mode.
    pub fn one_per_node(self) -> bool {
        matches!(self, Subject::Template { daemon_set, .. } if daemon_set)
    }

    pub fn after_admission(self) -> bool {
        self == Subject::AfterAdmission
    }

    /// The edit is written and may add required terms: a Pod's CREATE, a template under
    /// `mutate` (not under `validate`, whose edit is dropped, nor a gated Pod's UPDATE, whose
    /// terms the API server lets only narrow). Only then are the Nodes without an architecture
    /// label read (`unlabelled`).
    pub fn adds_terms(self) -> bool {
        match self {
            Subject::Pod => true,
            Subject::Template { mode, .. } => mode == TemplateMode::Mutate,
            Subject::AfterAdmission | Subject::GatedPin => false,
        }
    }

    /// Only the nodes of another OS that the Pod admits count (of an architecture that OS's
    /// nodes may have), not every node of it: after admission, and for a DaemonSet's template
    /// under `validate` (warned about the nodes of another OS it admits).
    pub fn counts_admitted_other_os(self) -> bool {
        self.after_admission() || self.warns_daemon_set()
    }
}
