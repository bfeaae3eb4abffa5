//! Reading an admission object sparsely and writing it back. The decision only reads (and edits) a
//! few fields of a Pod: its images, scheduling fields and some metadata. Those are parsed into a
//! `serde_json::Value` (the *view*); everything else (env, volumes, probes, managedFields, most of
//! the status, fields this policy has never heard of...) is skipped while parsing and, when the
//! Pod is mutated, copied back from the request as it came (each value's text verbatim). Building,
//! writing and dropping the whole object was most of the policy's own work per admission.
//!
//! The fields held in the view are written back by serde_json: the same values, though not
//! necessarily the same text (escapes, number forms). Every test run through `tests/common`
//! checks that this path decides and mutates exactly as the whole object would.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Which parts of an object the view holds.
#[derive(Debug)]
pub enum Shape {
    /// Parsed whole into the view; written back from the view (so edits show).
    Whole,
    /// An object of which only these fields are parsed; the others are kept as raw JSON.
    Fields(&'static [(&'static str, Shape)]),
    /// A list whose items have this shape (containers: only their name and image are parsed).
    List(&'static Shape),
}

use Shape::{Fields, List, Whole};

/// Containers: their name (for messages after admission) and image.
const CONTAINERS: Shape = List(&Fields(&[("name", Whole), ("image", Whole)]));

/// Image volumes: a volume's name and its image's reference.
const VOLUMES: Shape = List(&Fields(&[
    ("name", Whole),
    ("image", Fields(&[("reference", Whole)])),
]));

/// Container statuses: what shows a container ran its image (`read::pod_update::started_images`).
const STATUSES: Shape = List(&Fields(&[
    ("name", Whole),
    ("image", Whole),
    ("started", Whole),
    ("state", Whole),
]));

/// A Pod's status: its containers' (read after admission only).
const STATUS: Shape = Fields(&[
    ("containerStatuses", STATUSES),
    ("initContainerStatuses", STATUSES),
    ("ephemeralContainerStatuses", STATUSES),
]);

const METADATA: Shape = Fields(&[
    ("annotations", Whole),
    ("labels", Whole),
    ("ownerReferences", Whole),
]);

/// What the decision reads and edits in a Pod's (or a Pod template's) spec (see `pod`,
/// `read::constraint`, `edit::affinity`, `edit::tolerations`, `decide`), plus `$extra` fields.
macro_rules! pod_spec {
    ($($extra:expr),*) => {
        Fields(&[
            ("nodeName", Whole),
            ("nodeSelector", Whole),
            ("affinity", Whole),
            ("tolerations", Whole),
            ("os", Whole),
            ("runtimeClassName", Whole),
            ("schedulingGates", Whole),
            ("containers", CONTAINERS),
            ("initContainers", CONTAINERS),
            ("ephemeralContainers", CONTAINERS),
            ("volumes", VOLUMES),
            $($extra),*
        ])
    };
}

/// A Pod template.
const POD: Shape = Fields(&[("metadata", METADATA), ("spec", pod_spec!())]);

/// What the decision reads and edits in any admission object: a Pod, or a workload (its owners
/// and its Pod template, see `workload::template_path`). One shape for every kind, so the object
/// is read while the request is parsed, whatever the order of its fields.
pub const OBJECT: Shape = Fields(&[
    ("metadata", METADATA),
    ("status", STATUS),
    (
        "spec",
        pod_spec!(
            ("template", POD),
            (
                "jobTemplate",
                Fields(&[("spec", Fields(&[("template", POD)]))])
            )
        ),
    ),
]);

/// An object read sparsely: the view the decision works on, and how to write it back.
#[derive(Debug)]
pub struct Sparse<'a> {
    pub view: Value,
    skeleton: Skeleton<'a>,
}

/// How to write one value back: from the view, verbatim, or as an object or list of both.
#[derive(Debug)]
enum Skeleton<'a> {
    FromView,
    Verbatim(&'a RawValue),
    /// The object's fields in the request's order.
    Object(Vec<(Cow<'a, str>, Skeleton<'a>)>),
    /// The list's items.
    List(Vec<Skeleton<'a>>),
}

/// Reads an admission object to [`OBJECT`] while the request is parsed.
impl<'de: 'a, 'a> Deserialize<'de> for Sparse<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (view, skeleton) = Seed(&OBJECT).deserialize(deserializer)?;
        Ok(Sparse { view, skeleton })
    }
}

impl<'a> Sparse<'a> {
    /// Reads an object given as JSON text.
    pub fn read(json: &'a str) -> serde_json::Result<Sparse<'a>> {
        serde_json::from_str(json)
    }

    /// The whole object as JSON, with `view` (the view after the decision's edits) in place of
    /// the parts it holds.
    pub fn write(&self, view: &Value) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(1024);
        write(&self.skeleton, view, &mut out)?;
        Ok(out)
    }
}

