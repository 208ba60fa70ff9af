//! Choosing a training set by solve rate (`lilypad tasks filter`): the rule DAPO and rLLM use,
//! keep the tasks the model of the moment solves sometimes but not always. Given each task's
//! tally over K attempts ([`SolveRate`]), a task is kept when its rate lies in the [`Band`]
//! (by default strictly between 0 and 1), and optionally a [`Share`] of the never-solved tasks
//! is kept too, chosen by the run's seed ([`decide`]); the report's histogram has K + 1 buckets,
//! one per number of resolved attempts ([`histogram`], [`render_histogram`]).
//!
//! Pure: no attempt runs here. Owns the band's syntax and rule, the choice of never-solved
//! tasks and the histogram. Does not own running the attempts or reading their results
//! (`crate::headless::filter` does, with the batch's machinery).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// A `--keep` band or a `--keep-unsolved` share that does not read.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RuleError {
    #[error(
        "{0:?} is no band of solve rates: write LO..HI (both ends kept, e.g. 0.25..0.75) or \
         A<p<B with < or <= on either side (e.g. 0<p<1, 0<p<=0.5); the numbers are rates from \
         0 to 1, as decimals or fractions (1/4)"
    )]
    Syntax(String),
    #[error("{0:?} is no rate: write a number from 0 to 1, as a decimal or a fraction (1/4)")]
    Number(String),
    #[error("the band {0} holds no rate")]
    Empty(String),
    #[error("{0:?} is no share: write a number from 0 to 1 (0.1 keeps a tenth of the never-solved tasks)")]
    Share(String),
}

/// One end of a [`Band`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct End {
    pub rate: f64,
    /// Whether a rate equal to `rate` is inside.
    pub inclusive: bool,
}

/// The solve rates whose tasks are kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub low: End,
    pub high: End,
}

impl Default for Band {
    /// Strictly between 0 and 1: solved sometimes, not always.
    fn default() -> Self {
        Self {
            low: End {
                rate: 0.0,
                inclusive: false,
            },
            high: End {
                rate: 1.0,
                inclusive: false,
            },
        }
    }
}

impl Band {
    /// Whether `resolved` of `attempts` lies in the band (never, with no attempts).
    pub fn contains(&self, resolved: u32, attempts: u32) -> bool {
        if attempts == 0 {
            return false;
        }
        // Both the quotient and a parsed decimal are the nearest double to their value, so a
        // rate equal to an end compares equal.
        let rate = f64::from(resolved) / f64::from(attempts);
        let above = match self.low.inclusive {
            true => rate >= self.low.rate,
            false => rate > self.low.rate,
        };
        let below = match self.high.inclusive {
            true => rate <= self.high.rate,
            false => rate < self.high.rate,
        };
        above && below
    }
}

impl fmt::Display for Band {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = |inclusive| if inclusive { "<=" } else { "<" };
        write!(
            f,
            "{} {} p {} {}",
            self.low.rate,
            sign(self.low.inclusive),
            sign(self.high.inclusive),
            self.high.rate
        )
    }
}

/// A rate from 0 to 1, written as a decimal or a fraction.
fn rate(text: &str) -> Result<f64, RuleError> {
    let t = text.trim();
    let bad = || RuleError::Number(t.to_string());
    let value = match t.split_once('/') {
        Some((n, d)) => {
            let (n, d): (f64, f64) = (
                n.trim().parse().map_err(|_| bad())?,
                d.trim().parse().map_err(|_| bad())?,
            );
            if d == 0.0 {
                return Err(bad());
            }
            n / d
        }
        None => t.parse().map_err(|_| bad())?,
    };
    match (0.0..=1.0).contains(&value) {
        true => Ok(value),
        false => Err(bad()),
    }
}

impl FromStr for Band {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        let band = if let Some((lo, hi)) = text.split_once("..") {
            Band {
                low: End {
                    rate: rate(lo)?,
                    inclusive: true,
                },
                high: End {
                    rate: rate(hi)?,
                    inclusive: true,
                },
            }
        } else {
            let (lo, hi) = text
                .split_once('p')
                .ok_or_else(|| RuleError::Syntax(s.to_string()))?;
            let end = |num: &str, inclusive: bool| {
                Ok::<_, RuleError>(End {
                    rate: rate(num)?,
                    inclusive,
                })
            };
            let low = match (lo.strip_suffix("<="), lo.strip_suffix('<')) {
                (Some(n), _) => end(n, true)?,
                (None, Some(n)) => end(n, false)?,
                (None, None) => return Err(RuleError::Syntax(s.to_string())),
            };
            let high = match (hi.strip_prefix("<="), hi.strip_prefix('<')) {
                (Some(n), _) => end(n, true)?,
                (None, Some(n)) => end(n, false)?,
                (None, None) => return Err(RuleError::Syntax(s.to_string())),
            };
            Band { low, high }
        };
        let open = band.low.rate < band.high.rate
            || (band.low.rate == band.high.rate && band.low.inclusive && band.high.inclusive);
        match open {
            true => Ok(band),
            false => Err(RuleError::Empty(band.to_string())),
        }
    }
}

