//! When and where to compact.
//!
//! This crate will own the pure, synchronous heart of compaction: trigger
//! decisions (SPEC §4), tool-output pruning and useless-result elision
//! (§5, §6), preparation of the cut and its regions (§7), the summary
//! requests and the compaction entry (§8, §12), and handoff requests (§10).
//! It sends nothing over the network: a preparation produces plain-data
//! requests, and a finish step turns the answers into an entry.
