//! Where the binary's new entry ids come from.
//!
//! The session model never draws randomness itself; it asks an
//! [`IdSource`]. [`RandomIds`] gives pi's ids (8 lowercase hex digits, a
//! UUID-like form after 100 collisions) and pi's session ids (version-7 UUIDs of the
//! clock musepi runs with, `--now` included); `--deterministic-ids` swaps in
//! [`SequentialIds`] instead ([`for_new_entries`], [`new_session_id`]). An
//! unmigrated v1 file's entries are numbered the same way in every command
//! and by its migration ([`for_v1`]).

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use musepi_session_model::{EntryId, IdSource, SequentialIds, Session, uuid_hyphenated, uuid_v7};

/// Random ids from the operating system's generator (`getrandom`).
///
/// Should the generator fail, a `SplitMix64` stream seeded from the clock and
/// the process id keeps ids coming; uniqueness within the session is still
/// checked by the session model.
#[derive(Debug)]
pub struct RandomIds {
    fallback_state: u64,
}

impl Default for RandomIds {
    fn default() -> Self {
        Self::new()
    }
}

impl RandomIds {
    /// A new source.
    pub fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            fallback_state: nanos ^ (u64::from(std::process::id()) << 32),
        }
    }

    fn fill(&mut self, buf: &mut [u8]) {
        if getrandom::fill(buf).is_ok() {
            return;
        }
        for chunk in buf.chunks_mut(8) {
            let word = splitmix64(&mut self.fallback_state).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl IdSource for RandomIds {
    /// Eight lowercase hex digits, as pi's `randomUUID().slice(0, 8)`.
    fn next_candidate(&mut self) -> String {
        let mut b = [0u8; 4];
        self.fill(&mut b);
        hex(&b)
    }

    /// A version-4 UUID, pi's fallback after 100 collisions.
    fn fallback(&mut self) -> String {
        let mut b = [0u8; 16];
        self.fill(&mut b);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        uuid_hyphenated(&b)
    }

    /// A version-7 UUID of `now_ms` with 74 random bits, as pi's `uuidv7()`.
    fn session_id(&mut self, now_ms: i64) -> String {
        let mut bits = [0u8; 10];
        self.fill(&mut bits);
        uuid_v7(now_ms, bits)
    }
}

/// The id of a new session made at `now_ms`: a version-7 UUID, random but for its
/// time; with `deterministic`, the time and the sequence number 1, so the
/// same `--now` gives the same id.
pub fn new_session_id(deterministic: bool, now_ms: i64) -> String {
    if deterministic {
        SequentialIds::new().session_id(now_ms)
    } else {
        RandomIds::new().session_id(now_ms)
    }
}

/// The id source for entries added to a session holding `existing` ids:
/// with `deterministic`, `SequentialIds::after(existing)`, else random.
pub fn for_new_entries<'a>(
    deterministic: bool,
    existing: impl IntoIterator<Item = &'a EntryId>,
) -> Box<dyn IdSource + Send> {
    if deterministic {
        Box::new(SequentialIds::after(existing))
    } else {
        Box::new(RandomIds::new())
    }
}

/// The id source for entries added to `session` ([`for_new_entries`] of
/// its ids).
pub fn for_session(deterministic: bool, session: &Session) -> Box<dyn IdSource + Send> {
    for_new_entries(deterministic, session.entries().iter().map(|e| &e.id))
}

/// The ids of an unmigrated v1 file's entries, which have none of their
/// own: `00000001`, `00000002`, … in parsed-entry order (the header, blank
/// and malformed lines not counted), whatever the flags. Every command that
/// reads the file numbers it so, and its migration writes these ids, so an
/// id one command prints is the one the next takes, before and after
/// `musepi session migrate`. Entries added later get ids that no entry has
/// ([`for_session`]).
pub fn for_v1() -> SequentialIds {
    SequentialIds::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_eight_lowercase_hex_digits() {
        let mut ids = RandomIds::new();
        for _ in 0..100 {
            let id = ids.next_candidate();
            assert_eq!(id.len(), 8);
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
        }
    }

    #[test]
    fn random_ids_differ() {
        let mut ids = RandomIds::new();
        let a: Vec<String> = (0..50).map(|_| ids.next_candidate()).collect();
        let mut b = a.clone();
        b.dedup();
        b.sort();
        b.dedup();
        assert!(b.len() > 45, "{a:?}");
    }

    #[test]
    fn the_fallback_is_a_version_4_uuid() {
        let id = RandomIds::new().fallback();
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
    }

    /// A new session's id is a version-7 UUID of the clock it was made at: version
    /// nibble 7, variant 10, and later sessions sort after earlier ones.
    #[test]
    fn session_ids_are_uuid_v7_in_time_order() {
        let times = [1_700_000_000_000_i64, 1_700_000_000_001, 1_800_000_000_000];
        for deterministic in [false, true] {
            let ids: Vec<String> = times
                .iter()
                .map(|&t| new_session_id(deterministic, t))
                .collect();
            for id in &ids {
                let parts: Vec<&str> = id.split('-').collect();
                assert_eq!(
                    parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                    [8, 4, 4, 4, 12],
                    "{id}"
                );
                assert_eq!(&id[14..15], "7", "version nibble of {id}");
                assert!("89ab".contains(&id[19..20]), "variant of {id}");
                assert_eq!(id.to_lowercase(), *id);
            }
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            assert!(ids[0].starts_with("018bcfe5-6800-7"), "{}", ids[0]);
        }
        assert_eq!(
            new_session_id(true, 1_700_000_000_000),
            new_session_id(true, 1_700_000_000_000)
        );
        assert_ne!(
            new_session_id(false, 1_700_000_000_000),
            new_session_id(false, 1_700_000_000_000)
        );
    }

    #[test]
    fn deterministic_sources_continue_after_existing_ids() {
        let existing = [EntryId::new("00000009")];
        assert_eq!(
            for_new_entries(true, &existing).next_candidate(),
            "0000000a"
        );
        assert_eq!(for_v1().next_candidate(), "00000001");
    }
}
