//! The model-facing subcommands through the real binary: `tiny-model`, `info`, `doctor`.

use std::path::Path;
use std::process::Command;

fn lilypad() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    // Keep the user's own config and models out of the tests.
    c.env("LILYPAD_CONFIG", "/nonexistent/lilypad-test-config.toml")
        .env("XDG_DATA_HOME", "/nonexistent/lilypad-test-data")
        // Saved prompt heads go to this test process's own directory.
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join(format!("lilypad-test-cache-{}", std::process::id())),
        )
        .env("HF_HUB_CACHE", "/nonexistent/lilypad-test-hub")
        .env_remove("LILYPAD_MODEL");
    c
}

fn tiny(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tiny.gguf");
    let out = lilypad().arg("tiny-model").arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

#[test]
fn info_describes_the_tiny_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let out = lilypad().arg("info").arg(&path).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "architecture    qwen35",
        "layers          4",
        "trained context 32768",
        "vocabulary      287 tokens, gpt2 (pre-tokenizer qwen35)",
        "chat template   absent",
        "Q8_0 x32",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let out = lilypad()
        .args(["info", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["architecture"], "qwen35");
    assert_eq!(v["vocabulary"], 287);
    assert_eq!(v["chat_template"], false);
    let file = lilypad::gguf::GgufFile::open(&path).unwrap();
    assert_eq!(v["parameters"], file.parameter_count());
    assert_eq!(v["file_bytes"], std::fs::metadata(&path).unwrap().len());
}

#[test]
fn info_refuses_broken_files_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let out = lilypad().arg("info").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("truncated") && err.contains("cut.gguf"),
        "{err}"
    );
    let out = lilypad()
        .arg("info")
        .arg(dir.path().join("none.gguf"))
        .output()
        .unwrap();
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("does not exist"));
}

#[test]
fn doctor_shows_the_device_and_cache_settings_and_the_engine_runs_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let flags = [
        "--flash-attn",
        "on",
        "--cache-type",
        "q8_0",
        "--split-mode",
        "none",
    ];
    let out = lilypad()
        .arg("--model")
        .arg(&path)
        .args(flags)
        .arg("doctor")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("devices         all (split mode none)"),
        "{text}"
    );
    assert!(text.contains("flash attention on"), "{text}");
    assert!(
        text.contains("kv cache        q8_0 keys, q8_0 values"),
        "{text}"
    );
    // The engine loads and generates with them (a quantised cache changes the numbers, so
    // only that it runs is checked).
    let out = lilypad()
        .arg("--model")
        .arg(&path)
        .args(["--ctx", "1024", "--greedy", "--max-turn-tokens", "8"])
        .args(flags)
        .args(["generate", "--prompt", "hello"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty());
    // The defaults, without the flags.
    let out = lilypad()
        .arg("--model")
        .arg(&path)
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("flash attention auto"), "{text}");
    assert!(
        text.contains("kv cache        f16 keys, f16 values"),
        "{text}"
    );
    // An unknown type is refused by the flag's parser.
    let out = lilypad()
        .args(["--cache-type", "q3", "doctor"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("q8_0"));
}

