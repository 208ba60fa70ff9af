//! Between the agent and whoever shows its events: every event is appended to the session log
//! (synced) before it is passed on, and after each tool result that may have changed files the
//! session patch is saved next to the log, so a crash leaves both a resumable log and the work.
//! When a task ends, the model's memory is saved next to the log too (`{id}.state`, in-process
//! engine only), so that `resume` need not read the whole conversation again. When a turn that
//! may have changed files is over (the next turn starts, or the task ends), the workspace's
//! files are recorded as that turn ([`Sandbox::record_turn`]), so that any turn can be
//! restored. The records live in the sandbox's workspace for the session's lifetime; their
//! names are not written to the log.

use crate::engine::TemplatedModel;
use crate::protocol::{Event, Resolution};
use crate::sandbox::Sandbox;
use crate::session::SessionLog;
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

pub(super) fn record(
    mut from: UnboundedReceiver<Event>,
    mut log: SessionLog,
    sandbox: Arc<dyn Sandbox>,
    model: Arc<TemplatedModel>,
) -> UnboundedReceiver<Event> {
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        // The turn under way, and whether a tool that may change files ran in it.
        let (mut turn, mut touched) = (0u32, false);
        while let Some(event) = from.recv().await {
            let turn_over = matches!(
                event,
                Event::TurnStarted { .. } | Event::TaskFinished { .. }
            );
            if turn_over && std::mem::take(&mut touched) {
                if let Err(e) = sandbox.record_turn(turn).await {
                    let _ = tx.send(Event::Error {
                        message: format!("turn {turn} could not be recorded: {e}"),
                    });
                }
            }
            if let Event::TurnStarted { step } = &event {
                turn = *step;
            }
            if let Err(e) = log.append(&event) {
                let _ = tx.send(Event::Error {
                    message: format!("the session log could not be written: {e}"),
                });
            }
            let changed = matches!(
                &event,
                Event::ToolResult { name, resolution, .. }
                    if matches!(name.as_str(), "Write" | "Edit" | "Bash")
                        && matches!(resolution, Resolution::Auto | Resolution::Approved | Resolution::Edited)
            );
            if changed {
                touched = true;
                match sandbox.export_patch().await {
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
            if matches!(event, Event::TaskFinished { .. }) {
                let (model, path) = (model.clone(), log.path().with_extension("state"));
                let saved = tokio::task::spawn_blocking(move || model.save_state(&path)).await;
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
