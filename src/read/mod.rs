//! Reading: the Pod (`pod`), the constraints on its nodes (`constraint`), its images' platforms
//! (`resolve`, `manifest`, `webassembly`; what was learned of each: `image_platforms`), the
//! cluster's Nodes (`node`, `nodes`) and Karpenter's NodePools (`node_pools`), and the cache of
//! what was read in one evaluation (`cache`). Each turns untrusted input into plain data the
//! decision works on; nothing here decides.

pub mod cache;
pub mod constraint;
pub mod image_platforms;
pub mod manifest;
pub mod node;
pub mod node_pools;
pub mod nodes;
pub mod pod;
pub mod resolve;
pub mod webassembly;
