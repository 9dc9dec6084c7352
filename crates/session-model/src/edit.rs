//! The edits of the tree that a session and its journal both make.

use serde_json::Value;

use crate::entry::{BranchSummary, EntryBody, MadeBy};
use crate::error::SessionError;
use crate::id::EntryId;
use crate::message::Usage;
use crate::session::{Session, Stamp};
use crate::text::Text;

/// The edits of the tree that a [`Session`] makes in memory and a
/// [`Journal`](crate::Journal) makes durably: each is written once here, on what the two
/// do each in their own way (move the leaf, and append an entry whole or
/// not at all).
pub trait TreeEdit {
    /// The session edited.
    fn session(&self) -> &Session;

    /// Moves the leaf to `to`, or clears it for `None` (the next entry
    /// starts a new root); entries are not modified.
    fn move_leaf(&mut self, to: Option<&str>) -> Result<(), SessionError>;

    /// Appends an entry under the leaf and moves the leaf to it (a journal
    /// makes it durable first, and on error changes nothing).
    fn append_entry(
        &mut self,
        body: EntryBody,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError>;

    /// Appends a label entry; an empty or absent label clears the target's
    /// label.
    fn append_label(
        &mut self,
        target: &str,
        label: Option<&str>,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        let body = self.session().label_body(target, label)?;
        self.append_entry(body, stamp)
    }

    /// Moves the leaf to `from` (or clears it for `None`, meaning "root")
    /// and appends a `branch_summary` under it (docs/design.md, "The
    /// session file and its tree", `branchWithSummary`): both, or on error
    /// neither.
    fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_extension: bool,
        usage: Option<Usage>,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        let body = EntryBody::BranchSummary(BranchSummary {
            from_id: from.unwrap_or("root").to_owned(),
            summary: Text::new(summary),
            details,
            made_by: MadeBy::extension(from_extension),
            usage,
        });
        // An append that fails changes nothing, so only the leaf moves
        // back; a journal's append checks the file and snapshots the
        // session, once for the whole edit.
        let old_leaf = self.session().leaf_id().cloned();
        self.move_leaf(from)?;
        let appended = self.append_entry(body, stamp);
        if appended.is_err() {
            // The old leaf is an entry of the session: moving back to it
            // cannot fail.
            self.move_leaf(old_leaf.as_ref().map(EntryId::as_str)).ok();
        }
        appended
    }
}

impl TreeEdit for Session {
    fn session(&self) -> &Session {
        self
    }

    fn move_leaf(&mut self, to: Option<&str>) -> Result<(), SessionError> {
        if let Some(id) = to {
            return self.set_leaf(id);
        }
        self.reset_leaf();
        Ok(())
    }

    fn append_entry(
        &mut self,
        body: EntryBody,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        Ok(self.append(body, stamp))
    }
}
