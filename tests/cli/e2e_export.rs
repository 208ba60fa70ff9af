//! End to end through a real terminal: `/export` on the message line writes the session as
//! Markdown beside its log, and the interface says where; the file holds the task and the
//! answer. Scripted engine (a mock of the model), host sandbox.

use super::e2e_approvals::{session, ANSWER};
use super::e2e_demo::have_tmux;

#[test]
fn slash_export_writes_the_session_as_markdown_beside_its_log() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = super::e2e_resume::calc_repo(tmp.path());
    let script = tmp.path().join("answer.txt");
    std::fs::write(&script, ANSWER).unwrap();
    let sessions = tmp.path().join("sessions");
    let cmd = format!(
        "cd '{repo}' && XDG_STATE_HOME='{state}' XDG_DATA_HOME='{data}' '{bin}' --sandbox host --engine 'script:{script}' --session-dir '{sessions}' 'look around'",
        repo = repo.display(),
        state = tmp.path().join("state").display(),
        data = tmp.path().join("data").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
        sessions = sessions.display(),
    );
    session(tmp.path(), &cmd, |t| {
        t.wait_for(&["All good."]);
        t.keys(&["-l", "/export"]);
        t.keys(&["Enter"]);
        t.wait_for(&["session written as Markdown to"]);
    });
    let md: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    assert_eq!(md.len(), 1, "{md:?}");
    let text = std::fs::read_to_string(&md[0]).unwrap();
    assert!(text.contains("look around"), "{text}");
    assert!(text.contains("All good."), "{text}");
}
