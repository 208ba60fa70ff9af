//! Snapshot tests of the interface's main views, drawn by the real App into ratatui's
//! `TestBackend` from a scripted list of events: the transcript, a change under review (diff
//! with hunks, line numbers and emphasis), a command waiting for approval, the help overlay,
//! the status line and the session patch. Text snapshots live in `tests/snapshots/tui/`;
//! run with `UPDATE_SNAPSHOTS=1` to rewrite them after an intended change, and review the diff.
//! Styles are checked by assertions on the buffer (added/removed backgrounds, emphasis).

use lilypad::diff::{patch, FileDiff};
use lilypad::protocol::{
    ApprovalKind, ApprovalRequest, Event, Figures, FinishReason, Resolution, Reuse, StopReason,
    ToolCall, ToolCategory,
};
use lilypad::tui::app::{App, AppOptions, Effect};
use lilypad::tui::{views, Theme};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use std::time::Duration;

pub const W: u16 = 100;
pub const H: u16 = 32;

pub fn app() -> App {
    let mut app = App::new(AppOptions {
        theme: Theme::dark(),
        repo: None,
        has_patch: true,
        replay: false,
    });
    app.status.elapsed_override = Some(Duration::from_secs(83));
    app
}

/// Feed events, performing diff computations synchronously.
pub fn feed(app: &mut App, events: Vec<Event>) {
    for ev in events {
        for fx in app.on_event(ev) {
            if let Effect::ComputeDiff {
                id,
                path,
                before,
                after,
                revision,
            } = fx
            {
                let d = FileDiff::compute_with(&path, before.as_deref(), &after, &app.hl);
                app.on_diff_of(id, revision, d);
            }
        }
    }
}

pub fn draw(app: &App) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    term.draw(|f| views::draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

pub fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn snapshot(name: &str, buf: &Buffer) {
    let path = format!(
        "{}/tests/snapshots/tui/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let got = text(buf);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing snapshot {path}; run with UPDATE_SNAPSHOTS=1"));
    assert_eq!(
        got, want,
        "snapshot {name} differs (UPDATE_SNAPSHOTS=1 rewrites it)"
    );
}

pub fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.as_object().cloned().unwrap_or_default(),
    }
}

pub fn figures() -> Figures {
    Figures {
        prompt_tokens: 2100,
        reused_tokens: 1800,
        evaluated_tokens: 300,
        reuse: Reuse::Extended,
        generated_tokens: 120,
        prefill_seconds: 0.1,
        decode_seconds: 2.0,
        dropped_pin: None,
        draft: None,
    }
}

pub const BEFORE: &str = "def add(a, b):\n    return a - b\n\n\ndef one():\n    return 1\n\n\ndef two():\n    return 2\n\n\ndef total(xs):\n    return sum(xs)\n";

pub fn after() -> String {
    BEFORE
        .replace("a - b", "a + b")
        .replace("return sum(xs)", "return sum(xs, 0)")
}

pub fn session_start() -> Vec<Event> {
    vec![
        Event::SessionStarted {
            session_id: "s1".into(),
            model: "script: demo (scripted replies, no model)".into(),
            sandbox: "host sandbox: a copy of /repo".into(),
            workdir: "/repo".into(),
            max_steps: 150,
            context_limit: 131_072,
            approval_policy: None,
        },
        Event::UserMessage {
            text: "Fix the add function.".into(),
        },
        Event::TurnStarted { turn: 1 },
        Event::ReasoningDelta {
            text: "The test fails on add.\nLet me read the file.".into(),
        },
        Event::ContentDelta {
            text: "I'll read **calc.py** first:\n\n- the `add` function\n- its callers\n".into(),
        },
        Event::ToolCallStarted { name: "Read".into() },
        Event::ToolCallReady {
            call: call("call_1", "Read", serde_json::json!({"file_path": "calc.py"})),
        },
        Event::ToolResult {
            call_id: "call_1".into(),
            name: "Read".into(),
            content: "calc.py\n1. def add(a, b):\n2.     return a - b\n3. \n4. \n5. def one():\n6.     return 1".into(),
            is_error: false,
            resolution: Resolution::Auto,
        },
        Event::TurnFinished {
            turn: 1,
            stop: StopReason::EndOfGeneration,
            figures: figures(),
            context_tokens: 2_220,
        },
        Event::TurnStarted { turn: 2 },
    ]
}

