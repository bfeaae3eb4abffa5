//! The conformance corpus (conformance/cases/, recorded with kwctl 1.35.0 by
//! conformance/record.sh) replayed through the embedded host: for every case, the same exit code
//! and error line, and the same verdict, status, warnings and patched object (the objects the two
//! patches produce, not the patch texts). Needs `make policy.wasm` and the trivial module
//! (`make host-tests` builds both).

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// The module a case runs: the policy (with metadata.yml beside it), the trivial module, or the
/// case's manifest with `module:` pointing at the policy.
fn module(case: &Path, kind: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root().join("target"), PathBuf::from);
    let (policy, trivial) = (
        root().join("policy.wasm"),
        target.join("wasm32-wasip1/release/trivial_policy.wasm"),
    );
    let module = match kind {
        "policy" | "manifest" => policy,
        "trivial" => trivial,
        other => panic!("{case:?}: unknown module {other}"),
    };
    assert!(
        module.exists(),
        "{module:?} is missing: run `make host-tests`"
    );
    if kind != "manifest" {
        return module;
    }
    let manifest = std::fs::read_to_string(case.join("manifest.yaml")).expect("manifest.yaml");
    let path = std::env::temp_dir().join(format!(
        "conformance-{}-{}.yaml",
        std::process::id(),
        case.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(
        &path,
        manifest.replace(
            "MODULE",
            &format!("file://{}", module.canonicalize().unwrap().display()),
        ),
    )
    .unwrap();
    path
}

/// What a response says, with its patch applied to the request's object.
fn outcome(stdout: &str, object: &Value) -> Value {
    let mut response: Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not a response ({e}): {stdout}"));
    let patched = response.get("patch").and_then(Value::as_str).map(|patch| {
        let patch = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
        let mut patched = object.clone();
        json_patch::patch(&mut patched, &patch).unwrap();
        patched
    });
    let fields = response.as_object_mut().unwrap();
    fields.remove("patch");
    fields.insert("patchedObject".into(), patched.into());
    response
}

#[test]
fn the_embedded_host_answers_every_recorded_case_as_kwctl_did() {
    let cases = root().join("conformance/cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 50, "the corpus has {} cases", names.len());
    let mut failures = Vec::new();
    for case in &names {
        let spec = json(&case.join("case.json"));
        let kwctl = json(&case.join("kwctl.json"));
        let flags: Vec<&str> = spec["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let output = Command::new(env!("CARGO_BIN_EXE_embedded-host"))
            .arg("run")
            .arg("--request-path")
            .arg(case.join("request.json"))
            .arg("--replay-host-capabilities-interactions")
            .arg(case.join("session.yml"))
            .args(&flags)
            .arg(module(case, spec["module"].as_str().unwrap()))
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_string();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let error = stderr
            .lines()
            .find(|l| l.starts_with("Error: "))
            .unwrap_or("");
        let name = case.file_name().unwrap().to_string_lossy();
        if output.status.code() != kwctl["exit"].as_i64().map(|c| c as i32)
            || error != kwctl["error"]
        {
            failures.push(format!(
                "{name}: exit {:?} {error:?}, kwctl: exit {} {}",
                output.status.code(),
                kwctl["exit"],
                kwctl["error"]
            ));
            continue;
        }
        if output.status.success() {
            let object = request_object(&json(&case.join("request.json")));
            let (ours, theirs) = (
                outcome(&stdout, &object),
                outcome(kwctl["stdout"].as_str().unwrap(), &object),
            );
            if ours != theirs {
                failures.push(format!(
                    "{name}:\n  embedded host: {ours}\n  kwctl:         {theirs}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from kwctl:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

/// The object a patch applies to: the request's, or an AdmissionReview's request's.
fn request_object(request: &Value) -> Value {
    match request["kind"].as_str() {
        Some("AdmissionReview") => request["request"]["object"].clone(),
        _ => request["object"].clone(),
    }
}
