//! Which entries a branch summary covers (docs/design.md, "Branch summaries").
//!
//! Leaving the old leaf for a target abandons the entries between the old
//! leaf and the deepest entry the two paths share. Those entries, oldest
//! first, are what the summary is about.

use std::collections::HashSet;

use musepi_session_model::{EntryId, Session};

use crate::error::BranchError;

/// The entries a branch summary covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    /// Positions (in [`Session::entries`]) of the abandoned entries, oldest first.
    pub entries: Vec<usize>,
    /// Position of the deepest entry on both the old leaf's and the
    /// target's path, or `None` when the paths share nothing.
    pub common_ancestor: Option<usize>,
}

impl Collected {
    /// Whether there is nothing to summarize.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The ids of the collected entries, oldest first.
    pub fn ids<'s>(&self, session: &'s Session) -> Vec<&'s EntryId> {
        self.entries
            .iter()
            .filter_map(|&i| session.entries().get(i).map(|e| &e.id))
            .collect()
    }
}

/// Collects the entries abandoned by moving from `old_leaf` to `target`
/// (`collectEntriesForBranchSummary`, docs/design.md, "Branch summaries"), by entry position.
///
/// - No old leaf: nothing.
/// - The common ancestor is the deepest entry of the target's path that is
///   also on the old leaf's path; `target` `None` (navigating to before the
///   first entry, "root") has no path, so nothing is shared.
/// - The entries run from the old leaf up to the common ancestor
///   (exclusive), or up to the root when nothing is shared, and are
///   returned oldest first.
/// - A target that is the old leaf or below it shares the whole old path:
///   nothing is collected.
pub fn collect_entries(
    session: &Session,
    old_leaf: Option<usize>,
    target: Option<usize>,
) -> Result<Collected, BranchError> {
    let len = session.len();
    for position in old_leaf.into_iter().chain(target) {
        if position >= len {
            return Err(BranchError::PositionOutOfRange { position, len });
        }
    }
    let Some(old_leaf) = old_leaf else {
        return Ok(Collected::default());
    };
    let old_path: HashSet<usize> = session.path_indices(old_leaf).into_iter().collect();
    let common_ancestor = target.and_then(|t| {
        session
            .path_indices(t)
            .into_iter()
            .rev()
            .find(|i| old_path.contains(i))
    });
    let mut entries = Vec::new();
    let mut current = Some(old_leaf);
    while let Some(c) = current {
        if Some(c) == common_ancestor {
            break;
        }
        entries.push(c);
        current = session.parent_index(c);
    }
    entries.reverse();
    Ok(Collected {
        entries,
        common_ancestor,
    })
}

