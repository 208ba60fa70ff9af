//! The batch report, `{out}/report.json` and `{out}/report.md`: the run's header (resolved
//! settings), every attempt's finish reason, steps, tokens, time and check, the totals, and
//! pass@k where checks ran. Owns the estimator and the two formats; the figures come from the
//! recorded results (`super::results`).
//!
//! pass@k is the unbiased estimator over the tasks whose attempts were all checked: for a task
//! with `n` checked attempts of which `c` passed, `1 - C(n-c, k) / C(n, k)`, averaged over the
//! tasks with `n >= k`.

use super::leaf::Summary;
use super::results::{write_atomic, AttemptResult};
use crate::session::SessionError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The unbiased pass@k estimate for one task: `n` attempts, `c` passed. `None` when `k > n`
/// or `k == 0`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i), stable for large n.
    let mut miss = 1.0;
    for i in (n - c + 1)..=n {
        miss *= 1.0 - k as f64 / i as f64;
    }
    Some(1.0 - miss)
}

/// Totals over the attempts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub tasks: usize,
    pub attempts: usize,
    pub finished: usize,
    pub errors: usize,
    pub checked: usize,
    pub passed: usize,
    pub steps: u64,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    pub seconds: f64,
    /// Attempts by finish reason (`answered`, `step_limit`, ...; `error` for attempts that
    /// could not run).
    pub finish_reasons: BTreeMap<String, usize>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report<'a> {
    /// The run's resolved settings and identity (preset, attempts, seeds, model, ...).
    pub run: &'a serde_json::Value,
    pub attempts: &'a [AttemptResult],
    pub totals: Totals,
    /// `"1"`, `"2"`, ...: the mean pass@k over the tasks with at least k checked attempts;
    /// empty when no check ran.
    pub pass_at_k: BTreeMap<String, f64>,
    /// Leaf's scoring of the same attempts (`summary.json`): errors counted apart from
    /// unresolved attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaf: Option<Summary>,
}

fn reason_name(r: &AttemptResult) -> String {
    match (&r.finish_reason, &r.error) {
        (_, Some(_)) | (None, _) => "error".into(),
        (Some(f), None) => serde_json::to_value(f)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
    }
}

/// Build the report of `attempts` (in task order) under the `run` header, with Leaf's
/// summary of them when there is one.
pub fn build<'a>(
    run: &'a serde_json::Value,
    attempts: &'a [AttemptResult],
    leaf: Option<&Summary>,
) -> Report<'a> {
    let mut t = Totals::default();
    // instance id -> (checked attempts, passed), in first-seen order of ids.
    let mut per_task: Vec<(&str, u64, u64)> = Vec::new();
    for r in attempts {
        t.attempts += 1;
        if r.finished() {
            t.finished += 1;
        } else {
            t.errors += 1;
        }
        *t.finish_reasons.entry(reason_name(r)).or_default() += 1;
        t.steps += u64::from(r.steps);
        t.prompt_tokens += r.prompt_tokens;
        t.generated_tokens += r.generated_tokens;
        t.seconds += r.seconds;
        let entry = match per_task.iter_mut().find(|(id, ..)| *id == r.instance_id) {
            Some(e) => e,
            None => {
                per_task.push((&r.instance_id, 0, 0));
                per_task
                    .last_mut()
                    .unwrap_or_else(|| unreachable!("just pushed"))
            }
        };
        if let Some(p) = r.passed() {
            t.checked += 1;
            entry.1 += 1;
            if p {
                t.passed += 1;
                entry.2 += 1;
            }
        }
    }
    t.tasks = per_task.len();
    let mut pass = BTreeMap::new();
    let max_n = per_task.iter().map(|(_, n, _)| *n).max().unwrap_or(0);
    for k in 1..=max_n {
        let estimates: Vec<f64> = per_task
            .iter()
            .filter_map(|(_, n, c)| pass_at_k(*n, *c, k))
            .collect();
        if !estimates.is_empty() {
            pass.insert(
                k.to_string(),
                estimates.iter().sum::<f64>() / estimates.len() as f64,
            );
        }
    }
    Report {
        run,
        attempts,
        totals: t,
        pass_at_k: pass,
        leaf: leaf.cloned(),
    }
}

