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

/// The event methods that run the process with the event's session file:
/// a before-event is `decide`d (exit 2 cancels), a notification is
/// `notify`d (only the exit status counts).
macro_rules! run_with_session_file {
    ($($method:ident($event:ty) -> $answer:ty => $run:ident;)*) => {$(
        fn $method<'a>(
            &'a self,
            event: &'a $event,
            cancel: CancellationToken,
        ) -> HookFuture<'a, $answer> {
            Box::pin(self.$run(event, event.session_file.as_deref(), cancel))
        }
    )*};
}

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

    run_with_session_file! {
        before_compact(BeforeCompactEvent) -> Option<BeforeCompactResult> => decide;
        compacted(CompactEvent) -> () => notify;
        before_tree(BeforeTreeEvent) -> Option<BeforeTreeResult> => decide;
        tree(TreeEvent) -> () => notify;
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
                Decoded::Cancel(reason) => Some(R::cancelled(reason)),
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
