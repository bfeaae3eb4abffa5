//! The pins `decide` settled on, written into the Pod's JSON: per required term the expressions
//! decided for it, the labels every term gets, the preferred architectures and the tolerations,
//! and the annotation that records what was pinned. Nothing here decides where the Pod may run:
//! every value written comes from `Pins`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::edit::{self, affinity, tolerations};
use crate::platform::Architectures;
use crate::settings::Toleration;

/// Annotation in which the policy records the architectures it computed.
pub const ARCHITECTURES_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/architectures";

const PREFERRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "preferredDuringSchedulingIgnoredDuringExecution",
];

/// Everything to write into one Pod.
pub struct Pins<'a> {
    /// One per OS the Pod keeps (several for images built for several OSes).
    pub plans: Vec<OsPins>,
    /// Every node OS is planned: where each needs the same terms, the Pod keeps one set of them.
    pub every_os: bool,
    /// The preferred terms to add (architecture, weight): none where the Pod weighs
    /// architectures itself.
    pub preferred: Vec<(String, i64)>,
    /// The architectures the Pod may finally run on, whose configured tolerations it gets.
    pub finally: Architectures,
    /// `architectureTolerations`.
    pub tolerations: &'a BTreeMap<String, Vec<Toleration>>,
}

/// What to write for one OS the Pod may run on.
#[derive(Debug, Clone)]
pub struct OsPins {
    /// Per required term of the Pod, in order; one entry, for the one new term, when it has no
    /// required node affinity.
    pub terms: Vec<TermPins>,
    /// `key In [values]` for every term without an expression on the key (`matchNodeLabels`).
    pub labels: Vec<(String, Vec<String>)>,
    /// `key In [values]` for every term whose own `In` expression on the key does not keep
    /// within them (the Windows builds).
    pub narrowed: Vec<(String, Vec<String>)>,
}

/// What to write into one required term for one OS.
#[derive(Debug, Default, Clone)]
pub struct TermPins {
    /// The architecture expression, where the term admits other architectures.
    pub architecture: Option<Value>,
    /// The OS expression, where the term admits nodes of another OS and the OS is pinned.
    pub os: Option<Value>,
    /// The term requires something and admits nodes of this OS: with several OSes, it gets a
    /// copy pinned for this one.
    pub admits: bool,
}

/// What `write` changed: what the architectures need (with `matchNodeLabels`, preferences and
/// tolerations), and the OS expression; with several plans, which of them had their
/// architectures pinned.
#[derive(Debug, Default, Clone)]
pub struct Changed {
    pub architectures: bool,
    pub os: bool,
    pub pinned_plans: Vec<bool>,
}

/// Writes `pins` into the Pod: the required terms, then the preferred architectures and the
/// tolerations. With several plans, the Pod keeps one set of terms where every node OS is
/// planned and each needs the same; otherwise each term becomes one per OS (`split_terms`).
pub fn write(pod: &mut Value, mut pins: Pins) -> Changed {
    let mut changed = match pins.plans.pop() {
        Some(only) if pins.plans.is_empty() => write_required(pod, only, true),
        last => {
            pins.plans.extend(last);
            write_several(pod, &pins)
        }
    };
    changed.architectures |= write_preferences(pod, &pins);
    changed
}

/// The required terms for several plans: one set of terms where every node OS is planned and
/// each needs the same, else one term per OS (`split_terms`).
fn write_several(pod: &mut Value, pins: &Pins) -> Changed {
    let copies: Vec<(Value, Changed)> = pins
        .plans
        .iter()
        .map(|plan| {
            let mut copy = pod.clone();
            let changed = write_required(&mut copy, plan.clone(), false);
            (copy, changed)
        })
        .collect();
    let pinned_plans = copies.iter().map(|(_, c)| c.architectures).collect();
    let mut changed = match copies.as_slice() {
        [(first, changed), rest @ ..]
            if pins.every_os && rest.iter().all(|(copy, _)| copy == first) =>
        {
            *pod = first.clone();
            changed.clone()
        }
        _ => {
            let split = split_terms(pod, &pins.plans);
            Changed {
                architectures: split,
                os: split,
                pinned_plans: Vec::new(),
            }
        }
    };
    changed.pinned_plans = pinned_plans;
    changed
}

