//! kwctl's host-capability session files (`--record-host-capabilities-interactions`,
//! `--replay-host-capabilities-interactions`): a YAML list of exchanges, each a request (the YAML
//! of kwctl's `CallbackRequestType`, e.g. `!OciManifest\nimage: ...`) and the host's answer.
//! Replay is strict first-in-first-out; a request that differs from the recorded one is answered
//! with kwctl's "Replay error". One file serves both hosts.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The host calls a session holds: the variants of policy-evaluator's `CallbackRequestType` for
/// the calls this host answers (those the policy makes), with the same names, fields and order
/// (they are the session's YAML and the replay error's text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    OciManifest {
        image: String,
    },
    OciManifestAndConfig {
        image: String,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        field_masks: Option<BTreeSet<String>>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Response {
    Success { payload: String },
    Error { message: String },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub struct Exchange {
    request: String,
    response: Response,
}

/// Where the host calls' answers come from.
pub enum Session {
    /// Asked for real (registries); `Some` keeps the exchanges for the record file.
    Live(Option<Vec<Exchange>>),
    /// Answered from a session file, in order.
    Replay(VecDeque<Exchange>),
}

impl Session {
    pub fn replay(path: &Path) -> Result<Session> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("Cannot open host capabilities interactions file {path:?}"))?;
        let exchanges = serde_yaml::from_str(&text)
            .with_context(|| format!("cannot deserialize contents of {path:?}"))?;
        Ok(Session::Replay(exchanges))
    }

    /// The answer to `request`: from the session when replaying, else from `live`.
    pub fn answer(
        &mut self,
        request: Request,
        live: impl FnOnce(&Request) -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let record = match self {
            Session::Replay(exchanges) => {
                let exchange = exchanges
                    .pop_front()
                    .ok_or_else(|| anyhow!("the list of recorded responses is empty"))?;
                let expected: Request = serde_yaml::from_str(&exchange.request)
                    .context("Cannot deserialize recorded request into `CallbackRequestType`")?;
                if expected != request {
                    bail!("Replay error: unexpected request. Was expecting {expected:?}, got {request:?} instead");
                }
                return match exchange.response {
                    Response::Success { payload } => Ok(payload.into_bytes()),
                    Response::Error { message } => Err(anyhow!("{message}")),
                };
            }
            Session::Live(record) => record,
        };
        let answer = live(&request);
        if let Some(record) = record {
            let response = match &answer {
                Ok(payload) => Response::Success {
                    payload: String::from_utf8(payload.clone())?,
                },
                Err(error) => Response::Error {
                    message: error.to_string(),
                },
            };
            let request = serde_yaml::to_string(&request)?;
            record.push(Exchange { request, response });
        }
        answer
    }

    /// Exchanges a replay never reached (kwctl warns about them too).
    pub fn leftovers(&self) -> usize {
        match self {
            Session::Replay(exchanges) => exchanges.len(),
            Session::Live(_) => 0,
        }
    }

    /// Writes the recorded exchanges as kwctl does (`serde_yaml`, the same types).
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Session::Live(Some(record)) = self {
            let file = std::fs::File::create(path)
                .with_context(|| format!("Cannot save context aware session to {path:?}"))?;
            serde_yaml::to_writer(file, record)?;
        }
        Ok(())
    }
}
