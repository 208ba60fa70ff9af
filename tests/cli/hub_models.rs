//! `lilypad models rm` and the model used when none is named, through the real binary and the
//! mock Hub of `hub_mock.rs`: one model pulled is used by `doctor` and `generate` with no
//! `--model`; two pulled and none named is an error that names both; removing one by tag frees
//! its blob and leaves the other; an unknown name says what is pulled; removing the
//! repository empties the cache of it.

use super::hub_mock::{sha256_hex, Faults, MockHub, COMMIT};
use super::hub_pull::{blobs, lilypad, pull, repo, repo_dir, text, tiny_bytes, REPO};
use std::path::Path;
use std::process::Output;

fn run(dir: &Path, args: &[&str]) -> Output {
    lilypad(dir).args(args).output().unwrap()
}

#[test]
fn the_only_model_pulled_is_used_and_models_rm_removes_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = tiny_bytes(dir.path());
    let files = repo(&tiny);
    let junk = files
        .iter()
        .find(|f| f.path == "tiny-Q4_K_M.gguf")
        .unwrap()
        .bytes
        .clone();
    let hub = MockHub::start(REPO, files, Faults::default());
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q8_0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let q8 = repo_dir(dir.path()).join(format!("snapshots/{COMMIT}/tiny-Q8_0.gguf"));

    // One model pulled, none named: that one, and it loads.
    let out = run(dir.path(), &["doctor"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}\n{}", text(&out.stderr));
    assert!(
        said.contains(&format!(
            "{} (frogs/tiny-GGUF:Q8_0, the only model pulled)",
            q8.display()
        )) && said.contains("qwen35"),
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
    let out = run(dir.path(), &gen);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("stop:"), "{}", text(&out.stderr));

    // Two pulled, none named: an error that names both.
    let out = pull(dir.path(), &hub, "frogs/tiny-GGUF:Q4_K_M");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(dir.path(), &gen);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("several models are pulled")
            && err.contains("frogs/tiny-GGUF:Q4_K_M")
            && err.contains("frogs/tiny-GGUF:Q8_0"),
        "{err}"
    );
    let out = run(dir.path(), &["doctor"]);
    assert!(
        text(&out.stdout).contains("none chosen: several are pulled"),
        "{}",
        text(&out.stdout)
    );

    // Removed by tag: its link and blob go, the other model stays and is the only one again.
    let out = run(dir.path(), &["models", "rm", "frogs/tiny-GGUF:q4_k_m"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("1 blob(s) removed, {} bytes freed", junk.len())),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains(&format!("removed {COMMIT}/tiny-Q4_K_M.gguf")));
    assert_eq!(blobs(dir.path()), [sha256_hex(&tiny)]);
    assert!(q8.exists());
    let out = run(dir.path(), &["doctor"]);
    assert!(
        text(&out.stdout).contains("the only model pulled"),
        "{}",
        text(&out.stdout)
    );

    // An unknown name is an error that says what is pulled.
    let out = run(dir.path(), &["models", "rm", "frogs/other:Q8_0"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("frogs/other:Q8_0 is not pulled")
            && err.contains("pulled: frogs/tiny-GGUF:Q8_0"),
        "{err}"
    );

    // The whole repository: links, blobs, refs, its folder.
    let out = run(dir.path(), &["models", "rm", "frogs/tiny-GGUF"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let freed = if tiny.len() < 1_000_000 {
        format!("{} bytes freed", tiny.len())
    } else {
        format!("{:.1} MB freed", tiny.len() as f64 / 1e6)
    };
    assert!(said.contains(&freed), "{said}");
    assert!(
        text(&out.stderr).contains("removed refs main"),
        "{}",
        text(&out.stderr)
    );
    assert!(!repo_dir(dir.path()).exists());
    let out = run(dir.path(), &["models"]);
    assert!(
        text(&out.stderr).contains("no models in"),
        "{}",
        text(&out.stderr)
    );
    let out = run(dir.path(), &gen);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no model"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn doctor_without_a_model_says_what_fits_and_how_to_pull_it() {
    let dir = tempfile::tempdir().unwrap();
    let fits = |out: &Output| {
        let said = text(&out.stdout);
        assert!(out.status.success(), "{said}{}", text(&out.stderr));
        let line = said
            .lines()
            .find_map(|l| l.strip_prefix("fits here       FrogNano "))
            .unwrap_or_else(|| panic!("no advice: {said}"));
        let (ty, why) = line.split_once(": ").unwrap();
        let known = ["bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"];
        assert!(known.contains(&ty), "{line}");
        assert!(why.contains("GPU") || why.contains("GiB free"), "{line}");
        (ty.to_string(), said)
    };
    let (ty, said) = fits(&run(dir.path(), &["doctor"]));
    assert!(
        said.contains(&format!(
            "get it: lilypad pull microsoft/FrogNano-4B-2609 --type {ty}"
        )),
        "{said}"
    );
    // The repository's name is one setting.
    let out = lilypad(dir.path())
        .env("LILYPAD_DEFAULT_REPO", "frogs/FrogNano-mirror")
        .arg("doctor")
        .output()
        .unwrap();
    let (ty, said) = fits(&out);
    assert!(
        said.contains(&format!(
            "get it: lilypad pull frogs/FrogNano-mirror --type {ty}"
        )),
        "{said}"
    );
}
