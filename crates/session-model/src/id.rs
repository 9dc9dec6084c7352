//! Entry ids and where new ones come from.

use std::borrow::Borrow;
use std::fmt::{self, Write as _};

use compact_str::CompactString;
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

/// The id of one session entry: 8 lowercase hex digits when pi made it, but
/// any string is accepted and kept as it was read.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EntryId(CompactString);

impl EntryId {
    /// Wraps an id string.
    pub fn new(id: impl AsRef<str>) -> Self {
        Self(CompactString::new(id.as_ref()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The numeric value of an id of exactly 8 lowercase hex digits.
    pub fn hex_value(&self) -> Option<u32> {
        let s = self.as_str();
        if s.len() == 8
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            u32::from_str_radix(s, 16).ok()
        } else {
            None
        }
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Borrow<str> for EntryId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for EntryId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for EntryId {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for EntryId {
    fn from(s: String) -> Self {
        Self(CompactString::from(s))
    }
}

impl PartialEq<str> for EntryId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EntryId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A source of candidate ids for new entries.
///
/// The crate never draws randomness itself: the caller passes a source.
/// [`SequentialIds`] gives the deterministic `00000001`, `00000002`, … mode;
/// a random source (the `musepi` binary has one) gives 8 random hex digits.
pub trait IdSource {
    /// The next candidate. The session retries on collision, so a source
    /// need not know which ids are taken.
    fn next_candidate(&mut self) -> String;

    /// A candidate that is unlikely to collide with anything, used after
    /// 100 collisions in a row. Random sources return a full UUID here.
    fn fallback(&mut self) -> String {
        self.next_candidate()
    }

    /// The id of a new session made at `now_ms` (Unix milliseconds): a
    /// version-7 UUID ([`uuid_v7`]), as pi 0.73.1 writes, so that ids sort in the
    /// order their sessions were made. By default its other bits are zero
    /// but for the value of the next candidate (when it is hex), which keeps
    /// a deterministic source deterministic; a random source fills them
    /// with random bits.
    fn session_id(&mut self, now_ms: i64) -> String {
        let n = u64::from_str_radix(&self.next_candidate(), 16).unwrap_or(0);
        let mut bits = [0u8; 10];
        bits[2..].copy_from_slice(&n.to_be_bytes());
        uuid_v7(now_ms, bits)
    }
}

/// A UUID of version 7 (RFC 9562) in its hyphenated lowercase form: the
/// first 48 bits are `unix_ms` (clamped to what they hold), then the version
/// `7`, 12 bits of `bits`, the variant `10` and 62 more bits of `bits`.
pub fn uuid_v7(unix_ms: i64, bits: [u8; 10]) -> String {
    let ms = u64::try_from(unix_ms).unwrap_or(0).min((1 << 48) - 1);
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6..].copy_from_slice(&bits);
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid_hyphenated(&b)
}

/// 16 bytes in a UUID's hyphenated lowercase form
/// (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`); the bytes carry their version and
/// variant already.
pub fn uuid_hyphenated(b: &[u8; 16]) -> String {
    let h = b.iter().fold(String::with_capacity(32), |mut h, x| {
        let _ = write!(h, "{x:02x}");
        h
    });
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Deterministic ids: `00000001`, `00000002`, … in 8 lowercase hex digits.
#[derive(Debug, Clone, Default)]
pub struct SequentialIds {
    next: u64,
}

impl SequentialIds {
    /// Starts at `00000001`.
    pub fn new() -> Self {
        Self { next: 1 }
    }

    /// Continues after the highest 8-hex-digit id among `ids`.
    pub fn after<'a>(ids: impl IntoIterator<Item = &'a EntryId>) -> Self {
        let highest = ids
            .into_iter()
            .filter_map(EntryId::hex_value)
            .max()
            .unwrap_or(0);
        Self {
            next: u64::from(highest) + 1,
        }
    }
}

impl IdSource for SequentialIds {
    fn next_candidate(&mut self) -> String {
        let n = self.next.max(1);
        self.next = n + 1;
        if u32::try_from(n).is_ok() {
            format!("{n:08x}")
        } else {
            format!("{n:x}")
        }
    }
}

/// Draws a fresh id from `source` that is not in `taken`: up to 100
/// candidates, then the source's fallback form.
pub(crate) fn fresh_id(source: &mut dyn IdSource, taken: &dyn Fn(&str) -> bool) -> EntryId {
    for _ in 0..100 {
        let candidate = source.next_candidate();
        if !taken(&candidate) {
            return EntryId::from(candidate);
        }
    }
    loop {
        let candidate = source.fallback();
        if !taken(&candidate) {
            return EntryId::from(candidate);
        }
    }
}

/// Ids handed out during one pass (migration) that are not in the index yet.
#[derive(Default)]
pub(crate) struct IdSet(FxHashSet<EntryId>);

impl IdSet {
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    pub(crate) fn insert(&mut self, id: EntryId) {
        self.0.insert(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_are_eight_hex_digits() {
        let mut ids = SequentialIds::new();
        assert_eq!(ids.next_candidate(), "00000001");
        assert_eq!(ids.next_candidate(), "00000002");
    }

    #[test]
    fn sequential_ids_continue_after_the_highest_hex_id() {
        let existing = [
            EntryId::new("0000000a"),
            EntryId::new("not-hex"),
            EntryId::new("00000003"),
        ];
        let mut ids = SequentialIds::after(&existing);
        assert_eq!(ids.next_candidate(), "0000000b");
    }

    #[test]
    fn a_session_id_is_a_uuid_v7_of_its_time() {
        let id = uuid_v7(0x0196_1234_5678, [0xff; 10]);
        assert_eq!(id, "01961234-5678-7fff-bfff-ffffffffffff");
        assert_eq!(
            uuid_v7(1_700_000_000_000, [0; 10]),
            "018bcfe5-6800-7000-8000-000000000000"
        );
        assert_eq!(uuid_v7(-5, [0; 10]), "00000000-0000-7000-8000-000000000000");
        // A deterministic source: the time, then its sequence number.
        let mut ids = SequentialIds::new();
        assert_eq!(
            ids.session_id(1_700_000_000_000),
            "018bcfe5-6800-7000-8000-000000000001"
        );
        assert!(
            ids.session_id(1_700_000_000_001).as_str() > "018bcfe5-6800-7000-8000-000000000001"
        );
    }

    #[test]
    fn fresh_ids_skip_taken_candidates() {
        let mut ids = SequentialIds::new();
        let id = fresh_id(&mut ids, &|c| c == "00000001" || c == "00000002");
        assert_eq!(id, "00000003");
    }
}
