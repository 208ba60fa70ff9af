//! Between the agent and whoever shows its events: every event is appended to the session log
//! (synced) before it is passed on, and after each tool result that may have changed files the
//! session patch is saved next to the log, so a crash leaves both a resumable log and the work.
//! When a task ends, the model's memory is saved next to the log too (`{id}.state`, in-process
//! engine only), so that `resume` need not read the whole conversation again. Each recorded
//! turn's files are kept as a patch (`{id}.turns/{n}.patch`, read from the workspace's record,
//! so later edits cannot leak into it); a rewind drops the patches of the turns it undid and
//! makes the rewound-to turn's patch the session patch.

use crate::engine::{SequenceId, TemplatedModel};
use crate::protocol::{Event, Resolution};
use crate::sandbox::{Sandbox, SandboxError};
use crate::session::{SessionError, SessionLog};
use std::sync::Arc;
use thiserror::Error;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

pub(super) fn record(
    mut from: UnboundedReceiver<Event>,
    mut log: SessionLog,
    sandbox: Arc<dyn Sandbox>,
    model: Arc<TemplatedModel>,
    sequence: SequenceId,
) -> UnboundedReceiver<Event> {
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = from.recv().await {
            if let Err(e) = log.append(&event) {
                let _ = tx.send(Event::Error {
                    message: format!("the session log could not be written: {e}"),
                });
            }
            let changed = matches!(
                &event,
                Event::ToolResult { name, resolution, .. }
                    if crate::protocol::ToolName::parse(name).is_some_and(|t| t.changes_files())
                        && matches!(resolution, Resolution::Auto | Resolution::Approved | Resolution::Edited)
            );
            if changed {
                match crate::sandbox::workspace::Checkout::of(sandbox.as_ref())
                    .export_patch()
                    .await
                {
                    Ok(patch) => {
                        if let Err(e) = log.save_patch(&patch) {
                            let _ = tx.send(Event::Error {
                                message: e.to_string(),
                            });
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Event::Error {
                            message: format!("the session patch could not be saved: {e}"),
                        });
                    }
                }
            }
            if let Err(e) = keep_turns(&event, &log, sandbox.as_ref()).await {
                let _ = tx.send(Event::Error {
                    message: e.to_string(),
                });
            }
            if matches!(event, Event::TaskFinished { .. }) {
                let (model, path) = (model.clone(), log.path().with_extension("state"));
                let saved =
                    tokio::task::spawn_blocking(move || model.save_state_of(sequence, &path)).await;
                if let Ok(Err(e)) = saved {
                    let _ = tx.send(Event::Error {
                        message: format!("the model's memory could not be saved for resuming: {e}"),
                    });
                }
            }
            let _ = tx.send(event);
        }
    });
    rx
}

/// Why a turn's files were not kept (sent on as an [`Event::Error`]).
#[derive(Debug, Error)]
enum KeepError {
    #[error("turn {turn}'s files could not be kept: {source}")]
    Turn {
        turn: u32,
        #[source]
        source: SandboxError,
    },
    #[error("the session patch could not be saved: {0}")]
    Rewound(#[source] SandboxError),
    #[error(transparent)]
    Log(#[from] SessionError),
}

/// Keep the patch of a recorded turn, or forget those a rewind undid.
async fn keep_turns(
    event: &Event,
    log: &SessionLog,
    sandbox: &dyn Sandbox,
) -> Result<(), KeepError> {
    match event {
        Event::TurnRecorded { turn } => {
            let patch = crate::sandbox::workspace::Checkout::of(sandbox)
                .turn_patch(*turn)
                .map_err(|source| KeepError::Turn {
                    turn: *turn,
                    source,
                })?;
            Ok(log.save_turn_patch(*turn, &patch)?)
        }
        Event::Rewound { turn, .. } => {
            log.forget_turns_after(*turn)?;
            let patch = crate::sandbox::workspace::Checkout::of(sandbox)
                .turn_patch(*turn)
                .map_err(KeepError::Rewound)?;
            Ok(log.save_patch(&patch)?)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_turn_not_kept_says_which_and_keeps_the_sandbox_s_error() {
        let e = KeepError::Turn {
            turn: 3,
            source: SandboxError::NotFound {
                path: "a.txt".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "turn 3's files could not be kept: no such file or directory: a.txt"
        );
        assert!(e.source().is_some_and(|s| s.is::<SandboxError>()));
    }
}