/// The share of never-solved tasks kept beside the band's (`--keep-unsolved`), from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share(f64);

impl Share {
    pub fn get(self) -> f64 {
        self.0
    }

    /// How many of `n` tasks the share keeps: the nearest whole number (halves up).
    pub fn of(self, n: usize) -> usize {
        // The product is at most n, so the cast back cannot overflow.
        ((self.0 * n as f64) + 0.5).floor() as usize
    }
}

impl FromStr for Share {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match rate(s) {
            Ok(v) => Ok(Share(v)),
            Err(_) => Err(RuleError::Share(s.to_string())),
        }
    }
}

/// What the filter decided about a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Its rate is in the band.
    Kept,
    /// Never solved, and among the share of such tasks kept.
    KeptUnsolved,
    Dropped,
    /// Some attempt ended in an error (and no result): its rate is not known yet.
    Undecided,
}

impl Verdict {
    pub fn kept(self) -> bool {
        matches!(self, Verdict::Kept | Verdict::KeptUnsolved)
    }
}

/// One line of the solve-rates file: a task's tally over its attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveRate {
    pub instance_id: String,
    /// Attempts that completed (ran and were verified); the rate is over these.
    pub attempts: u32,
    /// Completed attempts that resolved the task.
    pub resolved: u32,
    /// `resolved / attempts`; null with no completed attempt.
    pub rate: Option<f64>,
    /// Attempts that ended in an error: the task stays undecided until a run completes them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u32,
    pub verdict: Verdict,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SolveRate {
    /// The tally of a task, its verdict not yet decided (`Undecided` until [`decide`]).
    pub fn new(instance_id: impl Into<String>, attempts: u32, resolved: u32, errors: u32) -> Self {
        Self {
            instance_id: instance_id.into(),
            attempts,
            resolved,
            rate: (attempts > 0).then(|| f64::from(resolved) / f64::from(attempts)),
            errors,
            verdict: Verdict::Undecided,
        }
    }

    /// Every attempt completed.
    pub fn decided(&self) -> bool {
        self.errors == 0 && self.attempts > 0
    }
}

/// How tasks are kept: the band, the share of never-solved tasks, and the seed that chooses
/// them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeepRule {
    pub band: Band,
    pub unsolved: Option<Share>,
    pub seed: u32,
}

