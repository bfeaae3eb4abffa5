//! The house's steps as floors (docs/development.md, "The code"): data flows one way, so every
//! module imports only its own room or the floors below it, and no two files import each other,
//! even through others. Read from the sources: each `crate::...`, `super::...` and `self::...`
//! path outside `#[cfg(test)]` code is an import of the file that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The rooms, lowest floor first: a room may import its own files and any lower room.
const FLOORS: [(&str, u8); 11] = [
    ("platform", 0),
    ("image", 0),
    ("host", 0),
    ("settings", 1),
    ("read", 2),
    ("message", 3),
    ("decide", 4),
    ("edit", 5),
    ("policy", 6),
    ("lib", 7),
    ("main", 7),
];

/// Every source file, as its module path (`read/nodes.rs` is `read::nodes`, `read/mod.rs` is
/// `read`, `lib.rs` is `lib`), with its text before `#[cfg(test)]`.
fn sources() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path.strip_prefix(&root).expect("under src/");
            let name = relative
                .to_string_lossy()
                .trim_end_matches(".rs")
                .trim_end_matches("/mod")
                .replace('/', "::");
            let text = fs::read_to_string(&path).expect("a source file is readable");
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            files.insert(name, code);
        }
    }
    files
}

/// The file that a path names: the longest module path it starts with.
fn file_of(path: &[&str], files: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].join("::"))
        .find(|module| files.contains_key(module))
}

/// The files each file imports (itself left out).
fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (module, code) in files {
        let parent: Vec<&str> = module.split("::").collect();
        let is_dir_module = files.keys().any(|m| m.starts_with(&format!("{module}::")));
        let mut edges = BTreeSet::new();
        for (start, _) in code
            .match_indices("crate::")
            .chain(code.match_indices("super::"))
        {
            let rest = &code[start..];
            let segments: Vec<&str> = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|s| !s.is_empty())
                .collect();
            let path: Vec<&str> = match segments.first() {
                Some(&"crate") => segments[1..].to_vec(),
                // `super` in a file of a room is the room's mod.rs, in a room's mod.rs the crate.
                Some(&"super") if is_dir_module => segments[1..].to_vec(),
                Some(&"super") => {
                    let mut path = parent[..parent.len() - 1].to_vec();
                    path.extend(&segments[1..]);
                    path
                }
                _ => continue,
            };
            let mut paths = vec![path.clone()];
            // `crate::edit::{self, affinity}`: each name of the group, after the path.
            let after = &rest[rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len())..];
            if let Some(group) = after.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let item = item.trim();
                    let mut longer = path.clone();
                    longer.extend(item.split("::").map(str::trim).filter(|s| *s != "self"));
                    paths.push(longer);
                }
            }
            for path in paths {
                if let Some(file) = file_of(&path, files).filter(|file| file != module) {
                    edges.insert(file);
                }
            }
        }
        // `self::x` in a room's mod.rs, and the crate root's own modules in lib.rs.
        for (start, _) in code.match_indices("self::") {
            let name = code[start + 6..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            if let Some(file) = file_of(&[module.as_str(), name], files) {
                if file != *module {
                    edges.insert(file);
                }
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

fn floor(module: &str) -> u8 {
    let room = module.split("::").next().unwrap_or(module);
    FLOORS
        .iter()
        .find(|(name, _)| *name == room)
        .map(|(_, floor)| *floor)
        .unwrap_or_else(|| panic!("src/{room}: a new room needs its floor in FLOORS"))
}

#[test]
fn every_import_goes_down_or_stays_in_its_room() {
    let files = sources();
    let graph = imports(&files);
    let mut upward = Vec::new();
    for (module, edges) in &graph {
        let room = module.split("::").next().unwrap_or(module);
        for imported in edges {
            let other = imported.split("::").next().unwrap_or(imported);
            if other != room && floor(imported) >= floor(module) {
                upward.push(format!("{module} -> {imported}"));
            }
        }
    }
    assert_eq!(upward, Vec::<String>::new(), "imports up or across a floor");
    // Not vacuous: the rooms import the floors below them.
    assert!(graph["edit::write"].contains("decide::plan"));
    assert!(graph["decide::node_reads"].contains("read::cluster"));
    assert!(graph["read::cluster"].contains("host::cluster"));
    assert!(graph["policy"].contains("edit::write"));
}

#[test]
fn the_decision_holds_no_json_and_edits_nothing() {
    // decide/ works on the models read/ returns and gives back a plan: it holds no JSON value
    // and imports nothing of edit/, which writes the plan once, at the end.
    let files = sources();
    let graph = imports(&files);
    for (module, code) in files.iter().filter(|(m, _)| m.starts_with("decide")) {
        assert!(!code.contains("serde_json"), "{module} holds serde_json");
        let edits: Vec<&String> = graph[module]
            .iter()
            .filter(|m| m.starts_with("edit"))
            .collect();
        assert!(edits.is_empty(), "{module} imports {edits:?}");
    }
    assert!(files.keys().filter(|m| m.starts_with("decide")).count() > 10);
}

#[test]
fn no_file_imports_itself_through_others() {
    let files = sources();
    let graph = imports(&files);
    // Depth-first search from each file for a path back to it.
    let mut circles = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<Vec<&String>> = vec![vec![start]];
        while let Some(path) = stack.pop() {
            let last = path[path.len() - 1];
            for next in &graph[last] {
                if next == start {
                    let names: Vec<&str> = path.iter().map(|m| m.as_str()).collect();
                    circles.push(format!("{} -> {start}", names.join(" -> ")));
                } else if seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
    }
    assert_eq!(circles, Vec::<String>::new(), "import circles");
    assert!(graph.len() > 30, "every source file is read");
}
