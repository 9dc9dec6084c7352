//! The `musepi` command line.
fn main() {}