pub fn change_request() -> Event {
    Event::ApprovalRequested(ApprovalRequest {
        id: 7,
        call: call(
            "call_2",
            "Write",
            serde_json::json!({"file_path": "calc.py"}),
        ),
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: "calc.py".into(),
            before: Some(BEFORE.into()),
            after: after(),
            binary_before: false,
        },
    })
}

#[test]
fn transcript() {
    let mut app = app();
    feed(&mut app, session_start());
    let buf = draw(&app);
    snapshot("transcript", &buf);
}

#[test]
fn status_line() {
    let mut app = app();
    feed(&mut app, session_start());
    let buf = draw(&app);
    let status = text(&buf).lines().nth(H as usize - 2).unwrap().to_string();
    assert!(status.contains("script: demo"), "{status}");
    assert!(status.contains("host sandbox"), "{status}");
    assert!(status.contains("step 2/150"), "{status}");
    assert!(status.contains("ctx 2.2k/131k 2%"), "{status}");
    assert!(status.contains("60 tok/s"), "{status}");
    assert!(status.contains("1:23"), "{status}");
    assert!(status.contains("generating"), "{status}");
}

#[test]
fn diff_review() {
    let mut app = app();
    let mut evs = session_start();
    evs.push(Event::ToolCallStarted {
        name: "Write".into(),
    });
    evs.push(Event::ToolCallReady {
        call: call(
            "call_2",
            "Write",
            serde_json::json!({"file_path": "calc.py"}),
        ),
    });
    evs.push(change_request());
    feed(&mut app, evs);
    let buf = draw(&app);
    snapshot("diff_review", &buf);
    // Removed and added lines carry their backgrounds; the changed word is emphasised.
    let t = Theme::dark();
    let screen = text(&buf);
    let row = screen
        .lines()
        .position(|l| l.contains("+    return a + b"))
        .unwrap() as u16;
    let plus = screen
        .lines()
        .nth(row as usize)
        .unwrap()
        .find("a + b")
        .unwrap();
    let col = screen.lines().nth(row as usize).unwrap()[..plus]
        .chars()
        .count() as u16;
    assert_eq!(buf[(col, row)].bg, t.added_bg);
    assert_eq!(
        buf[(col + 2, row)].bg,
        t.added_emph_bg,
        "the `+` is the changed word"
    );
    let minus_row = row - 1;
    assert_eq!(buf[(col, minus_row)].bg, t.removed_bg);
}

