//! `lilypad pull`, `lilypad models` and `--model ORG/NAME:TAG` through the real binary,
//! against the mock Hub of `hub_mock.rs`: pull by tag into the shared cache layout, resume
//! after a cut, a 200 answer to a Range request, a corrupt file refused, a gated repository,
//! two pulls of one file at once, offline use; and, when the test Python has `huggingface_hub`, the official client's
//! download found by Lilypad with no download of its own.

use super::hub_mock::{sha256_hex, Faults, MockFile, MockHub, COMMIT, TOKEN};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const REPO: &str = "frogs/tiny-GGUF";

pub fn tiny_bytes(dir: &Path) -> Vec<u8> {
    let path = dir.join("made.gguf");
    let out = lilypad(dir).arg("tiny-model").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::read(path).unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The binary with the user's config, models and Hub settings kept out; the cache in `dir`.
pub fn lilypad(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    c.env("LILYPAD_CONFIG", "/nonexistent/lilypad-test-config.toml")
        .env("XDG_DATA_HOME", "/nonexistent/lilypad-test-data")
        .env("HF_HOME", dir.join("hf-home"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("HF_HUB_CACHE", dir.join("hub"))
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env_remove("LILYPAD_MODEL")
        .env_remove("HF_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("TRANSFORMERS_OFFLINE");
    c
}

pub fn repo(tiny: &[u8]) -> Vec<MockFile> {
    vec![
        MockFile {
            path: "README.md".into(),
            bytes: b"# tiny\n".to_vec(),
            large: false,
        },
        MockFile {
            path: "tiny-Q4_K_M.gguf".into(),
            bytes: b"not the file asked for".to_vec(),
            large: true,
        },
        MockFile {
            path: "tiny-Q8_0.gguf".into(),
            bytes: tiny.to_vec(),
            large: true,
        },
        MockFile {
            path: "mmproj-tiny-Q8_0.gguf".into(),
            bytes: b"a projector".to_vec(),
            large: true,
        },
    ]
}

pub fn pull(dir: &Path, hub: &MockHub, name: &str) -> Output {
    lilypad(dir)
        .env("HF_ENDPOINT", &hub.url)
        .args(["pull", name])
        .output()
        .unwrap()
}

pub fn repo_dir(dir: &Path) -> PathBuf {
    dir.join("hub").join("models--frogs--tiny-GGUF")
}

/// Nothing partial or stray in the cache's blobs.
pub fn blobs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo_dir(dir).join("blobs"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn pull_by_tag_fills_the_shared_cache_and_works_offline() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let sha = sha256_hex(&tiny);
    let hub = MockHub::start(REPO, repo(&tiny), Faults::default());
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let snapshot = repo_dir(dir.path()).join(format!("snapshots/{COMMIT}/tiny-Q8_0.gguf"));
    assert_eq!(text(&out.stdout).trim(), snapshot.display().to_string());
    assert!(
        text(&out.stderr).contains("sha256 checked"),
        "{}",
        text(&out.stderr)
    );
    // The layout huggingface_hub writes: a relative link to the blob named by its sha256.
    assert_eq!(
        std::fs::read_link(&snapshot).unwrap(),
        Path::new("../../blobs").join(&sha)
    );
    assert_eq!(std::fs::read(&snapshot).unwrap(), tiny);
    assert_eq!(
        std::fs::read_to_string(repo_dir(dir.path()).join("refs/main")).unwrap(),
        COMMIT
    );
    assert_eq!(blobs(dir.path()), std::slice::from_ref(&sha));
    let requests = hub.requests();
    assert!(
        requests.iter().any(|r| r == &format!("GET /cdn/{sha}")),
        "{requests:?}"
    );
    assert!(
        !requests
            .iter()
            .any(|r| r.contains("Q4_K_M") || r.contains("mmproj")),
        "{requests:?}"
    );

    // Pulled again: found in the cache, nothing downloaded.
    let before = hub.requests().len();
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("already in the cache"));
    assert!(!hub.requests()[before..].iter().any(|r| r.contains("/cdn/")));

    // Listed.
    let out = lilypad(dir.path()).arg("models").output().unwrap();
    let listed = text(&out.stdout);
    assert!(out.status.success());
    assert!(
        listed.contains("frogs/tiny-GGUF")
            && listed.contains("main")
            && listed.contains("tiny-Q8_0.gguf"),
        "{listed}"
    );

    // Offline, with no Hub to reach: the name resolves from the cache and the model loads.
    let out = lilypad(dir.path())
        .env("HF_HUB_OFFLINE", "1")
        .args(["--model", "frogs/tiny-GGUF:Q8_0", "doctor"])
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}\n{}", text(&out.stderr));
    assert!(
        said.contains(&format!(
            "{} (frogs/tiny-GGUF:Q8_0, pulled)",
            snapshot.display()
        )),
        "{said}"
    );
    let out = lilypad(dir.path())
        .env("HF_HUB_OFFLINE", "1")
        .args(["pull", "frogs/tiny-GGUF:Q8_0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A name that was not pulled says how to pull it.
    let out = lilypad(dir.path())
        .args([
            "--model",
            "frogs/tiny-GGUF:Q4_K_M",
            "generate",
            "--prompt",
            "hi",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("run `lilypad pull frogs/tiny-GGUF:Q4_K_M`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_cut_download_resumes_with_a_range_request() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let half = tiny.len() / 2;
    let faults = Faults {
        cut_at: Some(half),
        ..Faults::default()
    };
    let hub = MockHub::start(REPO, repo(&tiny), faults);
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sha = sha256_hex(&tiny);
    let requests = hub.requests();
    assert!(
        requests.contains(&format!("GET /cdn/{sha} bytes={half}-")),
        "{requests:?}"
    );
    assert_eq!(blobs(dir.path()), [sha]);
}

#[test]
fn a_server_that_answers_a_range_with_200_is_read_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let faults = Faults {
        cut_at: Some(tiny.len() / 3),
        ignore_range: true,
        ..Faults::default()
    };
    let hub = MockHub::start(REPO, repo(&tiny), faults);
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sha = sha256_hex(&tiny);
    assert!(hub
        .requests()
        .iter()
        .any(|r| r.starts_with(&format!("GET /cdn/{sha} bytes="))));
    let snapshot = repo_dir(dir.path()).join(format!("snapshots/{COMMIT}/tiny-Q8_0.gguf"));
    assert_eq!(std::fs::read(snapshot).unwrap(), tiny);
}

#[test]
fn a_corrupt_download_is_refused_and_left_out_of_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let faults = Faults {
        corrupt: true,
        ..Faults::default()
    };
    let hub = MockHub::start(REPO, repo(&tiny), faults);
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let mut bad = tiny.clone();
    *bad.last_mut().unwrap() ^= 0xff;
    assert!(
        err.contains(&sha256_hex(&tiny)) && err.contains(&sha256_hex(&bad)),
        "{err}"
    );
    assert!(blobs(dir.path()).is_empty(), "{:?}", blobs(dir.path()));
    assert!(!repo_dir(dir.path())
        .join(format!("snapshots/{COMMIT}/tiny-Q8_0.gguf"))
        .exists());
}

#[test]
fn a_gated_repository_asks_for_hf_token_and_works_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let faults = Faults {
        gated: true,
        ..Faults::default()
    };
    let hub = MockHub::start(REPO, repo(&tiny), faults);
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("HF_TOKEN") && err.contains("gated"), "{err}");
    let out = lilypad(dir.path())
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_TOKEN", TOKEN)
        .args(["pull", "frogs/tiny-GGUF:Q8_0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The token file under HF_HOME serves as well.
    std::fs::remove_dir_all(dir.path().join("hub")).unwrap();
    std::fs::create_dir_all(dir.path().join("hf-home")).unwrap();
    std::fs::write(dir.path().join("hf-home/token"), TOKEN).unwrap();
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn what_huggingface_hub_downloaded_is_found_without_a_download() {
    let Some(python) = std::env::var_os("LILYPAD_TEST_PYTHON").map(PathBuf::from) else {
        eprintln!("skipped: LILYPAD_TEST_PYTHON is not set (scripts/fetch-test-python.sh)");
        return;
    };
    let has_hub = Command::new(&python)
        .args(["-c", "import huggingface_hub"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_hub {
        assert!(
            std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
            "{} has no huggingface_hub",
            python.display()
        );
        eprintln!("skipped: {} has no huggingface_hub", python.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let hub = MockHub::start(REPO, repo(&tiny), Faults::default());
    let script = "import sys\nfrom huggingface_hub import hf_hub_download\nprint(hf_hub_download(sys.argv[1], sys.argv[2]))";
    let out = Command::new(&python)
        .args(["-c", script, REPO, "tiny-Q8_0.gguf"])
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_HUB_CACHE", dir.path().join("hub"))
        .env("HF_HOME", dir.path().join("hf-home"))
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HUB_DISABLE_XET", "1")
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let theirs = text(&out.stdout).trim().to_string();
    let downloads = hub
        .requests()
        .iter()
        .filter(|r| r.contains("/cdn/"))
        .count();
    // Offline: Lilypad finds the official client's file by name.
    let out = lilypad(dir.path())
        .env("HF_HUB_OFFLINE", "1")
        .args(["pull", "frogs/tiny-GGUF:Q8_0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), theirs);
    // Online: the listing is asked for, the file is not downloaded again.
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), theirs);
    let after = hub
        .requests()
        .iter()
        .filter(|r| r.contains("/cdn/"))
        .count();
    assert_eq!(downloads, after, "{:?}", hub.requests());
}

#[test]
fn two_pulls_of_one_file_at_once_leave_one_good_copy() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let hub = MockHub::start(REPO, repo(&tiny), Faults::default());
    let start = || {
        lilypad(dir.path())
            .env("HF_ENDPOINT", &hub.url)
            .args(["pull", "frogs/tiny-GGUF:Q8_0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let sha = sha256_hex(&tiny);
    assert_eq!(blobs(dir.path()), std::slice::from_ref(&sha));
    let snapshot = repo_dir(dir.path()).join(format!("snapshots/{COMMIT}/tiny-Q8_0.gguf"));
    assert_eq!(std::fs::read(snapshot).unwrap(), tiny);
    assert!(dir
        .path()
        .join("hub/.locks/models--frogs--tiny-GGUF")
        .join(format!("{sha}.lock"))
        .exists());
}
