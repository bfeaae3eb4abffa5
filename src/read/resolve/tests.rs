use super::*;
use std::collections::HashMap;

// ---- nested indexes ----

/// Manifests by reference; every call is counted.
#[derive(Default)]
struct Manifests(HashMap<String, String>, Vec<String>);

impl Registry for Manifests {
    fn manifest(&mut self, image: &str) -> Result<Vec<u8>, String> {
        self.1.push(image.to_string());
        self.0
            .get(image)
            .map(|body| body.clone().into_bytes())
            .ok_or_else(|| "Host error: manifest unknown".to_string())
    }
    fn manifest_and_config(&mut self, image: &str) -> Result<Vec<u8>, String> {
        Err(format!("no config for {image}"))
    }
}

fn short(n: u8) -> String {
    digest(n)[..19].to_string() + "…"
}

fn digest(n: u8) -> String {
    format!(
        "sha256:{}",
        format!("{n:x}")
            .repeat(64)
            .chars()
            .take(64)
            .collect::<String>()
    )
}

fn nested_entry(n: u8) -> String {
    format!(
        r#"{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"{}","size":1}}"#,
        digest(n)
    )
}

fn platform_entry(os: &str, arch: &str) -> String {
    format!(
        r#"{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":1,"platform":{{"os":"{os}","architecture":"{arch}"}}}}"#,
        digest(0xe)
    )
}

fn index_of(entries: &[String]) -> String {
    format!(
        r#"{{"schemaVersion":2,"manifests":[{}]}}"#,
        entries.join(",")
    )
}

fn resolve(registry: &mut Manifests, images: &[&str]) -> Vec<Result<Builds, String>> {
    let images: Vec<PodImage> = images
        .iter()
        .map(|&reference| PodImage {
            reference,
            volume: None,
        })
        .collect();
    resolve_images(&images, &Settings::default(), registry)
        .into_iter()
        .map(|image| match image.found {
            Learned::Built {
                platforms,
                left_out,
                webassembly,
            } => Ok(Builds {
                platforms,
                left_out,
                webassembly,
                platformless: false,
            }),
            Learned::Platformless => Ok(Builds {
                platformless: true,
                ..Builds::default()
            }),
            Learned::Failed(reason) => Err(reason),
        })
        .collect()
}

fn at(n: u8) -> String {
    format!("r.example.com/app@{}", digest(n))
}

#[test]
fn nested_indexes_are_read_by_digest_once_each() {
    let mut registry = Manifests::default();
    registry.0.insert(
        "r.example.com/app:1".into(),
        index_of(&[
            platform_entry("linux", "amd64"),
            nested_entry(1),
            nested_entry(2),
        ]),
    );
    registry
        .0
        .insert("r.example.com/app:2".into(), index_of(&[nested_entry(2)]));
    registry.0.insert(
        at(1),
        index_of(&[platform_entry("linux", "arm64"), nested_entry(2)]),
    );
    registry
        .0
        .insert(at(2), index_of(&[platform_entry("wasip1", "wasm")]));
    let found = resolve(
        &mut registry,
        &["r.example.com/app:1", "r.example.com/app:2"],
    );
    let one = found[0].as_ref().unwrap();
    let names: Vec<String> = one.platforms.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["linux/amd64", "linux/arm64"]);
    assert!(one.webassembly);
    assert_eq!(
        found[1],
        Ok(Builds {
            webassembly: true,
            ..Builds::default()
        })
    );
    // Index 2 is listed three times: fetched once.
    assert_eq!(
        registry.1,
        [
            "r.example.com/app:1".to_string(),
            at(1),
            at(2),
            "r.example.com/app:2".into()
        ]
    );
}

