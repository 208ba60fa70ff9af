//! `lilypad bench`: measured figures, each a ratio against a baseline measured in the same run
//! on the same machine, so that a noisy shared machine still gives comparable numbers. The
//! figures reproduce docs/PERFORMANCE.md.
//!
//! - [`agent_turns`]: a scripted multi-turn session through the real engine, prefix reuse
//!   against re-reading the whole prompt each turn;
//! - [`resume`]: time to first token when resuming from a saved state against re-reading,
//!   and against llama-server's slot save and restore ([`resume_server`]);
//! - [`mine`]: `lilypad tasks mine`'s validation runs per hour against the same checkouts and
//!   pytest commands by hand in `docker run`;
//! - [`first_token`]: a new session's time to first token with the prompt's head loaded from
//!   the engine's saved heads against read;
//! - [`ui`]: frame render time while a long transcript streams, and a large highlighted diff;
//! - [`tools`]: Glob against fd, a Bash round trip against `docker exec` / `kubectl exec`;
//! - [`decode`]: generation speed of a 4B-shaped model against the memory-bandwidth limit;
//! - [`grammar`]: decode speed inside a tool call with the tool-call grammar against without;
//! - [`mtp`]: decode with the MTP layer drafting against without, a draft-and-verify step's
//!   cost against a plain step's, and the ceiling with every draft accepted;
//! - [`batch`]: a scripted research batch's attempts per hour with 1, 2 and 4 pods at a time
//!   against as many Docker containers, and the wait from one attempt's end to the next's
//!   first turn; and image tasks' attempts per hour on the image's own repository against a
//!   copy by git's rules ([`image_repo`]);
//! - [`sequences`]: aggregate decode speed of 2, 4 and 8 sequences together against one, and
//!   `lilypad serve` with concurrent clients against the same requests one at a time; the
//!   largest gap between running streams' tokens while a long prompt joins, read in chunks
//!   against whole ([`mixed`]); and serving a team against `llama-server -np 4` ([`team`]).
//! - [`soak`]: `lilypad serve` under 32 clients with faults (a SIGHUP, a weight update, a
//!   failed replica) for `--minutes N`, its answers, counters, audit lines and RSS checked
//!   (`lilypad bench soak`; the CI test runs the same driver for a minute).
//! - [`peers`]: llama.cpp's own programs (`llama-bench`, `llama-batched-bench`,
//!   `llama-server`) as the baselines of `engine`, `sequences` and `agent-turns`
//!   ([`agent_server`]) when scripts/build-llama-tools.sh has built them.
//!
//! A run ([`run`], with [`Options`]) puts the benches asked for into one [`Report`]; the
//! sections that load an engine are in `engine_runs`, the rest in `suite`.
//!
//! Nothing here asserts on time: the tests only check the structure of the report.

pub mod agent_server;
pub mod agent_turns;
pub mod attempts;
pub mod batch;
pub mod conversation;
pub mod decode;
pub mod engine;
mod engine_runs;
pub mod first_token;
pub mod grammar;
pub mod image_repo;
pub mod logprobs;
pub mod mine;
pub mod mixed;
pub mod mtp;
pub mod peers;
pub mod replicas;
pub mod resume;
pub mod resume_server;
pub mod sequences;
pub mod soak;
mod suite;
pub mod team;
pub mod tools;
pub mod ui;
pub mod ui_dock;

pub use suite::{run, BenchError, Options, Output, Which};

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One measured figure, with the baseline it is compared against.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// Which bench produced it (`agent-turns`, `resume`, `ui`).
    pub bench: String,
    /// What is measured.
    pub name: String,
    /// Lilypad's value.
    pub value: f64,
    pub unit: String,
    /// What it is compared against.
    pub baseline: String,
    pub baseline_value: f64,
    /// The figure as a ratio (its direction is given by `better`).
    pub ratio: f64,
    /// `higher` or `lower`: which direction of `ratio` is better.
    pub better: String,
    /// The target for `ratio`, when the issue sets one.
    pub target: Option<f64>,
}

