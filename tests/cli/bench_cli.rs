//! Smoke test of `lilypad bench`: it runs at small sizes and reports every figure with its
//! baseline and ratio. No assertion is made on any time: this machine is shared and noisy.

use std::process::Command;

/// Run `lilypad bench ARGS --json` with no config file; the report, or the test fails with
/// the command's error output.
fn bench_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .env("LILYPAD_CONFIG", "/nonexistent/lilypad-bench-test.toml")
        .output()
        .expect("run lilypad bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
fn bench_all_quick_reports_every_figure_with_a_baseline() {
    let report = bench_json(&["all", "--quick", "--threads", "1"]);
    let figures = report["figures"].as_array().expect("figures");
    let benches: Vec<&str> = figures
        .iter()
        .map(|f| f["bench"].as_str().unwrap())
        .collect();
    for b in [
        "agent-turns",
        "resume",
        "first-token",
        "ui",
        "engine",
        "tools",
        "sequences",
        "team",
        "attempts",
    ] {
        assert!(benches.contains(&b), "{b} missing from {benches:?}");
    }
    for f in figures {
        for key in ["name", "unit", "baseline", "better"] {
            assert!(f[key].is_string(), "{key} in {f}");
        }
        for key in ["value", "baseline_value", "ratio"] {
            let x = f[key].as_f64().unwrap_or(-1.0);
            assert!(x.is_finite() && x >= 0.0, "{key} in {f}");
        }
        assert!(matches!(f["better"].as_str(), Some("higher" | "lower")));
    }
    // Prefix reuse: the scripted session reads each new token once.
    let reuse = figures
        .iter()
        .find(|f| f["bench"] == "agent-turns" && f["unit"] == "tokens")
        .expect("tokens figure");
    assert!(reuse["value"].as_f64().unwrap() > 0.0);
    assert!(report["notes"].as_array().is_some());
}

#[test]
fn bench_ui_prints_a_table() {
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["bench", "ui", "--quick"])
        .env("LILYPAD_CONFIG", "/nonexistent/lilypad-bench-test.toml")
        .output()
        .expect("run lilypad bench");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap_or_default();
    for col in ["bench", "figure", "lilypad", "baseline", "ratio", "target"] {
        assert!(header.contains(col), "{header}");
    }
    assert!(text.contains("highlighted diff"), "{text}");
    assert!(text.contains("frame p99"), "{text}");
}

/// Whether the suite was told an engine must be there (scripts/test.sh sets these).
fn required(var: &str) -> bool {
    let set = |v: &str| std::env::var(v).is_ok_and(|v| v == "1");
    set(var) || set("LILYPAD_TEST_STRICT")
}

#[test]
fn bench_tools_measures_glob_and_each_sandbox_against_its_cli() {
    let image = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let kubeconfig = std::env::var("LILYPAD_TEST_KUBECONFIG")
        .unwrap_or_else(|_| "/tmp/lilypad-k8s/sandbox.kubeconfig".into());
    let tree = tempfile::tempdir().expect("tempdir");
    // A small real tree with an ignored file: Glob and fd must agree on what they walk.
    std::fs::create_dir_all(tree.path().join("src/deep")).expect("mkdir");
    for f in ["a.c", "src/b.c", "src/deep/c.c", "src/d.h", "build.c"] {
        std::fs::write(tree.path().join(f), "int x;\n").expect("write");
    }
    std::fs::write(tree.path().join(".gitignore"), "/build.c\n").expect("write");
    let tree_arg = tree.path().display().to_string();
    let report = bench_json(&[
        "tools",
        "--quick",
        "--image",
        &image,
        "--kubeconfig",
        &kubeconfig,
        "--tree",
        &tree_arg,
    ]);
    let figures = report["figures"].as_array().expect("figures");
    let named = |part: &str| {
        figures
            .iter()
            .find(|f| f["name"].as_str().is_some_and(|n| n.contains(part)))
    };
    let glob =
        named("Glob **/*.c in the host sandbox").expect("the Glob figure (is fd installed?)");
    // 3 of the 4 .c files: build.c is ignored, as in a session's copy.
    assert!(
        glob["name"].as_str().unwrap().contains("(3 matches)"),
        "{glob}"
    );
    match named("Glob **/*.c in the docker sandbox") {
        Some(g) => assert!(g["name"].as_str().unwrap().contains("(3 matches)"), "{g}"),
        None if required("LILYPAD_REQUIRE_DOCKER") => {
            panic!("no Glob in Docker: {}", report["notes"])
        }
        None => eprintln!(
            "!!!!! SKIPPED: Glob in Docker (no engine): {}",
            report["notes"]
        ),
    }
    for (kind, var) in [
        ("docker", "LILYPAD_REQUIRE_DOCKER"),
        ("kube", "LILYPAD_REQUIRE_KUBE"),
    ] {
        match named(&format!("round trip (`true`) in the {kind} sandbox")) {
            Some(f) => {
                assert!(f["value"].as_f64().unwrap() > 0.0, "{f}");
                assert!(f["baseline_value"].as_f64().unwrap() > 0.0, "{f}");
            }
            None if required(var) => panic!("no {kind} round trip: {}", report["notes"]),
            None => eprintln!(
                "!!!!! SKIPPED: the {kind} round trip (no engine): {}",
                report["notes"]
            ),
        }
    }
}

