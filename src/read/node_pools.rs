//! Karpenter's NodePools (`karpenter.sh/v1`), as the node-aware mode (setting `readNodes`) reads
//! them: Nodes that may exist. In a cluster autoscaled by Karpenter, the Nodes of an architecture
//! are often none until a pending Pod needs one; a NodePool that can create them counts like
//! Nodes of those architectures (docs/karpenter.md says why, from Karpenter's code):
//!
//! - Only a NodePool Karpenter provisions from counts: its `Ready` condition is `True`, it is not
//!   being deleted, and it is not static (`spec.replicas`). One at its `spec.limits` counts (a
//!   passing state, decided per scheduling pass).
//! - What it can create: the (OS, architecture) pairs its template's requirements
//!   (`spec.template.spec.requirements`, and its labels as `In [value]`) admit on
//!   `kubernetes.io/os` and `kubernetes.io/arch` (or their beta keys). No requirement on the
//!   architecture is any architecture the cloud provider offers: every architecture (less those
//!   `NotIn` excludes), since the NodePool does not say which the provider has. No requirement on
//!   the OS is Linux and Windows.
//! - A requirement on the architecture with `minValues` m: Karpenter creates a node for a Pod
//!   only when the Pod admits m of the pool's architectures (by its nodeSelector and one required
//!   term), so the pool counts only for a Pod whose images run on m of them that it admits so
//!   (`meeting_min_values`).
//! - A Pod uses it only when it tolerates every `NoSchedule` and `NoExecute` taint of its template
//!   (`spec.template.spec.taints`; `startupTaints` need not be, `PreferNoSchedule` taints are
//!   tolerated in the end), with its own tolerations and those `architectureTolerations` gives it
//!   on that architecture.
//! - A Pod Karpenter's provisioner ignores (`ignored_by_karpenter`: `matchFields`, a requirement
//!   on `kubernetes.io/hostname` or a `karpenter.sh` label (or of a subdomain) other than the
//!   pool and the capacity type, a `Gt` or `Lt` bound that is no non-negative integer, a capacity type no cloud offers,
//!   `karpenter.sh/nodepool DoesNotExist` where Karpenter reads it) is served by no pool; it is
//!   still kept off their architectures its images do not run on (`decide::node_pools`).
//!
//! Everything read is untrusted: values that are no label value count for nothing, and NodePool
//! values reach messages only (never a patch or a selector).

use serde_json::Value;

use crate::platform::{self, Architectures, NODE_OPERATING_SYSTEMS};
use crate::read::constraint::Constraints;
use crate::settings::names::check_label_value;
use crate::settings::{Settings, Toleration};

/// What the policy reads of a NodePool besides its metadata.
pub const FIELD_MASKS: [&str; 5] = [
    "spec.replicas",
    "spec.template.metadata.labels",
    "spec.template.spec.requirements",
    "spec.template.spec.taints",
    "status.conditions",
];

/// The values of a well-known label a NodePool's nodes may have.
#[derive(Debug, Clone, PartialEq)]
pub enum Possible {
    /// Any value, less these (`NotIn`).
    Any { except: Architectures },
    /// Only these.
    Only(Architectures),
}

impl Possible {
    fn and(self, other: Possible) -> Possible {
        match (self, other) {
            (Possible::Any { except: a }, Possible::Any { except: b }) => Possible::Any {
                except: a.union(&b).cloned().collect(),
            },
            (Possible::Any { except }, Possible::Only(only))
            | (Possible::Only(only), Possible::Any { except }) => {
                Possible::Only(only.difference(&except).cloned().collect())
            }
            (Possible::Only(a), Possible::Only(b)) => {
                Possible::Only(a.intersection(&b).cloned().collect())
            }
        }
    }

    /// The values among `any` (every value the policy knows) this admits: a value it does not
    /// know is on no node it pins to, and does not reach a message.
    fn among(&self, any: &Architectures) -> Architectures {
        match self {
            Possible::Any { except } => any.difference(except).cloned().collect(),
            Possible::Only(only) => only.intersection(any).cloned().collect(),
        }
    }
}

/// A taint of a NodePool's template that a Pod must tolerate.
#[derive(Debug, Clone, PartialEq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

