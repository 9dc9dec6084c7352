//! The synthetic session as a v1 file: the format before entries had ids,
//! which every reader migrates in memory.
//!
//! A v1 file is one list: each entry's parent is the entry before it, and a
//! compaction names its first kept entry by position (`firstKeptEntryIndex`,
//! the header being 0). The conversion drops the ids and parent links and
//! the branch summaries (no v1 file has them), so the abandoned branches of
//! the v3 file become part of the one path.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde_json::Value;

use crate::BoxError;

/// Writes `src` (a v3 session) to `dst` as a v1 session; returns a one-line summary.
pub(crate) fn to_v1(src: &Path, dst: &Path) -> Result<String, BoxError> {
    let reader = BufReader::with_capacity(1 << 20, File::open(src)?);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(dst)?);
    // Position of each written entry by its v3 id (the header is 0).
    let mut position: HashMap<String, u64> = HashMap::new();
    let mut written = 0u64;
    let mut bytes = 0u64;
    for line in reader.lines() {
        let line = line?;
        let mut v: Value = serde_json::from_str(&line)?;
        let map = v.as_object_mut().ok_or("a line is not an object")?;
        match map.get("type").and_then(Value::as_str) {
            Some("session") => {
                map.shift_remove("version");
            }
            Some("branch_summary") => continue,
            _ => {
                let id = map
                    .shift_remove("id")
                    .and_then(|v| v.as_str().map(str::to_owned));
                map.shift_remove("parentId");
                if let Some(first_kept) = map.shift_remove("firstKeptEntryId") {
                    let index = first_kept
                        .as_str()
                        .and_then(|id| position.get(id))
                        .ok_or("a compaction keeps an entry that is not written before it")?;
                    map.insert("firstKeptEntryIndex".into(), (*index).into());
                }
                if let Some(id) = id {
                    position.insert(id, written + 1);
                }
                written += 1;
            }
        }
        let text = serde_json::to_string(&v)?;
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        bytes += text.len() as u64 + 1;
    }
    out.flush()?;
    Ok(format!("{{\"bytes\":{bytes},\"entries\":{written}}}"))
}
