//! The image reference parser: never panics, and its canonical form parses to itself.
#![no_main]

use image_arch_affinity::image::ImageRef;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(reference) = ImageRef::parse(text) {
        let canonical = reference.to_string();
        let again = ImageRef::parse(&canonical).expect("the canonical form parses");
        assert_eq!(again.to_string(), canonical, "from {text:?}");
    }
    for pattern in [text, "*", "a*b"] {
        let _ = image_arch_affinity::image::glob_match(pattern, text);
    }
});
