//! The whole `validate` path: arbitrary request bytes, arbitrary host answers.
//!
//! Input layout: the request payload, then host answers, separated by 0xFF bytes (never valid in
//! UTF-8 JSON). Answers are served in turn; an answer starting with `!` is a host error.
#![no_main]

use image_arch_affinity::registry::Registry;
use libfuzzer_sys::fuzz_target;

struct Answers<'a> {
    answers: Vec<&'a [u8]>,
    next: usize,
}

impl Answers<'_> {
    fn answer(&mut self) -> Result<Vec<u8>, String> {
        if self.answers.is_empty() {
            return Err("Host error: no answer".into());
        }
        let answer = self.answers[self.next % self.answers.len()];
        self.next += 1;
        match answer.strip_prefix(b"!") {
            Some(error) => Err(String::from_utf8_lossy(error).into_owned()),
            None => Ok(answer.to_vec()),
        }
    }
}

impl Registry for Answers<'_> {
    fn manifest(&mut self, _image: &str) -> Result<Vec<u8>, String> {
        self.answer()
    }

    fn manifest_and_config(&mut self, _image: &str) -> Result<Vec<u8>, String> {
        self.answer()
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0xFF);
    let request = parts.next().unwrap_or_default();
    let mut registry = Answers {
        answers: parts.collect(),
        next: 0,
    };
    let response = image_arch_affinity::validate_payload(request, &mut registry);
    // The answer is always a well-formed ValidationResponse.
    let value: serde_json::Value = serde_json::from_slice(&response).expect("response is JSON");
    assert!(value["accepted"].is_boolean(), "{value}");
});
