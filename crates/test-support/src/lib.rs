//! What the musepi crates' tests share.
//!
//! This crate owns three things every test suite of the workspace needs
//! and none should write again:
//!
//! - [`SessionBuilder`]: sessions written as JSONL lines, exactly like a
//!   file, and loaded with the normal loader; [`EntryBuilder`] when a test
//!   needs the typed session in memory and keeps appending to it;
//! - [`golden!`]: one golden snapshot check (insta, named by the caller,
//!   without the module prefix or the expression);
//! - [`http::Server`]: a scripted HTTP server on 127.0.0.1 that records
//!   every request, so provider and command tests never reach another host.
//!
//! It must not know any crate above session-model, so every crate of the
//! workspace can use it in its tests; it is never published.

// A failure in test support is a failure of the test that called it.
#![allow(clippy::missing_panics_doc)]

mod builder;
mod entries;
pub mod http;

pub use builder::{SessionBuilder, session_of, text_block, tool_call};
pub use entries::EntryBuilder;
#[doc(hidden)]
pub use insta;

/// Asserts that every one of `parts` occurs in `text`, in this order
/// (`what` names the text in the message).
pub fn assert_in_order(what: &str, text: &str, parts: &[&str]) {
    let positions: Vec<usize> = parts
        .iter()
        .map(|p| text.find(p).unwrap_or(usize::MAX))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "{what}: {positions:?}"
    );
}

/// Asserts that `text` equals the stored snapshot `name`: the one golden
/// check of every snapshot test (named by the caller, no module prefix, no
/// expression in the file), for example
/// `musepi_test_support::golden!("cut__split_turn", rendered)`.
#[macro_export]
macro_rules! golden {
    ($name:expr, $text:expr) => {{
        let mut settings = $crate::insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.bind(|| $crate::insta::assert_snapshot!($name, $text));
    }};
}