#[test]
fn diff_review_with_a_hunk_deselected() {
    use crossterm::event::{KeyCode, KeyEvent};
    let mut app = app();
    feed(&mut app, vec![change_request()]);
    app.on_key(KeyEvent::from(KeyCode::Char(']')));
    app.on_key(KeyEvent::from(KeyCode::Char(' ')));
    let screen = text(&draw(&app));
    assert!(screen.contains("hunk 2/2 · 1 selected"), "{screen}");
    let fx = app.on_key(KeyEvent::from(KeyCode::Char('y')));
    match &fx[..] {
        [Effect::Send(lilypad::protocol::Op::Review { id: 7, decision })] => match decision {
            lilypad::protocol::ReviewDecision::ApproveHunks {
                text,
                kept,
                dropped,
                ..
            } => {
                assert!(text.contains("a + b") && text.contains("return sum(xs)\n"));
                assert_eq!((kept.len(), dropped.len()), (1, 1));
                assert_eq!(dropped[0].first_change, "    return sum(xs, 0)");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// `n` declines a proposal, as Esc does (and as in Codex): the rejection's feedback line opens,
/// and Enter sends the rejection with what was typed.
#[test]
fn n_declines_a_change_like_esc() {
    use crossterm::event::{KeyCode, KeyEvent};
    let mut app = app();
    feed(&mut app, vec![change_request()]);
    assert!(app.on_key(KeyEvent::from(KeyCode::Char('n'))).is_empty());
    for c in "use sum".chars() {
        app.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    let fx = app.on_key(KeyEvent::from(KeyCode::Enter));
    match &fx[..] {
        [Effect::Send(lilypad::protocol::Op::Review {
            id: 7,
            decision: lilypad::protocol::ReviewDecision::Reject { feedback },
        })] => assert_eq!(feedback, "use sum"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn command_approval() {
    let mut app = app();
    let mut evs = session_start();
    evs.push(Event::ToolCallStarted {
        name: "Bash".into(),
    });
    let c = call(
        "call_3",
        "Bash",
        serde_json::json!({"command": "python3 -m pytest -q tests/", "description": "Run the tests"}),
    );
    evs.push(Event::ToolCallReady { call: c.clone() });
    evs.push(Event::ApprovalRequested(ApprovalRequest {
        id: 8,
        call: c,
        category: ToolCategory::Commands,
        kind: ApprovalKind::Command {
            command: "python3 -m pytest -q tests/".into(),
            description: Some("Run the tests".into()),
            timeout_seconds: 120.0,
        },
    }));
    feed(&mut app, evs);
    snapshot("command_approval", &draw(&app));
}

#[test]
fn help_overlay() {
    use crossterm::event::{KeyCode, KeyEvent};
    let mut app = app();
    feed(&mut app, session_start());
    app.on_key(KeyEvent::from(KeyCode::Char('?')));
    let mut term = Terminal::new(TestBackend::new(140, 45)).unwrap();
    term.draw(|f| views::draw(f, &app)).unwrap();
    let buf = term.backend().buffer().clone();
    snapshot("help_overlay", &buf);
    app.on_key(KeyEvent::from(KeyCode::Esc));
    assert!(app.overlay.is_none());
}

#[test]
fn final_patch() {
    let mut app = app();
    feed(&mut app, session_start());
    feed(
        &mut app,
        vec![
            Event::ContentDelta {
                text: "Fixed `add`.".into(),
            },
            Event::TurnFinished {
                turn: 2,
                stop: StopReason::EndOfGeneration,
                figures: figures(),
                context_tokens: 2_400,
            },
            Event::TaskFinished {
                reason: FinishReason::Answered,
                final_answer: Some("Fixed `add`.".into()),
            },
        ],
    );
    let raw = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \ndiff --git a/NEWS.md b/NEWS.md\nnew file mode 100644\n--- /dev/null\n+++ b/NEWS.md\n@@ -0,0 +1 @@\n+- add adds\n";
    let files = patch::parse(raw, &app.hl);
    app.on_patch(Ok((raw.as_bytes().to_vec(), files)));
    snapshot("final_patch", &draw(&app));
}

/// A TestBackend frame of `w`x`h`.
fn draw_sized(app: &App, w: u16, h: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| views::draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

/// The session review of a three-file patch: a comment on a line, one on a file, the
/// second file shown and marked viewed.
fn session_review() -> App {
    use crossterm::event::{KeyCode, KeyEvent};
    let mut app = app();
    feed(&mut app, session_start());
    feed(
        &mut app,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: None,
        }],
    );
    let raw = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \ndiff --git a/NEWS.md b/NEWS.md\nnew file mode 100644\n--- /dev/null\n+++ b/NEWS.md\n@@ -0,0 +1,2 @@\n+- add adds\n+- sub subtracts\ndiff --git a/src/deep/path/to/a/module/with_a_long_name.py b/src/deep/path/to/a/module/with_a_long_name.py\nindex 3333333..4444444 100644\n--- a/src/deep/path/to/a/module/with_a_long_name.py\n+++ b/src/deep/path/to/a/module/with_a_long_name.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
    let files = patch::parse(raw, &app.hl);
    app.on_patch(Ok((raw.as_bytes().to_vec(), files)));
    let mut keys = |s: &str| {
        for c in s.chars() {
            let code = match c {
                '\n' => KeyCode::Enter,
                c => KeyCode::Char(c),
            };
            app.on_key(KeyEvent::from(code));
        }
    };
    keys("jmuse plus\n]Mkeep the list short\nvj");
    app
}

#[test]
fn session_review_file_list() {
    let app = session_review();
    let wide = draw_sized(&app, 120, 40);
    snapshot("session_review_wide", &wide);
    let screen = text(&wide);
    // The list beside the diff: viewed marks, counts, comments; the shown file's diff.
    assert!(screen.contains("│ ✓ calc.py  +1 -1 ✎1"), "{screen}");
    assert!(screen.contains("│▶✓ NEWS.md  +2 -0 ✎1"), "{screen}");
    assert!(screen.contains("3 files +4 -2 · whole session · 2/3 viewed · 2 pending"));
    assert!(screen.contains("└ on the file: keep the list short (pending)"));
    // Narrow: the list above the diff.
    let narrow = draw_sized(&app, 80, 24);
    snapshot("session_review_narrow", &narrow);
    let rows: Vec<String> = text(&narrow).lines().map(str::to_string).collect();
    let list = rows
        .iter()
        .position(|r| r.contains("calc.py  +1 -1"))
        .unwrap();
    let diff = rows.iter().position(|r| r.contains("+- add adds")).unwrap();
    assert!(list < diff, "{rows:#?}");
}

#[test]
fn long_transcripts_draw_only_what_is_visible() {
    let mut app = app();
    let mut evs = session_start();
    let line = "a line of streamed output that is long enough to wrap at least once at this width ";
    for i in 0..10_000 {
        evs.push(Event::ContentDelta {
            text: format!("{i}: {line}\n"),
        });
    }
    feed(&mut app, evs);
    let start = std::time::Instant::now();
    draw(&app);
    // Later frames reuse every cell's lines: scrolling is cheap.
    let first = start.elapsed();
    let start = std::time::Instant::now();
    for _ in 0..20 {
        app.transcript.scroll_by(-7);
        draw(&app);
    }
    let per_frame = start.elapsed() / 20;
    assert!(
        per_frame < first.max(Duration::from_millis(5)),
        "{per_frame:?} vs first {first:?}"
    );
}

#[test]
fn a_message_typed_while_the_session_starts_is_held_not_refused() {
    use crossterm::event::{KeyCode, KeyEvent};
    use lilypad::protocol::Op;
    let mut app = app();
    assert_eq!(app.status.state, lilypad::tui::app::AgentState::Starting);
    app.on_key(KeyEvent::from(KeyCode::Char('i')));
    for c in "fix the test".chars() {
        app.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    let fx = app.on_key(KeyEvent::from(KeyCode::Enter));
    assert_eq!(
        fx,
        vec![Effect::Send(Op::UserMessage {
            text: "fix the test".into()
        })]
    );
    let screen = text(&draw(&app));
    assert!(
        screen.contains("queued until the session has started › fix the test"),
        "{screen}"
    );
    assert!(!screen.contains("not running"), "{screen}");
}

#[test]
fn a_message_typed_while_the_agent_works_is_queued_then_delivered() {
    use crossterm::event::{KeyCode, KeyEvent};
    use lilypad::protocol::Op;
    let mut app = app();
    feed(&mut app, session_start());
    assert!(app.status.state.is_busy());
    app.on_key(KeyEvent::from(KeyCode::Char('i')));
    for c in "also run the tests".chars() {
        app.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    let fx = app.on_key(KeyEvent::from(KeyCode::Enter));
    assert_eq!(
        fx,
        vec![Effect::Send(Op::UserMessage {
            text: "also run the tests".into()
        })],
        "sent while busy, for the agent to queue"
    );
    feed(
        &mut app,
        vec![Event::MessageQueued {
            text: "also run the tests".into(),
        }],
    );
    let buf = draw(&app);
    snapshot("queued_message", &buf);
    assert!(text(&buf).contains("queued › also run the tests"));
    feed(
        &mut app,
        vec![Event::UserMessage {
            text: "also run the tests".into(),
        }],
    );
    assert!(app.queued_messages.is_empty());
    assert!(!text(&draw(&app)).contains("queued ›"));
}

#[test]
fn at_the_context_limit_a_message_asks_how_to_make_room() {
    use crossterm::event::{KeyCode, KeyEvent};
    use lilypad::protocol::Op;
    let mut app = app();
    feed(&mut app, session_start());
    feed(
        &mut app,
        vec![Event::TaskFinished {
            reason: FinishReason::ContextLimit,
            final_answer: None,
        }],
    );
    assert!(app.context_full);
    assert!(text(&draw(&app)).contains("the conversation is full"));
    let type_message = |app: &mut App| {
        if !app.input_focus {
            app.on_key(KeyEvent::from(KeyCode::Char('i')));
        }
        for c in "finish the fix".chars() {
            app.on_key(KeyEvent::from(KeyCode::Char(c)));
        }
        app.on_key(KeyEvent::from(KeyCode::Enter))
    };
    // The patch review comes first after a task; leave it.
    app.mode = lilypad::tui::app::Mode::Transcript;
    assert!(type_message(&mut app).is_empty(), "nothing is sent yet");
    let buf = draw(&app);
    snapshot("context_full", &buf);
    // Esc gives the message back, unsent.
    app.on_key(KeyEvent::from(KeyCode::Esc));
    assert!(app.overlay.is_none());
    assert_eq!(app.composer.input.text(), "finish the fix");
    let fx = app.on_key(KeyEvent::from(KeyCode::Enter));
    assert!(fx.is_empty() && app.overlay.is_some());
    let fx = app.on_key(KeyEvent::from(KeyCode::Char('d')));
    assert_eq!(
        fx,
        vec![Effect::Send(Op::DropOldResults {
            text: Some("finish the fix".into())
        })]
    );
    // The other choice, from the same state.
    app.status.state = lilypad::tui::app::AgentState::Finished;
    assert!(type_message(&mut app).is_empty());
    let fx = app.on_key(KeyEvent::from(KeyCode::Char('f')));
    assert_eq!(
        fx,
        vec![Effect::Send(Op::ContinueFresh {
            text: "finish the fix".into()
        })]
    );
    feed(
        &mut app,
        vec![Event::ConversationRestarted {
            old_context_tokens: 131_000,
        }],
    );
    assert!(!app.context_full);
}

/// A call written inside the reasoning is shown as tentative (`Bash…`) while it streams; when
/// the turn settles, the text is revised and the call that did not settle becomes a notice.
#[test]
fn tentative_calls_settle_at_the_end_of_the_turn() {
    let mut app = app();
    let mut evs = session_start();
    evs.push(Event::ReasoningDelta {
        text: "I could run".into(),
    });
    evs.push(Event::ToolCallStarted {
        name: "Bash".into(),
    });
    feed(&mut app, evs);
    assert!(
        text(&draw(&app)).contains("Bash…"),
        "tentative while streaming"
    );
    let evs = vec![
        Event::ToolCallStarted {
            name: "Bash".into(),
        },
        Event::TurnRevised {
            reasoning: "I could run the removal but no.".into(),
            content: "Listing instead.".into(),
        },
        Event::ToolCallReady {
            call: call("call_9", "Bash", serde_json::json!({"command": "ls -la"})),
        },
        Event::TurnFinished {
            turn: 2,
            stop: StopReason::EndOfGeneration,
            figures: figures(),
            context_tokens: 2_300,
        },
    ];
    feed(&mut app, evs);
    let screen = text(&draw(&app));
    assert!(screen.contains("Listing instead."), "{screen}");
    assert!(screen.contains("$ ls -la"), "{screen}");
    assert!(screen.contains("was not run"), "{screen}");
    assert_eq!(screen.matches("Bash…").count(), 1, "{screen}");
}
