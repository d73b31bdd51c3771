//! A seat's total reward from its named components: the weighted sum, or the reward
//! enhancement; and the one function that gives an episode its per-turn signals, per-seat
//! components and totals ([`episode_rewards`]).

use std::collections::BTreeMap;

use crate::game::{Outcome, PerSeat, Setup, Turn};
use crate::scenario::Scenario;

use super::config::{Combine, Component, RewardConfig};
use super::terminal::terminal_rewards;
use super::turn::turn_signals;

/// Reward enhancement (REPO): R = R_m · (1 + sign(R_m) · clip(E, −n, n)/n). The auxiliary
/// score E scales the primary reward R_m instead of being added to it: E > 0 makes a positive
/// R_m larger and a negative one smaller in size; E < 0 the opposite; R_m = 0 stays 0. With
/// |E| ≥ n the scale is 2 or 0.
pub fn enhance(primary: f64, auxiliary: f64, n: f64) -> f64 {
    let sign = if primary > 0.0 {
        1.0
    } else if primary < 0.0 {
        -1.0
    } else {
        0.0
    };
    primary * (1.0 + sign * auxiliary.clamp(-n, n) / n)
}

/// A seat's total reward from its components (by name; a missing one counts 0): Σ weight ·
/// component for `sum`; for `enhance`, [`enhance`] of the primary with E = Σ weight · auxiliary.
pub fn total(parts: &BTreeMap<String, f64>, config: &RewardConfig) -> f64 {
    let part = |c: Component| parts.get(c.name()).copied().unwrap_or(0.0);
    match config.combine {
        // Folded from +0.0: `Sum` for f64 starts at −0.0, which a record would show as "-0.0".
        Combine::Sum => config
            .components()
            .into_iter()
            .fold(0.0, |acc, c| acc + config.weight(c) * part(c)),
        Combine::Enhance => {
            let e = &config.enhance;
            let aux = e
                .auxiliary
                .iter()
                .fold(0.0, |acc, c| acc + config.weight(*c) * part(*c));
            enhance(part(e.primary), aux, e.n)
        }
    }
}

/// What an episode's rewards are under a config, from the record alone (the judge's and the
/// reward model's components are added by `run` afterwards).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRewards {
    /// Per turn, in order: the signals of the seat that moved.
    pub turns: Vec<BTreeMap<String, f64>>,
    /// Per seat: each pure component's episode value, unweighted. Empty under the terminal
    /// reward alone.
    pub parts: PerSeat<BTreeMap<String, f64>>,
    /// Per seat: the total.
    pub total: PerSeat<f64>,
}