#[test]
fn doctor_reports_model_offload_and_layers() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let out = lilypad()
        .arg("--model")
        .arg(&path)
        .args(["--ctx", "8192", "doctor"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("model           {} (configured)", path.display())),
        "{text}"
    );
    assert!(
        text.contains("context         8192 tokens (attention cache about ")
            && text.contains("MiB, shared by the sequences)"),
        "{text}"
    );
    // With an attention cache per sequence, the memory is counted for each.
    let split = lilypad()
        .arg("--model")
        .arg(&path)
        .args(["--ctx", "8192", "--no-kv-unified", "doctor"])
        .output()
        .unwrap();
    let split = String::from_utf8(split.stdout).unwrap();
    let line = split
        .lines()
        .find(|l| l.starts_with("context "))
        .unwrap_or_else(|| panic!("{split}"));
    let mib = |l: &str, before: &str| -> u64 {
        l.split(before)
            .next()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        line.contains("8192 tokens per sequence (an attention cache each"),
        "{line}"
    );
    assert!(mib(line, " MiB, ") > 0, "{line}");
    assert_eq!(mib(line, " MiB in all"), 4 * mib(line, " MiB, "), "{line}");
    if cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal")) {
        assert!(text.contains("gpu layers      all 4"), "{text}");
    } else {
        assert!(text.contains("gpu offload     not compiled in"), "{text}");
        assert!(text.contains("gpu layers      0 (CPU build)"), "{text}");
        assert!(
            text.contains("CPU only (this is a CPU-only build)"),
            "{text}"
        );
    }
    // Every llama.cpp device with its memory; the CPU is always one of them.
    let devices: Vec<&str> = text.lines().filter(|l| l.starts_with("device ")).collect();
    assert!(
        devices.iter().any(|l| l.starts_with("device 0        ")),
        "{text}"
    );
    assert!(
        devices
            .iter()
            .any(|l| l.contains(" (cpu, ") && l.contains(" GiB free of ") && l.ends_with(" GiB")),
        "{text}"
    );
    // Every sandbox is probed, available or not; host says whether it is contained.
    assert!(
        text.contains("sandbox         host: contained")
            || text.contains("sandbox         host: uncontained"),
        "{text}"
    );
    assert!(text.contains("sandbox         docker"), "{text}");
    assert!(text.contains("sandbox         kube"), "{text}");
    // Without a model it says how to get one, and still succeeds.
    let out = lilypad().arg("doctor").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("model           none"));
    // A configured model that is broken is a failure.
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"nope").unwrap();
    let out = lilypad()
        .arg("--model")
        .arg(&junk)
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn mtp_drafts_with_a_model_that_has_the_layer_and_is_refused_on_one_without() {
    let dir = tempfile::tempdir().unwrap();
    let plain = tiny(dir.path());
    let with = dir.path().join("tiny-mtp.gguf");
    let out = lilypad()
        .args(["tiny-model", "--mtp-layer"])
        .arg(&with)
        .output()
        .unwrap();
    assert!(out.status.success());
    let doctor = |model: &std::path::Path, flags: &[&str]| {
        let out = lilypad()
            .arg("--model")
            .arg(model)
            .args(flags)
            .arg("doctor")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = doctor(&with, &["--mtp", "on", "--draft-tokens", "2"]);
    assert!(text.contains("mtp drafts      on: 2 per step"), "{text}");
    assert!(text.contains("x3 kept for MTP drafts"), "{text}");
    // A CPU build: `auto` does not draft.
    let text = doctor(&with, &[]);
    assert!(
        text.contains("mtp drafts      auto: off on the CPU"),
        "{text}"
    );
    let text = doctor(&plain, &[]);
    assert!(text.contains("mtp drafts      auto: none"), "{text}");
    let text = doctor(&with, &["--mtp", "off"]);
    assert!(text.contains("mtp drafts      off"), "{text}");
    let generate = |model: &std::path::Path, mtp: &str| {
        lilypad()
            .arg("--model")
            .arg(model)
            .args(["--ctx", "1024", "--greedy", "--max-turn-tokens", "16"])
            .args(["--mtp", mtp, "generate", "--prompt", "hello"])
            .output()
            .unwrap()
    };
    let drafted = generate(&with, "on");
    assert!(drafted.status.success());
    let stderr = String::from_utf8_lossy(&drafted.stderr);
    assert!(stderr.contains("MTP drafted"), "{stderr}");
    // The same text as without drafts.
    let undrafted = generate(&with, "off");
    assert_eq!(drafted.stdout, undrafted.stdout);
    assert!(!String::from_utf8_lossy(&undrafted.stderr).contains("MTP drafted"));
    let refused = generate(&plain, "on");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("has no MTP layer"), "{stderr}");
}

#[test]
fn doctor_says_where_the_warm_heads_are_and_how_much_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let doctor = |config: Option<&Path>| {
        let mut c = lilypad();
        c.env("XDG_CACHE_HOME", &cache).arg("doctor");
        if let Some(p) = config {
            c.env("LILYPAD_CONFIG", p);
        }
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    };
    let heads = cache.join("lilypad/heads");
    let text = doctor(None);
    assert!(
        text.contains(&format!(
            "prompt heads    none saved yet (up to 1024 MB in {})",
            heads.display()
        )),
        "{text}"
    );
    std::fs::create_dir_all(&heads).unwrap();
    std::fs::write(heads.join("a.head"), vec![0u8; 2_000_000]).unwrap();
    std::fs::write(heads.join(".a.head.1.2.tmp"), b"half").unwrap();
    let text = doctor(None);
    assert!(
        text.contains(&format!(
            "prompt heads    1 saved, 2.0 MB of 1024 MB, in {}",
            heads.display()
        )),
        "{text}"
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[engine]\nprefix_cache_mb = 0\n").unwrap();
    let text = doctor(Some(&config));
    assert!(
        text.contains("prompt heads    off ([engine] prefix_cache_mb = 0)"),
        "{text}"
    );
}
