//! Development automation.
fn main() {}
