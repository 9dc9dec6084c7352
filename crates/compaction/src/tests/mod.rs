//! Behaviour tests of the crate: SPEC §7.8, §18.5, §18.10 and Appendix C.

mod prepare_tests;
mod property_tests;
mod prune_tests;
mod trigger_tests;
