//! What pins the Pod to its placements (one per OS it keeps): each required term's expressions
//! (`OsPins`), the preferred architectures and the tolerations; and the plan they make, written
//! as `edit` will write it: an expression is added to a term only where the edit adds it (not to
//! a term that matches nothing, not a label the term names already), so the plan holds exactly
//! what changes the Pod, and what changes.

use crate::platform::{self, Architectures, ARCH_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::read::constraint::Admits;
use crate::read::pod::Pod;
use crate::read::terms::RequiredTerm;
use crate::settings::names::check_label_value;
use crate::settings::{same_toleration, Toleration};

use super::facts::{Facts, Placement};
use super::os::admits_other_os;
use super::plan::{Expression, Plan, Term};

/// What to write into one required term for one OS.
#[derive(Debug, Default, Clone)]
pub struct TermPins {
    /// The architecture expression, where the term admits other architectures.
    pub architecture: Option<Expression>,
    /// The OS expression, where the term admits nodes of another OS and the OS is pinned.
    pub os: Option<Expression>,
    /// The term requires something and admits nodes of this OS: with several OSes, it gets a
    /// copy pinned for this one.
    pub admits: bool,
}

/// What to write for one OS the Pod may run on.
#[derive(Debug, Clone)]
pub struct OsPins {
    /// Per required term of the Pod, in order; one entry, for the one new term, when it has no
    /// required node affinity.
    pub terms: Vec<TermPins>,
    /// `key In [value]` for every term without an expression on the key (`matchNodeLabels`).
    pub labels: Vec<Expression>,
    /// `key In [values]` for every term whose own `In` expression on the key does not keep
    /// within them (the Windows builds).
    pub narrowed: Vec<Expression>,
}

/// What the plan changes: the architectures (with `matchNodeLabels`, preferences and
/// tolerations) and the OS expression; with several placements, which of them had their
/// architectures pinned.
#[derive(Debug, Default, Clone)]
pub struct Changed {
    pub architectures: bool,
    pub os: bool,
    pub pinned: Vec<bool>,
}

/// The preferred architectures and their weights: the Pod's annotation (with
/// `preferredArchitectureWeight`), else the settings (`preferredArchitectures`, or
/// `preferredArchitecture`).
pub fn preferences<'a>(facts: &Facts<'a>) -> Vec<(&'a str, i64)> {
    let settings = facts.settings;
    match facts
        .pod
        .preferred_annotation
        .filter(|arch| platform::KNOWN_ARCHITECTURES.contains(arch))
    {
        Some(arch) => vec![(arch, settings.preferred_architecture_weight)],
        None => settings.preferences(),
    }
}

/// What pins one required term (`index`; `None`: the one new term) to `placement`.
fn term_pins(facts: &Facts, placement: &Placement, pin_os: bool, index: Option<usize>) -> TermPins {
    let constraints = placement.constraints;
    let admits = match index {
        None => constraints.selector_admits(),
        Some(index) => constraints.term_admits(index),
    };
    TermPins {
        architecture: (!admits.within(&placement.common, &placement.universe))
            .then(|| Expression::new(ARCH_LABEL, &placement.common)),
        os: (pin_os && admits_other_os(facts.pod, &constraints.os, index))
            .then(|| Expression::new(OS_LABEL, [&constraints.os])),
        admits: admits != Admits::none(),
    }
}

/// What pins the Pod's required terms to one placement: the architecture expression for each
/// term that admits others, the OS expression (with `pin_os`) for each that admits nodes of
/// another OS (or one new term with what it needs), `matchNodeLabels` and the Windows builds.
pub fn os_pins(facts: &Facts, placement: &Placement, pin_os: bool) -> OsPins {
    let terms = match &placement.constraints.terms {
        None => vec![term_pins(facts, placement, pin_os, None)],
        Some(terms) => (0..terms.len())
            .map(|index| match terms[index].empty {
                true => TermPins::default(),
                false => term_pins(facts, placement, pin_os, Some(index)),
            })
            .collect(),
    };
    // Only a value a node label can hold: the Pod's labels are not validated yet when mutating
    // admission runs, and the API server would refuse the Pod for it.
    let labels = facts
        .settings
        .match_node_labels
        .iter()
        .filter_map(|key| {
            let value = facts.pod.label(key)?;
            check_label_value(value).ok()?;
            Some(Expression::new(key, &[value.to_string()]))
        })
        .collect();
    let narrowed = placement
        .builds
        .iter()
        .map(|builds| Expression::new(WINDOWS_BUILD_LABEL, builds))
        .collect();
    OsPins {
        terms,
        labels,
        narrowed,
    }
}