impl Figure {
    /// Whether the ratio meets its target (`None` without a target).
    pub fn met(&self) -> Option<bool> {
        self.target.map(|t| {
            if self.better == "higher" {
                self.ratio >= t
            } else {
                self.ratio <= t
            }
        })
    }
}

/// What a bench run produced.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Report {
    /// The machine and the settings, in words.
    pub notes: Vec<String>,
    pub figures: Vec<Figure>,
    /// Detail behind some figures (the agent session turn by turn).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<Table>,
}

/// A table of numbers behind some figures.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

impl Table {
    /// The table as aligned text.
    pub fn text(&self) -> String {
        let cells: Vec<Vec<String>> = std::iter::once(self.columns.clone())
            .chain(
                self.rows
                    .iter()
                    .map(|r| r.iter().map(|x| cell(*x)).collect::<Vec<_>>()),
            )
            .collect();
        let mut widths = vec![0usize; self.columns.len()];
        for r in &cells {
            for (w, c) in widths.iter_mut().zip(r.iter()) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = format!("{}:\n", self.title);
        for r in &cells {
            let line: Vec<String> = r
                .iter()
                .zip(widths.iter())
                .map(|(c, w)| format!("{c:>w$}"))
                .collect();
            out.push_str(&line.join("  "));
            out.push('\n');
        }
        out
    }
}

impl Report {
    /// The report as an aligned text table.
    pub fn table(&self) -> String {
        let mut rows = vec![[
            "bench".to_string(),
            "figure".to_string(),
            "lilypad".to_string(),
            "baseline".to_string(),
            "ratio".to_string(),
            "target".to_string(),
        ]];
        for f in &self.figures {
            let target = match (f.target, f.met()) {
                (Some(t), Some(ok)) => {
                    let op = if f.better == "higher" { ">=" } else { "<=" };
                    format!("{op} {} {}", num(t), if ok { "met" } else { "MISSED" })
                }
                _ => "-".to_string(),
            };
            rows.push([
                f.bench.clone(),
                f.name.clone(),
                format!("{} {}", num(f.value), f.unit),
                format!("{} {} ({})", num(f.baseline_value), f.unit, f.baseline),
                num(f.ratio),
                target,
            ]);
        }
        let mut widths = [0usize; 6];
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r.iter()) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        for (i, r) in rows.iter().enumerate() {
            let cells: Vec<String> = r
                .iter()
                .zip(widths.iter())
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                out.push_str(&rule.join("  "));
                out.push('\n');
            }
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        for t in &self.tables {
            out.push('\n');
            out.push_str(&t.text());
        }
        out
    }
}

/// A table cell: whole numbers (counts) as they are, others as [`num`].
fn cell(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        num(x)
    }
}

/// A number with about four significant digits.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// The shape of the model the engine benches run when none is given: the test model's
/// architecture (3 DeltaNet layers + 1 attention layer per 4, synthetic vocabulary) made wider
/// and deeper, so that reading tokens costs something measurable.
pub fn bench_spec(n_embd: u64) -> crate::testmodel::TinySpec {
    let mut spec = crate::testmodel::TinySpec::synthetic();
    spec.n_embd = n_embd;
    spec.n_layer = 8;
    spec.n_ff = n_embd * 3;
    spec.context_length = 65_536;
    spec
}

/// A model file for the engine benches: `given`, or a bench-shaped random-weight model written
/// into `dir`.
pub fn model_path(
    given: Option<&Path>,
    dir: &Path,
    n_embd: u64,
) -> Result<PathBuf, crate::gguf::GgufWriteError> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let path = dir.join(format!("bench-{n_embd}.gguf"));
    crate::testmodel::write(&path, &bench_spec(n_embd))?;
    Ok(path)
}

/// Median of `xs` (0 for none).
pub fn median(xs: &[f64]) -> f64 {
    percentile(xs, 50.0)
}

/// The `p`-th percentile of `xs` by nearest rank (0 for none).
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), 50.0);
        assert_eq!(percentile(&xs, 99.0), 99.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[]), 0.0);
    }
}
