//! What every text shares: the prefix, the three-part `Refusal`, and how a text is cut to a
//! warning's length (Kubernetes may truncate a warning past 256 characters, and host errors
//! arrive as multi-line chains).

/// Prefix of every message and warning, so users know where it comes from.
pub const PREFIX: &str = "image-arch-affinity";

/// Why no architecture fits: the rejection message, in three parts so that the warning made of
/// it (`onNoCommonArchitecture: accept`) is cut in the middle of the listing and keeps the rest.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub lead: String,
    pub listing: String,
    pub tail: String,
}

impl Refusal {
    pub fn new(lead: String, listing: String, tail: String) -> Refusal {
        Refusal {
            lead,
            listing,
            tail,
        }
    }

    /// The rejection message (`onNoCommonArchitecture: reject`).
    pub fn rejection(&self) -> String {
        format!("{}{}{}", self.lead, self.listing, self.tail)
    }

    /// The warning of a Pod accepted all the same (`onNoCommonArchitecture: accept`), cut to a
    /// warning's length in the middle of the listing.
    pub fn accepted(&self) -> String {
        capped(
            &self.lead,
            &self.listing,
            &format!(
                "{} (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)",
                self.tail
            ),
        )
    }
}

/// Kubernetes may truncate admission warnings longer than 256 characters: a warning is its
/// lead-in and as much of the cause, on one line, as fits (at least 80 characters of it).
const WARNING_LENGTH: usize = 256;

pub(crate) fn warning(lead_in: String, cause: &str) -> String {
    let lead_length = lead_in.chars().count();
    let cause = one_line(cause, WARNING_LENGTH.saturating_sub(lead_length).max(80));
    if lead_length + cause.chars().count() <= WARNING_LENGTH {
        return lead_in + &cause;
    }
    // A long image reference (digests) shortens the lead-in, never the cause.
    let room = WARNING_LENGTH.saturating_sub(cause.chars().count() + 1);
    format!("{} {cause}", one_line(&lead_in, room))
}

/// A host error as one line, cut to `max` characters: its first line only (registries answer
/// multi-line error chains and whole HTML pages, and a host run with `RUST_BACKTRACE=1` appends a
/// `Stack backtrace:`), whitespace folded, the host's wrapper and the request URLs (they repeat
/// the image) dropped; what is still too long is cut after its first two thirds, keeping the
/// last third: error chains put the context first and the root cause last.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let text = text
        .trim_start()
        .trim_start_matches("Callback evaluation failure: ");
    // The first line only: what follows is detail (a multi-line chain, an HTML page, the host's
    // `Stack backtrace:`), never what an operator acts on.
    let text = text.lines().next().unwrap_or_default();
    let text = text.split("Stack backtrace:").next().unwrap_or_default();
    let mut words: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let bare = word.trim_start_matches('(');
        if bare.starts_with("http://") || bare.starts_with("https://") {
            // `error sending request for url (https://...): cause`: `error sending request: cause`.
            if words.last().is_some_and(|w| w == "url") {
                words.pop();
                if words.last().is_some_and(|w| w == "for") {
                    words.pop();
                }
            }
            if word.ends_with("):") {
                if let Some(last) = words.last_mut() {
                    last.push(':');
                }
            }
            continue;
        }
        words.push(word.to_string());
    }
    cut_middle(words.join(" "), max)
}

/// `line` cut to `max` characters after its first two thirds, keeping the last third.
fn cut_middle(line: String, max: usize) -> String {
    let length = line.chars().count();
    if length <= max {
        return line;
    }
    let tail = max.saturating_sub(3) / 3;
    let head = max.saturating_sub(3) - tail;
    let start: String = line.chars().take(head).collect();
    let end: String = line.chars().skip(length - tail).collect();
    format!("{start} … {end}")
}

/// A warning of `lead`, `middle` and `tail` that fits `WARNING_LENGTH` characters: `middle` (a
/// listing) is cut in its middle first; if `lead` alone is too long, what comes before `tail` is
/// cut too. `tail` (the advice, the setting at play) survives whole, unless it leaves less than
/// 40 characters (a long note on the cluster's nodes): then its last `KEPT_TAIL` characters
/// survive, and what comes before them is cut at its end.
pub(crate) fn capped(lead: &str, middle: &str, tail: &str) -> String {
    let tail_length = tail.chars().count();
    let room = WARNING_LENGTH
        .saturating_sub(lead.chars().count() + tail_length)
        .max(40);
    let text = format!("{lead}{}", cut_middle(middle.to_string(), room));
    if tail_length > WARNING_LENGTH - 40 {
        let kept = tail_length - KEPT_TAIL;
        let end: String = tail.chars().skip(kept).collect();
        let start: String = text
            .chars()
            .chain(tail.chars().take(kept))
            .take(WARNING_LENGTH - KEPT_TAIL - 3)
            .collect();
        return format!("{start} … {end}");
    }
    cut_middle(text, WARNING_LENGTH.saturating_sub(tail_length)) + tail
}

/// What `capped` keeps of a tail too long for a warning: its end, where the setting at play is.
const KEPT_TAIL: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_too_long_for_a_warning_keeps_its_end() {
        let tail = format!(" ({})", "t".repeat(300));
        let warning = capped("lead: ", "a, b", &tail);
        assert_eq!(warning.chars().count(), 256);
        assert_eq!(
            warning,
            format!("lead: a, b ({} … {})", "t".repeat(141), "t".repeat(99))
        );
    }

    #[test]
    fn capped_warnings_keep_their_tail_whole() {
        assert_eq!(capped("lead: ", "a, b", " (tail)"), "lead: a, b (tail)");
        // Too long: the middle is cut first.
        let middle = "0123456789".repeat(30);
        let warning = capped(&"L".repeat(100), &middle, " (tail)");
        assert_eq!(warning.chars().count(), 256);
        assert_eq!(
            warning,
            format!(
                "{}{} … {} (tail)",
                "L".repeat(100),
                &middle[..98],
                &middle[300 - 48..]
            )
        );
        // A lead too long for any middle is cut too, keeping 40 characters of the middle.
        let lead = format!("{}{}", "L".repeat(200), "M".repeat(100));
        let middle: String = (0..100).map(|i| char::from(b'0' + i % 10)).collect();
        let warning = capped(&lead, &middle, &" T".repeat(20));
        assert_eq!(warning.chars().count(), 256);
        assert_eq!(
            warning,
            format!(
                "{} … {}{} … {}{}",
                "L".repeat(142),
                "M".repeat(31),
                &middle[..25],
                &middle[100 - 12..],
                " T".repeat(20)
            )
        );
    }
}