/// The pure rewards of an ended episode. A seat's `format`, `length`, `points` and `strategic`
/// are the means of its turns' signals (0 without turns), `rules` the sum of its turns' rule
/// scores; `terminal` is [`terminal_rewards`]. Under the terminal reward alone the total is the
/// terminal reward itself and nothing else is given.
pub fn episode_rewards(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[Turn],
    outcome: &Outcome,
    config: &RewardConfig,
) -> EpisodeRewards {
    let terminal = terminal_rewards(scenario, outcome, config);
    let signals = turn_signals(scenario, setup, turns, config);
    if config.is_terminal_only() {
        return EpisodeRewards {
            turns: signals,
            parts: PerSeat::default(),
            total: terminal,
        };
    }
    let parts = PerSeat::from_fn(|seat| {
        let mine: Vec<&BTreeMap<String, f64>> = turns
            .iter()
            .zip(&signals)
            .filter(|(t, _)| t.seat == seat)
            .map(|(_, s)| s)
            .collect();
        let mut parts = BTreeMap::new();
        for c in config.components() {
            let value = match c {
                Component::Terminal => terminal[seat],
                Component::Rules => mine
                    .iter()
                    .flat_map(|s| s.iter())
                    .filter(|(k, _)| k.starts_with("rule:"))
                    .fold(0.0, |acc, (_, v)| acc + v),
                c if c.is_per_turn() => {
                    let values: Vec<f64> = mine
                        .iter()
                        .filter_map(|s| s.get(c.name()).copied())
                        .collect();
                    if values.is_empty() {
                        0.0
                    } else {
                        values.iter().sum::<f64>() / values.len() as f64
                    }
                }
                _ => continue,
            };
            parts.insert(c.name().to_string(), value);
        }
        parts
    });
    let total = PerSeat::from_fn(|seat| total(&parts[seat], config));
    EpisodeRewards {
        turns: signals,
        parts,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, learner_first_as, play, turn};
    use crate::reward::{EnhanceConfig, RuleConfig, RuleTarget};
    use crate::scenario::Role;

    const TOL: f64 = 1e-9;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < TOL
    }

    #[test]
    fn enhancement_in_every_sign_case() {
        // n = 1.
        // R_m > 0, E > 0: 0.5 · (1 + 0.4) = 0.7.
        assert!(close(enhance(0.5, 0.4, 1.0), 0.7));
        // R_m > 0, E < 0: 0.5 · (1 − 0.4) = 0.3.
        assert!(close(enhance(0.5, -0.4, 1.0), 0.3));
        // R_m < 0, E > 0: −0.5 · (1 − 0.4) = −0.3 (good behaviour shrinks the penalty).
        assert!(close(enhance(-0.5, 0.4, 1.0), -0.3));
        // R_m < 0, E < 0: −0.5 · (1 + 0.4) = −0.7.
        assert!(close(enhance(-0.5, -0.4, 1.0), -0.7));
        // R_m = 0: 0 whatever E.
        assert_eq!(enhance(0.0, 0.9, 1.0), 0.0);
        assert_eq!(enhance(0.0, -0.9, 1.0), 0.0);
        // Clipped at ±n: n = 2, E = 5 → clip 2 → 0.5 · (1 + 1) = 1; E = −3 → 0.5 · 0 = 0;
        // R_m = −0.5, E = 5 → −0.5 · 0 = 0; E = −5 → −1.
        assert!(close(enhance(0.5, 5.0, 2.0), 1.0));
        assert!(close(enhance(0.5, -3.0, 2.0), 0.0));
        assert!(close(enhance(-0.5, 5.0, 2.0), 0.0));
        assert!(close(enhance(-0.5, -5.0, 2.0), -1.0));
        // Inside the clip with n = 2: 0.5 · (1 + 1/2) = 0.75.
        assert!(close(enhance(0.5, 1.0, 2.0), 0.75));
    }

    fn parts(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn the_weighted_sum_counts_the_named_components_only() {
        let config = RewardConfig {
            weights: [
                (Component::Terminal, 1.0),
                (Component::Format, 0.1),
                (Component::Judge, 0.5),
            ]
            .into(),
            ..RewardConfig::default()
        };
        // 1 · 0.75 + 0.1 · 1 + 0.5 · 0.4 = 1.05; `points` is not weighted, so ignored; a
        // missing judge part counts 0.
        let p = parts(&[
            ("terminal", 0.75),
            ("format", 1.0),
            ("judge", 0.4),
            ("points", 9.0),
        ]);
        assert!(close(total(&p, &config), 1.05));
        let p = parts(&[("terminal", 0.75), ("format", 1.0)]);
        assert!(close(total(&p, &config), 0.85));
        // The default: terminal alone.
        assert!(close(
            total(&parts(&[("terminal", -0.5)]), &RewardConfig::default()),
            -0.5
        ));
    }

    #[test]
    fn enhance_combines_the_primary_with_weighted_auxiliaries() {
        let config = RewardConfig {
            combine: Combine::Enhance,
            weights: [(Component::Judge, 0.5)].into(),
            enhance: EnhanceConfig {
                primary: Component::RewardModel,
                auxiliary: vec![Component::Rules, Component::Judge],
                n: 1.0,
            },
            ..RewardConfig::default()
        };
        // E = 1 · (−0.25) + 0.5 · 0.9 = 0.2; R = 0.6 · 1.2 = 0.72.
        let p = parts(&[("reward_model", 0.6), ("rules", -0.25), ("judge", 0.9)]);
        assert!(close(total(&p, &config), 0.72));
        // Without the reward model (it failed): R_m = 0 → 0.
        let p = parts(&[("rules", -0.25), ("judge", 0.9)]);
        assert_eq!(total(&p, &config), 0.0);
    }

    #[test]
    fn an_episode_gets_per_turn_signals_per_seat_parts_and_totals() {
        // Agent_1 (learner, 5/4/3) submits 3/2/0 with "We need food badly." (4 words), then
        // agent_2 accepts with "Deal, thank you so much!" (5 words). A rule −0.5 on talk
        // mentioning food.
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn(
                    "We need food badly.",
                    "[SUBMIT_DEAL] food:3 water:2 firewood:0",
                ),
                turn("Deal, thank you so much!", "[ACCEPT_DEAL]"),
            ],
        );
        let config = RewardConfig {
            weights: [
                (Component::Terminal, 1.0),
                (Component::Format, 0.5),
                (Component::Length, 0.5),
                (Component::Points, 1.0),
                (Component::Rules, 1.0),
            ]
            .into(),
            length: crate::reward::LengthConfig {
                min: 5,
                max: 15,
                outside: -1.0,
            },
            rules: vec![RuleConfig {
                name: "food".into(),
                pattern: "(?i)food".into(),
                target: RuleTarget::Talk,
                score: -0.5,
            }],
            ..RewardConfig::default()
        };
        let outcome = e.outcome().unwrap().clone();
        let r = episode_rewards(&s, e.setup(), e.turns(), &outcome, &config);
        // Turn 1 (learner): format 1, length −1 (4 < 5), points 2·23/36 − 0.5, rule −0.5.
        assert_eq!(r.turns[0]["format"], 1.0);
        assert_eq!(r.turns[0]["length"], -1.0);
        assert!(close(r.turns[0]["points"], 2.0 * 23.0 / 36.0 - 0.5));
        assert_eq!(r.turns[0]["rule:food"], -0.5);
        // Turn 2 (opponent): length 1 (5 = min), points 2·19/36 − 0.5, no rule.
        assert_eq!(r.turns[1]["length"], 1.0);
        assert!(!r.turns[1].contains_key("rule:food"));
        // Learner: terminal ρ = 23/36; total 23/36 + 0.5 − 0.5 + (46/36 − 0.5) − 0.5.
        let l = &r.parts.learner;
        assert!(close(l["terminal"], 23.0 / 36.0));
        assert_eq!(l["rules"], -0.5);
        // format 0.5 · 1, length 0.5 · (−1), points 1 · (46/36 − 0.5), rules −0.5.
        let want = 23.0 / 36.0 + 0.5 - 0.5 + (46.0 / 36.0 - 0.5) - 0.5;
        assert!(
            close(r.total.learner, want),
            "{} vs {want}",
            r.total.learner
        );
        // Opponent: 19/36 + 0.5 + 0.5 + (38/36 − 0.5) + 0.
        let want = 19.0 / 36.0 + 0.5 + 0.5 + (38.0 / 36.0 - 0.5);
        assert!(close(r.total.opponent, want));
        assert_eq!(r.parts.opponent["rules"], 0.0);
        assert!(
            r.parts.opponent["rules"].is_sign_positive(),
            "no rule matched: 0, not -0"
        );
        // The terminal reward alone: no parts, no signals, the total is the terminal reward.
        let plain = episode_rewards(&s, e.setup(), e.turns(), &outcome, &RewardConfig::default());
        assert!(plain.parts.learner.is_empty() && plain.turns[0].is_empty());
        assert_eq!(
            plain.total,
            terminal_rewards(&s, &outcome, &RewardConfig::default())
        );
    }
}