fn write(skeleton: &Skeleton<'_>, view: &Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let (entries, fields) = match (skeleton, view) {
        (Skeleton::Verbatim(raw), _) => {
            out.extend_from_slice(raw.get().as_bytes());
            return Ok(());
        }
        (Skeleton::Object(entries), Value::Object(fields)) => (entries, fields),
        (Skeleton::List(items), Value::Array(views)) => {
            if items.len() != views.len() {
                // The view of a list holds its items' shape only: it cannot stand for the items.
                return Err(serde::ser::Error::custom(
                    "a list of the object was resized by the decision",
                ));
            }
            out.push(b'[');
            for (index, (item, view)) in items.iter().zip(views).enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write(item, view, out)?;
            }
            out.push(b']');
            return Ok(());
        }
        _ => return serde_json::to_writer(out, view),
    };
    // A key given twice is written twice, as it came: whoever parses the object keeps the last,
    // as the decision's view did.
    out.push(b'{');
    let mut first = true;
    let mut key_of = |out: &mut Vec<u8>, key: &str| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        write_key(key, out);
    };
    for (key, part) in entries {
        let value = match part {
            Skeleton::Verbatim(_) => &Value::Null,
            _ => match fields.get(key.as_ref()) {
                Some(value) => value,
                None => continue, // not in the view any more
            },
        };
        key_of(out, key);
        write(part, value, out)?;
    }
    // Fields the decision created.
    for (key, value) in fields {
        if !entries.iter().any(|(existing, _)| existing == key) {
            key_of(out, key);
            serde_json::to_writer(&mut *out, value)?;
        }
    }
    out.push(b'}');
    Ok(())
}

/// `"key":`, escaped only if it needs to be.
fn write_key(key: &str, out: &mut Vec<u8>) {
    if key.contains(['"', '\\']) || key.contains(char::is_control) {
        let _ = serde_json::to_writer(&mut *out, key);
    } else {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
    }
    out.push(b':');
}

/// Parses one value to a shape: its view and its skeleton.
struct Seed(&'static Shape);

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = (Value, Skeleton<'de>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        match self.0 {
            Whole => Ok((Value::deserialize(deserializer)?, Skeleton::FromView)),
            shape => deserializer.deserialize_any(Shaped(shape)),
        }
    }
}

