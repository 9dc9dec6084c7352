//! Recognizing a context-overflow rejection by its message (SPEC §4.3).
//!
//! The patterns are matched case-insensitively anywhere in the message.
//! In the table `#` stands for one or more digits, `*` for any run of
//! characters and `~` for an underscore or a space.

const PATTERNS: &[&str] = &[
    "prompt is too long",
    "input is too long for requested model",
    "exceeds the context window",
    "input token count*exceeds the maximum",
    "maximum prompt length is #",
    "reduce the length of the messages",
    "maximum context length is # tokens",
    "exceeds the limit of #",
    "exceeds the available context size",
    "greater than the context length",
    "context window exceeds limit",
    "exceeded model token limit",
    "too large for model with # maximum context length",
    "model_context_window_exceeded",
    "context~length~exceeded",
    "too many tokens",
    "token limit exceeded",
];

/// Whether a provider's error message says the input exceeded the model's context.
pub fn is_overflow_message(message: &str) -> bool {
    let text = message.to_lowercase();
    let text = text.as_bytes();
    PATTERNS.iter().any(|pattern| {
        let pattern = pattern.as_bytes();
        (0..text.len()).any(|start| matches_at(pattern, &text[start..]))
    })
}

/// Whether `pattern` matches a prefix of `text`.
fn matches_at(pattern: &[u8], text: &[u8]) -> bool {
    let Some((&head, rest)) = pattern.split_first() else {
        return true;
    };
    match head {
        b'*' => (0..=text.len()).any(|skip| matches_at(rest, &text[skip..])),
        b'#' => {
            let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
            (1..=digits)
                .rev()
                .any(|used| matches_at(rest, &text[used..]))
        }
        b'~' => matches!(text.first(), Some(b'_' | b' ')) && matches_at(rest, &text[1..]),
        literal => text.first() == Some(&literal) && matches_at(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::is_overflow_message;

    #[test]
    fn known_provider_messages_are_overflows() {
        for message in [
            "prompt is too long: 213462 tokens > 200000 maximum",
            "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
            "the request exceeds the available context size, try increasing it",
            "Input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            "Your input exceeds the context window of this model",
            "CONTEXT_LENGTH_EXCEEDED",
            "context length exceeded",
            "Requested input length 5000 exceeds the limit of 4096",
            "too large for model with 4096 maximum context length",
        ] {
            assert!(is_overflow_message(message), "{message}");
        }
    }

    #[test]
    fn other_messages_are_not() {
        for message in [
            "Invalid API key",
            "maximum context length is many tokens",
            "rate limit exceeded",
            "max_tokens: 300000 > 128000, which is the maximum allowed",
            "",
        ] {
            assert!(!is_overflow_message(message), "{message}");
        }
    }
}
