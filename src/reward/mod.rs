//! Rewards (DESIGN §5): the terminal reward designs a trainer chooses between. Pure functions of
//! the outcome, so records can be re-rewarded under another design.

use serde::{Deserialize, Serialize};

use crate::game::{Outcome, OutcomeKind, PerSeat, Seat};
use crate::scenario::{Domain, Scenario};

/// Which terminal reward to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardKind {
    /// ρ on a deal, else 0.
    #[default]
    Surplus,
    /// Items/issues: ρ if ρ ≥ τ, else −γ (no deal included); price tasks keep `surplus`.
    Threshold,
}

/// Reward settings; defaults are DESIGN's (τ = 0.4, γ = 0.5, ψ = 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RewardConfig {
    pub kind: RewardKind,
    pub tau: f64,
    pub gamma: f64,
    /// Penalty for the seat that forfeits by format.
    pub psi: f64,
}

impl Default for RewardConfig {
    fn default() -> Self {
        RewardConfig {
            kind: RewardKind::Surplus,
            tau: 0.4,
            gamma: 0.5,
            psi: 1.0,
        }
    }
}

/// The terminal reward of each seat, clipped to [−1, 1]. Backend errors give 0 to both (such
/// episodes are excluded from training data and metrics).
pub fn terminal_rewards(
    scenario: &Scenario,
    outcome: &Outcome,
    config: &RewardConfig,
) -> PerSeat<f64> {
    PerSeat::from_fn(|seat| terminal_reward(scenario, outcome, config, seat).clamp(-1.0, 1.0))
}

fn terminal_reward(
    scenario: &Scenario,
    outcome: &Outcome,
    config: &RewardConfig,
    seat: Seat,
) -> f64 {
    let rho = outcome.rho[seat];
    match outcome.kind {
        OutcomeKind::Error => 0.0,
        OutcomeKind::FormatForfeit if outcome.by == Some(seat) => -config.psi,
        kind => {
            let deal = kind == OutcomeKind::Deal;
            match (config.kind, scenario.domain()) {
                (RewardKind::Threshold, Domain::Items | Domain::Issues) => {
                    if rho >= config.tau {
                        rho
                    } else {
                        -config.gamma
                    }
                }
                _ => {
                    if deal {
                        rho
                    } else {
                        0.0
                    }
                }
            }
        }
    }
}