/// An object or list read to its shape; a value of any other type is parsed whole.
struct Shaped(&'static Shape);

impl<'de> Visitor<'de> for Shaped {
    type Value = (Value, Skeleton<'de>);

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Fields(fields) = self.0 else {
            let whole = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
            return Ok((whole, Skeleton::FromView));
        };
        let mut view = Map::new();
        let mut entries = Vec::new();
        while let Some(Text(key)) = map.next_key()? {
            match fields.iter().find(|(name, _)| *name == key) {
                Some((_, shape)) => {
                    let (value, skeleton) = map.next_value_seed(Seed(shape))?;
                    view.insert(key.to_string(), value);
                    entries.push((key, skeleton));
                }
                None => {
                    let raw: &'de RawValue = map.next_value()?;
                    entries.push((key, Skeleton::Verbatim(raw)));
                }
            }
        }
        Ok((Value::Object(view), Skeleton::Object(entries)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Some(item) = (match self.0 {
            List(item) => Some(item),
            _ => None,
        }) else {
            let whole = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
            return Ok((whole, Skeleton::FromView));
        };
        let mut views = Vec::new();
        let mut items = Vec::new();
        while let Some((view, skeleton)) = seq.next_element_seed(Seed(item))? {
            views.push(view);
            items.push(skeleton);
        }
        Ok((Value::Array(views), Skeleton::List(items)))
    }

    fn visit_bool<E>(self, value: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(value), Skeleton::FromView))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Self::Value, E> {
        Ok((Value::from(value), Skeleton::FromView))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Self::Value, E> {
        Ok((Value::from(value), Skeleton::FromView))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Self::Value, E> {
        Ok((Value::from(value), Skeleton::FromView))
    }

    fn visit_str<E>(self, value: &str) -> Result<Self::Value, E> {
        Ok((Value::from(value), Skeleton::FromView))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Skeleton::FromView))
    }
}

/// A JSON string (an object key, a value), borrowed from the JSON text unless it had escapes.
pub(crate) struct Text<'de>(pub Cow<'de, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_string())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(sparse: &Sparse<'_>, view: &Value) -> String {
        String::from_utf8(sparse.write(view).unwrap()).unwrap()
    }

    #[test]
    fn the_view_holds_only_what_the_decision_reads() {
        let sparse = Sparse::read(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"},"managedFields":[{"x":1}]},
               "spec":{"containers":[{"name":"c","image":"nginx","env":[{"name":"A","value":"1"}]},"junk"],
                       "volumes":[{"name":"v","emptyDir":{}},{"name":"m","image":{"reference":"r","pullPolicy":"Always"}}],
                       "tolerations":[{"key":"k"}],"os":null,"schedulingGates":[{"name":"g"}]},
               "status":{"phase":"Running","containerStatuses":[{"name":"c","image":"nginx","imageID":"x","started":true,"ready":true}]}}"#,
        )
        .unwrap();
        assert_eq!(
            sparse.view,
            json!({"metadata": {"labels": {"a": "b"}},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}, "junk"],
                            "volumes": [{"name": "v"}, {"name": "m", "image": {"reference": "r"}}],
                            "tolerations": [{"key": "k"}], "os": null, "schedulingGates": [{"name": "g"}]},
                   "status": {"containerStatuses": [{"name": "c", "image": "nginx", "started": true}]}})
        );
    }

    #[test]
    fn writes_back_every_value_it_did_not_change_verbatim() {
        let unusual = r#"{"n": 1.50e3, "s": "\u00e9\n", "big": 123456789012345678901234567890}"#;
        let json = format!(
            r#"{{"apiVersion":"v1","x-future":{unusual},"metadata":{{"name":"p","x":{unusual}}},"spec":{{"containers":[{{"image":"a", "x":{unusual}}}],"x":{unusual}}}}}"#
        );
        let sparse = Sparse::read(&json).unwrap();
        assert_eq!(
            written(&sparse, &sparse.view),
            format!(
                r#"{{"apiVersion":"v1","x-future":{unusual},"metadata":{{"name":"p","x":{unusual}}},"spec":{{"containers":[{{"image":"a","x":{unusual}}}],"x":{unusual}}}}}"#
            )
        );
    }

    #[test]
    fn writes_edits_and_created_fields() {
        let sparse =
            Sparse::read(r#"{"spec":{"containers":[{"image":"a"}],"tolerations":[],"z":1}}"#)
                .unwrap();
        let mut view = sparse.view.clone();
        view["spec"]["tolerations"] = json!([{"key": "arch"}]);
        view["spec"]["affinity"] = json!({"nodeAffinity": {}});
        view["metadata"] = json!({"annotations": {"a": "b"}});
        assert_eq!(
            written(&sparse, &view),
            r#"{"spec":{"containers":[{"image":"a"}],"tolerations":[{"key":"arch"}],"z":1,"affinity":{"nodeAffinity":{}}},"metadata":{"annotations":{"a":"b"}}}"#
        );
    }

    #[test]
    fn a_repeated_key_is_read_with_its_last_value() {
        let json = r#"{"spec":{"x":1},"a":1,"spec":{"containers":[{"image":"b"}],"y":2},"a":2}"#;
        let sparse = Sparse::read(json).unwrap();
        assert_eq!(
            sparse.view,
            json!({"spec": {"containers": [{"image": "b"}]}})
        );
        let written = written(&sparse, &sparse.view);
        // Written as it came (what the first `spec` lacks of the view is added to it); parsed, the
        // last of each key wins again.
        assert_eq!(
            written,
            r#"{"spec":{"x":1,"containers":[{"image":"b"}]},"a":1,"spec":{"containers":[{"image":"b"}],"y":2},"a":2}"#
        );
        assert_eq!(
            serde_json::from_str::<Value>(&written).unwrap(),
            serde_json::from_str::<Value>(json).unwrap()
        );
    }

    #[test]
    fn other_types_and_escaped_keys() {
        let sparse = Sparse::read(
            r#"{"spec":"not an object","metadata":[1,{"a":2}],"k\"ey":3,"\u0073pec2":{}}"#,
        )
        .unwrap();
        assert_eq!(
            sparse.view,
            json!({"spec": "not an object", "metadata": [1, {"a": 2}]})
        );
        assert_eq!(
            written(&sparse, &sparse.view),
            r#"{"spec":"not an object","metadata":[1,{"a":2}],"k\"ey":3,"spec2":{}}"#
        );
        let sparse = Sparse::read("[1]").unwrap();
        assert_eq!(sparse.view, json!([1]));
        assert_eq!(written(&sparse, &sparse.view), "[1]");
    }

    #[test]
    fn workloads_keep_their_template_and_owners() {
        let sparse = Sparse::read(
            r#"{"metadata":{"name":"d","ownerReferences":[]},"spec":{"replicas":3,
                "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"image":"a","name":"c"}]}},
                "jobTemplate":{"spec":{"template":{"spec":{"nodeName":"n"}},"parallelism":2}}}}"#,
        )
        .unwrap();
        assert_eq!(
            sparse.view,
            json!({"metadata": {"ownerReferences": []}, "spec": {
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"image": "a", "name": "c"}]}},
                "jobTemplate": {"spec": {"template": {"spec": {"nodeName": "n"}}}}}})
        );
    }
}
