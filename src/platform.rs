//! Platforms (OS + CPU architecture) as images declare them, folded to the values that
//! Kubernetes nodes carry in their `kubernetes.io/os` and `kubernetes.io/arch` labels.

use std::collections::BTreeSet;
use std::fmt;

/// The node label keys that name a node's architecture. `beta.` is deprecated but still set.
pub const ARCH_LABEL: &str = "kubernetes.io/arch";
pub const BETA_ARCH_LABEL: &str = "beta.kubernetes.io/arch";
/// The node label keys that name a node's operating system.
pub const OS_LABEL: &str = "kubernetes.io/os";
pub const BETA_OS_LABEL: &str = "beta.kubernetes.io/os";

/// Architectures a Kubernetes node can report (Go's GOARCH values, which kubelet uses).
pub const KNOWN_ARCHITECTURES: &[&str] = &[
    "386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64",
    "ppc64le", "riscv64", "s390x", "wasm",
];

/// The operating systems nodes report in `kubernetes.io/os`: the only OSes a Pod can run on.
pub const NODE_OPERATING_SYSTEMS: [&str; 2] = ["linux", "windows"];

/// The node operating systems other than `os`.
pub fn other_operating_systems(os: &str) -> impl Iterator<Item = &'static str> + '_ {
    NODE_OPERATING_SYSTEMS
        .into_iter()
        .filter(move |other| *other != os)
}

/// Operating systems images are built for (Go's GOOS values).
pub const KNOWN_OPERATING_SYSTEMS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "illumos",
    "ios",
    "js",
    "linux",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];

/// The operating systems of WebAssembly platforms (`wasi/wasm` as `docker buildx --platform
/// wasi/wasm` writes it, `wasip1/wasm` and `wasip2/wasm` as runwasi and Go's `GOOS=wasip1` do):
/// no node reports them; a container runtime's WebAssembly shim runs them on any architecture.
pub const WEBASSEMBLY_OPERATING_SYSTEMS: [&str; 3] = ["wasi", "wasip1", "wasip2"];

/// The architecture of WebAssembly platforms.
pub const WEBASSEMBLY_ARCHITECTURE: &str = "wasm";

/// A set of node architecture label values, always sorted.
pub type Architectures = BTreeSet<String>;

/// One runnable platform of an image: the architecture as a node label value and the OS, if the
/// image says (a platform without an OS counts for every OS).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Platform {
    pub os: Option<String>,
    pub architecture: String,
    /// A Windows image's OS build (`major.minor.build` of its `os.version`), when it says.
    pub os_build: Option<String>,
}

/// What an image declares for one platform (an index entry, a config), read against what
/// nodes report. Registry data is untrusted: only values some node can carry in its
/// `kubernetes.io/arch`, `kubernetes.io/os` and `node.kubernetes.io/windows-build` labels make a
/// platform, so no other value reaches a patch or a Node selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared {
    /// A platform nodes can run.
    Runnable(Platform),
    /// A WebAssembly platform (`WEBASSEMBLY_OPERATING_SYSTEMS` with architecture `wasm`): run
    /// by a WebAssembly shim, on a node of any architecture.
    WebAssembly,
    /// No image: no architecture, or `unknown` OS or architecture (BuildKit attestations).
    NotAnImage,
    /// A value no node reports: an architecture that is not one of `KNOWN_ARCHITECTURES` (after
    /// the aliases `node_architecture` folds), an OS other than linux and windows, or a Windows
    /// `os.version` whose first three parts are not `major.minor.build` numbers. The value, for
    /// the warning: `architecture "x86 64"`.
    Odd(String),
}

/// Reads one declared platform: its `os`, `architecture` and `os.version` as the image names
/// them (an `os.version` counts only where Windows nodes can run the platform).
pub fn declared(
    os: Option<&str>,
    architecture: Option<&str>,
    os_version: Option<&str>,
) -> Declared {
    let Some(written) = architecture else {
        return Declared::NotAnImage;
    };
    let Some(architecture) = node_architecture(written) else {
        return Declared::NotAnImage;
    };
    if !KNOWN_ARCHITECTURES.contains(&architecture.as_str()) {
        return Declared::Odd(format!("architecture {}", quoted(written)));
    }
    if architecture == WEBASSEMBLY_ARCHITECTURE
        && os.is_some_and(|os| {
            WEBASSEMBLY_OPERATING_SYSTEMS
                .iter()
                .any(|wasm| os.trim().eq_ignore_ascii_case(wasm))
        })
    {
        return Declared::WebAssembly;
    }
    let os = match os.map(str::trim) {
        None | Some("") => None,
        Some(unknown) if unknown.eq_ignore_ascii_case("unknown") => return Declared::NotAnImage,
        Some(os) => match os.to_ascii_lowercase() {
            lower if NODE_OPERATING_SYSTEMS.contains(&lower.as_str()) => Some(lower),
            _ => return Declared::Odd(format!("os {}", quoted(os))),
        },
    };
    let os_version = os_version.filter(|v| !v.trim().is_empty());
    let os_build = match os_version {
        Some(version) if os.as_deref() != Some("linux") => match self::os_build(version) {
            Some(build) => Some(build),
            None => return Declared::Odd(format!("os.version {}", quoted(version))),
        },
        _ => None,
    };
    Declared::Runnable(Platform {
        os,
        architecture,
        os_build,
    })
}

