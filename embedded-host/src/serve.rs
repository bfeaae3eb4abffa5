//! `embedded-host serve`: many evaluations of one module, for the Go test harness (`k8s-judge/`:
//! its property runs 10^4 cases, its control plane's webhook adapter one per AdmissionReview).
//! The module is compiled once; each evaluation gets a fresh instance, as in Kubewarden's hosts,
//! and the host's answers are kept as policy-server keeps them (a successful OCI lookup 60 s).
//!
//! Reads one JSON object per line on stdin, `{"request": <AdmissionRequest or AdmissionReview>,
//! "settings": {...}}` (`settings` absent or null: the policy's own), and writes one line per
//! request on stdout: the AdmissionResponse `run` prints, or `{"error": "..."}` when the request
//! cannot be read or the settings are invalid (`run`'s `Error: ...` text).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::capabilities::Host;
use crate::evaluation::{AdmissionRequest, Compiled};
use crate::policy::Policy;

#[derive(Deserialize)]
struct Line {
    request: Value,
    #[serde(default)]
    settings: Option<Map<String, Value>>,
}

pub fn serve(
    policy: &Policy,
    host: Arc<Mutex<Host>>,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<()> {
    let compiled = Compiled::new(policy)?;
    // validate_settings' verdict per settings text: `None` when valid, else run's error text.
    let mut verdicts: HashMap<String, Option<String>> = HashMap::new();
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = evaluate(&compiled, policy, &host, &mut verdicts, &line)
            .unwrap_or_else(|error| json!({ "error": format!("{error:#}") }).to_string());
        writeln!(output, "{answer}")?;
        output.flush()?;
    }
    Ok(())
}

fn evaluate(
    compiled: &Compiled,
    policy: &Policy,
    host: &Arc<Mutex<Host>>,
    verdicts: &mut HashMap<String, Option<String>>,
    line: &str,
) -> Result<String> {
    let line: Line = serde_json::from_str(line)?;
    let request = AdmissionRequest::from_value(line.request)?;
    let policy = Policy {
        settings: line.settings.unwrap_or_else(|| policy.settings.clone()),
        ..policy.clone()
    };
    let key = serde_json::to_string(&policy.settings)?;
    if !verdicts.contains_key(&key) {
        let settings = compiled
            .instance(host.clone())?
            .validate_settings(&policy.settings);
        let verdict = (!settings.valid).then(|| {
            format!(
                "Provided settings are not valid: {}",
                settings.message.unwrap_or_default()
            )
        });
        verdicts.insert(key.clone(), verdict);
    }
    if let Some(Some(error)) = verdicts.get(&key) {
        return Err(anyhow!("{error}"));
    }
    let response = compiled.instance(host.clone())?.validate(&request, &policy);
    Ok(serde_json::to_string(&response)?)
}
