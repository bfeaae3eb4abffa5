//! What the decision answers for a Pod (`Answer`), and how a failed read (`onLookupFailure`)
//! and a refusal (`onNoCommonArchitecture`) settle it.

use std::ops::ControlFlow;

use crate::message::{Failure, Refusal};
use crate::settings::{OnLookupFailure, OnNoCommonArchitecture, Settings};

use super::plan::Plan;

/// The decision on one Pod (or Pod template), with the warnings for the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Let it through as it came.
    Unchanged(Vec<String>),
    /// Let it through with the plan written into it.
    Pinned(Plan, Vec<String>),
    /// Refuse it with this message.
    Rejected(String, Vec<String>),
}

/// A step that goes on with what it found, or has settled the answer.
pub type Step<T> = ControlFlow<Answer, T>;

/// The answer a step gave, settled early or not.
pub fn settled(step: Step<Answer>) -> Answer {
    let (ControlFlow::Continue(answer) | ControlFlow::Break(answer)) = step;
    answer
}

impl Answer {
    pub fn warnings(&self) -> &[String] {
        match self {
            Answer::Unchanged(warnings)
            | Answer::Pinned(_, warnings)
            | Answer::Rejected(_, warnings) => warnings,
        }
    }

    /// The same answer with other warnings.
    pub fn with_warnings(self, warnings: Vec<String>) -> Answer {
        match self {
            Answer::Unchanged(_) => Answer::Unchanged(warnings),
            Answer::Pinned(plan, _) => Answer::Pinned(plan, warnings),
            Answer::Rejected(message, _) => Answer::Rejected(message, warnings),
        }
    }
}

/// `onLookupFailure` applied to a read that failed (images, Nodes, Windows Nodes, a bound Pod's
/// node): `reject` and `accept` settle the answer; `ignoreImage` adds its warnings and lets the
/// caller go on without what could not be read.
pub(super) fn on_lookup_failure(
    failure: Failure,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Step<()> {
    match settings.on_lookup_failure {
        OnLookupFailure::Reject => ControlFlow::Break(Answer::Rejected(
            failure.rejection(),
            std::mem::take(warnings),
        )),
        OnLookupFailure::Accept => {
            warnings.extend(failure.warnings(true));
            ControlFlow::Break(Answer::Unchanged(std::mem::take(warnings)))
        }
        OnLookupFailure::IgnoreImage => {
            warnings.extend(failure.warnings(false));
            ControlFlow::Continue(())
        }
    }
}

/// No architecture both runs every image and is admitted by the Pod's own constraints (or the
/// cluster's nodes): reject, or accept unchanged with a warning (`onNoCommonArchitecture:
/// accept`). Takes the warnings gathered so far.
pub(super) fn refuse(refusal: Refusal, warnings: &mut Vec<String>, settings: &Settings) -> Answer {
    let mut warnings = std::mem::take(warnings);
    match settings.on_no_common_architecture {
        OnNoCommonArchitecture::Reject => Answer::Rejected(refusal.rejection(), warnings),
        OnNoCommonArchitecture::Accept => {
            warnings.push(refusal.accepted());
            Answer::Unchanged(warnings)
        }
    }
}