/// What the edit finds of a term of the plan while it is made: the Pod's own term it copies
/// (none for a new one) and what was appended to it.
struct Written<'p> {
    own: Option<&'p RequiredTerm<'p>>,
    term: &'p mut Term,
}

impl Written<'_> {
    /// Appends `expression` where it can be (a new term, or one of the Pod's that can take one).
    fn push(&mut self, expression: &Expression) {
        if self.own.is_none_or(|own| own.pushable) {
            self.term.added.push(expression.clone());
        }
    }

    fn labelled(&self) -> bool {
        self.own
            .is_none_or(|own| !own.matches_nothing && !own.only_unlabelled)
    }

    fn has_key(&self, key: &str) -> bool {
        let added = &self.term.added;
        self.own.is_some_and(|own| own.has_key(key)) || added.iter().any(|e| e.key == key)
    }

    fn keeps_within(&self, key: &str, values: &[String]) -> bool {
        let among = |v: &str| values.iter().any(|w| w == v);
        let added = &self.term.added;
        self.own.is_some_and(|own| own.keeps_within(key, among))
            || added
                .iter()
                .any(|e| e.key == key && e.values.iter().all(|v| among(v)))
    }
}

/// The Pod's required terms as the edit finds them, nothing appended yet.
fn own_terms(pod: &Pod) -> Vec<Term> {
    let count = pod.terms.as_ref().map_or(0, Vec::len);
    (0..count)
        .map(|index| Term {
            from: Some(index),
            added: Vec::new(),
        })
        .collect()
}

/// Appends `additions[index]` to each term, and `labels` and `narrowed` where the edit adds
/// them; a Pod without terms gets one, when there is anything to put in it. Returns whether
/// anything was written (an expression appended to a term that cannot take it counts).
fn constrain(
    pod: &Pod,
    terms: &mut Vec<Term>,
    additions: &[Vec<Expression>],
    labels: &[Expression],
    narrowed: &[Expression],
) -> bool {
    let first = additions.first().map(Vec::as_slice).unwrap_or_default();
    if terms.is_empty() && first.is_empty() && labels.is_empty() && narrowed.is_empty() {
        return false;
    }
    if !pod.writable.required {
        return false;
    }
    if terms.is_empty() {
        let added = first
            .iter()
            .chain(labels)
            .chain(narrowed)
            .cloned()
            .collect();
        *terms = vec![Term { from: None, added }];
        return true;
    }
    let mut changed = false;
    for (index, term) in terms.iter_mut().enumerate() {
        let own = term.from.and_then(|from| pod.terms.as_ref()?.get(from));
        let mut term = Written { own, term };
        for expression in additions.get(index).into_iter().flatten() {
            term.push(expression);
            changed = true;
        }
        if !term.labelled() {
            continue;
        }
        for label in labels {
            if !term.has_key(&label.key) {
                term.push(label);
                changed = true;
            }
        }
        for narrow in narrowed {
            if !term.keeps_within(&narrow.key, &narrow.values) {
                term.push(narrow);
                changed = true;
            }
        }
    }
    changed
}

/// The terms written for one placement: the architectures and labels, then (with `with_os`)
/// the OS expressions. Returns the terms and what changed.
fn write_required(pod: &Pod, pins: &OsPins, with_os: bool) -> (Vec<Term>, Changed) {
    let mut terms = own_terms(pod);
    let per_term = |pick: fn(&TermPins) -> Option<&Expression>| -> Vec<Vec<Expression>> {
        let added = pins
            .terms
            .iter()
            .map(|term| pick(term).into_iter().cloned());
        added.map(Vec::from_iter).collect()
    };
    let architectures = per_term(|term| term.architecture.as_ref());
    let oses = per_term(|term| term.os.as_ref());
    let any = |added: &[Vec<Expression>]| added.iter().any(|added| !added.is_empty());
    let mut changed = Changed::default();
    if any(&architectures) || !pins.labels.is_empty() || !pins.narrowed.is_empty() {
        let (labels, narrowed) = (&pins.labels, &pins.narrowed);
        changed.architectures = constrain(pod, &mut terms, &architectures, labels, narrowed);
    }
    if with_os && any(&oses) {
        changed.os = constrain(pod, &mut terms, &oses, &[], &[]);
    }
    (terms, changed)
}

/// The terms of the plan: `None` where they are the Pod's own, unchanged.
fn plan_terms(pod: &Pod, terms: Vec<Term>) -> Option<Vec<Term>> {
    let own = pod.terms.as_ref().map_or(0, Vec::len);
    let unchanged = own == terms.len()
        && terms
            .iter()
            .enumerate()
            .all(|(index, term)| term.from == Some(index) && term.added.is_empty());
    (!unchanged).then_some(terms)
}