/// One NodePool Karpenter provisions from, as the policy reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodePool {
    pub os: Possible,
    pub architecture: Possible,
    /// Its `NoSchedule` and `NoExecute` taints.
    pub taints: Vec<Taint>,
    /// The largest `minValues` of its requirements on the architecture (0: none): Karpenter
    /// creates a node from it only for a Pod that admits that many of its architectures.
    pub architecture_min_values: usize,
}

/// Reads the host's answer to the NodePool list: the NodePools Karpenter provisions from (the
/// others are left out).
pub fn parse_list(raw: &[u8]) -> Result<Vec<NodePool>, String> {
    let list: Value = serde_json::from_slice(raw)
        .map_err(|e| format!("the host's answer is not a NodePoolList: {e}"))?;
    if !list.is_object() {
        return Err("the host's answer is not a NodePoolList: no object".to_string());
    }
    let items = match &list["items"] {
        Value::Array(items) => items.as_slice(),
        Value::Null => &[],
        _ => return Err("the host's answer is not a NodePoolList: items is no list".to_string()),
    };
    Ok(items.iter().filter_map(read_one).collect())
}

fn read_one(pool: &Value) -> Option<NodePool> {
    let ready = pool["status"]["conditions"]
        .as_array()?
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let deleting = !pool["metadata"]["deletionTimestamp"].is_null();
    let static_pool = !pool["spec"]["replicas"].is_null();
    if !ready || deleting || static_pool {
        return None;
    }
    let template = &pool["spec"]["template"];
    let any = Possible::Any {
        except: Architectures::new(),
    };
    let mut read = NodePool {
        os: any.clone(),
        architecture: any,
        taints: taints(template),
        architecture_min_values: 0,
    };
    if let Some(labels) = template["metadata"]["labels"].as_object() {
        for (key, value) in labels {
            read.narrow(
                key,
                Possible::Only(label_values(std::slice::from_ref(value))),
            );
        }
    }
    for requirement in template["spec"]["requirements"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let Some(key) = requirement["key"].as_str() else {
            continue;
        };
        if matches!(key, platform::ARCH_LABEL | platform::BETA_ARCH_LABEL) {
            let min_values = requirement["minValues"].as_u64().unwrap_or_default();
            read.architecture_min_values = read
                .architecture_min_values
                .max(usize::try_from(min_values).unwrap_or(usize::MAX));
        }
        read.narrow(key, possible(requirement));
    }
    Some(read)
}

impl NodePool {
    /// Narrows what its nodes may have of the OS or the architecture label `key`.
    fn narrow(&mut self, key: &str, possible: Possible) {
        match key {
            platform::OS_LABEL | platform::BETA_OS_LABEL => self.os = self.os.clone().and(possible),
            platform::ARCH_LABEL | platform::BETA_ARCH_LABEL => {
                self.architecture = self.architecture.clone().and(possible)
            }
            _ => {}
        }
    }
}

/// What one requirement of a template lets its nodes have of its key.
fn possible(requirement: &Value) -> Possible {
    let values = label_values(
        requirement["values"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default(),
    );
    match requirement["operator"].as_str() {
        Some("In") => Possible::Only(values),
        Some("NotIn") => Possible::Any { except: values },
        Some("Exists") => Possible::Any {
            except: Architectures::new(),
        },
        // DoesNotExist, the numeric operators and anything else: no node of a well-known
        // label can have it (every instance type has an OS and an architecture).
        _ => Possible::Only(Architectures::new()),
    }
}

/// A template's `NoSchedule` and `NoExecute` taints.
fn taints(template: &Value) -> Vec<Taint> {
    template["spec"]["taints"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|taint| {
            let effect = taint["effect"].as_str()?;
            matches!(effect, "NoSchedule" | "NoExecute").then(|| Taint {
                key: taint["key"].as_str().unwrap_or_default().to_string(),
                value: taint["value"].as_str().unwrap_or_default().to_string(),
                effect: effect.to_string(),
            })
        })
        .collect()
}

/// The label values of a list (those that are none match no node and are left out).
fn label_values(values: &[Value]) -> Architectures {
    values
        .iter()
        .filter_map(Value::as_str)
        .filter(|value| !value.is_empty() && check_label_value(value).is_ok())
        .map(str::to_string)
        .collect()
}

/// Whether `toleration` tolerates `taint`, as Kubernetes' `Toleration.ToleratesTaint` decides.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if toleration
        .effect
        .as_deref()
        .is_some_and(|effect| !effect.is_empty() && effect != taint.effect)
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            !key.is_empty() && toleration.value.as_deref().unwrap_or_default() == taint.value
        }
        _ => false,
    }
}

