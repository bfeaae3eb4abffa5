//! What a constraint admits of the architecture label: a set of architectures, possibly
//! infinite (every value but some).

use crate::platform::{self, Architectures};

/// A set of architectures, possibly infinite (every value but some).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admits {
    /// Every architecture.
    All,
    /// Only these architectures.
    Only(Architectures),
    /// Every architecture but these.
    AllBut(Architectures),
}

impl Admits {
    /// No architecture.
    pub fn none() -> Admits {
        Admits::Only(Architectures::new())
    }

    /// What both admit.
    pub fn and(self, other: Admits) -> Admits {
        match (self, other) {
            (Admits::All, x) | (x, Admits::All) => x,
            (Admits::Only(a), Admits::Only(b)) => {
                Admits::Only(a.intersection(&b).cloned().collect())
            }
            (Admits::Only(a), Admits::AllBut(b)) | (Admits::AllBut(b), Admits::Only(a)) => {
                Admits::Only(a.difference(&b).cloned().collect())
            }
            (Admits::AllBut(a), Admits::AllBut(b)) => {
                Admits::AllBut(a.union(&b).cloned().collect())
            }
        }
    }

    /// What either admits.
    pub fn or(self, other: Admits) -> Admits {
        match (self, other) {
            (Admits::All, _) | (_, Admits::All) => Admits::All,
            (Admits::Only(a), Admits::Only(b)) => Admits::Only(a.union(&b).cloned().collect()),
            (Admits::Only(a), Admits::AllBut(b)) | (Admits::AllBut(b), Admits::Only(a)) => {
                Admits::AllBut(b.difference(&a).cloned().collect())
            }
            (Admits::AllBut(a), Admits::AllBut(b)) => {
                Admits::AllBut(a.intersection(&b).cloned().collect())
            }
        }
    }

    /// Whether `architecture` is admitted.
    pub fn admits(&self, architecture: &str) -> bool {
        match self {
            Admits::All => true,
            Admits::Only(only) => only.contains(architecture),
            Admits::AllBut(excluded) => !excluded.contains(architecture),
        }
    }

    /// The admitted architectures among `these`.
    pub fn among(&self, these: &Architectures) -> Architectures {
        these
            .iter()
            .filter(|arch| self.admits(arch))
            .cloned()
            .collect()
    }

    /// Whether every admitted architecture that is in `universe` (every architecture when it is
    /// empty) is in `allowed`.
    pub fn within(&self, allowed: &Architectures, universe: &Architectures) -> bool {
        if universe.is_empty() {
            matches!(self, Admits::Only(only) if only.is_subset(allowed))
        } else {
            self.among(universe).is_subset(allowed)
        }
    }

    /// For messages: `amd64, arm64`, `every architecture but s390x`, `no node`.
    pub fn describe(&self) -> String {
        match self {
            Admits::All => "every architecture".to_string(),
            Admits::Only(only) if only.is_empty() => "no node".to_string(),
            Admits::Only(only) => platform::join(only, ", "),
            Admits::AllBut(excluded) => {
                format!("every architecture but {}", platform::join(excluded, ", "))
            }
        }
    }
}
