//! The constraint model: every input that restricts the nodes a Pod (or a Pod template) may run
//! on, read into one representation, and the architectures it admits.
//!
//! The scheduler admits a node when it matches the nodeSelector AND at least one required node
//! affinity term (terms are ORed, a term's requirements are ANDed, a term without requirements
//! matches nothing, and so does required node affinity with no terms). So the Pod's constraint is
//! a list of *conjunctions*: for each term, the nodeSelector's requirements and the term's own
//! (label expressions and `matchFields` alike); without required node affinity, the nodeSelector's
//! alone.
//!
//! Of a node the policy knows only what every node carries: `kubernetes.io/arch` and
//! `kubernetes.io/os`, and `beta.kubernetes.io/arch` / `beta.kubernetes.io/os` with the same
//! values when the node has the beta labels (both or neither), and those values are ones nodes
//! report (`platform::KNOWN_ARCHITECTURES`, linux or windows): a requirement on another value
//! matches no node, and excluding one excludes no node. The OS is the Pod's
//! (`Constraints::read_pod`). Every other label, and the node's name, can take any value: a
//! requirement on them restricts the architecture only when it can never be met (`zone In [a]`
//! and `zone NotIn [a]` in one term), and then the conjunction admits no node at all.

use serde_json::Value;

use crate::platform::{
    Architectures, ARCH_LABEL, BETA_ARCH_LABEL, BETA_OS_LABEL, KNOWN_ARCHITECTURES,
    NODE_OPERATING_SYSTEMS, OS_LABEL,
};

pub use crate::read::admits::Admits;

/// The labels every node has (the beta ones with the same values, when the node has them).
const LINKED_LABELS: [&str; 4] = [ARCH_LABEL, BETA_ARCH_LABEL, OS_LABEL, BETA_OS_LABEL];

/// What one requirement asks of a node's value (a label, or the node's name).
#[derive(Debug, Clone, PartialEq)]
enum Test {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
    /// A requirement the scheduler cannot read (unknown operator, `Gt` without one integer, a
    /// field other than `metadata.name`): the term it is in matches no node.
    Never,
}

impl Test {
    /// Whether a node whose value is `value` (`None`: no such label) passes.
    fn passes(&self, value: Option<&str>) -> bool {
        let number = || value.and_then(|v| v.parse::<i64>().ok());
        match self {
            Test::In(values) => value.is_some_and(|v| values.iter().any(|x| x == v)),
            Test::NotIn(values) => value.is_none_or(|v| values.iter().all(|x| x != v)),
            Test::Exists => value.is_some(),
            Test::DoesNotExist => value.is_none(),
            Test::Gt(bound) => number().is_some_and(|n| n > *bound),
            Test::Lt(bound) => number().is_some_and(|n| n < *bound),
            Test::Never => false,
        }
    }

    /// The architectures (values of an architecture label every node has) that pass. Only the
    /// values nodes report count (`KNOWN_ARCHITECTURES`): `In [x86 64]` admits no node, and
    /// `NotIn [x86 64]` excludes none, as the scheduler finds.
    fn architectures(&self) -> Admits {
        let set = |values: &[String]| {
            values
                .iter()
                .filter(|v| KNOWN_ARCHITECTURES.contains(&v.as_str()))
                .cloned()
                .collect()
        };
        match self {
            Test::In(values) => Admits::Only(set(values)),
            Test::NotIn(values) => Admits::AllBut(set(values)),
            Test::Exists => Admits::All,
            Test::DoesNotExist | Test::Never => Admits::none(),
            // A numeric comparison passes only numeric architectures (`386`).
            Test::Gt(_) | Test::Lt(_) => Admits::Only(
                KNOWN_ARCHITECTURES
                    .iter()
                    .filter(|arch| self.passes(Some(arch)))
                    .map(|arch| arch.to_string())
                    .collect(),
            ),
        }
    }
}

