//! Surgical edits of raw JSON: reach a nested object or array, creating what is missing, and never
//! touching anything else. An existing value of another type is left alone (the edit is skipped),
//! so malformed input can never make the policy panic.

use serde_json::{Map, Value};

/// The value at `path` below `value`, every missing (or null) step created as an object.
fn value_at<'a>(value: &'a mut Value, path: &[&str], leaf: fn() -> Value) -> Option<&'a mut Value> {
    let mut current = value;
    for (depth, key) in path.iter().enumerate() {
        let map = current.as_object_mut()?;
        let child = map.entry(*key).or_insert(Value::Null);
        if child.is_null() {
            *child = if depth + 1 == path.len() {
                leaf()
            } else {
                Value::Object(Map::new())
            };
        }
        current = child;
    }
    Some(current)
}

/// The object at `path`, created if missing.
pub fn object_at<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    value_at(value, path, || Value::Object(Map::new()))?.as_object_mut()
}

/// The array at `path`, created if missing.
pub fn array_at<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Vec<Value>> {
    value_at(value, path, || Value::Array(Vec::new()))?.as_array_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn creates_missing_steps_and_keeps_everything_else() {
        let mut pod = json!({"spec": {"x-unknown": 1, "affinity": null}});
        array_at(&mut pod, &["spec", "affinity", "nodeAffinity", "list"])
            .unwrap()
            .push(json!(1));
        assert_eq!(
            pod,
            json!({"spec": {"x-unknown": 1, "affinity": {"nodeAffinity": {"list": [1]}}}})
        );
    }

    #[test]
    fn leaves_other_types_alone() {
        let mut pod = json!({"spec": {"affinity": "garbage"}});
        assert!(object_at(&mut pod, &["spec", "affinity", "nodeAffinity"]).is_none());
        assert!(array_at(&mut json!([1]), &["a"]).is_none());
        assert_eq!(pod, json!({"spec": {"affinity": "garbage"}}));
    }
}
