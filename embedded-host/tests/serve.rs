//! `embedded-host serve`: the conformance cases that make no host call (their recorded session is
//! empty) sent to one serve process per module, one line each with its own settings, answered
//! as kwctl answered each in its own `kwctl run`: the same AdmissionResponse, or kwctl's error
//! text. Needs `make policy.wasm` and the trivial module (`make host-tests` builds both).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn module(kind: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root().join("target"), PathBuf::from);
    let module = match kind {
        "policy" => root().join("policy.wasm"),
        _ => target.join("wasm32-wasip1/release/trivial_policy.wasm"),
    };
    assert!(
        module.exists(),
        "{module:?} is missing: run `make host-tests`"
    );
    module
}

/// The `--settings-json` of a case's flags (`{}` without one).
fn settings(flags: &[Value]) -> Value {
    flags
        .iter()
        .position(|f| f == "--settings-json")
        .map(|i| serde_json::from_str(flags[i + 1].as_str().unwrap()).unwrap())
        .unwrap_or(json!({}))
}

/// A recorded case: its name, request, settings and kwctl's answer.
struct Case {
    name: String,
    request: Value,
    settings: Value,
    kwctl: Value,
}

#[test]
fn serve_answers_each_line_as_kwctl_run_answered_each_case() {
    let cases = root().join("conformance/cases");
    let mut by_module: std::collections::BTreeMap<String, Vec<Case>> = Default::default();
    let mut names: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for case in names {
        let spec = json(&case.join("case.json"));
        let flags = spec["flags"].as_array().unwrap();
        let session = std::fs::read_to_string(case.join("session.yml")).unwrap();
        // Cases with host calls, grants or settings that are no object are `run`'s to show.
        if session.trim() != "[]"
            || flags
                .iter()
                .any(|f| f.as_str().unwrap().starts_with("--allowed"))
            || !settings(flags).is_object()
        {
            continue;
        }
        by_module
            .entry(spec["module"].as_str().unwrap().to_string())
            .or_default()
            .push(Case {
                name: case.file_name().unwrap().to_string_lossy().to_string(),
                request: json(&case.join("request.json")),
                settings: settings(flags),
                kwctl: json(&case.join("kwctl.json")),
            });
    }
    let count: usize = by_module.values().map(Vec::len).sum();
    assert!(count >= 9, "{count} cases make no host call");
    for (kind, cases) in by_module {
        let mut serve = Command::new(env!("CARGO_BIN_EXE_embedded-host"))
            .arg("serve")
            .arg(module(&kind))
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = serve.stdin.take().unwrap();
        let mut output = BufReader::new(serve.stdout.take().unwrap());
        for Case {
            name,
            request,
            settings,
            kwctl,
        } in cases
        {
            let line = json!({"request": request, "settings": settings});
            writeln!(input, "{line}").unwrap();
            let mut answer = String::new();
            output.read_line(&mut answer).unwrap();
            let answer: Value = serde_json::from_str(&answer).unwrap();
            let expected: Value = match kwctl["exit"].as_i64() {
                Some(0) => serde_json::from_str(kwctl["stdout"].as_str().unwrap()).unwrap(),
                _ => {
                    json!({"error": kwctl["error"].as_str().unwrap().trim_start_matches("Error: ")})
                }
            };
            assert_eq!(answer, expected, "{name}");
        }
        drop(input);
        assert!(serve.wait().unwrap().success());
    }
}