#[test]
fn an_index_listed_many_times_is_read_once() {
    // app:fan lists index 1 forty times, which lists index 2 forty times, which has two
    // attestations: read once each, 2 entries (walked each time: 40 * 40 * 2 = 3200).
    let mut registry = Manifests::default();
    registry.0.insert(
        "r.example.com/app:fan".into(),
        index_of(&vec![nested_entry(1); 40]),
    );
    registry
        .0
        .insert(at(1), index_of(&vec![nested_entry(2); 40]));
    registry.0.insert(
        at(2),
        index_of(&[
            platform_entry("unknown", "unknown"),
            platform_entry("unknown", "unknown"),
        ]),
    );
    assert_eq!(
        resolve(&mut registry, &["r.example.com/app:fan"]),
        [Err("the image index has no runnable entry (its 2 entries are attestations or of unknown platform)".to_string())]
    );
    assert_eq!(
        registry.1,
        ["r.example.com/app:fan".to_string(), at(1), at(2)]
    );
}

#[test]
fn nesting_deeper_than_the_limit_or_in_a_cycle_fails_the_lookup() {
    let mut registry = Manifests::default();
    // app:deep -> 1 -> 2 -> 3 (depth 4): 3 is not looked up.
    registry.0.insert(
        "r.example.com/app:deep".into(),
        index_of(&[nested_entry(1)]),
    );
    registry.0.insert(at(1), index_of(&[nested_entry(2)]));
    registry.0.insert(
        at(2),
        index_of(&[platform_entry("linux", "amd64"), nested_entry(3)]),
    );
    // app:ok -> 2's sibling 4 -> 5: depth 3.
    registry
        .0
        .insert("r.example.com/app:ok".into(), index_of(&[nested_entry(4)]));
    registry.0.insert(at(4), index_of(&[nested_entry(5)]));
    registry
        .0
        .insert(at(5), index_of(&[platform_entry("linux", "s390x")]));
    // app:cycle -> 6 -> 7 -> 6 (a registry that does not check digests).
    registry.0.insert(
        "r.example.com/app:cycle".into(),
        index_of(&[nested_entry(6)]),
    );
    registry.0.insert(at(6), index_of(&[nested_entry(7)]));
    registry.0.insert(at(7), index_of(&[nested_entry(6)]));
    // An image named by its digest, listed again below itself.
    registry.0.insert(at(8), index_of(&[nested_entry(8)]));
    let found = resolve(
        &mut registry,
        &[
            "r.example.com/app:deep",
            "r.example.com/app:ok",
            "r.example.com/app:cycle",
            &at(8),
        ],
    );
    assert_eq!(
        found[0],
        Err(format!(
            "the image index nests indexes more than 3 deep: index {} is not followed",
            short(3)
        ))
    );
    assert_eq!(
        found[1].as_ref().unwrap().platforms[0].to_string(),
        "linux/s390x"
    );
    assert_eq!(
        found[2],
        Err(format!("the image index nests indexes in a cycle: index {} lists itself through the indexes it lists", short(6)))
    );
    assert_eq!(
        found[3],
        Err(format!("the image index nests indexes in a cycle: index {} lists itself through the indexes it lists", short(8)))
    );
    assert!(!registry.1.contains(&at(3)));
    assert_eq!(registry.1.iter().filter(|call| **call == at(6)).count(), 1);
}

#[test]
fn a_nested_index_that_fails_or_is_no_index_fails_the_lookup() {
    let mut registry = Manifests::default();
    registry.0.insert(
        "r.example.com/app:missing".into(),
        index_of(&[platform_entry("linux", "amd64"), nested_entry(1)]),
    );
    registry.0.insert(
        "r.example.com/app:image".into(),
        index_of(&[nested_entry(2)]),
    );
    registry.0.insert(
        at(2),
        r#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json"},"layers":[]}"#.into(),
    );
    registry.0.insert(
        "r.example.com/app:bad".into(),
        r#"{"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:../x"}]}"#.into(),
    );
    let found = resolve(
        &mut registry,
        &[
            "r.example.com/app:missing",
            "r.example.com/app:image",
            "r.example.com/app:bad",
        ],
    );
    assert_eq!(
        found[0],
        Err(format!("nested index {}: manifest unknown", short(1)))
    );
    assert_eq!(
        found[1],
        Err(format!(
            "the image index lists {} as an index, but it is an image manifest",
            short(2)
        ))
    );
    assert_eq!(
        found[2],
        Err("the image index lists an index whose digest is invalid: \"sha256:../x\" is not a valid digest (expected sha256:<64 hex digits>)".into())
    );
}
