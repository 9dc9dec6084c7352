//! Helpers shared by the cli integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::{Duration, SystemTime};

/// Makes a session the test just wrote look idle to musepi's live-session
/// check, as a file nobody has written for a minute: its modification time
/// is set a minute into the past. The check itself is tested on files left
/// as they are.
pub fn settle(path: &Path) {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open the session to settle it");
    file.set_modified(SystemTime::now() - Duration::from_mins(1))
        .expect("set the modification time");
}
