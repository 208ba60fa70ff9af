//! The soak of `lilypad serve` for a minute (issue 41, item 6), through the same driver as
//! `lilypad bench soak` (`lilypad::bench::soak`): 32 clients over three keys (one
//! rate-limited) against two replicas of the tiny model, chat and completions, streamed and
//! whole, `n` = 4, streams hung up mid-way; the keys file re-read on SIGHUP, new weights, and
//! replica 0's engine halted by the test-only fault route (tests run debug builds, which have
//! it). Afterwards every rule of `checks.rs` holds: one answer and one audit line per request,
//! the request counters equal the clients' counts, no 5xx but the fault's, no generation
//! held, RSS within 10% of its warm-up value.

use lilypad::bench::soak::{self, Plan};
use std::path::PathBuf;
use std::time::Duration;

#[test]
fn a_minute_of_clients_and_faults_leaves_every_count_right() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::new(
        PathBuf::from(env!("CARGO_BIN_EXE_lilypad")),
        dir.path().to_path_buf(),
        Duration::from_secs(60),
    );
    let soaked = soak::run(&plan).unwrap_or_else(|e| panic!("the soak could not run: {e:?}"));
    let text = soaked.text();
    eprintln!("{text}");
    assert!(
        soaked.findings.is_empty(),
        "{text}\n--- server log (tail) ---\n{}",
        soaked.server_log
    );
    // The soak did what it says, so that an empty list of findings means something.
    assert_eq!(soaked.faults, soak::FaultRoute::Compiled);
    let (streamed, hung_up, several, limited) = soaked.shapes();
    assert!(
        streamed >= 20 && hung_up >= 4 && several >= 8 && limited >= 1,
        "{text}"
    );
    assert_eq!(soaked.schedule.halt.map(|h| h.2), Some(200), "{text}");
    assert_eq!(soaked.schedule.update, Some(200), "{text}");
    assert!(soaked.schedule.reload.is_some(), "{text}");
    for endpoint in ["chat_completions", "completions"] {
        let ok = soaked.clients.get(&(endpoint.to_string(), 200)).copied();
        assert!(ok.unwrap_or(0) >= 10, "{endpoint}: {text}");
    }
    assert!(soaked.audit_lines >= soaked.sent.len(), "{text}");
}