/// [`collect_entries`] by entry id; an unknown id is an error.
pub fn collect_entries_by_id(
    session: &Session,
    old_leaf: Option<&str>,
    target: Option<&str>,
) -> Result<Collected, BranchError> {
    let position = |id: &str| {
        session
            .index_of(id)
            .ok_or_else(|| BranchError::EntryNotFound {
                id: EntryId::new(id),
            })
    };
    let old_leaf = old_leaf.map(position).transpose()?;
    let target = target.map(position).transpose()?;
    collect_entries(session, old_leaf, target)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::test_support::{entry, session_from, tree, user};

    /// `A → B → C → D` and `A → E → F`, the design document's picture.
    fn picture() -> Session {
        tree(&[
            ("A", None),
            ("B", Some("A")),
            ("C", Some("B")),
            ("D", Some("C")),
            ("E", Some("A")),
            ("F", Some("E")),
        ])
    }

    fn check(
        session: &Session,
        old: Option<&str>,
        target: Option<&str>,
        want: &[&str],
        ancestor: Option<&str>,
    ) {
        let got = collect_entries_by_id(session, old, target).unwrap();
        let ids: Vec<&str> = got.ids(session).into_iter().map(EntryId::as_str).collect();
        assert_eq!(ids, want);
        let got_ancestor = got
            .common_ancestor
            .map(|i| session.entries()[i].id.as_str());
        assert_eq!(got_ancestor, ancestor);
    }

    #[test]
    fn leaving_for_a_sibling_branch_collects_up_to_the_fork() {
        check(
            &picture(),
            Some("D"),
            Some("F"),
            &["B", "C", "D"],
            Some("A"),
        );
    }

    #[test]
    fn going_back_up_the_same_path_collects_what_is_below_the_target() {
        check(&picture(), Some("D"), Some("B"), &["C", "D"], Some("B"));
    }

    #[test]
    fn the_target_itself_or_a_descendant_collects_nothing() {
        let s = picture();
        check(&s, Some("D"), Some("D"), &[], Some("D"));
        check(&s, Some("B"), Some("D"), &[], Some("B"));
    }

    #[test]
    fn disjoint_paths_collect_the_whole_old_path() {
        let s = tree(&[("A", None), ("B", Some("A")), ("R", None), ("S", Some("R"))]);
        check(&s, Some("B"), Some("S"), &["A", "B"], None);
    }

    #[test]
    fn navigating_to_root_collects_the_whole_old_path() {
        check(&picture(), Some("D"), None, &["A", "B", "C", "D"], None);
    }

    #[test]
    fn no_old_leaf_collects_nothing() {
        check(&picture(), None, Some("F"), &[], None);
    }

    #[test]
    fn unknown_ids_and_positions_are_errors() {
        let s = picture();
        let err = collect_entries_by_id(&s, Some("D"), Some("nope")).unwrap_err();
        assert_eq!(err.to_string(), "Entry nope not found");
        let err = collect_entries(&s, Some(0), Some(99)).unwrap_err();
        assert!(matches!(
            err,
            BranchError::PositionOutOfRange {
                position: 99,
                len: 6
            }
        ));
    }

    #[test]
    fn an_orphan_old_leaf_stops_at_its_missing_parent() {
        let s = session_from(vec![
            entry("A", None, user("a")),
            entry("X", Some("missing"), user("x")),
            entry("Y", Some("X"), user("y")),
        ]);
        check(&s, Some("Y"), Some("A"), &["X", "Y"], None);
    }

    /// A random forest: entry `i` hangs under an earlier entry or is a root.
    fn forest() -> impl Strategy<Value = Vec<Option<usize>>> {
        (1usize..40).prop_flat_map(|n| {
            (0..n)
                .map(|i| {
                    if i == 0 {
                        Just(None).boxed()
                    } else {
                        prop_oneof![1 => Just(None), 6 => (0..i).prop_map(Some)].boxed()
                    }
                })
                .collect::<Vec<_>>()
        })
    }

    proptest! {
        #[test]
        fn collected_entries_are_the_old_path_minus_the_target_path(
            parents in forest(),
            old in any::<prop::sample::Index>(),
            target in any::<prop::sample::Index>(),
            to_root in any::<bool>(),
        ) {
            let names: Vec<String> = (0..parents.len()).map(|i| format!("e{i}")).collect();
            let spec: Vec<(&str, Option<&str>)> = parents
                .iter()
                .enumerate()
                .map(|(i, p)| (names[i].as_str(), p.map(|p| names[p].as_str())))
                .collect();
            let s = tree(&spec);
            let old = old.index(parents.len());
            let target = (!to_root).then(|| target.index(parents.len()));
            let got = collect_entries(&s, Some(old), target).unwrap();
            let target_path: HashSet<usize> = target
                .map(|t| s.path_indices(t).into_iter().collect())
                .unwrap_or_default();
            let want: Vec<usize> = s
                .path_indices(old)
                .into_iter()
                .filter(|i| !target_path.contains(i))
                .collect();
            prop_assert_eq!(&got.entries, &want);
            let old_path = s.path_indices(old);
            let shared: Vec<usize> = old_path.iter().copied().filter(|i| target_path.contains(i)).collect();
            prop_assert_eq!(got.common_ancestor, shared.last().copied());
        }
    }
}
