//! The figures of a quantisation check, computed per position from two next-token
//! distributions given as logits: the reference's and the candidate's. Everything is done in
//! f64 on log-softmaxed logits (the maximum subtracted first), so a distribution compared with
//! itself gives exactly 0 divergence and any vocabulary size stays finite.

use serde::Serialize;

/// `log_softmax(logits)` in f64, with the index of the largest logit (the first on ties).
pub fn log_softmax(logits: &[f32]) -> (Vec<f64>, usize) {
    let mut imax = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[imax] {
            imax = i;
        }
    }
    let max = f64::from(logits.get(imax).copied().unwrap_or(0.0));
    let sum: f64 = logits.iter().map(|&x| (f64::from(x) - max).exp()).sum();
    let log_sum = sum.ln();
    (
        logits
            .iter()
            .map(|&x| f64::from(x) - max - log_sum)
            .collect(),
        imax,
    )
}

/// One position's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Position {
    /// KL(reference || candidate) in nats.
    pub kl: f64,
    /// Both put the same token first.
    pub same_top: bool,
    /// The reference's first token is among the candidate's first five.
    pub top_in_5: bool,
    /// Negative log-likelihood of the actual next token under each model.
    pub nll_reference: f64,
    pub nll_candidate: f64,
}

/// Compare the two distributions after one position whose actual next token is `next`.
pub fn compare(reference: &[f32], candidate: &[f32], next: usize) -> Position {
    let (lr, top_r) = log_softmax(reference);
    let (lc, top_c) = log_softmax(candidate);
    let kl = lr
        .iter()
        .zip(&lc)
        .map(|(&r, &c)| if r == c { 0.0 } else { r.exp() * (r - c) })
        .sum();
    // The rank of the reference's top token in the candidate: how many come before it
    // (larger, or equal with a smaller index, as an argmax would order them).
    let key = lc.get(top_r).copied().unwrap_or(f64::NEG_INFINITY);
    let rank = lc
        .iter()
        .enumerate()
        .filter(|&(j, &c)| c > key || (c == key && j < top_r))
        .count();
    Position {
        kl,
        same_top: top_r == top_c,
        top_in_5: rank < 5,
        nll_reference: -lr.get(next).copied().unwrap_or(f64::NEG_INFINITY),
        nll_candidate: -lc.get(next).copied().unwrap_or(f64::NEG_INFINITY),
    }
}

/// Totals over a set of positions.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    kl: Vec<f64>,
    same_top: usize,
    top_in_5: usize,
    nll_reference: f64,
    nll_candidate: f64,
}

/// The summary of a set of positions, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub positions: usize,
    pub kl_mean: f64,
    pub kl_p99: f64,
    pub kl_max: f64,
    /// Share of positions where both put the same token first.
    pub top1_agreement: f64,
    /// Share of positions where the reference's first token is not in the candidate's top 5.
    pub top5_miss: f64,
    pub perplexity_reference: f64,
    pub perplexity_candidate: f64,
}

impl Totals {
    pub fn add(&mut self, p: &Position) {
        self.kl.push(p.kl);
        self.same_top += usize::from(p.same_top);
        self.top_in_5 += usize::from(p.top_in_5);
        self.nll_reference += p.nll_reference;
        self.nll_candidate += p.nll_candidate;
    }

    pub fn len(&self) -> usize {
        self.kl.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kl.is_empty()
    }

