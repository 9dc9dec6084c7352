//! Behaviour tests of the crate: the worked examples of docs/design.md
//! ("Cut points and regions"), cases of pi's compaction tests, and the
//! end-to-end example of pi's design.

mod cut_tests;
mod kept_window_tests;
mod prepare_path_tests;
mod prepare_tests;
mod property_tests;
mod prune_tests;
mod prune_window_tests;
mod trigger_tests;
