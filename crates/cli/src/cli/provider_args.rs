//! The flags that choose a provider, for every command that talks to a
//! model (`compact`, `branch`, `handoff`, `view`, `serve`). Each command
//! words `--provider` and `--model` for what it uses them for.

use std::time::Duration;

use clap::Args;
use musepi_providers::ProviderFlags;

/// The provider a command talks to.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// A provider kind (openai-compatible, openai-responses, anthropic, remote-endpoint) or a
    /// name from the settings' providers map.
    #[arg(long, value_name = "KIND|NAME")]
    pub provider: Option<String>,
    /// The model.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// The provider's base URL.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The most time one request to the provider may take, retries and their waits included
    /// (default: the settings' deadlineMs, else 120).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub deadline: Option<Duration>,
}

impl ProviderArgs {
    /// The choices the provider resolution reads.
    pub fn flags(&self) -> ProviderFlags {
        ProviderFlags {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            deadline: self.deadline,
        }
    }
}

/// A positive number of seconds, decimals allowed (`90`, `0.5`).
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}` is not a positive number of seconds"))
}