/// The architectures the `pools` can create nodes of for a Pod of `os` with `tolerations`: each
/// pool's that the Pod tolerates it on (its own tolerations, and `architectureTolerations` of
/// that architecture).
pub fn architectures(
    pools: &[NodePool],
    os: &str,
    tolerations: &[Toleration],
    settings: &Settings,
) -> Architectures {
    let any = platform::every_architecture();
    let every_os: Architectures = NODE_OPERATING_SYSTEMS
        .iter()
        .map(|o| o.to_string())
        .collect();
    let mut found = Architectures::new();
    for pool in pools {
        if !pool.os.among(&every_os).contains(os) {
            continue;
        }
        let tolerated_by = |given: &[Toleration]| {
            pool.taints.iter().all(|taint| {
                tolerations
                    .iter()
                    .chain(given)
                    .any(|toleration| tolerates(toleration, taint))
            })
        };
        // The Pod's own tolerations once; `architectureTolerations` where they add some.
        let by_the_pod = tolerated_by(&[]);
        for arch in pool.architecture.among(&any) {
            let tolerated = by_the_pod
                || settings
                    .architecture_tolerations
                    .get(&arch)
                    .is_some_and(|given| tolerated_by(given));
            if tolerated {
                found.insert(arch);
            }
        }
    }
    found
}

/// The pools that can create a node for a Pod of `constraints` whose images run on `images`: a
/// pool whose requirement on the architecture has `minValues` m serves only a Pod that admits m
/// of its architectures (Karpenter: "minValues requirement is not met"), by its nodeSelector and
/// one of its required terms (Karpenter relaxes the terms one at a time) on the pool's nodes,
/// which carry the beta labels, and the policy pins a Pod to the architectures its images run on
/// at most.
pub fn meeting_min_values(
    pools: &[NodePool],
    images: &Architectures,
    constraints: &Constraints,
) -> Vec<NodePool> {
    let any = platform::every_architecture();
    // On the pool's nodes, which carry the beta labels.
    let admitted: Vec<Architectures> = match &constraints.terms {
        None => vec![constraints.term_admits_with_beta_labels(None).among(&any)],
        Some(terms) => (0..terms.len())
            .map(|index| {
                constraints
                    .term_admits_with_beta_labels(Some(index))
                    .among(&any)
            })
            .collect(),
    };
    pools
        .iter()
        .filter(|pool| {
            let offered = pool.architecture.among(&any);
            pool.architecture_min_values <= 1
                || admitted.iter().any(|admits| {
                    offered
                        .intersection(images)
                        .filter(|arch| admits.contains(*arch))
                        .count()
                        >= pool.architecture_min_values
                })
        })
        .cloned()
        .collect()
}