/// The required terms for several placements: one set of terms where every node OS is placed
/// and each needs the same, else each term (or the one new term) becomes one copy per placement
/// whose OS's nodes it admits, each pinned for its OS: the first copy stays where the term was,
/// the others follow the Pod's terms (in the terms' order, then the placements'), so every term
/// the Pod wrote keeps its place.
fn several_required(pod: &Pod, pins: &[OsPins], every_os: bool) -> (Option<Vec<Term>>, Changed) {
    let copies: Vec<(Option<Vec<Term>>, Changed)> = pins
        .iter()
        .map(|plan| {
            let (terms, changed) = write_required(pod, plan, false);
            (plan_terms(pod, terms), changed)
        })
        .collect();
    let pinned = copies.iter().map(|(_, c)| c.architectures).collect();
    if let [(first, changed), rest @ ..] = copies.as_slice() {
        if every_os && rest.iter().all(|(copy, _)| copy == first) {
            let mut changed = changed.clone();
            changed.pinned = pinned;
            return (first.clone(), changed);
        }
    }
    let written: Vec<Vec<Term>> = pins
        .iter()
        .map(|plan| write_required(pod, plan, true).0)
        .collect();
    let count = written.iter().map(Vec::len).max().unwrap_or_default();
    let (mut terms, mut more) = (Vec::new(), Vec::new());
    for index in 0..count {
        let mut kept = pins
            .iter()
            .zip(&written)
            .filter(|(plan, written)| {
                plan.terms.get(index).is_some_and(|term| term.admits) && index < written.len()
            })
            .map(|(_, written)| written[index].clone());
        // A term that admits nodes of no placement's OS (or matches nothing) stays as the first
        // placement pins it.
        terms.extend(kept.next().or_else(|| written[0].get(index).cloned()));
        more.extend(kept);
    }
    terms.extend(more);
    // (A Pod whose `nodeSelectorTerms` is no list gets a list, even an empty one.)
    let listed = pod.terms.is_some() || !terms.is_empty();
    let split = match listed {
        true => plan_terms(pod, terms),
        false => Some(Vec::new()),
    };
    let split = split.filter(|_| pod.writable.required);
    let (architectures, os) = (split.is_some(), split.is_some());
    let changed = Changed {
        architectures,
        os,
        pinned,
    };
    (split, changed)
}

/// The plan that pins the Pod to its placements (`pins`, one per OS it keeps), and what it
/// changes: the required terms, the preferred architectures where the Pod has a choice and
/// weighs none itself, and the tolerations of the architectures it may finally run on.
pub fn plan(facts: &Facts, placements: &[Placement], pins: &[OsPins]) -> (Plan, Changed) {
    let pod = facts.pod;
    let (terms, mut changed) = match pins {
        [only] => {
            let (terms, changed) = write_required(pod, only, true);
            (plan_terms(pod, terms), changed)
        }
        _ => several_required(
            pod,
            pins,
            placements.len() == platform::NODE_OPERATING_SYSTEMS.len(),
        ),
    };
    let finally: Architectures = placements.iter().flat_map(|p| p.finally.clone()).collect();
    // Preferences matter only where the Pod has a choice; a Pod that already weighs
    // architectures keeps its own.
    let preferred: Vec<(String, i64)> = preferences(facts)
        .into_iter()
        .filter(|(arch, _)| finally.len() > 1 && finally.contains(*arch))
        .map(|(arch, weight)| (arch.to_string(), weight))
        .filter(|_| !pod.weighs_architecture && pod.writable.preferred)
        .collect();
    let tolerations = tolerations(pod, &finally, facts);
    changed.architectures |= !preferred.is_empty() || !tolerations.is_empty();
    let plan = Plan {
        terms,
        preferred,
        tolerations,
        ..Plan::default()
    };
    (plan, changed)
}

/// The tolerations of every architecture in `finally` (`architectureTolerations`) that the Pod
/// does not have yet, each once.
fn tolerations(pod: &Pod, finally: &Architectures, facts: &Facts) -> Vec<Toleration> {
    let configured = &facts.settings.architecture_tolerations;
    let mut added: Vec<Toleration> = Vec::new();
    if !pod.writable.tolerations {
        return added;
    }
    for toleration in finally
        .iter()
        .filter_map(|arch| configured.get(arch))
        .flatten()
    {
        let present = pod
            .tolerations
            .iter()
            .chain(&added)
            .any(|p| same_toleration(p, toleration));
        if !present {
            added.push(toleration.clone());
        }
    }
    added
}
