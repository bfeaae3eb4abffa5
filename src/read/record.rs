//! The decision record: what a Pod template the policy decided carries (annotation
//! [`DECISION_ANNOTATION`]) so that the Pods a controller creates from it reuse the decision,
//! with no lookup and no Node read. The record is `<unix seconds>/<fingerprint>`: when the
//! template was decided, and a fingerprint of what decided it, as the policy left the template:
//! the policy's version, the settings, the images of every kind, and the fields of the spec and
//! the annotations the decision reads or writes (OS, RuntimeClass, bound Node, nodeSelector, node
//! affinity, scheduling gates, the policy's own annotations). Tolerations are left out: the API
//! server adds its own to every Pod (DefaultTolerationSeconds), and a pinned Pod's tolerations
//! never take it off the architectures it is pinned to. A Pod reuses the record while it is
//! younger than `templateDecisionSeconds` and the Pod's fingerprint is the template's: any
//! difference (an image, a container another webhook added, a nodeSelector merged in, other
//! settings, another version of the policy) is decided as any Pod. A forged record can only
//! mis-place the Pod that carries it.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::read::pod::{ARCHITECTURES_ANNOTATION, PREFERRED_ANNOTATION};
use crate::settings::Settings;

/// Annotation in which a decided Pod template records its decision for its Pods.
pub const DECISION_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/decision";

/// The record of the decision on `pod` (a Pod template as the policy left it) at `now` (seconds
/// since the Unix epoch).
pub fn record(pod: &Value, settings: &Settings, now: u64) -> String {
    format!("{now}/{:016x}", fingerprint(pod, settings))
}

/// Whether `pod` carries a record (`record`) a Pod created at `now` reuses: the same
/// fingerprint, decided less than `templateDecisionSeconds` ago.
pub fn reusable(pod: &Value, settings: &Settings, now: u64) -> bool {
    let Some((at, print)) = recorded(pod).and_then(|record| record.split_once('/')) else {
        return false;
    };
    let age = at.parse::<u64>().ok().and_then(|at| now.checked_sub(at));
    age.is_some_and(|age| age < settings.template_decision_seconds)
        && print == format!("{:016x}", fingerprint(pod, settings))
}

/// The record `pod` carries, if any.
pub fn recorded(pod: &Value) -> Option<&str> {
    pod["metadata"]["annotations"][DECISION_ANNOTATION].as_str()
}

/// A fingerprint of what decides `pod` (see the module's header).
fn fingerprint(pod: &Value, settings: &Settings) -> u64 {
    let spec = &pod["spec"];
    let annotations = &pod["metadata"]["annotations"];
    let mut print = Print(DefaultHasher::new());
    print.text(env!("CARGO_PKG_VERSION"));
    settings.hash(&mut print.0);
    for (kind, image) in [
        ("containers", "/image"),
        ("initContainers", "/image"),
        ("ephemeralContainers", "/image"),
        ("volumes", "/image/reference"),
    ] {
        print.text(kind);
        for item in spec[kind].as_array().into_iter().flatten() {
            print.value(item.pointer(image).unwrap_or(&Value::Null));
        }
    }
    for field in [
        "nodeName",
        "nodeSelector",
        "os",
        "runtimeClassName",
        "schedulingGates",
    ] {
        print.text(field);
        print.value(&spec[field]);
    }
    print.text("nodeAffinity");
    print.value(&spec["affinity"]["nodeAffinity"]);
    for annotation in [ARCHITECTURES_ANNOTATION, PREFERRED_ANNOTATION] {
        print.text(annotation);
        print.value(&annotations[annotation]);
    }
    print.0.finish()
}

/// A fingerprint being taken: each value as JSON without what the API server drops when it
/// stores an object (null, empty lists and objects: `omitempty`), so that a template as the
/// policy wrote it and a Pod made from it read alike; keys in order (serde_json's sorted map).
struct Print(DefaultHasher);

impl Print {
    fn text(&mut self, text: &str) {
        self.0.write_usize(text.len());
        self.0.write(text.as_bytes());
    }

