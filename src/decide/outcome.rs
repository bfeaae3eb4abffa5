//! How a failed read (`onLookupFailure`) and a refusal (`onNoCommonArchitecture`) settle the
//! outcome.

use crate::message::{Failure, Refusal};
use crate::settings::{OnLookupFailure, OnNoCommonArchitecture, Settings};

use super::Outcome;

/// `onLookupFailure` applied to a read that failed (images, Nodes, Windows Nodes, a bound Pod's
/// node): `reject` and `accept` settle the outcome; `ignoreImage` adds its warnings and lets
/// the caller go on without what could not be read.
pub(super) fn on_lookup_failure(
    failure: Failure,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<(), Outcome> {
    match settings.on_lookup_failure {
        OnLookupFailure::Reject => Err(Outcome::Rejected(
            failure.rejection(),
            std::mem::take(warnings),
        )),
        OnLookupFailure::Accept => {
            warnings.extend(failure.warnings(true));
            Err(Outcome::Unchanged(std::mem::take(warnings)))
        }
        OnLookupFailure::IgnoreImage => {
            warnings.extend(failure.warnings(false));
            Ok(())
        }
    }
}

/// No architecture both runs every image and is admitted by the Pod's own constraints (or the
/// cluster's nodes): reject, or accept unchanged with a warning (`onNoCommonArchitecture:
/// accept`). Takes the warnings gathered so far.
pub(super) fn refuse(refusal: Refusal, warnings: &mut Vec<String>, settings: &Settings) -> Outcome {
    let mut warnings = std::mem::take(warnings);
    match settings.on_no_common_architecture {
        OnNoCommonArchitecture::Reject => Outcome::Rejected(refusal.rejection(), warnings),
        OnNoCommonArchitecture::Accept => {
            warnings.push(refusal.accepted());
            Outcome::Unchanged(warnings)
        }
    }
}