/// Why Karpenter's provisioner ignores a Pod (`Provisioner.Validate`, as `GetPendingPods` calls
/// it): it creates no node for a Pod whose nodeSelector or required node affinity terms hold a
/// `matchFields`, a requirement on `kubernetes.io/hostname` or on a label of Karpenter's own
/// domain (`karpenter.sh`, `*.karpenter.sh`) other than its well-known `karpenter.sh/nodepool`
/// and `karpenter.sh/capacity-type`, a `Gt` or `Lt` whose value is no non-negative integer, or
/// `karpenter.sh/capacity-type In` values of which none is `on-demand`, `spot` or `reserved`; nor
/// for one whose first required term or heaviest preferred term asks for
/// `karpenter.sh/nodepool DoesNotExist` (`validateKarpenterManagedLabelCanExist`). Its other
/// refusals (an operator or value no label takes) the API server makes first; a cloud provider's
/// own restricted domains are not known here.
pub fn ignored_by_karpenter(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    let affinity = &spec["affinity"]["nodeAffinity"];
    let terms = list(
        &affinity["requiredDuringSchedulingIgnoredDuringExecution"],
        "nodeSelectorTerms",
    );
    if terms
        .iter()
        .any(|term| !list(term, "matchFields").is_empty())
    {
        return Some("a required node affinity term with matchFields");
    }
    let mut selector = spec["nodeSelector"].as_object().into_iter().flatten();
    let selector_refused = selector.any(|(key, value)| {
        let value = value.as_str().unwrap_or_default().to_string();
        refused_requirement(key, "In", &[value])
    });
    let expressions_refused = terms.iter().any(|term| {
        list(term, "matchExpressions").iter().any(|e| {
            let values: Vec<String> = list(e, "values")
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            let (key, operator) = (e["key"].as_str(), e["operator"].as_str());
            refused_requirement(
                key.unwrap_or_default(),
                operator.unwrap_or_default(),
                &values,
            )
        })
    });
    if selector_refused || expressions_refused {
        return Some("a requirement on kubernetes.io/hostname or a karpenter.sh label, or a value it refuses");
    }
    // The first required term and the heaviest preferred term, as `NewPodRequirements` reads them.
    let heaviest = list(affinity, "preferredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .fold(None::<&Value>, |best, term| match best {
            Some(best) if best["weight"].as_i64() >= term["weight"].as_i64() => Some(best),
            _ => Some(term),
        })
        .map(|term| &term["preference"]);
    let avoids_pools = terms.first().into_iter().chain(heaviest).any(|term| {
        list(term, "matchExpressions")
            .iter()
            .any(|e| e["key"] == "karpenter.sh/nodepool" && e["operator"] == "DoesNotExist")
    });
    avoids_pools.then_some("karpenter.sh/nodepool DoesNotExist")
}

/// The list `field` of `value` (none when it is no list).
fn list<'a>(value: &'a Value, field: &str) -> &'a [Value] {
    value[field]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether Karpenter's provisioner refuses a Pod for one requirement: on
/// `kubernetes.io/hostname` or a restricted `karpenter.sh` label, a `Gt` or `Lt` bound that is
/// no non-negative integer, or a capacity type no cloud offers.
fn refused_requirement(key: &str, operator: &str, values: &[String]) -> bool {
    let domain = key.split_once('/').map_or("", |(domain, _)| domain);
    let restricted = key == "kubernetes.io/hostname"
        || (domain == "karpenter.sh" || domain.ends_with(".karpenter.sh"))
            && !["karpenter.sh/nodepool", "karpenter.sh/capacity-type"].contains(&key);
    let capacity = ["on-demand", "spot", "reserved"];
    restricted
        || matches!(operator, "Gt" | "Lt")
            && !matches!(values, [one] if one.parse::<u64>().is_ok_and(|n| n <= i64::MAX as u64))
        || key == "karpenter.sh/capacity-type"
            && operator == "In"
            && !values.iter().any(|v| capacity.contains(&v.as_str()))
}

/// Whether a failed NodePool list means that no NodePool counts: Karpenter's CRDs are not
/// installed (the host's discovery finds no `karpenter.sh/v1` `NodePool`), or the policy's
/// `contextAwareResources` do not list NodePools (the operator has not let it read them; the
/// host refuses the call).
///
/// The host's texts, exactly (policy-evaluator's `callback_handler/kubernetes/client.rs` and
/// `runtimes/callback.rs`): any other failure (the API server down, RBAC, the lookup budget)
/// is one, whatever numbers it carries.
pub fn none_to_read(error: &str) -> bool {
    let lower = error.to_ascii_lowercase();
    // The API group is served, without the kind.
    lower.contains("cannot find resource karpenter.sh/v1/nodepool")
        // The API group is not served: discovery's 404.
        || (lower.contains("error finding resource karpenter.sh/v1 / nodepool")
            && lower.contains("code: 404"))
        // The list itself found no such resource (a CRD deleted since discovery).
        || (lower.contains("notfound") && lower.contains("code: 404"))
        || lower.contains("has not been granted access to kubernetes karpenter.sh/v1/nodepool")
}

#[cfg(test)]
mod tests;
