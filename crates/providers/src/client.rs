//! The one `reqwest::Client` every provider shares: rustls over ring, a
//! connect timeout, and redirects followed only within the origin of the
//! request, so the conversation and the key never reach another host.

use std::sync::OnceLock;
use std::time::Duration;

/// The connect timeout of the shared client.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most redirects followed within one origin.
const MAX_REDIRECTS: usize = 5;

/// Installs ring as the process-wide rustls crypto provider.
///
/// Call it once at start-up, before any client is built; calling it again
/// (or after another provider was installed) does nothing.
pub fn install_crypto_provider() {
    // An error only says a provider is already installed, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Builds a client with rustls over ring and the given connect timeout,
/// following redirects only within the origin of the request.
///
/// Total timeouts are set per request, so one client serves every provider.
pub fn build_client(connect_timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    install_crypto_provider();
    reqwest::Client::builder()
        .user_agent(concat!("musepi/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(connect_timeout)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !same_origin {
                // Handed back as the 3xx answer, which `once` refuses.
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        }))
        .build()
}

/// The process's shared client (connect timeout [`DEFAULT_CONNECT_TIMEOUT`]).
///
/// Clones are cheap and share one connection pool.
pub fn shared_client() -> Result<reqwest::Client, reqwest::Error> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let client = build_client(DEFAULT_CONNECT_TIMEOUT)?;
    Ok(CLIENT.get_or_init(|| client).clone())
}