    fn value(&mut self, value: &Value) {
        if void(value) {
            return;
        }
        match value {
            Value::Array(items) => {
                self.0.write_u8(b'[');
                for item in items {
                    self.value(item);
                }
                self.0.write_u8(b']');
            }
            Value::Object(fields) => {
                self.0.write_u8(b'{');
                for (key, field) in fields.iter().filter(|(_, field)| !void(field)) {
                    self.text(key);
                    self.value(field);
                }
                self.0.write_u8(b'}');
            }
            Value::String(text) => self.text(text),
            other => self.text(&other.to_string()),
        }
    }
}

/// Whether `value` is nothing once stored: null, or a list or object of nothing.
fn void(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().all(void),
        Value::Object(fields) => fields.values().all(void),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Value {
        json!({
            "metadata": {"annotations": {ARCHITECTURES_ANNOTATION: "arm64"}},
            "spec": {
                "containers": [{"name": "app", "image": "ghcr.io/org/app:1"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]}}},
                "tolerations": [],
            }
        })
    }

    fn hour() -> Settings {
        Settings {
            template_decision_seconds: 3600,
            ..Settings::default()
        }
    }

    fn with_record(mut pod: Value, record: String) -> Value {
        pod["metadata"]["annotations"][DECISION_ANNOTATION] = json!(record);
        pod
    }

    #[test]
    fn a_pod_made_from_the_template_reuses_its_record_while_it_is_young() {
        let settings = hour();
        let record = record(&template(), &settings, 1_000);
        assert_eq!(record.len(), "1000/".len() + 16);
        // The Pod as the API server made it: empty fields dropped, its own tolerations added.
        let mut pod = with_record(template(), record.clone());
        pod["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/not-ready",
            "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]);
        pod["spec"]["nodeSelector"] = json!({});
        assert!(reusable(&pod, &settings, 1_000));
        assert!(reusable(&pod, &settings, 1_000 + 3_599));
        assert!(!reusable(&pod, &settings, 1_000 + 3_600));
        assert!(!reusable(&pod, &settings, 999), "decided in the future");
        let never = Settings {
            template_decision_seconds: 0,
            ..Settings::default()
        };
        assert!(!reusable(&pod, &never, 1_000));
    }

    #[test]
    fn any_difference_in_what_decides_is_not_reused() {
        let settings = hour();
        let record = record(&template(), &settings, 1_000);
        let pod = with_record(template(), record.clone());
        assert!(reusable(&pod, &settings, 1_001));
        let changes: [(&str, Value); 6] = [
            ("/spec/containers/0/image", json!("ghcr.io/org/app:2")),
            ("/spec/nodeName", json!("node-1")),
            ("/spec/nodeSelector", json!({"kubernetes.io/arch": "amd64"})),
            ("/spec/affinity/nodeAffinity", json!({})),
            ("/spec/os", json!({"name": "windows"})),
            (
                "/metadata/annotations/image-arch-affinity.kubewarden.io~1architectures",
                json!("amd64"),
            ),
        ];
        for (path, value) in changes {
            let mut changed = pod.clone();
            match changed.pointer_mut(path) {
                Some(field) => *field = value,
                None => {
                    let (parent, key) = path.rsplit_once('/').unwrap_or_default();
                    changed.pointer_mut(parent).unwrap()[key] = value;
                }
            }
            assert!(!reusable(&changed, &settings, 1_001), "{path}");
        }
        let mut sidecar = pod.clone();
        sidecar["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "proxy", "image": "envoy:1"}));
        assert!(!reusable(&sidecar, &settings, 1_001));
        let other = Settings {
            read_nodes: true,
            ..hour()
        };
        assert!(!reusable(&pod, &other, 1_001));
        for broken in ["", "1000", "x/y", &format!("1000/{}", "0".repeat(16))] {
            assert!(!reusable(
                &with_record(template(), broken.into()),
                &settings,
                1_001
            ));
        }
    }
}