#[test]
fn bench_decode_rates_generation_against_memory_bandwidth() {
    let report = bench_json(&["decode", "--quick", "--threads", "1"]);
    let figures = report["figures"].as_array().expect("figures");
    assert!(figures.iter().all(|f| f["bench"] == "decode"), "{report}");
    let bw = figures
        .iter()
        .find(|f| f["unit"] == "GB/s")
        .expect("bandwidth figure");
    let (value, limit) = (
        bw["value"].as_f64().unwrap(),
        bw["baseline_value"].as_f64().unwrap(),
    );
    assert!(value > 0.0 && limit > 0.0, "{bw}");
    // The ratio is the achieved share of the measured limit.
    let r = bw["ratio"].as_f64().unwrap();
    assert!((r - value / limit).abs() < 1e-6 * r.max(1.0), "{bw}");
    let tps = figures
        .iter()
        .find(|f| f["unit"] == "tok/s")
        .expect("tokens/s figure");
    assert!(tps["value"].as_f64().unwrap() > 0.0, "{tps}");
    // Several sequences together, each against one sequence measured in the same run.
    for n in [2, 4, 8] {
        let f = figures
            .iter()
            .find(|f| {
                f["name"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("aggregate decode, {n} sequences"))
            })
            .unwrap_or_else(|| panic!("{n} sequences missing: {report}"));
        let (value, one) = (
            f["value"].as_f64().unwrap(),
            f["baseline_value"].as_f64().unwrap(),
        );
        assert!(value > 0.0 && one > 0.0, "{f}");
        let r = f["ratio"].as_f64().unwrap();
        assert!((r - value / one).abs() < 1e-6 * r.max(1.0), "{f}");
    }
}

/// The directory scripts/build-llama-tools.sh printed, when the peers are built; `None` skips
/// (a failure under `LILYPAD_TEST_STRICT`).
fn llama_tools() -> Option<String> {
    let dir = std::env::var("LILYPAD_LLAMA_TOOLS_DIR").ok();
    let built = dir.as_ref().is_some_and(|d| {
        ["llama-bench", "llama-batched-bench", "llama-server"]
            .iter()
            .all(|t| std::path::Path::new(d).join(t).exists())
    });
    if !built {
        assert!(
            !required("LILYPAD_TEST_STRICT"),
            "llama-bench, llama-batched-bench and llama-server are not built (run scripts/build-llama-tools.sh)"
        );
        eprintln!("!!!!! SKIPPED: llama.cpp's peers not built; run scripts/build-llama-tools.sh");
        return None;
    }
    dir
}

/// A figure's ratio is a positive finite number and is what its two values say.
fn ratio_is_sane(f: &serde_json::Value) {
    let (v, b, r) = (
        f["value"].as_f64().unwrap(),
        f["baseline_value"].as_f64().unwrap(),
        f["ratio"].as_f64().unwrap(),
    );
    assert!(v > 0.0 && b > 0.0 && r.is_finite() && r > 0.0, "{f}");
    let expect = if f["better"] == "higher" && f["unit"] == "s" {
        b / v
    } else {
        v / b
    };
    assert!((r - expect).abs() <= 1e-9 * expect.max(1.0), "{f}");
}

