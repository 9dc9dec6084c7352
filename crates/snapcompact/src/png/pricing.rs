//! What frames cost: the billing family of the wire API
//! carrying a request, the visual tokens of one frame, and the image
//! budgets of providers.

/// Upper bound of frames in one archive; callers may ask for fewer.
pub const MAX_FRAMES_DEFAULT: usize = 80;
/// High-quality frames kept at each end of a foveated middle.
pub(crate) const HQ_EDGE_FRAMES: usize = 3;
/// Conservative per-frame token estimate for budgeting.
pub(crate) const FRAME_TOKEN_ESTIMATE: u32 = 5024;
/// Upper bound of the base64 bytes of one frame.
pub const FRAME_DATA_BYTES_ESTIMATE: usize = 170_000;
/// Most snapcompact base64 bytes in one rebuilt request.
pub const FRAME_DATA_BYTES_BUDGET: usize = 3_000_000;
/// The legacy frame edge (the original `5x8-sent` shape).
pub(crate) const FRAME_SIZE_LEGACY: u32 = 2576;
/// The key of the archive in a compaction's `preserveData`.
pub const PRESERVE_KEY: &str = "snapcompact";

/// Frames that fit the byte budget: `max(1, floor(3,000,000 / 170,000))` = 17.
pub(crate) const fn max_frames_for_data_budget() -> usize {
    let n = FRAME_DATA_BYTES_BUDGET / FRAME_DATA_BYTES_ESTIMATE;
    if n < 1 { 1 } else { n }
}

/// How a provider bills images, from the wire API of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BillingFamily {
    /// `anthropic-messages`, `bedrock-converse-stream`.
    Anthropic,
    /// The `OpenAI` wire APIs (completions, responses, codex, Azure).
    OpenAi,
    /// The Google wire APIs (Generative AI, Gemini CLI, Vertex).
    Google,
    /// Anything else; priced like Anthropic.
    Unknown,
}

/// The billing family of a wire API name.
pub(crate) fn billing_family(api: &str) -> BillingFamily {
    match api {
        "anthropic-messages" | "bedrock-converse-stream" => BillingFamily::Anthropic,
        "openai-completions"
        | "openai-responses"
        | "openai-codex-responses"
        | "azure-openai-responses" => BillingFamily::OpenAi,
        "google-generative-ai" | "google-gemini-cli" | "google-vertex" => BillingFamily::Google,
        _ => BillingFamily::Unknown,
    }
}

/// The billing family of a reader: its wire API's, or, when the API is
/// unknown, its model's (`gemini` models are billed as Google bills,
/// `gpt`, `codex`, `o3` and `o4` as `OpenAI` bills).
pub(crate) fn reader_billing_family(api: Option<&str>, model: &str) -> BillingFamily {
    match billing_family(api.unwrap_or_default()) {
        BillingFamily::Unknown => {
            let m = model.to_ascii_lowercase();
            if m.contains("gemini") {
                BillingFamily::Google
            } else if ["gpt", "codex", "o3", "o4"].iter().any(|f| m.contains(f)) {
                BillingFamily::OpenAi
            } else if m.contains("claude") {
                BillingFamily::Anthropic
            } else {
                BillingFamily::Unknown
            }
        }
        known => known,
    }
}

impl BillingFamily {
    /// Estimated input tokens of one square frame with edge `size` px.
    ///
    /// Anthropic and unknown: `ceil(min(ceil(s/28)², 4784) × 1.05)`;
    /// `OpenAI`: `ceil(min(ceil(s/32)², 10000) × 1.2)`; Google: 1,120.
    pub fn frame_tokens(self, size: u32) -> u32 {
        match self {
            Self::Anthropic | Self::Unknown => {
                let patches = size.div_ceil(28).saturating_pow(2).min(4784);
                (patches * 105).div_ceil(100)
            }
            Self::OpenAi => {
                let patches = size.div_ceil(32).saturating_pow(2).min(10_000);
                (patches * 12).div_ceil(10)
            }
            Self::Google => 1120,
        }
    }

    /// The image `detail` frames carry for this family (`original` for `OpenAI`).
    pub fn detail(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("original"),
            Self::Anthropic | Self::Google | Self::Unknown => None,
        }
    }
}

/// Images a provider accepts in one request (5 for an unknown provider).
pub(crate) fn provider_image_budget(provider: &str) -> usize {
    match provider {
        "anthropic" | "amazon-bedrock" | "openrouter" => 90,
        "openai" | "openai-codex" | "google" | "google-vertex" | "google-gemini-cli" => 200,
        _ => 5,
    }
}

/// The frame cap of an archive for a provider: `min(budget, 80)`.
pub(crate) fn archive_frame_cap(provider: &str) -> usize {
    provider_image_budget(provider).min(MAX_FRAMES_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_without_a_known_api_is_billed_as_its_model() {
        assert_eq!(
            reader_billing_family(None, "gemini-2.5-pro"),
            BillingFamily::Google
        );
        assert_eq!(
            reader_billing_family(Some(""), "gpt-5"),
            BillingFamily::OpenAi
        );
        // The API wins over the model's name.
        assert_eq!(
            reader_billing_family(Some("openai-completions"), "gemini-2.5-pro"),
            BillingFamily::OpenAi
        );
        assert_eq!(reader_billing_family(None, "llava"), BillingFamily::Unknown);
    }

    #[test]
    fn wire_apis_map_to_billing_families() {
        assert_eq!(
            billing_family("anthropic-messages"),
            BillingFamily::Anthropic
        );
        assert_eq!(
            billing_family("bedrock-converse-stream"),
            BillingFamily::Anthropic
        );
        for api in [
            "openai-completions",
            "openai-responses",
            "openai-codex-responses",
            "azure-openai-responses",
        ] {
            assert_eq!(billing_family(api), BillingFamily::OpenAi);
        }
        for api in ["google-generative-ai", "google-gemini-cli", "google-vertex"] {
            assert_eq!(billing_family(api), BillingFamily::Google);
        }
        assert_eq!(
            billing_family("mistral-conversations"),
            BillingFamily::Unknown
        );
    }

    #[test]
    fn frame_token_estimates_match_the_reference_values() {
        assert_eq!(BillingFamily::Anthropic.frame_tokens(1568), 3293);
        assert_eq!(BillingFamily::Anthropic.frame_tokens(1932), 5000);
        assert_eq!(BillingFamily::Anthropic.frame_tokens(2576), 5024);
        assert_eq!(BillingFamily::Unknown.frame_tokens(1568), 3293);
        assert_eq!(BillingFamily::OpenAi.frame_tokens(1568), 2882);
        assert_eq!(BillingFamily::Google.frame_tokens(2048), 1120);
        assert_eq!(BillingFamily::OpenAi.detail(), Some("original"));
        assert_eq!(BillingFamily::Anthropic.detail(), None);
    }

    #[test]
    fn image_budgets_cap_the_archive() {
        assert_eq!(max_frames_for_data_budget(), 17);
        assert_eq!(provider_image_budget("anthropic"), 90);
        assert_eq!(provider_image_budget("google-vertex"), 200);
        assert_eq!(provider_image_budget("someone"), 5);
        assert_eq!(archive_frame_cap("openai"), 80);
        assert_eq!(archive_frame_cap("someone"), 5);
    }
}