/// For several plans: each required term (or the one new term) becomes one copy per plan whose
/// OS's nodes it admits, each pinned for its OS (`write_required`). The first copy stays where
/// the term was, the others follow the Pod's terms (in the terms' order, then the plans'), so
/// every term the Pod wrote keeps its place. Returns whether anything changed.
fn split_terms(pod: &mut Value, plans: &[OsPins]) -> bool {
    let pinned: Vec<Value> = plans
        .iter()
        .map(|plan| {
            let mut copy = pod.clone();
            write_required(&mut copy, plan.clone(), true);
            copy["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                .take()
        })
        .collect();
    let count = pinned
        .iter()
        .filter_map(Value::as_array)
        .map(Vec::len)
        .max()
        .unwrap_or_default();
    let (mut terms, mut more) = (Vec::new(), Vec::new());
    for index in 0..count {
        let mut copies = plans
            .iter()
            .zip(&pinned)
            .filter(|(plan, pinned)| {
                plan.terms.get(index).is_some_and(|term| term.admits) && !pinned[index].is_null()
            })
            .map(|(_, pinned)| pinned[index].clone());
        // A term that admits nodes of no plan's OS (or matches nothing) stays as the first plan
        // pins it.
        terms.push(copies.next().unwrap_or_else(|| pinned[0][index].clone()));
        more.extend(copies);
    }
    terms.extend(more);
    let before = &pod["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    if before.as_array() == Some(&terms) {
        return false;
    }
    pod.get_mut("spec")
        .is_some_and(|spec| affinity::replace_required_terms(spec, terms))
}

/// Writes one plan into the Pod's required terms: each term's architecture expression, its OS
/// expression (with `with_os`), and the labels (or one new term with what it needs).
fn write_required(pod: &mut Value, plan: OsPins, with_os: bool) -> Changed {
    let (architectures, operating_systems): (Vec<Vec<Value>>, Vec<Vec<Value>>) = plan
        .terms
        .into_iter()
        .map(|term| {
            let os = term.os.filter(|_| with_os);
            (Vec::from_iter(term.architecture), Vec::from_iter(os))
        })
        .unzip();
    let mut changed = Changed::default();
    let Some(spec) = pod.get_mut("spec") else {
        return changed;
    };
    if architectures.iter().any(|added| !added.is_empty())
        || !plan.labels.is_empty()
        || !plan.narrowed.is_empty()
    {
        changed.architectures |=
            affinity::constrain_required(spec, &architectures, &plan.labels, &plan.narrowed);
    }
    // After the architectures and labels: the expressions the policy adds keep their order.
    if operating_systems.iter().any(|added| !added.is_empty()) {
        changed.os = affinity::constrain_required(spec, &operating_systems, &[], &[]);
    }
    changed
}

/// The preferred terms and the tolerations of `Pins::finally`. Returns whether anything
/// changed.
fn write_preferences(pod: &mut Value, pins: &Pins) -> bool {
    let Some(spec) = pod.get_mut("spec") else {
        return false;
    };
    let mut changed = false;
    if !pins.preferred.is_empty() {
        if let Some(list) = edit::array_at(spec, &PREFERRED_PATH) {
            for (arch, weight) in &pins.preferred {
                list.push(affinity::preferred_term(arch, *weight));
            }
            changed = true;
        }
    }
    changed | tolerations::add_for(spec, &pins.finally, pins.tolerations)
}

/// Records the architectures (or platforms) pinned in the annotation.
pub fn record_architectures(pod: &mut Value, recorded: String) {
    if let Some(annotations) = edit::object_at(pod, &["metadata", "annotations"]) {
        annotations.insert(
            ARCHITECTURES_ANNOTATION.to_string(),
            Value::String(recorded),
        );
    }
}