/// A value quoted for a message, its middle cut to keep it within 40 characters: one long value
/// does not hide the others.
pub fn quoted(value: &str) -> String {
    let length = value.chars().count();
    if length <= 40 {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(26).collect();
    let tail: String = value.chars().skip(length - 12).collect();
    format!("{:?}", format!("{head}…{tail}"))
}

impl Platform {
    /// An architecture on an OS, of no particular build (the setting `imagePlatforms`).
    pub fn of(os: &str, architecture: &str) -> Platform {
        Platform {
            os: Some(os.to_string()),
            architecture: architecture.to_string(),
            os_build: None,
        }
    }

    /// Whether a node running `os` can run this platform.
    pub fn runs_on(&self, os: &str) -> bool {
        self.os.as_deref().is_none_or(|own| own == os)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.os {
            Some(os) => write!(f, "{os}/{}", self.architecture),
            None => f.write_str(&self.architecture),
        }
    }
}

/// Folds an image architecture (with any variant already dropped) to the value of a node's
/// `kubernetes.io/arch` label: `aarch64` -> `arm64`, `x86_64` -> `amd64`, ... Variants do not
/// exist in node labels, so `arm/v7` and `arm64/v8` are `arm` and `arm64`.
pub fn node_architecture(architecture: &str) -> Option<String> {
    let lower = architecture.trim().to_ascii_lowercase();
    let folded = match lower.as_str() {
        "" | "unknown" => return None,
        "x86_64" | "x86-64" | "x64" => "amd64",
        "aarch64" | "arm64v8" => "arm64",
        "armhf" | "armel" | "armv7" | "armv7l" | "armv6" | "armv6l" | "arm32v7" | "arm32v6" => {
            "arm"
        }
        "i386" | "i486" | "i586" | "i686" | "x86" => "386",
        "ppc64el" => "ppc64le",
        other => other,
    };
    Some(folded.to_string())
}

/// The `major.minor.build` of a Windows `os.version` (what nodes carry in their
/// `node.kubernetes.io/windows-build` label), if it has that shape: three parts of 1 to 10
/// digits (what follows them, such as the revision, is dropped).
pub fn os_build(os_version: &str) -> Option<String> {
    let parts: Vec<&str> = os_version.trim().split('.').take(3).collect();
    let numeric =
        |part: &&str| (1..=10).contains(&part.len()) && part.chars().all(|c| c.is_ascii_digit());
    (parts.len() == 3 && parts.iter().all(numeric)).then(|| parts.join("."))
}

/// The label Windows nodes carry their OS build in.
pub const WINDOWS_BUILD_LABEL: &str = "node.kubernetes.io/windows-build";

/// Every architecture a node can report (`KNOWN_ARCHITECTURES`): where images that constrain no
/// architecture run.
pub fn every_architecture() -> Architectures {
    KNOWN_ARCHITECTURES
        .iter()
        .map(|arch| arch.to_string())
        .collect()
}

/// The architectures nodes may have, as a set of them says: the set, or, when it is empty (they
/// are unknown), every architecture a node can report.
pub fn or_every(architectures: &Architectures) -> Architectures {
    match architectures.is_empty() {
        true => every_architecture(),
        false => architectures.clone(),
    }
}

/// Joins architectures for messages and annotations: `amd64,arm64`.
pub fn join(architectures: &Architectures, separator: &str) -> String {
    architectures
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(separator)
}

/// Checks that every name is an architecture a node can report; the error names the setting.
pub fn check_known_architecture(setting: &str, name: &str) -> Result<(), String> {
    if KNOWN_ARCHITECTURES.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "{setting}: unknown architecture {name:?}; use a node `kubernetes.io/arch` value: {}",
            KNOWN_ARCHITECTURES.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_aliases_fold_to_node_labels() {
        assert_eq!(node_architecture("arm64").as_deref(), Some("arm64"));
        assert_eq!(node_architecture("aarch64").as_deref(), Some("arm64"));
        assert_eq!(node_architecture("x86_64").as_deref(), Some("amd64"));
        assert_eq!(node_architecture("ARM").as_deref(), Some("arm"));
        assert_eq!(node_architecture("armhf").as_deref(), Some("arm"));
        assert_eq!(node_architecture("unknown"), None);
        assert_eq!(node_architecture(""), None);
    }

    fn runnable(os: Option<&str>, architecture: Option<&str>) -> Option<Platform> {
        match declared(os, architecture, None) {
            Declared::Runnable(platform) => Some(platform),
            _ => None,
        }
    }

    #[test]
    fn unknown_platforms_are_not_runnable() {
        assert_eq!(
            declared(Some("unknown"), Some("unknown"), None),
            Declared::NotAnImage
        );
        assert_eq!(
            declared(Some("unknown"), Some("amd64"), None),
            Declared::NotAnImage
        );
        assert_eq!(declared(Some("linux"), None, None), Declared::NotAnImage);
        assert_eq!(
            runnable(None, Some("arm64")),
            Some(Platform {
                os: None,
                architecture: "arm64".into(),
                os_build: None
            })
        );
    }

    #[test]
    fn values_no_node_reports_are_odd() {
        let odd =
            |os: Option<&str>, arch: &str, version: Option<&str>| declared(os, Some(arch), version);
        assert_eq!(
            odd(Some("linux"), "s390x),pool in (zz", None),
            Declared::Odd(r#"architecture "s390x),pool in (zz""#.into())
        );
        assert_eq!(
            odd(Some("linux"), "x86 64", None),
            Declared::Odd(r#"architecture "x86 64""#.into())
        );
        assert_eq!(
            odd(Some("linux"), &format!("{}b", "a".repeat(64)), None),
            Declared::Odd(format!(
                "architecture \"{}…{}b\"",
                "a".repeat(26),
                "a".repeat(11)
            ))
        );
        assert_eq!(
            odd(Some("linux"), "sparc64", None),
            Declared::Odd(r#"architecture "sparc64""#.into())
        );
        assert_eq!(
            odd(Some("plan9"), "amd64", None),
            Declared::Odd(r#"os "plan9""#.into())
        );
        assert_eq!(
            odd(Some("windows"), "amd64", Some("10.0.20348),x in (y")),
            Declared::Odd(r#"os.version "10.0.20348),x in (y""#.into())
        );
        assert_eq!(
            odd(None, "amd64", Some("10.0")),
            Declared::Odd(r#"os.version "10.0""#.into())
        );
        // A linux platform's os.version is never read; aliases and case fold first.
        assert_eq!(
            runnable(Some("Linux"), Some("x86_64")).map(|p| p.to_string()),
            Some("linux/amd64".into())
        );
        assert!(matches!(
            odd(Some("linux"), "amd64", Some("banana")),
            Declared::Runnable(_)
        ));
        assert!(matches!(
            odd(Some("windows"), "amd64", Some("10.0.20348.2527")),
            Declared::Runnable(Platform { os_build: Some(build), .. }) if build == "10.0.20348"
        ));
    }

    #[test]
    fn webassembly_platforms_are_neither_runnable_nor_odd() {
        for os in ["wasi", "wasip1", "wasip2", "WASI", " wasip1 "] {
            assert_eq!(
                declared(Some(os), Some("wasm"), None),
                Declared::WebAssembly,
                "{os}"
            );
        }
        // Only the wasm architecture, and only with a WebAssembly OS, is WebAssembly.
        assert_eq!(
            declared(Some("wasi"), Some("amd64"), None),
            Declared::Odd(r#"os "wasi""#.into())
        );
        assert_eq!(
            declared(Some("wasip1"), Some("wasm32"), None),
            Declared::Odd(r#"architecture "wasm32""#.into())
        );
        assert_eq!(
            declared(Some("js"), Some("wasm"), None),
            Declared::Odd(r#"os "js""#.into())
        );
        assert_eq!(declared(Some("wasip1"), None, None), Declared::NotAnImage);
        assert_eq!(every_architecture().len(), KNOWN_ARCHITECTURES.len());
    }

    #[test]
    fn a_platform_without_os_runs_on_every_os() {
        let any = runnable(None, Some("amd64")).unwrap();
        assert!(any.runs_on("linux") && any.runs_on("windows"));
        let windows = runnable(Some("Windows"), Some("amd64")).unwrap();
        assert!(!windows.runs_on("linux") && windows.runs_on("windows"));
        assert_eq!(windows.to_string(), "windows/amd64");
        assert_eq!(any.to_string(), "amd64");
    }

    #[test]
    fn windows_builds_are_major_minor_build() {
        assert_eq!(os_build("10.0.20348.2527").as_deref(), Some("10.0.20348"));
        assert_eq!(os_build("10.0.17763").as_deref(), Some("10.0.17763"));
        assert_eq!(os_build("10.0"), None);
        assert_eq!(os_build("10.0.x.1"), None);
        assert_eq!(os_build(""), None);
        assert_eq!(os_build("10.0.12345678901"), None);
    }

    #[test]
    fn unknown_architecture_names_the_setting_and_the_known_ones() {
        assert_eq!(check_known_architecture("s", "arm64"), Ok(()));
        let err = check_known_architecture("schedulableArchitectures", "aarch64").unwrap_err();
        assert!(err.starts_with(
            "schedulableArchitectures: unknown architecture \"aarch64\"; use a node `kubernetes.io/arch` value: 386, amd64, arm, arm64,"
        ), "{err}");
    }
}