/// Whether some value (or, for a label, its absence) passes every test. A value that no test
/// names can always be found. A label value that reads as an integer is digits only (a label
/// value starts with a letter or digit: no sign), so it is at least 0, and it has many spellings
/// (`2`, `02`, `002`): `Lt 0` admits no node, as the scheduler finds.
fn satisfiable(tests: &[&Test], may_be_absent: bool) -> bool {
    if tests.iter().any(|t| **t == Test::Never) {
        return false;
    }
    if may_be_absent && tests.iter().all(|t| t.passes(None)) {
        return true;
    }
    if tests.contains(&&Test::DoesNotExist) {
        return false;
    }
    if let Some(Test::In(values)) = tests.iter().find(|t| matches!(t, Test::In(_))) {
        return values
            .iter()
            .any(|value| tests.iter().all(|t| t.passes(Some(value))));
    }
    let (mut low, mut high) = (None::<i64>, None::<i64>);
    for test in tests {
        match test {
            Test::Gt(bound) => low = Some(low.map_or(*bound, |l| l.max(*bound))),
            Test::Lt(bound) => high = Some(high.map_or(*bound, |h| h.min(*bound))),
            _ => {}
        }
    }
    let lowest = low.map_or(Some(0), |low| low.checked_add(1).map(|next| next.max(0)));
    let highest = high.map_or(Some(i64::MAX), |high| high.checked_sub(1));
    matches!((lowest, highest), (Some(lowest), Some(highest)) if lowest <= highest)
}

/// One requirement: a label's (`matchExpressions`, nodeSelector) or the node name's
/// (`matchFields`).
#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    field: bool,
    test: Test,
}

impl Requirement {
    fn read(expression: &Value, field: bool) -> Requirement {
        let key = expression["key"].as_str().unwrap_or_default().to_string();
        let values: Vec<String> = expression["values"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let number = || match values.as_slice() {
            [one] => one.parse::<i64>().ok(),
            _ => None,
        };
        let test = match expression["operator"].as_str() {
            // The scheduler reads a field requirement only on the node's name, with one value.
            _ if field && (key != "metadata.name" || values.len() != 1) => Test::Never,
            Some("In") => Test::In(values),
            Some("NotIn") => Test::NotIn(values),
            Some("Exists") if !field => Test::Exists,
            Some("DoesNotExist") if !field => Test::DoesNotExist,
            Some("Gt") if !field => number().map_or(Test::Never, Test::Gt),
            Some("Lt") if !field => number().map_or(Test::Never, Test::Lt),
            _ => Test::Never,
        };
        Requirement { key, field, test }
    }
}

/// One required node affinity term as the policy reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    requirements: Vec<Requirement>,
    /// Neither expressions nor fields: it matches no node.
    pub empty: bool,
}

impl Term {
    fn read(term: &Value) -> Term {
        let list = |name: &str| term[name].as_array().map(Vec::as_slice).unwrap_or_default();
        let (expressions, fields) = (list("matchExpressions"), list("matchFields"));
        let requirements = expressions
            .iter()
            .map(|e| Requirement::read(e, false))
            .chain(fields.iter().map(|f| Requirement::read(f, true)))
            .collect();
        Term {
            requirements,
            empty: expressions.is_empty() && fields.is_empty(),
        }
    }
}

/// Everything that constrains the nodes of one Pod (or Pod template).
#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    /// The Pod's OS: the value of `kubernetes.io/os` on every node it may run on.
    pub os: String,
    /// The nodeSelector, each entry `key In [value]`, in key order.
    selector: Vec<Requirement>,
    /// The nodeSelector's entries on the architecture and OS labels (all of them when it has none
    /// of those), for messages.
    pub selector_entries: Vec<(String, String)>,
    /// The required node affinity terms; `None` when the Pod has no required node affinity (an
    /// empty list when it has one without terms: it matches no node).
    pub terms: Option<Vec<Term>>,
}

