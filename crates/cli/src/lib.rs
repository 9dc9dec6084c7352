//! The `musepi` command line: commands, settings files and the trust of a
//! repository's own, the tokio runtime, the terminal UI, `musepi serve`,
//! terminal output and exit codes.
//!
//! It owns the process and nothing a library needs: the providers are
//! `musepi-providers`, the maintenance runtime is `musepi-runtime`. The
//! binary is a thin `main` over this library ([`commands::main`]); the
//! modules are a library so that integration tests can drive settings, the
//! terminal UI and the command line directly.

pub mod cli;
pub mod commands;
pub mod ctx;
pub mod hooks;
pub mod ids;
pub mod output;
pub mod report;
pub mod settings;
pub mod trust;
pub mod view;