    /// Mean, 99th percentile (linear between the nearest ranks) and maximum KL, shares and
    /// perplexities; all zero for an empty set.
    pub fn summary(&self) -> Summary {
        let n = self.kl.len();
        if n == 0 {
            return Summary {
                positions: 0,
                kl_mean: 0.0,
                kl_p99: 0.0,
                kl_max: 0.0,
                top1_agreement: 0.0,
                top5_miss: 0.0,
                perplexity_reference: 0.0,
                perplexity_candidate: 0.0,
            };
        }
        let mut sorted = self.kl.clone();
        sorted.sort_by(f64::total_cmp);
        let nf = n as f64;
        Summary {
            positions: n,
            kl_mean: self.kl.iter().sum::<f64>() / nf,
            kl_p99: percentile(&sorted, 0.99),
            kl_max: sorted[n - 1],
            top1_agreement: self.same_top as f64 / nf,
            top5_miss: (n - self.top_in_5) as f64 / nf,
            perplexity_reference: (self.nll_reference / nf).exp(),
            perplexity_candidate: (self.nll_candidate / nf).exp(),
        }
    }
}

/// The `fraction` quantile of sorted values, interpolated between neighbours.
fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let p = fraction * (sorted.len() - 1) as f64;
    let i = p.floor() as usize;
    let next = sorted[(i + 1).min(sorted.len() - 1)];
    sorted[i] + (p - i as f64) * (next - sorted[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_distributions_agree_exactly() {
        let l = [1.0f32, 3.0, -2.0, 3.0, 0.5, 0.0, 7.5];
        let p = compare(&l, &l, 1);
        assert_eq!(p.kl, 0.0);
        assert!(p.same_top && p.top_in_5);
        assert_eq!(p.nll_reference, p.nll_candidate);
    }

    #[test]
    fn kl_of_two_coin_flips() {
        // p = (0.5, 0.5), q = (0.8, 0.2): KL = 0.5 ln(0.5/0.8) + 0.5 ln(0.5/0.2).
        let q = [(0.8f64).ln() as f32, (0.2f64).ln() as f32];
        let p = compare(&[0.0, 0.0], &q, 1);
        let expected = 0.5 * (0.5f64 / 0.8).ln() + 0.5 * (0.5f64 / 0.2).ln();
        assert!((p.kl - expected).abs() < 1e-6, "{} vs {expected}", p.kl);
        assert!((p.nll_reference - 2f64.ln()).abs() < 1e-12);
        assert!((p.nll_candidate - 5f64.ln()).abs() < 1e-6);
        // Ties go to the first index, as an argmax does.
        assert!(p.same_top);
    }

    #[test]
    fn top5_rank_and_large_logits_stay_finite() {
        let reference = [0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 9.0];
        // Fifth place (four larger) is in, sixth is out.
        let candidate = [5.0f32, 4.0, 3.0, 2.0, 0.5, 0.4, 1.0];
        assert!(compare(&reference, &candidate, 6).top_in_5);
        let candidate = [5.0f32, 4.0, 3.0, 2.0, 1.0, 0.7, 0.6];
        let p = compare(&reference, &candidate, 6);
        assert!(!p.top_in_5 && !p.same_top);
        let big = [1e30f32, -1e30, 0.0];
        assert!(compare(&big, &[0.0, 0.0, 0.0], 0).kl.is_finite());
    }

    #[test]
    fn summary_percentiles_and_perplexity() {
        let mut t = Totals::default();
        for i in 0..101 {
            t.add(&Position {
                kl: f64::from(i),
                same_top: i % 2 == 0,
                top_in_5: i != 0,
                nll_reference: 1.0,
                nll_candidate: 2.0,
            });
        }
        let s = t.summary();
        assert_eq!(s.positions, 101);
        assert_eq!(s.kl_max, 100.0);
        assert!((s.kl_p99 - 99.0).abs() < 1e-12);
        assert!((s.kl_mean - 50.0).abs() < 1e-12);
        assert!((s.top1_agreement - 51.0 / 101.0).abs() < 1e-12);
        assert!((s.top5_miss - 1.0 / 101.0).abs() < 1e-12);
        assert!((s.perplexity_reference - 1f64.exp()).abs() < 1e-12);
        assert!((s.perplexity_candidate - 2f64.exp()).abs() < 1e-12);
        assert_eq!(Totals::default().summary().positions, 0);
    }
}
