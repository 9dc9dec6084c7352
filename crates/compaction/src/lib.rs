//! When and where to compact.
//!
//! This crate owns the pure, synchronous heart of compaction: trigger
//! decisions (SPEC §4), tool-output pruning and useless-result elision
//! (§5, §6), preparation of the cut and its regions (§7), the summary
//! requests and the compaction entry (§8, §12), and handoff requests (§10).
//! It sends nothing over the network: a preparation produces plain-data
//! requests, and a finish step turns the answers into an entry.

mod cut;
mod prepare;
mod settings;

pub use cut::{CutPoint, find_cut_point, is_turn_start, is_valid_cut_point, yields_message};
pub use prepare::{NothingToCompact, Preparation, prepare, summary_message};
pub use settings::CompactionSettings;
