//! The `musepi` command line: commands, settings files, the tokio runtime,
//! the reqwest providers, terminal output and exit codes.
//!
//! The binary is a thin `main` over this library; the modules are a library so
//! that integration tests can drive providers and settings directly.

pub mod cli;
pub mod commands;
pub mod hooks;
pub mod ids;
pub mod output;

pub mod settings;
pub mod trust;
pub mod view;
