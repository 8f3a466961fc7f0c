//! Which of a search's drawers a prompt gets. Two questions, two rules:
//!
//! - does the palace hold anything close to this prompt at all? Only when its best drawer scores at
//!   least `MEMPALACE_RECALL_MIN_SCORE` (the gate that keeps unrelated prompts quiet);
//! - which drawers then? Every one that scores within [`NEAR_BEST`] of the best and no lower than
//!   [`BELOW_GATE`] under the gate: on long conversations the drawer that holds the answer is often
//!   the third or the fifth, scoring well under the best one.
//!
//! Measured (docs/mempalace-bridge.md, "How well it recalls"): on LoCoMo's conversations the old
//! rule (at or above the gate and within 0.10 of the best) kept about half of the evidence
//! MemPalace's own top five holds; on the labelled set of bench/recall.mjs the gate alone decides
//! how many unrelated prompts get a message, so that figure is unchanged.

use super::drawers::Hit;
use super::RecallConfig;

/// A drawer is kept when it scores within this much of the best drawer.
pub(crate) const NEAR_BEST: f64 = 0.30;

/// ... and no lower than this much under `MEMPALACE_RECALL_MIN_SCORE`.
pub(crate) const BELOW_GATE: f64 = 0.20;

/// The drawers of `hits` a prompt gets, in the server's order: none when the best similarity is
/// under `cfg.min_score`, else those within [`NEAR_BEST`] of the best and at least
/// `cfg.min_score - BELOW_GATE`.
pub(crate) fn picked<'a>(hits: &'a [Hit], cfg: &RecallConfig) -> Vec<&'a Hit> {
    let best = hits.iter().map(|h| h.similarity).fold(f64::NEG_INFINITY, f64::max);
    if best < cfg.min_score {
        return Vec::new();
    }
    let floor = (cfg.min_score - BELOW_GATE).max(best - NEAR_BEST);
    hits.iter().filter(|h| h.similarity >= floor).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg(min_score: f64) -> RecallConfig {
        RecallConfig { on: true, budget: Duration::from_millis(500), max_bytes: 2000, min_score, other_min_score: None }
    }

    fn hits(scores: &[f64]) -> Vec<Hit> {
        scores
            .iter()
            .enumerate()
            .map(|(i, &s)| Hit {
                id: format!("d{i}"),
                wing: "w".into(),
                room: "r".into(),
                similarity: s,
                text: "t".into(),
            })
            .collect()
    }

    fn ids(h: &[Hit], c: &RecallConfig) -> Vec<String> {
        picked(h, c).into_iter().map(|h| h.id.clone()).collect()
    }

    #[test]
    fn nothing_unless_the_best_drawer_passes_the_gate() {
        assert!(ids(&hits(&[0.44, 0.43, 0.30]), &cfg(0.45)).is_empty());
        assert!(ids(&[], &cfg(0.45)).is_empty());
        assert_eq!(ids(&hits(&[0.30, 0.46]), &cfg(0.45)), ["d0", "d1"], "the best is wherever the server put it");
    }

    #[test]
    fn the_answer_scoring_well_under_the_best_drawer_is_kept() {
        // On a long conversation the turn that answers is often a later result scoring well under
        // the best one: within 0.10 of the best, only d0 and d1 were kept.
        let found = hits(&[0.52, 0.49, 0.41, 0.37, 0.21]);
        assert_eq!(ids(&found, &cfg(0.45)), ["d0", "d1", "d2", "d3"]);
    }

    #[test]
    fn the_floor_depends_on_the_gate_and_the_best_drawer() {
        // A strong best drawer: its weak neighbours go (the relative rule).
        assert_eq!(ids(&hits(&[0.90, 0.62, 0.59, 0.40]), &cfg(0.45)), ["d0", "d1"]);
        // A barely relevant best drawer: nothing under the absolute floor of 0.25.
        assert_eq!(ids(&hits(&[0.46, 0.26, 0.24]), &cfg(0.45)), ["d0", "d1"]);
        // A threshold of 0 keeps everything within NEAR_BEST of the best.
        assert_eq!(ids(&hits(&[0.35, 0.10, 0.04]), &cfg(0.0)), ["d0", "d1"]);
    }
}
