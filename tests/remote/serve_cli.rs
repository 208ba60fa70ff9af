//! `lilypad serve` refuses unsafe or broken set-ups before it listens: a non-loopback address
//! without `--allow-remote`, a key variable that is not set, a missing script.

use std::process::Command;

fn serve(args: &[&str], envs: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.txt");
    std::fs::write(&script, "=== turn ===\nhi\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    cmd.arg("serve")
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .args(args)
        .env_remove("LILYPAD_TEST_UNSET_KEY");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn non_loopback_needs_allow_remote() {
    let (ok, err) = serve(&["--listen", "0.0.0.0:0"], &[]);
    assert!(!ok);
    assert!(
        err.contains("not a loopback address") && err.contains("--allow-remote"),
        "{err}"
    );
}

#[test]
fn bad_address_and_missing_key_are_named() {
    let (ok, err) = serve(&["--listen", "localhost"], &[]);
    assert!(!ok && err.contains("HOST:PORT"), "{err}");
    let (ok, err) = serve(
        &[
            "--listen",
            "127.0.0.1:0",
            "--api-key-env",
            "LILYPAD_TEST_UNSET_KEY",
        ],
        &[],
    );
    assert!(!ok && err.contains("LILYPAD_TEST_UNSET_KEY"), "{err}");
}

#[test]
fn unknown_engine_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["serve", "--engine", "gpt:x", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown engine"), "{err}");
}

#[test]
fn a_bad_keys_file_at_start_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.jsonl");
    std::fs::write(
        &keys,
        "{\"id\": \"a\", \"sha256\": \"00000000000000000000000000000000000000000000000000000000000000aa\"}\n{\"id\": \"b\"}\n",
    )
    .unwrap();
    let (ok, err) = serve(
        &["--listen", "127.0.0.1:0", "--keys", keys.to_str().unwrap()],
        &[],
    );
    assert!(!ok);
    assert!(err.contains("keys.jsonl, line 2"), "{err}");
}
