//! The policy at a base commit (`base`) and the working tree (`new`) on the same generated
//! admission requests, settings, registries and clusters: each answer compared byte for byte, and
//! the host calls each made compared in order. A refactor that keeps the policy's behaviour passes
//! any number of cases; the first difference is printed whole (the case as JSON, both answers and
//! both call lists) and fails the run. `scripts/differential.sh` extracts the base and runs this.
//!
//! Usage: differential [CASES] [SEED]

mod gen;
mod hosts;

use std::collections::BTreeMap;
use std::process::ExitCode;

use gen::{Case, Rng};
use hosts::{FakeCluster, FakeRegistry};

/// One host's answer to a case: the response and the calls it made.
#[derive(PartialEq, Debug)]
struct Answer {
    response: String,
    registry_calls: Vec<String>,
    cluster_calls: Vec<String>,
}

fn run_base(case: &Case, payload: &[u8]) -> Answer {
    let (mut registry, mut cluster) = (FakeRegistry::new(case), FakeCluster::new(case));
    let response = base::validate_payload_in_cluster(payload, &mut registry, &mut cluster);
    Answer {
        response: String::from_utf8_lossy(&response).into_owned(),
        registry_calls: registry.calls,
        cluster_calls: cluster.calls,
    }
}

fn run_new(case: &Case, payload: &[u8]) -> Answer {
    let (mut registry, mut cluster) = (FakeRegistry::new(case), FakeCluster::new(case));
    let response = new::validate_payload_in_cluster(payload, &mut registry, &mut cluster);
    Answer {
        response: String::from_utf8_lossy(&response).into_owned(),
        registry_calls: registry.calls,
        cluster_calls: cluster.calls,
    }
}

/// What kind of answer a response is, for the tally that shows what the run covered.
fn kind_of(answer: &Answer, case: &Case) -> String {
    let response: serde_json::Value = serde_json::from_str(&answer.response).unwrap_or_default();
    let verdict = match (&response["accepted"], &response["mutated_object"]) {
        (serde_json::Value::Bool(false), _) => "rejected",
        (_, serde_json::Value::Null) => "accepted",
        _ => "mutated",
    };
    let nodes = match case.read_nodes() {
        true => "readNodes",
        false => "static",
    };
    format!("{} {} {nodes} {verdict}", case.kind(), case.operation())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let cases: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15);
    println!("differential: {cases} cases, seed {seed}");
    // DIFFERENTIAL_EXPECT=<word>[,<word>...]: a change that means to change some answers; a
    // difference is expected where the case's JSON holds one of the words, and only those are
    // counted, not failed on.
    let expect = std::env::var("DIFFERENTIAL_EXPECT").ok();
    let mut tally: BTreeMap<String, u64> = BTreeMap::new();
    let (mut host_calls, mut with_cluster_calls, mut expected) = (0u64, 0u64, 0u64);
    for index in 0..cases {
        let mut rng = Rng::new(seed.wrapping_add(index.wrapping_mul(0x2545_f491_4f6c_dd1d)));
        let case = Case::generate(&mut rng);
        let payload = case.payload();
        let (base, new) = (run_base(&case, &payload), run_new(&case, &payload));
        if base != new {
            let described = case.describe();
            if expect
                .as_ref()
                .is_some_and(|words| words.split(',').any(|word| described.contains(word)))
            {
                expected += 1;
                continue;
            }
            println!("differential: case {index} (seed {seed}) differs");
            println!("case: {described}");
            println!("base: {base:#?}");
            println!("new:  {new:#?}");
            return ExitCode::FAILURE;
        }
        host_calls += (base.registry_calls.len() + base.cluster_calls.len()) as u64;
        with_cluster_calls += u64::from(!base.cluster_calls.is_empty());
        *tally.entry(kind_of(&base, &case)).or_default() += 1;
    }
    if let Some(word) = &expect {
        println!("differential: {expected} cases differ, each holding one of {word:?} (DIFFERENTIAL_EXPECT)");
    }
    println!("differential: all {cases} cases alike ({host_calls} host calls; {with_cluster_calls} cases read the cluster)");
    for (kind, count) in tally {
        println!("  {count:>8}  {kind}");
    }
    ExitCode::SUCCESS
}
