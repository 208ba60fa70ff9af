//! `llama-bench` on a GGUF: pp512 and tg128 with the given threads and batch sizes, on the CPU,
//! flash attention at llama.cpp's default (auto, as the engine's context also leaves it), one
//! warm-up then the mean of `reps` runs: the procedure the engine bench follows on Lilypad's
//! side ([`crate::bench::engine`]).

use super::{bad_json, bad_output, run, PeerError};
use crate::bench::engine::{Speeds, PP, TG};
use serde::Deserialize;
use std::path::Path;

/// One test of llama-bench's JSON report (the fields read here).
#[derive(Debug, Deserialize)]
struct Test {
    n_prompt: u64,
    n_gen: u64,
    avg_ts: f64,
}

/// The arguments of one llama-bench run.
pub fn args(model: &Path, threads: u32, batch: u32, reps: usize) -> Vec<String> {
    [
        "-m",
        &model.display().to_string(),
        "-p",
        &PP.to_string(),
        "-n",
        &TG.to_string(),
        "-t",
        &threads.to_string(),
        "-b",
        &batch.to_string(),
        "-ub",
        &batch.to_string(),
        "-ngl",
        "0",
        "-r",
        &reps.max(1).to_string(),
        "-o",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Run `program` (llama-bench) on `model`: its pp and tg speeds.
pub fn run_on(
    program: &Path,
    model: &Path,
    threads: u32,
    batch: u32,
    reps: usize,
) -> Result<Speeds, PeerError> {
    let out = run(program, &args(model, threads, batch, reps))?;
    parse(program, &String::from_utf8_lossy(&out.stdout))
}

/// llama-bench's JSON report as speeds (pp from the prompt test, tg from the generation test).
pub fn parse(program: &Path, json: &str) -> Result<Speeds, PeerError> {
    let tests: Vec<Test> = serde_json::from_str(json.trim()).map_err(bad_json(program))?;
    let find = |pp: bool| {
        tests
            .iter()
            .find(|t| {
                if pp {
                    t.n_prompt > 0 && t.n_gen == 0
                } else {
                    t.n_gen > 0 && t.n_prompt == 0
                }
            })
            .map(|t| t.avg_ts)
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                bad_output(
                    program,
                    format!("no {} test in the report", if pp { "pp" } else { "tg" }),
                )
            })
    };
    Ok(Speeds {
        pp: find(true)?,
        tg: find(false)?,
        tg_min_tokens: TG,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_prompt_and_generation_tests() {
        let json = r#"[
          {"n_prompt": 512, "n_gen": 0, "avg_ts": 1500.5, "stddev_ts": 3.0},
          {"n_prompt": 0, "n_gen": 128, "avg_ts": 700.25, "stddev_ts": 2.0}
        ]"#;
        let s = parse(Path::new("llama-bench"), json).unwrap();
        assert_eq!((s.pp, s.tg, s.tg_min_tokens), (1500.5, 700.25, TG));
        assert!(parse(Path::new("llama-bench"), "[]").is_err());
        assert!(parse(Path::new("llama-bench"), "not json").is_err());
    }

    #[test]
    fn a_report_that_is_not_json_keeps_serde_s_error() {
        use std::error::Error as _;
        let e = parse(Path::new("llama-bench"), "not json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("reading the figures of llama-bench: "),
            "{e}"
        );
        assert!(e.source().is_some_and(|s| s.is::<serde_json::Error>()));
    }

    #[test]
    fn asks_for_the_engine_bench_sizes_on_the_cpu() {
        let a = args(Path::new("/m.gguf"), 2, 512, 5).join(" ");
        assert_eq!(
            a,
            "-m /m.gguf -p 512 -n 128 -t 2 -b 512 -ub 512 -ngl 0 -r 5 -o json"
        );
    }
}