#[test]
fn bench_grammar_measures_the_accept_and_the_reject_path() {
    let report = bench_json(&["grammar", "--quick", "--threads", "1"]);
    let figures = report["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 3, "{report}");
    let named = |part: &str| {
        figures
            .iter()
            .find(|f| f["name"].as_str().unwrap().contains(part))
            .unwrap_or_else(|| panic!("{part} missing from {report}"))
    };
    for part in [
        "the model's own draws",
        "forced well-formed call",
        "every pick rejected",
    ] {
        ratio_is_sane(named(part));
    }
    // The forced call passed the grammar untouched, so it measured the accept path.
    let accepted = named("forced well-formed call")["name"].as_str().unwrap();
    assert!(accepted.contains("every pick accepted"), "{accepted}");
    assert_eq!(named("every pick rejected")["unit"], "ms/token");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("overhead per token inside a call"),
        "{notes}"
    );
}

#[test]
fn bench_measures_the_engine_against_llama_cpps_own_programs() {
    let Some(tools) = llama_tools() else { return };
    let with =
        |which: &str| bench_json(&[which, "--quick", "--threads", "1", "--llama-tools", &tools]);
    let named = |report: &serde_json::Value, part: &str| -> Vec<serde_json::Value> {
        report["figures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["name"].as_str().unwrap().contains(part))
            .cloned()
            .collect()
    };

    // pp512 and tg128 against llama-bench on the same GGUF.
    let engine = with("engine");
    let rows = engine["figures"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{engine}");
    for f in rows {
        assert_eq!(f["baseline"], "llama-bench, same GGUF", "{f}");
        assert_eq!(f["target"].as_f64(), Some(0.98), "{f}");
        ratio_is_sane(f);
    }

    // Each count of sequences against llama-batched-bench at the same count: it generates 16
    // tokens per sequence in a quick run, and so does Lilypad (end-of-generation ignored).
    let seq = with("sequences");
    for n in [1usize, 2, 4, 8] {
        let f = named(
            &seq,
            &format!("decode, {n} sequence(s) together against llama-batched-bench"),
        );
        assert_eq!(f.len(), 1, "{n} sequences: {seq}");
        let name = f[0]["name"].as_str().unwrap();
        let counts = name.rsplit_once('(').unwrap().1;
        let (ours, theirs) = counts
            .trim_end_matches(')')
            .split_once(" tokens; its ")
            .unwrap();
        let (ours, theirs): (usize, usize) = (ours.parse().unwrap(), theirs.parse().unwrap());
        assert_eq!(theirs, n * 16, "{name}");
        assert_eq!(ours, theirs, "{name}");
        ratio_is_sane(&f[0]);
    }

    // The completion tokens a figure's name says each side generated.
    let each_side = |f: &serde_json::Value| -> usize {
        let name = f["name"].as_str().unwrap();
        name.rsplit_once('(')
            .and_then(|(_, tail)| tail.strip_suffix(" completion tokens on each side)"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count of tokens per side in {name}"))
    };

    // Two replicas of `lilypad serve` against one with the same threads, sequences and cache
    // in all; every reply held to 8 tokens: 16 conversations x 3 turns x 8 in a quick run.
    let team = with("team");
    let two = named(&team, "serve: 2 replicas");
    assert_eq!(two.len(), 1, "{team}");
    assert_eq!(
        two[0]["baseline"],
        "1 replica with every thread, all 8 sequences and the whole 65536-token cache, same workload, same run",
        "{}",
        two[0]
    );
    assert!(
        two[0]["name"]
            .as_str()
            .unwrap()
            .contains("8 sequences and a 65536-token cache in all"),
        "{}",
        two[0]
    );
    assert_eq!(each_side(&two[0]), 16 * 3 * 8, "{}", two[0]);
    ratio_is_sane(&two[0]);
    // `lilypad serve` against llama-server on the same conversations: both read each new
    // prompt token about once, and both served every request with its figures. The rates are
    // completion tokens per second of wall time, both sides held to the same replies (8
    // conversations x 4 turns x 8 tokens in a quick run), and the ratio is of those rates.
    let evaluated = named(&team, "serve: prompt tokens evaluated per new prompt token");
    assert_eq!(evaluated.len(), 1, "{team}");
    ratio_is_sane(&evaluated[0]);
    for part in [
        "serve: completion tokens per second of wall time",
        "serve --no-kv-unified (an attention cache per sequence",
    ] {
        let f = named(&team, part);
        assert_eq!(f.len(), 1, "{part}: {team}");
        assert_eq!(f[0]["unit"], "tok/s", "{}", f[0]);
        assert!(
            f[0]["name"]
                .as_str()
                .unwrap()
                .contains("completion tokens per second of wall time"),
            "{}",
            f[0]
        );
        assert_eq!(each_side(&f[0]), 8 * 4 * 8, "{}", f[0]);
        ratio_is_sane(&f[0]);
    }
    let evaluated = &named(&team, "evaluated per new prompt token")[0];
    for key in ["value", "baseline_value"] {
        let n = evaluated[key].as_f64().unwrap();
        assert!((0.9..1.5).contains(&n), "{key}: {evaluated}");
    }

    // Resuming a saved session against llama-server's slot save and restore: both read only
    // the tokens after what they restored.
    let resume = with("resume");
    let time = named(&resume, "against llama-server's slot restore");
    assert_eq!(time.len(), 1, "{resume}");
    ratio_is_sane(&time[0]);
    let evaluated = named(&resume, "evaluated after the restore");
    assert_eq!(evaluated.len(), 1, "{resume}");
    ratio_is_sane(&evaluated[0]);
    let name = evaluated[0]["name"].as_str().unwrap();
    let prompt: f64 = name
        .split_once("-token session")
        .and_then(|(head, _)| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{name}"));
    for key in ["value", "baseline_value"] {
        let n = evaluated[0][key].as_f64().unwrap();
        assert!(n >= 1.0 && n < prompt / 2.0, "{key}: {}", evaluated[0]);
    }

    // The scripted session against llama-server, at default and tuned checkpoints.
    let turns = with("agent-turns");
    let reuse = turns["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["unit"] == "tokens")
        .expect("the reuse figure")
        .clone();
    let lilypad_per_new =
        reuse["value"].as_f64().unwrap() / reuse["baseline_value"].as_f64().unwrap();
    for label in ["default checkpoints", "tuned checkpoints"] {
        let tokens = named(
            &turns,
            &format!("tokens evaluated per new prompt token against llama-server ({label})"),
        );
        assert_eq!(tokens.len(), 1, "{label}: {turns}");
        ratio_is_sane(&tokens[0]);
        // Lilypad's side is the same count as the reuse figure's; the server reads at least
        // every new token.
        let v = tokens[0]["value"].as_f64().unwrap();
        assert!(
            (v - lilypad_per_new).abs() < 1e-9,
            "{v} vs {lilypad_per_new}"
        );
        assert!(
            tokens[0]["baseline_value"].as_f64().unwrap() >= 1.0,
            "{}",
            tokens[0]
        );
        let time = named(
            &turns,
            &format!("prompt reading time against llama-server ({label})"),
        );
        assert_eq!(time.len(), 1, "{label}: {turns}");
        ratio_is_sane(&time[0]);
    }
    // Turn by turn: one row per turn (4 in a quick run), the new tokens summing to the figure's.
    let table = &turns["tables"][0];
    let rows = table["rows"].as_array().expect("the per-turn table");
    assert_eq!(rows.len(), 4, "{table}");
    let columns = table["columns"].as_array().unwrap();
    let col = |name: &str| columns.iter().position(|c| c == name).unwrap();
    let new: f64 = rows
        .iter()
        .map(|r| r[col("new tokens")].as_f64().unwrap())
        .sum();
    let name = named(&turns, "(default checkpoints), 4 turns")[0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        name.contains(&format!(", {} new tokens", new as usize)),
        "{name}"
    );
    // Lilypad reads exactly the new tokens of each turn.
    for r in rows {
        assert_eq!(r[col("lilypad evaluated")], r[col("new tokens")], "{r:?}");
    }
}

#[test]
fn bench_mtp_quick_reports_the_three_ways_and_full_acceptance_with_the_replaying_drafter() {
    let report = bench_json(&["mtp", "--quick", "--threads", "1"]);
    let figures = report["figures"].as_array().expect("figures");
    let mtp: Vec<&serde_json::Value> = figures.iter().filter(|f| f["bench"] == "mtp").collect();
    assert_eq!(mtp.len(), 4, "{figures:?}");
    for f in &mtp {
        let x = f["ratio"].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{f}");
    }
    // The mock drafter replays the plain output, so every draft it makes is accepted.
    let ceiling = mtp
        .iter()
        .find(|f| f["name"].as_str().unwrap().contains("every draft accepted"))
        .expect("the ceiling figure");
    assert!(
        ceiling["name"].as_str().unwrap().contains("100% accepted"),
        "{ceiling}"
    );
    let notes = report["notes"].as_array().unwrap();
    assert!(notes
        .iter()
        .any(|n| n.as_str().unwrap().contains("probability p")));
}
