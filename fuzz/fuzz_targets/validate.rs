//! The whole `validate` path: arbitrary request bytes, arbitrary host answers, image lookups and
//! Node reads (lists and gets) alike.
//!
//! Input layout: the request payload, then host answers, separated by 0xFF bytes (never valid in
//! UTF-8 JSON). Answers are served in turn to every host call; an answer starting with `!` is a
//! host error. Checked on every input: the answer is a well-formed ValidationResponse; every Node
//! label selector sent is one of the fixed set (`selectors::all`); and, when the settings are
//! ones the policy loads, every node label value the mutation adds is a valid label value.
#![no_main]

use image_arch_affinity::host::cluster::Cluster;
use image_arch_affinity::read::selectors;
use image_arch_affinity::host::registry::Registry;
use image_arch_affinity::settings::names::check_label_value;
use image_arch_affinity::settings::Settings;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::cell::RefCell;

struct Answers<'a> {
    answers: Vec<&'a [u8]>,
    next: usize,
    selectors: Vec<String>,
}

impl Answers<'_> {
    fn answer(&mut self) -> Result<Vec<u8>, String> {
        if self.answers.is_empty() {
            return Err("Host error: no answer".into());
        }
        let answer = self.answers[self.next % self.answers.len()];
        self.next += 1;
        match answer.strip_prefix(b"!") {
            Some(error) => Err(String::from_utf8_lossy(error).into_owned()),
            None => Ok(answer.to_vec()),
        }
    }
}

/// One queue of answers for the image lookups and the Node reads alike.
struct Host<'a>(RefCell<Answers<'a>>);

impl Registry for &Host<'_> {
    fn manifest(&mut self, _image: &str) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().answer()
    }

    fn manifest_and_config(&mut self, _image: &str) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().answer()
    }
}

impl Cluster for &Host<'_> {
    fn list_nodes(&mut self, selector: &str, _masks: &[&str]) -> Result<Vec<u8>, String> {
        let mut answers = self.0.borrow_mut();
        answers.selectors.push(selector.to_string());
        answers.answer()
    }

    fn get_node(&mut self, _name: &str, _masks: &[&str]) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().answer()
    }

    fn list_node_pools(&mut self, _masks: &[&str]) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().answer()
    }

    fn get_runtime_class(&mut self, _name: &str) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().answer()
    }
}

/// Every node label value in `value`: the values of expressions and tolerations.
fn label_values<'v>(value: &'v Value, found: &mut Vec<&'v str>) {
    match value {
        Value::Object(map) => {
            if map.contains_key("operator") {
                let values = map.get("values").and_then(Value::as_array);
                found.extend(values.into_iter().flatten().filter_map(Value::as_str));
                found.extend(map.get("value").and_then(Value::as_str));
            }
            map.values().for_each(|v| label_values(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| label_values(v, found)),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0xFF);
    let request = parts.next().unwrap_or_default();
    let host = Host(RefCell::new(Answers {
        answers: parts.collect(),
        next: 0,
        selectors: Vec::new(),
    }));
    let response =
        image_arch_affinity::validate_payload_in_cluster(request, &mut &host, &mut &host);
    // The answer is always a well-formed ValidationResponse.
    let value: Value = serde_json::from_slice(&response).expect("response is JSON");
    assert!(value["accepted"].is_boolean(), "{value}");
    // Selectors from the fixed set only.
    let fixed = selectors::all();
    for selector in &host.0.borrow().selectors {
        assert!(fixed.contains(selector), "selector outside the fixed set: {selector}");
    }
    // No added node label value fails the label-value rule, for settings the policy loads.
    let Ok(payload) = serde_json::from_slice::<Value>(request) else {
        return;
    };
    let loads = serde_json::to_vec(&payload["settings"])
        .ok()
        .and_then(|s| Settings::from_json(&s).ok())
        .is_some_and(|settings| settings.validate().is_ok());
    let (Some(mutated), true) = (value.get("mutated_object"), loads) else {
        return;
    };
    let original = &payload["request"]["object"];
    let patch = json_patch::diff(original, mutated);
    let patch = serde_json::to_value(&patch).expect("a patch serializes");
    let mut values = Vec::new();
    label_values(&patch, &mut values);
    for value in values {
        assert!(check_label_value(value).is_ok(), "patch label value {value:?}");
    }
});
