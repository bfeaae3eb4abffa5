//! The label selectors the policy sends with its Node lists: never a value from a registry or
//! from the Pod, so that the host keeps a bounded number of watches for the policy (`all`).

use crate::platform::{self, Architectures, ARCH_LABEL, OS_LABEL};

/// The architectures a label selector may name besides the OS: the platforms Kubernetes
/// releases its node binaries for. Every label selector the policy sends is
/// `kubernetes.io/os=<linux|windows>`, alone or with `kubernetes.io/arch in (<X>)` or
/// `kubernetes.io/arch notin (<X>)` for a non-empty subset X of these, in this order: never a
/// value from a registry or from the Pod. So policy-server keeps at most
/// 1 + 2 (2^4 - 1) = 31 watches per OS for the policy, and `WITHOUT_ARCHITECTURE_SELECTOR`:
/// 63 in all (`all`).
pub const SELECTOR_ARCHITECTURES: [&str; 4] = ["amd64", "arm64", "ppc64le", "s390x"];

/// The label selector of the Nodes without an architecture label (`kubernetes.io/arch` nor its
/// beta key), of any OS (or none): virtual-kubelet's, whose Pods run elsewhere
/// (`without_architecture_label`).
pub const WITHOUT_ARCHITECTURE_SELECTOR: &str = "!kubernetes.io/arch,!beta.kubernetes.io/arch";

/// Every label selector the policy can send (`SELECTOR_ARCHITECTURES`, and
/// `WITHOUT_ARCHITECTURE_SELECTOR`).
pub fn all() -> Vec<String> {
    let mut all = vec![WITHOUT_ARCHITECTURE_SELECTOR.to_string()];
    for os in platform::NODE_OPERATING_SYSTEMS {
        all.push(format!("{OS_LABEL}={os}"));
        for mask in 1..(1u32 << SELECTOR_ARCHITECTURES.len()) {
            let named: Architectures = SELECTOR_ARCHITECTURES
                .iter()
                .enumerate()
                .filter(|(bit, _)| mask & (1 << bit) != 0)
                .map(|(_, arch)| arch.to_string())
                .collect();
            for operator in ["in", "notin"] {
                all.extend(selector(os, operator, &named));
            }
        }
    }
    all
}

/// The label selector of the Nodes of `os` whose architecture is (`in`) or is not (`notin`) one
/// of those of `architectures` that selectors may name (`SELECTOR_ARCHITECTURES`); `notin`
/// also selects Nodes without the label. None for `in` no such architecture (it would select no
/// Node); `notin` none is every Node of `os`.
pub fn selector(os: &str, operator: &str, architectures: &Architectures) -> Option<String> {
    let named: Vec<&str> = SELECTOR_ARCHITECTURES
        .into_iter()
        .filter(|arch| architectures.contains(*arch))
        .collect();
    match (named.is_empty(), operator) {
        (true, "notin") => Some(format!("{OS_LABEL}={os}")),
        (true, _) => None,
        (false, _) => Some(format!(
            "{OS_LABEL}={os},{ARCH_LABEL} {operator} ({})",
            named.join(",")
        )),
    }
}

/// The selector of every Node of `os`.
pub fn of_os(os: &str) -> String {
    format!("{OS_LABEL}={os}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_name_only_release_platforms() {
        let set = |list: &[&str]| -> Architectures { list.iter().map(|a| a.to_string()).collect() };
        assert_eq!(
            selector(
                "linux",
                "notin",
                &set(&["s390x", "arm64", "amd64", "riscv64"])
            )
            .as_deref(),
            Some("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64,s390x)")
        );
        assert_eq!(
            selector("windows", "in", &set(&["amd64"])).as_deref(),
            Some("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)")
        );
        assert_eq!(
            selector("linux", "notin", &set(&["riscv64"])).as_deref(),
            Some("kubernetes.io/os=linux")
        );
        assert_eq!(selector("linux", "in", &set(&["riscv64", "386"])), None);
        let all = all();
        assert_eq!(all.len(), 63);
        assert_eq!(
            all.iter().collect::<std::collections::BTreeSet<_>>().len(),
            63
        );
        assert_eq!(all[0], "!kubernetes.io/arch,!beta.kubernetes.io/arch");
    }
}
