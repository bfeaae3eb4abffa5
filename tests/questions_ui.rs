//! questions-ui.yml (the settings form Rancher shows for the policy) matches the settings: every
//! variable names a setting, every default has the setting's shape, and the settings a user gets
//! by accepting the form as it comes are accepted by `validate_settings` (the same entry point
//! the host calls when it loads the policy).

use image_arch_affinity::settings::Settings;
use image_arch_affinity::validate_settings_payload;
use serde_json::{json, Map, Value};

/// Every question of questions-ui.yml, as JSON (subquestions and sequence_questions nested).
fn questions() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/questions-ui.yml");
    let text = std::fs::read_to_string(path).expect("questions-ui.yml is readable");
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).expect("questions-ui.yml is YAML");
    let json = serde_json::to_value(yaml).expect("questions-ui.yml converts to JSON");
    json["questions"]
        .as_array()
        .expect("questions-ui.yml has a list of questions")
        .clone()
}

/// The hidden text block Kubewarden's forms open with: not a setting.
fn is_description(question: &Value) -> bool {
    question["variable"] == "description"
}

fn variable(question: &Value) -> &str {
    question["variable"]
        .as_str()
        .expect("every question has a variable")
}

/// The settings questions: top-level ones and the subquestions of maps (dotted variables).
fn setting_questions() -> Vec<Value> {
    let mut out = Vec::new();
    for question in questions() {
        if is_description(&question) {
            continue;
        }
        if let Some(subquestions) = question["subquestions"].as_array() {
            out.extend(subquestions.iter().cloned());
        }
        out.push(question);
    }
    out
}

/// Sets `value` at a dotted variable (`architectureTolerations.arm64`) in `settings`.
fn set(settings: &mut Map<String, Value>, dotted: &str, value: Value) {
    match dotted.split_once('.') {
        None => {
            // A map question and its subquestions both set the map: keep what the
            // subquestions wrote.
            if !(value.is_object() && settings.contains_key(dotted)) {
                settings.insert(dotted.to_string(), value);
            }
        }
        Some((head, rest)) => {
            let inner = settings
                .entry(head.to_string())
                .or_insert_with(|| json!({}));
            let inner = inner
                .as_object_mut()
                .expect("a dotted variable's parent is a map");
            set(inner, rest, value);
        }
    }
}

fn validate(settings: &Map<String, Value>) -> Value {
    let payload = serde_json::to_vec(settings).expect("settings serialize");
    serde_json::from_slice(&validate_settings_payload(&payload)).expect("the policy answers JSON")
}

/// What `validate_settings` answers for valid settings.
fn valid() -> Value {
    json!({"valid": true, "message": null})
}

#[test]
fn the_form_as_it_comes_is_valid() {
    let mut settings = Map::new();
    // Subquestions come before their map in setting_questions(), and set() keeps them.
    for question in setting_questions() {
        set(
            &mut settings,
            variable(&question),
            question["default"].clone(),
        );
    }
    assert_eq!(validate(&settings), valid(), "settings: {settings:#?}");
    // Every setting that has a question is in there, and nothing else.
    let mut names: Vec<&str> = settings.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "architectureTolerations",
            "autoscaledArchitectures",
            "clusterOperatingSystems",
            "daemonSetTemplates",
            "defaultOperatingSystem",
            "fallbackArchitectures",
            "imagePlatforms",
            "lookupBudgetMilliseconds",
            "matchNodeLabels",
            "onLookupFailure",
            "onNoCommonArchitecture",
            "pinWindowsBuild",
            "preferredArchitecture",
            "preferredArchitectureWeight",
            "preferredArchitectures",
            "readNodes",
            "registryMirrors",
            "schedulableArchitectures",
            "templateDecisionSeconds",
            "wasmRuntimeClasses",
            "workloadTemplates",
        ]
    );
}

#[test]
fn each_variable_names_a_setting_and_its_default_is_valid_alone() {
    // The check below can fail: settings reject a name they do not know.
    let unknown = validate(&Map::from_iter([(
        "architectureToleration".into(),
        json!({}),
    )]));
    assert_eq!(unknown["valid"], false);
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field `architectureToleration`")),
        "{unknown}"
    );
    for question in setting_questions() {
        let mut settings = Map::new();
        set(
            &mut settings,
            variable(&question),
            question["default"].clone(),
        );
        assert_eq!(
            validate(&settings),
            valid(),
            "question {}",
            variable(&question)
        );
    }
}

#[test]
fn defaults_have_the_shape_of_the_question_type() {
    for question in setting_questions() {
        let name = variable(&question);
        let default = &question["default"];
        let kind = question["type"]
            .as_str()
            .expect("every question has a type");
        let fits = match kind {
            "string" => default.is_string() || default.is_null(),
            "int" => default.is_i64(),
            "boolean" => default.is_boolean(),
            "enum" => question["options"]
                .as_array()
                .is_some_and(|options| options.contains(default)),
            "array[" | "sequence[" => default.is_array(),
            "map[" => default.is_object(),
            other => panic!("question {name}: type {other:?} not checked by this test"),
        };
        assert!(fits, "question {name}: default {default} is not a {kind}");
    }
}

#[test]
fn every_enum_option_and_int_bound_is_valid() {
    for question in setting_questions() {
        let name = variable(&question);
        let mut values: Vec<Value> = Vec::new();
        if let Some(options) = question["options"].as_array() {
            values.extend(options.iter().cloned());
        }
        for bound in ["min", "max"] {
            if !question[bound].is_null() {
                values.push(question[bound].clone());
            }
        }
        for value in values {
            let mut settings = Map::new();
            set(&mut settings, name, value.clone());
            assert_eq!(validate(&settings), valid(), "question {name} = {value}");
        }
        // Just outside the bounds is rejected: the form's bounds are the settings' bounds.
        if let (Some(min), Some(max)) = (question["min"].as_i64(), question["max"].as_i64()) {
            for outside in [min - 1, max + 1] {
                let mut settings = Map::new();
                set(&mut settings, name, json!(outside));
                assert_eq!(
                    validate(&settings)["valid"],
                    false,
                    "question {name} = {outside}"
                );
            }
        }
    }
}

#[test]
fn a_sequence_entry_added_with_the_form_defaults_has_the_setting_shape() {
    let mut checked = Vec::new();
    for question in setting_questions() {
        let Some(fields) = question["sequence_questions"].as_array() else {
            continue;
        };
        let name = variable(&question);
        let entry: Map<String, Value> = fields
            .iter()
            .map(|field| (variable(field).to_string(), field["default"].clone()))
            .collect();
        let mut settings = Map::new();
        set(&mut settings, name, json!([entry]));
        let payload = serde_json::to_vec(&settings).expect("settings serialize");
        // Parsing checks the field names and types (settings deny unknown fields).
        let parsed = Settings::from_json(&payload);
        assert!(parsed.is_ok(), "question {name}: {parsed:?}");
        // A toleration from the form's defaults is the usual arch taint's toleration, a weighted
        // preference arm64 at 50: valid.
        if name.starts_with("architectureTolerations.") || name == "preferredArchitectures" {
            assert_eq!(validate(&settings), valid(), "question {name}");
        }
        checked.push(name.to_string());
    }
    assert_eq!(
        checked,
        [
            "imagePlatforms",
            "preferredArchitectures",
            "architectureTolerations.amd64",
            "architectureTolerations.arm64",
            "architectureTolerations.ppc64le",
            "architectureTolerations.s390x",
            "autoscaledArchitectures",
        ]
    );
}
