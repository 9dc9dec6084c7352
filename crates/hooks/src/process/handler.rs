//! [`ProcessHook`] as a [`Hook`]: each event method runs the process and
//! reads its answer; exit 2 becomes `cancel: true` where the event can
//! cancel.

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{Decoded, EXIT_CANCEL, ProcessHook, exit_error, payload};
use crate::events::{
    BeforeCompactEvent, BeforeCompactResult, BeforeTreeEvent, BeforeTreeResult, CompactEvent,
    CompactingEvent, CompactingResult, TreeEvent,
};
use crate::runner::{BeforeAnswer, Hook, HookError, HookFuture};

impl Hook for ProcessHook {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn fail_closed(&self) -> bool {
        self.fail_closed
    }

    fn handles(&self, event: &str) -> bool {
        event == self.event
    }

    fn before_compact<'a>(
        &'a self,
        event: &'a BeforeCompactEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeCompactResult>> {
        Box::pin(self.decide(event, event.session_file.as_deref(), cancel))
    }

    fn compacting<'a>(
        &'a self,
        event: &'a CompactingEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, Option<CompactingResult>> {
        Box::pin(async move {
            match self
                .call::<_, CompactingResult>(event, None, &cancel)
                .await?
            {
                Decoded::Answer(r) => Ok(r),
                Decoded::Cancel(reason) => Err(HookError::Exit {
                    status: EXIT_CANCEL,
                    stderr: reason,
                }),
            }
        })
    }

    fn compacted<'a>(
        &'a self,
        event: &'a CompactEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, ()> {
        Box::pin(self.notify(event, event.session_file.as_deref(), cancel))
    }

    fn before_tree<'a>(
        &'a self,
        event: &'a BeforeTreeEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeTreeResult>> {
        Box::pin(self.decide(event, event.session_file.as_deref(), cancel))
    }

    fn tree<'a>(&'a self, event: &'a TreeEvent, cancel: CancellationToken) -> HookFuture<'a, ()> {
        Box::pin(self.notify(event, event.session_file.as_deref(), cancel))
    }
}

impl ProcessHook {
    /// Runs an event that can cancel: its answer, or the answer that
    /// cancels when the process exits 2.
    async fn decide<E: Serialize, R: BeforeAnswer + DeserializeOwned>(
        &self,
        event: &E,
        session_file: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<Option<R>, HookError> {
        Ok(
            match self.call::<_, R>(event, session_file, &cancel).await? {
                Decoded::Answer(r) => r,
                Decoded::Cancel(_) => Some(R::cancelled()),
            },
        )
    }

    /// Runs a notification: only the exit status counts; stdout is ignored.
    async fn notify<E: Serialize>(
        &self,
        event: &E,
        session_file: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<(), HookError> {
        let run = self.run(&payload(event)?, session_file, &cancel).await?;
        if run.status == 0 {
            Ok(())
        } else {
            Err(exit_error(&run))
        }
    }
}