impl Report<'_> {
    /// The Markdown form.
    pub fn markdown(&self) -> String {
        let mut s = String::from("# Lilypad batch report\n\n");
        if let Some(o) = self.run.as_object() {
            for (k, v) in o {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let _ = writeln!(s, "- {k}: {v}");
            }
            s.push('\n');
        }
        let t = &self.totals;
        let _ = writeln!(
            s,
            "{} tasks, {} attempts: {} finished, {} errors; {} steps, {} prompt tokens, {} generated tokens, {:.1} s\n",
            t.tasks, t.attempts, t.finished, t.errors, t.steps, t.prompt_tokens, t.generated_tokens, t.seconds
        );
        if let Some(l) = &self.leaf {
            let _ = writeln!(
                s,
                "Leaf's scoring: {} resolved, {} unresolved, {} errors (counted apart) of {} jobs; \
                 resolve rate {:.4}, error rate {:.4}, pass@3 {:.4}\n",
                l.resolved,
                l.unresolved,
                l.jobs_failed,
                l.jobs_total,
                l.resolve_rate,
                l.error_rate,
                l.pass_at_3
            );
        }
        if t.checked > 0 {
            let _ = writeln!(s, "Checks: {} of {} passed\n", t.passed, t.checked);
            for (k, v) in &self.pass_at_k {
                let _ = writeln!(s, "- pass@{k}: {v:.4}");
            }
            s.push('\n');
        }
        s.push_str("| instance | attempt | seed | finish | check | reward | steps | prompt tokens | generated | seconds |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for r in self.attempts {
            let check = match r.passed() {
                Some(true) => "pass",
                Some(false) => "fail",
                None => "",
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
                r.instance_id.replace('|', "\\|"),
                r.attempt,
                r.seed,
                reason_name(r),
                check,
                r.reward.map(|x| x.to_string()).unwrap_or_default(),
                r.steps,
                r.prompt_tokens,
                r.generated_tokens,
                r.seconds
            );
        }
        s
    }

    /// Write `report.json` and `report.md` into `out`.
    pub fn write(&self, out: &Path) -> Result<(), SessionError> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| SessionError::Write {
            path: out.join("report.json"),
            source: e.into(),
        })?;
        write_atomic(&out.join("report.json"), &json)?;
        write_atomic(&out.join("report.md"), self.markdown().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::check::CheckOutcome;
    use crate::protocol::FinishReason;

    /// C(n, k) by the definition, for checking the estimator.
    fn choose(n: u64, k: u64) -> f64 {
        if k > n {
            return 0.0;
        }
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
    }

    #[test]
    fn pass_at_k_is_the_unbiased_estimator() {
        for n in 1..8u64 {
            for c in 0..=n {
                for k in 1..=n {
                    let want = 1.0 - choose(n - c, k) / choose(n, k);
                    let got = pass_at_k(n, c, k).unwrap();
                    assert!((got - want).abs() < 1e-12, "n={n} c={c} k={k}");
                }
            }
        }
        assert!((pass_at_k(3, 1, 1).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_at_k(2, 0, 3), None);
        assert_eq!(pass_at_k(2, 0, 0), None);
    }

    fn attempt(id: &str, n: u32, passed: Option<bool>) -> AttemptResult {
        AttemptResult {
            instance_id: id.into(),
            attempt: n,
            seed: n,
            model_name_or_path: "m".into(),
            finish_reason: Some(FinishReason::Answered),
            error: None,
            check: passed.map(|p| CheckOutcome {
                passed: p,
                exit_code: Some(if p { 0 } else { 1 }),
                timed_out: false,
                output_tail: String::new(),
                seconds: 0.0,
            }),
            reward: None,
            verified: false,
            tries: 1,
            steps: 3,
            prompt_tokens: 100,
            generated_tokens: 10,
            context_tokens: 110,
            seconds: 2.0,
            session_id: None,
            patch_bytes: 0,
            image: None,
            image_digest: None,
            engine: None,
        }
    }

    #[test]
    fn the_report_averages_pass_at_k_over_tasks() {
        let run = serde_json::json!({"attempts": 2});
        let a = [
            attempt("a", 1, Some(true)),
            attempt("a", 2, Some(false)),
            attempt("b", 1, Some(false)),
            attempt("b", 2, Some(false)),
        ];
        let r = build(&run, &a, None);
        assert_eq!(r.totals.tasks, 2);
        assert_eq!((r.totals.checked, r.totals.passed), (4, 1));
        assert_eq!(r.pass_at_k["1"], 0.25);
        assert_eq!(r.pass_at_k["2"], 0.5);
        assert!(r.markdown().contains("pass@2: 0.5000"));
        let none = [attempt("a", 1, None)];
        assert!(build(&run, &none, None).pass_at_k.is_empty());
    }
}
