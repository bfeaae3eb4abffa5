//! Reading: the Pod (`pod`, with its required terms as the edit finds them: `terms`; what an
//! UPDATE of it brings: `pod_update`), the constraints on its nodes (`constraint`, `admits`), its
//! images' platforms (`resolve`, `manifest`, `webassembly`; what was learned of each:
//! `image_platforms`), the decision a Pod template recorded for its Pods (`record`), and the
//! cluster through one `cluster::ClusterReader` per evaluation: Nodes (`node`, listed by the
//! label selectors of `selectors`) and Karpenter's NodePools (`node_pools`). Each turns untrusted
//! input into plain data the decision works on; nothing here decides.

pub mod admits;
pub mod cluster;
pub mod constraint;
pub mod image_platforms;
pub mod manifest;
pub mod node;
pub mod node_pools;
pub mod pod;
pub mod pod_update;
pub mod record;
pub mod resolve;
pub mod selectors;
pub mod terms;
pub mod webassembly;
pub mod workload;
