//! Smoke test of `lilypad bench`: it runs at small sizes and reports every figure with its
//! baseline and ratio. No assertion is made on any time: this machine is shared and noisy.

use std::process::Command;

#[test]
fn bench_all_quick_reports_every_figure_with_a_baseline() {
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["bench", "all", "--quick", "--json", "--threads", "1"])
        .env("LILYPAD_CONFIG", "/nonexistent/lilypad-bench-test.toml")
        .output()
        .expect("run lilypad bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let figures = report["figures"].as_array().expect("figures");
    let benches: Vec<&str> = figures
        .iter()
        .map(|f| f["bench"].as_str().unwrap())
        .collect();
    for b in ["agent-turns", "resume", "ui", "engine"] {
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
