//! `lilypad pull` of a safetensors checkpoint repository, through the real binary and the mock
//! Hub of `hub_mock.rs` serving the tiny synthetic checkpoint of `convert_fixture` (two shards
//! and an index, as FrogNano's own repository is laid out): config.json comes first and a
//! repository of another architecture stops there; the files `convert` reads come next, then
//! the conversion with its vocabulary check, kept in the data directory by repository, commit
//! and type; a second pull is a no-op; offline, `--model ORG/NAME` (and no `--model` at all,
//! being the only model) loads and generates with it; `models rm` removes the conversion.

use super::convert_fixture as fx;
use super::hub_mock::{Faults, MockFile, MockHub, COMMIT};
use super::hub_pull::{lilypad, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CKPT: &str = "frogs/tiny-ckpt";

/// The tiny checkpoint's files as a repository (weights as large files), plus a README.
fn checkpoint_repo(dir: &Path, opts: &fx::Options) -> Vec<MockFile> {
    let src = dir.join("ckpt-src");
    std::fs::create_dir_all(&src).unwrap();
    fx::write(&src, opts);
    let mut files = vec![MockFile {
        path: "README.md".into(),
        bytes: b"# tiny checkpoint\n".to_vec(),
        large: false,
    }];
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        files.push(MockFile {
            large: name.ends_with(".safetensors"),
            bytes: std::fs::read(&path).unwrap(),
            path: name,
        });
    }
    files
}

/// The binary with its data directory (where conversions are kept) in `dir`.
fn lily(dir: &Path) -> Command {
    let mut c = lilypad(dir);
    c.env("XDG_DATA_HOME", dir.join("data"));
    c
}

fn pull(dir: &Path, hub: &MockHub, args: &[&str]) -> Output {
    lily(dir)
        .env("HF_ENDPOINT", &hub.url)
        .arg("pull")
        .args(args)
        .output()
        .unwrap()
}

fn kept(dir: &Path, ty: &str) -> PathBuf {
    dir.join("data/lilypad/converted/models--frogs--tiny-ckpt")
        .join(COMMIT)
        .join(format!("{ty}.gguf"))
}

#[test]
fn a_checkpoint_is_pulled_converted_kept_and_used_offline() {
    let dir = tempfile::tempdir().unwrap();
    let opts = fx::Options {
        mixed: true,
        ..fx::Options::default()
    };
    let hub = MockHub::start(CKPT, checkpoint_repo(dir.path(), &opts), Faults::default());
    let out = pull(dir.path(), &hub, &[CKPT, "--type", "q8_0"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let q8 = kept(dir.path(), "q8_0");
    assert_eq!(text(&out.stdout).trim(), q8.display().to_string());
    assert!(q8.is_file());
    assert!(err.contains("vocabulary check"), "{err}");
    assert!(
        err.contains(&format!("use it with: lilypad --model {CKPT}:q8_0")),
        "{err}"
    );
    // config.json before any weight; the README is not fetched; no partial file is left.
    let requests = hub.requests();
    let at = |needle: &str| requests.iter().position(|r| r.contains(needle));
    let config = at(&format!("/resolve/{COMMIT}/config.json"));
    let weights = at(".safetensors");
    assert!(config.is_some() && weights.is_some(), "{requests:?}");
    assert!(config < weights, "{requests:?}");
    assert!(at("README").is_none(), "{requests:?}");
    let left: Vec<_> = std::fs::read_dir(q8.parent().unwrap()).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // The checkpoint is in the shared cache, as huggingface_hub lays it out.
    let snapshot = dir
        .path()
        .join("hub/models--frogs--tiny-ckpt/snapshots")
        .join(COMMIT);
    assert!(snapshot.join("model-00002-of-00002.safetensors").is_file());

    // Pulled again: a no-op (the listing is asked for, no file).
    let before = hub.requests().len();
    let out = pull(dir.path(), &hub, &[&format!("{CKPT}:Q8_0")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("already converted to q8_0"),
        "{}",
        text(&out.stderr)
    );
    let after = hub.requests();
    assert!(
        after[before..].iter().all(|r| r.contains("/api/")),
        "{after:?}"
    );

    // Listed under its name and type.
    let out = lily(dir.path()).arg("models").output().unwrap();
    assert!(
        text(&out.stdout).contains(&format!("{CKPT}:q8_0")),
        "{}",
        text(&out.stdout)
    );

    // Offline, no Hub to reach: by name, and as the only model pulled.
    let offline = |args: &[&str]| {
        lily(dir.path())
            .env("HF_HUB_OFFLINE", "1")
            .args(args)
            .output()
            .unwrap()
    };
    let out = offline(&["--model", CKPT, "doctor"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(&format!("{} ({CKPT}, pulled)", q8.display())) && said.contains("qwen35"),
        "{said}"
    );
    let gen = [
        "--greedy",
        "--max-turn-tokens",
        "4",
        "generate",
        "--prompt",
        "hi",
    ];
    let out = offline(&[&["--model", CKPT][..], &gen[..]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("stop:"), "{}", text(&out.stderr));
    let out = offline(&["doctor"]);
    assert!(
        text(&out.stdout).contains(&format!("({CKPT}:q8_0, the only model pulled)")),
        "{}",
        text(&out.stdout)
    );
    // A type not converted says so.
    let out = offline(&[&["--model", &format!("{CKPT}:bf16")][..], &gen[..]].concat());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not converted to bf16"),
        "{}",
        text(&out.stderr)
    );

    // With no --type, the type is chosen for this machine and said; when it is the one there,
    // nothing more happens.
    let out = offline(&["pull", CKPT]);
    let err = text(&out.stderr);
    let chosen = err
        .lines()
        .find_map(|l| l.strip_prefix("type "))
        .and_then(|l| l.split_once(" (chosen for this machine: "))
        .map(|(t, _)| t.to_string());
    let chosen = chosen.unwrap_or_else(|| panic!("no choice said: {err}"));
    if chosen == "q8_0" {
        assert!(err.contains("already converted to q8_0"), "{err}");
    }

    // Removed by type: the conversion goes, the checkpoint stays in the cache.
    let out = lily(dir.path())
        .args(["models", "rm", &format!("{CKPT}:q8_0")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!q8.exists());
    assert!(snapshot.join("config.json").exists());
    let out = lily(dir.path())
        .args(["models", "rm", CKPT])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.path().join("hub/models--frogs--tiny-ckpt").exists());
}

#[test]
fn another_architecture_stops_before_the_weights() {
    let dir = tempfile::tempdir().unwrap();
    let opts = fx::Options {
        architecture: "LlamaForCausalLM".into(),
        ..fx::Options::default()
    };
    let hub = MockHub::start(CKPT, checkpoint_repo(dir.path(), &opts), Faults::default());
    let out = pull(dir.path(), &hub, &[CKPT, "--type", "q8_0"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("LlamaForCausalLM") && err.contains("Qwen3_5ForConditionalGeneration"),
        "{err}"
    );
    let requests = hub.requests();
    assert!(
        !requests.iter().any(|r| r.contains(".safetensors")),
        "{requests:?}"
    );
    assert!(!kept(dir.path(), "q8_0").exists());
}