impl Constraints {
    /// Reads the constraints of a Pod (or Pod template) spec and settles the OS of its nodes:
    /// its own choice (`chosen`: `spec.os.name`, the nodeSelector), else the one OS whose nodes
    /// its required terms admit (terms on `kubernetes.io/os In [windows]`), else `default`.
    pub fn read_pod(spec: &Value, chosen: Option<&str>, default: &str) -> Constraints {
        if let Some(os) = chosen {
            return Constraints::read(spec, os);
        }
        let by_default = Constraints::read(spec, default);
        let names_os = by_default.terms.iter().flatten().any(|term| {
            term.requirements
                .iter()
                .any(|r| !r.field && (r.key == OS_LABEL || r.key == BETA_OS_LABEL))
        });
        if !names_os {
            return by_default;
        }
        let mut admitting = NODE_OPERATING_SYSTEMS
            .iter()
            .map(|os| Constraints::read(spec, os))
            .filter(|constraints| constraints.admits() != Admits::none());
        match (admitting.next(), admitting.next()) {
            (Some(only), None) => only,
            _ => by_default,
        }
    }

    /// Reads a Pod spec's nodeSelector and required node affinity terms, for a Pod of `os`.
    pub fn read(spec: &Value, os: &str) -> Constraints {
        let mut selector = Vec::new();
        let (mut linked, mut others) = (Vec::new(), Vec::new());
        if let Some(entries) = spec["nodeSelector"].as_object() {
            for (key, value) in entries {
                // A value that is not a string matches no node.
                let test = value
                    .as_str()
                    .map_or(Test::Never, |v| Test::In(vec![v.to_string()]));
                let entry = (
                    key.clone(),
                    value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string),
                );
                if LINKED_LABELS.contains(&key.as_str()) {
                    linked.push(entry);
                } else {
                    others.push(entry);
                }
                selector.push(Requirement {
                    key: key.clone(),
                    field: false,
                    test,
                });
            }
        }
        // Required node affinity without terms (`{}`, `nodeSelectorTerms: []`) matches no node:
        // the scheduler ORs zero terms (and the API server refuses such a Pod).
        let required =
            &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        let terms = (!required.is_null()).then(|| {
            required["nodeSelectorTerms"]
                .as_array()
                .map(|terms| terms.iter().map(Term::read).collect())
                .unwrap_or_default()
        });
        Constraints {
            os: os.to_string(),
            selector,
            selector_entries: if linked.is_empty() { others } else { linked },
            terms,
        }
    }

    /// The architectures of the nodes the Pod admits.
    pub fn admits(&self) -> Admits {
        self.admits_on(|with_beta, without_beta| with_beta.or(without_beta))
    }

    /// The architectures of the nodes with the beta labels (`beta.kubernetes.io/arch` and
    /// `beta.kubernetes.io/os`, of the same values) the Pod admits: the nodes a NodePool creates,
    /// whose kubelet sets them (and Karpenter's scheduler reads the beta architecture key as the
    /// stable one).
    pub fn admits_with_beta_labels(&self) -> Admits {
        self.admits_on(|with_beta, _| with_beta)
    }

    /// What the nodeSelector and the terms admit (ORed), each conjunction's nodes with and
    /// without the beta labels combined by `nodes`.
    fn admits_on(&self, nodes: impl Fn(Admits, Admits) -> Admits) -> Admits {
        let conjunction = |requirements: &[Requirement]| {
            let (with_beta, without_beta) = self.conjunction_parts(&self.selector, requirements);
            nodes(with_beta, without_beta)
        };
        match &self.terms {
            None => conjunction(&[]),
            Some(terms) => terms
                .iter()
                .filter(|term| !term.empty)
                .map(|term| conjunction(&term.requirements))
                .fold(Admits::none(), Admits::or),
        }
    }

    /// The architectures of the nodes the Pod admits whose label `key` has one of `values`: what
    /// it admits once every term is given `key In values` (a pin on a label other than the
    /// architecture and the OS, such as the Windows build).
    pub fn admits_where(&self, key: &str, values: &Architectures) -> Admits {
        let mut narrowed = self.clone();
        narrowed.selector.push(Requirement {
            key: key.to_string(),
            field: false,
            test: Test::In(values.iter().cloned().collect()),
        });
        narrowed.admits()
    }

    /// The architectures the nodeSelector alone admits.
    pub fn selector_admits(&self) -> Admits {
        self.conjunction(&self.selector, &[])
    }

    /// The architectures that term `index`, with the nodeSelector, admits.
    pub fn term_admits(&self, index: usize) -> Admits {
        self.term_requirements(index)
            .map_or_else(Admits::none, |requirements| {
                self.conjunction(&self.selector, requirements)
            })
    }

    /// What term `index` with the nodeSelector (the nodeSelector alone for `None`) admits on the
    /// nodes with the beta labels: a NodePool's (`admits_with_beta_labels`).
    pub fn term_admits_with_beta_labels(&self, index: Option<usize>) -> Admits {
        let requirements = match index {
            None => &[][..],
            Some(index) => match self.term_requirements(index) {
                Some(requirements) => requirements,
                None => return Admits::none(),
            },
        };
        self.conjunction_parts(&self.selector, requirements).0
    }

    /// The architectures that term `index` alone (without the nodeSelector) admits.
    pub fn term_alone_admits(&self, index: usize) -> Admits {
        self.term_requirements(index)
            .map_or_else(Admits::none, |requirements| {
                self.conjunction(&[], requirements)
            })
    }

    /// The requirements of term `index`, when the Pod has it and it is not empty (an empty term
    /// admits no node).
    fn term_requirements(&self, index: usize) -> Option<&[Requirement]> {
        self.terms
            .as_ref()
            .and_then(|terms| terms.get(index))
            .filter(|term| !term.empty)
            .map(|term| &term.requirements[..])
    }

    /// What `selector` and `requirements` admit together.
    fn conjunction(&self, selector: &[Requirement], requirements: &[Requirement]) -> Admits {
        let (with_beta, without_beta) = self.conjunction_parts(selector, requirements);
        with_beta.or(without_beta)
    }

    /// What `selector` and `requirements` admit together: on nodes with the beta labels, and on
    /// nodes without them.
    fn conjunction_parts(
        &self,
        selector: &[Requirement],
        requirements: &[Requirement],
    ) -> (Admits, Admits) {
        // The requirements grouped by what they test (a field or a label, and its key): sorted
        // once, so a Pod with thousands of expressions costs n log n, not n squared.
        let mut all: Vec<&Requirement> = selector.iter().chain(requirements).collect();
        all.sort_by(|a, b| (a.field, &a.key).cmp(&(b.field, &b.key)));
        let groups: Vec<(&Requirement, Vec<&Test>)> = all
            .chunk_by(|a, b| a.field == b.field && a.key == b.key)
            .filter_map(|group| {
                let first = *group.first()?;
                Some((first, group.iter().map(|r| &r.test).collect()))
            })
            .collect();
        let tests = |key: &str| -> &[&Test] {
            groups
                .iter()
                .find(|(r, _)| !r.field && r.key == key)
                .map_or(&[], |(_, tests)| tests.as_slice())
        };
        let passes = |key: &str, value: Option<&str>| tests(key).iter().all(|t| t.passes(value));
        // Every other label, and the node's name, may take any value.
        let free = groups.iter().all(|(r, tests)| {
            if r.field {
                satisfiable(tests, false)
            } else {
                LINKED_LABELS.contains(&r.key.as_str()) || satisfiable(tests, true)
            }
        });
        // A Pod of an OS no node reports (`kubernetes.io/os: plan9`) admits no node.
        if !free
            || !NODE_OPERATING_SYSTEMS.contains(&self.os.as_str())
            || !passes(OS_LABEL, Some(&self.os))
        {
            return (Admits::none(), Admits::none());
        }
        let architecture = tests(ARCH_LABEL)
            .iter()
            .fold(Admits::All, |admits, test| admits.and(test.architectures()));
        // Nodes with the beta labels: the same values.
        let with_beta = if passes(BETA_OS_LABEL, Some(&self.os)) {
            tests(BETA_ARCH_LABEL)
                .iter()
                .fold(architecture.clone(), |admits, test| {
                    admits.and(test.architectures())
                })
        } else {
            Admits::none()
        };
        // Nodes without them.
        let without_beta = if passes(BETA_OS_LABEL, None) && passes(BETA_ARCH_LABEL, None) {
            architecture
        } else {
            Admits::none()
        };
        (with_beta, without_beta)
    }
}

#[cfg(test)]
mod tests;