/// A task's place in the seeded order the never-solved tasks are chosen in: the first eight
/// bytes of SHA-256 over the seed (four bytes, little-endian) and the instance id. It depends
/// on the task and the seed only, so adding tasks to the set never reorders the others.
pub fn unsolved_rank(seed: u32, instance_id: &str) -> u64 {
    let mut bytes = seed.to_le_bytes().to_vec();
    bytes.extend_from_slice(instance_id.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_be_bytes(head)
}

/// Set every task's verdict under `rule`: undecided when an attempt ended in an error, kept
/// when its rate is in the band, and of the never-solved tasks outside the band, the share
/// `rule.unsolved` (rounded to the nearest whole task) with the lowest [`unsolved_rank`] kept
/// too; the rest dropped.
pub fn decide(rates: &mut [SolveRate], rule: &KeepRule) {
    let mut unsolved: Vec<(u64, usize)> = Vec::new();
    for (i, r) in rates.iter_mut().enumerate() {
        r.verdict = if !r.decided() {
            Verdict::Undecided
        } else if rule.band.contains(r.resolved, r.attempts) {
            Verdict::Kept
        } else {
            if r.resolved == 0 {
                unsolved.push((unsolved_rank(rule.seed, &r.instance_id), i));
            }
            Verdict::Dropped
        };
    }
    let Some(share) = rule.unsolved else { return };
    let n = share.of(unsolved.len());
    unsolved.sort_unstable();
    for &(_, i) in unsolved.iter().take(n) {
        rates[i].verdict = Verdict::KeptUnsolved;
    }
}

/// The decided tasks by resolved attempts: K + 1 buckets, `0/K` to `K/K`. A task with another
/// number of attempts than `k` (none, once decided) is left out.
pub fn histogram(rates: &[SolveRate], k: u32) -> Vec<usize> {
    let mut buckets = vec![0; k as usize + 1];
    for r in rates.iter().filter(|r| r.decided() && r.attempts == k) {
        if let Some(b) = buckets.get_mut(r.resolved as usize) {
            *b += 1;
        }
    }
    buckets
}

/// The histogram as text, one line per bucket: `  2/4 | ######    |  7`, the bars scaled so
/// that the largest bucket is `width` characters.
pub fn render_histogram(buckets: &[usize], width: usize) -> String {
    let k = buckets.len().saturating_sub(1);
    let most = buckets.iter().copied().max().unwrap_or(0).max(1);
    let label_w = format!("{k}/{k}").len();
    let count_w = buckets.iter().sum::<usize>().to_string().len();
    let mut out = String::new();
    for (i, &n) in buckets.iter().enumerate() {
        // Rounded up, so that a bucket with any task shows a bar.
        let bar = (n * width).div_ceil(most);
        out.push_str(&format!(
            "  {:>label_w$} |{}{}| {:>count_w$}\n",
            format!("{i}/{k}"),
            "#".repeat(bar),
            " ".repeat(width - bar),
            n
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(s: &str) -> Band {
        s.parse().unwrap()
    }

    #[test]
    fn the_default_band_keeps_what_is_solved_sometimes_but_not_always() {
        let b = Band::default();
        assert_eq!(band("0<p<1"), b);
        assert_eq!(band(" 0 < p < 1 "), b);
        assert_eq!(b.to_string(), "0 < p < 1");
        assert!(!b.contains(0, 4));
        assert!(b.contains(1, 4) && b.contains(3, 4));
        assert!(!b.contains(4, 4));
        assert!(!b.contains(0, 0));
    }

    #[test]
    fn a_band_narrows_with_either_end_kept_or_not() {
        let r = band("0.25..0.75");
        assert_eq!(r.to_string(), "0.25 <= p <= 0.75");
        assert!(r.contains(1, 4) && r.contains(3, 4) && !r.contains(0, 4) && !r.contains(4, 4));
        assert!(!r.contains(1, 5), "0.2 is below");
        let half_open = band("1/4<p<=1/2");
        assert!(!half_open.contains(1, 4));
        assert!(half_open.contains(2, 4) && half_open.contains(1, 3));
        assert!(!half_open.contains(3, 4));
        // A decimal end equal to the rate is equal (3/10 and 0.3 are the same double).
        assert!(band("0.3<=p<=0.6").contains(3, 10));
        assert!(!band("0.3<p<=0.6").contains(3, 10));
        // One point, kept on both sides.
        assert!(band("0.5..0.5").contains(2, 4));
        assert!(band("0<=p<1").contains(0, 3));
    }

    #[test]
    fn a_band_that_does_not_read_or_holds_nothing_is_refused() {
        for bad in [
            "", "0.2", "0<q<1", "p<1", "0<p", "0<p<2", "-1..0.5", "a..b", "1/0..1",
        ] {
            assert!(bad.parse::<Band>().is_err(), "{bad:?} was read");
        }
        for empty in ["0.5<p<0.5", "0.5<=p<0.5", "0.75..0.25"] {
            let e = empty.parse::<Band>().unwrap_err();
            assert!(matches!(e, RuleError::Empty(_)), "{empty}: {e:?}");
        }
    }

    #[test]
    fn a_share_is_a_rate_and_keeps_the_nearest_whole_number_of_tasks() {
        let s: Share = "0.5".parse().unwrap();
        assert_eq!((s.of(0), s.of(1), s.of(2), s.of(3)), (0, 1, 1, 2));
        let tenth: Share = "1/10".parse().unwrap();
        assert_eq!(
            (tenth.of(4), tenth.of(5), tenth.of(14), tenth.of(15)),
            (0, 1, 1, 2)
        );
        assert_eq!("1".parse::<Share>().unwrap().of(7), 7);
        assert_eq!("0".parse::<Share>().unwrap().of(7), 0);
        assert!(matches!("1.5".parse::<Share>(), Err(RuleError::Share(_))));
        assert!("half".parse::<Share>().is_err());
    }

    fn tally(id: &str, attempts: u32, resolved: u32, errors: u32) -> SolveRate {
        SolveRate::new(id, attempts, resolved, errors)
    }

    fn verdicts(rates: &[SolveRate]) -> Vec<(&str, Verdict)> {
        rates
            .iter()
            .map(|r| (r.instance_id.as_str(), r.verdict))
            .collect()
    }

    #[test]
    fn the_band_keeps_and_errors_leave_a_task_undecided() {
        let mut rates = vec![
            tally("never", 4, 0, 0),
            tally("once", 4, 1, 0),
            tally("three", 4, 3, 0),
            tally("always", 4, 4, 0),
            tally("broken", 3, 1, 1),
            tally("lost", 0, 0, 4),
        ];
        let rule = KeepRule {
            band: Band::default(),
            unsolved: None,
            seed: 0,
        };
        decide(&mut rates, &rule);
        use Verdict::*;
        assert_eq!(
            verdicts(&rates),
            [
                ("never", Dropped),
                ("once", Kept),
                ("three", Kept),
                ("always", Dropped),
                ("broken", Undecided),
                ("lost", Undecided)
            ]
        );
        assert_eq!(rates[4].rate, Some(1.0 / 3.0));
        assert_eq!(rates[5].rate, None);
        let narrow = KeepRule {
            band: band("0<p<=0.5"),
            ..rule
        };
        decide(&mut rates, &narrow);
        assert_eq!(rates[1].verdict, Kept);
        assert_eq!(rates[2].verdict, Dropped);
    }

    #[test]
    fn a_share_of_the_never_solved_tasks_is_kept_by_the_seed_alone() {
        let ids: Vec<String> = (0..10).map(|i| format!("t-{i}")).collect();
        let mut rates: Vec<SolveRate> = ids.iter().map(|id| tally(id, 4, 0, 0)).collect();
        rates.push(tally("half", 4, 2, 0));
        rates.push(tally("broken", 3, 0, 1));
        let rule = |seed| KeepRule {
            band: Band::default(),
            unsolved: Some("0.3".parse().unwrap()),
            seed,
        };
        decide(&mut rates, &rule(7));
        let kept = |rates: &[SolveRate]| -> Vec<String> {
            rates
                .iter()
                .filter(|r| r.verdict == Verdict::KeptUnsolved)
                .map(|r| r.instance_id.clone())
                .collect()
        };
        let chosen = kept(&rates);
        assert_eq!(chosen.len(), 3, "{chosen:?}");
        // The three with the lowest rank under the seed.
        let mut by_rank: Vec<&String> = ids.iter().collect();
        by_rank.sort_by_key(|id| unsolved_rank(7, id));
        let mut expected: Vec<String> = by_rank[..3].iter().map(|s| s.to_string()).collect();
        expected.sort_by_key(|id| ids.iter().position(|i| i == id));
        assert_eq!(chosen, expected);
        assert_eq!(rates[10].verdict, Verdict::Kept);
        assert_eq!(
            rates[11].verdict,
            Verdict::Undecided,
            "not a never-solved task yet"
        );
        // The same seed chooses the same tasks in any order; another seed, others.
        rates.reverse();
        decide(&mut rates, &rule(7));
        let mut again = kept(&rates);
        again.reverse();
        assert_eq!(again, chosen);
        let others: Vec<String> = (0..20)
            .map(|s| {
                decide(&mut rates, &rule(s));
                kept(&rates).join(",")
            })
            .collect();
        assert!(others.iter().any(|o| *o != others[0]), "{others:?}");
        // A band that takes in 0 keeps them all already; the share adds none.
        decide(
            &mut rates,
            &KeepRule {
                band: band("0..0.5"),
                ..rule(7)
            },
        );
        assert!(rates
            .iter()
            .all(|r| r.verdict != Verdict::KeptUnsolved && (r.verdict.kept() || !r.decided())));
    }

    #[test]
    fn the_histogram_has_a_bucket_per_count_of_resolved_attempts() {
        let rates = vec![
            tally("a", 4, 0, 0),
            tally("b", 4, 0, 0),
            tally("c", 4, 1, 0),
            tally("d", 4, 4, 0),
            tally("e", 3, 1, 1),
        ];
        let h = histogram(&rates, 4);
        assert_eq!(h, [2, 1, 0, 0, 1]);
        assert_eq!(
            render_histogram(&h, 10),
            "  0/4 |##########| 2\n  1/4 |#####     | 1\n  2/4 |          | 0\n  \
             3/4 |          | 0\n  4/4 |#####     | 1\n"
        );
        // A bucket of one among hundreds still shows a bar.
        let wide = render_histogram(&[300, 1], 10);
        assert_eq!(wide, "  0/1 |##########| 300\n  1/1 |#         |   1\n");
        assert_eq!(
            render_histogram(&histogram(&[], 2), 4),
            "  0/2 |    | 0\n  1/2 |    | 0\n  2/2 |    | 0\n"
        );
    }
}
