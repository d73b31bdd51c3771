//! The terminal reward (the book's `design/metrics.md`): `surplus`, `threshold`, `batna` or
//! `sale_to_list`, the forfeit penalty −ψ and the clip to [−1, 1]. The one home of these rules;
//! everything else builds on [`terminal_rewards`].

use crate::game::{Outcome, OutcomeKind, PerSeat};
use crate::protocol::Terms;
use crate::scenario::{Domain, Role, Scenario, TableFamily};
use crate::score::sale_to_list;
use crate::table::TableOutcome;

use super::config::{PsiOn, RewardConfig, RewardKind};

/// The terminal reward of each seat of a two-party episode, clipped to [−1, 1]: each seat's
/// [`SeatEnding`] read off the outcome, then [`seat_terminal_reward`]. Backend errors give 0 to
/// both (such episodes are excluded from training data and metrics).
/// `roles` are the seats' roles (whose sale-to-list `sale_to_list` gives); `no_deal_rho` is
/// each seat's ρ without a deal (its no-deal value over its scale), which `batna` measures a
/// deal against; `violated` whether the seat played a turn that is not format-ok, which costs
/// it ψ under `psi_on = "violation"`.
pub(crate) fn terminal_rewards(
    scenario: &Scenario,
    outcome: &Outcome,
    config: &RewardConfig,
    roles: &PerSeat<Role>,
    no_deal_rho: &PerSeat<f64>,
    violated: &PerSeat<bool>,
) -> PerSeat<f64> {
    PerSeat::from_fn(|seat| {
        let domain = scenario.domain();
        let sale_to_list = match (outcome.kind, config.kind, domain) {
            (OutcomeKind::Deal, RewardKind::SaleToList, Domain::Price) => Some(
                outcome
                    .terms
                    .as_ref()
                    .and_then(Terms::price)
                    .and_then(|price| sale_to_list(scenario, roles[seat], price))
                    .unwrap_or(0.0),
            ),
            _ => None,
        };
        seat_terminal_reward(
            &SeatEnding {
                kind: outcome.kind,
                forfeited: outcome.by == Some(seat),
                violated: violated[seat],
                rho: outcome.rho[seat],
                no_deal_rho: no_deal_rho[seat],
                domain,
                sale_to_list,
            },
            config,
        )
    })
}

/// What one seat's terminal reward reads of how an episode ended, whatever the rulebook that
/// played it (two parties, or a seat at an n-party table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SeatEnding {
    /// How the episode ended.
    pub kind: OutcomeKind,
    /// Whether this seat is the one that ended it (what counts for a `format_forfeit`).
    pub forfeited: bool,
    /// Whether this seat played a turn that is not format-ok (charged ψ only under
    /// `psi_on = "violation"`).
    pub violated: bool,
    /// The seat's ρ of the outcome.
    pub rho: f64,
    /// The seat's ρ without a deal, which `batna` measures a deal against.
    pub no_deal_rho: f64,
    /// What is negotiated: `threshold` measures multi-item deals only.
    pub domain: Domain,
    /// The seat's sale-to-list ratio of a price deal under `kind = "sale_to_list"` (0 where
    /// the scenario gives none); `None` where it does not apply, and the seat keeps `surplus`.
    pub sale_to_list: Option<f64>,
}

/// One seat's terminal reward, clipped to [−1, 1]: the one home of the terminal reward rules,
/// which a two-party seat ([`terminal_rewards`]) and a seat at a table
/// ([`table_terminal_rewards`]) both come to. Under `threshold` (the BATNA paper, §2.1:
/// "R(x) = ρ if ρ ≥ τ, and R(x) = −γ otherwise, where no-deal
/// outcomes receive 0 and format violations receive −ψ") only a closed deal is measured
/// against τ: a deal below it is worse than no deal, and every ending without a deal — a
/// walk-away, a reject loop, the turn cap, another seat's forfeit — gives 0, whatever the
/// scenario's no-deal value (that value is the seats' utility, reported in ρ, not a reward).
/// Price tasks keep `surplus` (regulation already keeps their deals at ρ ≥ 0). Under `batna`
/// (ours, for campaigns, where the BATNA moves deal by deal: the paper's §4 names such a
/// "dynamic threshold") a deal gets its ρ less the ρ of walking away, so τ becomes the seat's
/// actual alternative and the penalty is how far below it the deal fell. Under `sale_to_list`
/// (DialogXpert, App. E: the sale-to-list ratio on a deal, 0 without one) a price deal gets the
/// seat's SL (`score::sale_to_list`, 0 where B = L gives none); the clip keeps a price below
/// the buyer's target at 1. The seat that forfeits by format gets −ψ under every design, and
/// so does a seat that `violated` the format (`psi_on = "violation"`, the paper's "format
/// violations receive −ψ"), whatever the ending. Backend errors give 0.
pub(crate) fn seat_terminal_reward(ending: &SeatEnding, config: &RewardConfig) -> f64 {
    let violated = config.psi_on == PsiOn::Violation && ending.violated;
    let rho = ending.rho;
    let reward = match ending.kind {
        OutcomeKind::Error => 0.0,
        OutcomeKind::FormatForfeit if ending.forfeited => -config.psi,
        _ if violated => -config.psi,
        OutcomeKind::Deal => match (config.kind, ending.sale_to_list) {
            (RewardKind::Batna, _) => rho - ending.no_deal_rho,
            (RewardKind::SaleToList, Some(sl)) => sl,
            (RewardKind::Threshold, _) if ending.domain.is_multi_item() && rho < config.tau => {
                -config.gamma
            }
            _ => rho,
        },
        OutcomeKind::WalkAway
        | OutcomeKind::RejectLoop
        | OutcomeKind::MaxTurns
        | OutcomeKind::FormatForfeit => 0.0,
    };
    reward.clamp(-1.0, 1.0)
}

/// The terminal reward of each seat at an n-party table, in seat order, by
/// [`seat_terminal_reward`]: the table's family says what is negotiated (LLM-Deliberation's
/// games are issues, so `threshold` measures their deals against τ); `rho` is each seat's ρ of
/// the outcome (0 without a deal, as the record holds it), and a seat's no-deal ρ is 0 (a
/// table party has no no-deal value: walking away scores nothing). `violated` is whether each
/// seat played a turn that is not format-ok.
pub(crate) fn table_terminal_rewards(
    family: TableFamily,
    outcome: &TableOutcome,
    rho: &[f64],
    violated: &[bool],
    config: &RewardConfig,
) -> Vec<f64> {
    rho.iter()
        .enumerate()
        .map(|(seat, rho)| {
            seat_terminal_reward(
                &SeatEnding {
                    kind: outcome.kind,
                    forfeited: outcome.by == Some(seat),
                    violated: violated.get(seat).copied().unwrap_or(false),
                    rho: *rho,
                    no_deal_rho: 0.0,
                    domain: family.domain(),
                    sale_to_list: None,
                },
                config,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Each reward design worked by hand. Outcomes are written out directly (the reward reads
    //! only the ending, who caused it and ρ), on the fixtures' price, items and issues tasks.

    use super::*;
    use crate::fixtures::{casino, job, price_task};
    use crate::game::Seat;

    const TOL: f64 = 1e-9;
    const NO_BATNA: PerSeat<f64> = PerSeat {
        learner: 0.0,
        opponent: 0.0,
    };
    /// The seats' roles where a design reads them (`sale_to_list`); the others ignore them.
    const ROLES: PerSeat<Role> = PerSeat {
        learner: Role::Buyer,
        opponent: Role::Seller,
    };
    const CLEAN: PerSeat<bool> = PerSeat {
        learner: false,
        opponent: false,
    };

    fn outcome(kind: OutcomeKind, by: Option<Seat>, rho: (f64, f64)) -> Outcome {
        Outcome {
            kind,
            by,
            terms: None,
            terms_text: None,
            utility: PerSeat::new(0.0, 0.0),
            rho: PerSeat::new(rho.0, rho.1),
            detail: None,
            error_kind: None,
        }
    }

    fn threshold() -> RewardConfig {
        RewardConfig {
            kind: RewardKind::Threshold,
            ..RewardConfig::default()
        }
    }

    fn assert_rewards(actual: PerSeat<f64>, learner: f64, opponent: f64) {
        assert!(
            (actual.learner - learner).abs() < TOL && (actual.opponent - opponent).abs() < TOL,
            "{actual:?} is not ({learner}, {opponent})"
        );
    }

    #[test]
    fn surplus_is_rho_on_a_deal() {
        // Price B = 100, C = 60, P = 70: ρ = (30/40, 10/40) = (0.75, 0.25) → rewards the same.
        let s = price_task(125.0, 100.0, 60.0);
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.75, 0.25));
        assert_rewards(
            terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
            0.75,
            0.25,
        );
        // CaSiNo (27, 15) of 36: ρ = (0.75, 15/36).
        let s = casino();
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.75, 15.0 / 36.0));
        assert_rewards(
            terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
            0.75,
            15.0 / 36.0,
        );
    }

    #[test]
    fn surplus_is_zero_without_a_deal_even_with_a_no_deal_value() {
        // CaSiNo walk-away with no-deal value 5: ρ = 5/36 each, yet no deal → 0 each.
        let s = casino();
        for kind in [
            OutcomeKind::WalkAway,
            OutcomeKind::RejectLoop,
            OutcomeKind::MaxTurns,
        ] {
            let o = outcome(kind, None, (5.0 / 36.0, 5.0 / 36.0));
            assert_rewards(
                terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
                0.0,
                0.0,
            );
        }
    }

    #[test]
    fn threshold_keeps_rho_at_or_above_tau_and_gives_minus_gamma_below() {
        // τ = 0.4, γ = 0.5. CaSiNo deal: learner 30/36 = 0.833 ≥ 0.4 → 0.833;
        // opponent 10/36 = 0.278 < 0.4 → −0.5.
        let s = casino();
        let o = outcome(
            OutcomeKind::Deal,
            Some(Seat::Learner),
            (30.0 / 36.0, 10.0 / 36.0),
        );
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            30.0 / 36.0,
            -0.5,
        );
        // Job deal: worker 32/80 = 0.4 — exactly τ counts as reaching it → 0.4;
        // recruiter 0.39 < 0.4 → −0.5.
        let s = job();
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (32.0 / 80.0, 0.39));
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            0.4,
            -0.5,
        );
        // Another τ and γ: τ = 0.2, γ = 0.3 → 0.4 stays, 0.39 stays too.
        let config = RewardConfig {
            tau: 0.2,
            gamma: 0.3,
            ..threshold()
        };
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            0.4,
            0.39,
        );
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.1, 0.9));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            -0.3,
            0.9,
        );
    }

    #[test]
    fn threshold_without_a_deal_is_zero() {
        // The BATNA paper, §2.1: "no-deal outcomes receive 0". Job walk-away, no-deal value 0:
        // ρ = 0 < τ = 0.4, yet no deal → 0 for both seats (not −γ), and so for a reject loop
        // and the turn cap.
        let s = job();
        for (kind, by) in [
            (OutcomeKind::WalkAway, Some(Seat::Learner)),
            (OutcomeKind::RejectLoop, Some(Seat::Opponent)),
            (OutcomeKind::MaxTurns, None),
        ] {
            let o = outcome(kind, by, (0.0, 0.0));
            assert_rewards(
                terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
                0.0,
                0.0,
            );
        }
        // A no-deal value worth ρ = 50/100 = 0.5 ≥ τ to the recruiter (50/80 = 0.625 to the
        // worker) is the seats' utility, not a reward: still 0 each.
        let o = outcome(OutcomeKind::WalkAway, Some(Seat::Learner), (0.625, 0.5));
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            0.0,
        );
        // CaSiNo walk-away under CaSiNo's own no-deal value 5 (ρ = 5/36 each): 0 each.
        let o = outcome(
            OutcomeKind::WalkAway,
            Some(Seat::Opponent),
            (5.0 / 36.0, 5.0 / 36.0),
        );
        assert_rewards(
            terminal_rewards(&casino(), &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            0.0,
        );
    }

    #[test]
    fn threshold_on_price_tasks_keeps_surplus() {
        // Price deal ρ = (0.25, 0.75): 0.25 < τ, but price tasks keep surplus → (0.25, 0.75).
        let s = price_task(125.0, 100.0, 60.0);
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.25, 0.75));
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            0.25,
            0.75,
        );
        // No deal on a price task: surplus gives 0, not −γ.
        let o = outcome(OutcomeKind::WalkAway, Some(Seat::Learner), (0.0, 0.0));
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            0.0,
        );
    }

    #[test]
    fn format_forfeit_costs_the_forfeiting_seat_psi() {
        // The learner forfeits: learner −ψ = −1; the opponent gets the no-deal reward, 0 under
        // both designs (the paper's threshold gives no deal 0, not −γ).
        let s = casino();
        let o = outcome(OutcomeKind::FormatForfeit, Some(Seat::Learner), (0.0, 0.0));
        assert_rewards(
            terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
            -1.0,
            0.0,
        );
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            -1.0,
            0.0,
        );
        // The opponent forfeits, ψ = 0.25: opponent −0.25, learner 0.
        let o = outcome(OutcomeKind::FormatForfeit, Some(Seat::Opponent), (0.0, 0.0));
        let config = RewardConfig {
            psi: 0.25,
            ..RewardConfig::default()
        };
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            -0.25,
        );
    }

    #[test]
    fn rewards_are_clipped_to_plus_minus_one() {
        // Price B = 100, C = 60, an unregulated seller sells at P = 20: ρ_buyer = 80/40 = 2,
        // ρ_seller = −40/40 = −1 → surplus (2, −1) clipped to (1, −1).
        let s = price_task(125.0, 100.0, 60.0);
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (2.0, -1.0));
        assert_rewards(
            terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
            1.0,
            -1.0,
        );
        // P = 0: ρ_seller = −60/40 = −1.5 → −1.
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (2.5, -1.5));
        assert_rewards(
            terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
            1.0,
            -1.0,
        );
        // ψ = 3 on a forfeit → −3 clipped to −1 (the other seat: no deal, 0); threshold γ = 2
        // on a deal below τ → −2 clipped to −1.
        let s = casino();
        let o = outcome(OutcomeKind::FormatForfeit, Some(Seat::Learner), (0.0, 0.0));
        let config = RewardConfig {
            psi: 3.0,
            gamma: 2.0,
            ..threshold()
        };
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            -1.0,
            0.0,
        );
        let o = outcome(OutcomeKind::Deal, Some(Seat::Learner), (0.1, 0.9));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            -1.0,
            0.9,
        );
    }

    #[test]
    fn backend_errors_reward_nobody() {
        // An `error` ending gives 0 to both, whatever ρ and the design say.
        let s = casino();
        let o = outcome(OutcomeKind::Error, Some(Seat::Learner), (0.0, 0.0));
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            0.0,
        );
        assert_rewards(
            terminal_rewards(&s, &o, &RewardConfig::default(), &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            0.0,
        );
    }

    #[test]
    fn a_format_violation_costs_psi_under_psi_on_violation() {
        // BATNA paper §2.1: "R(x) = ρ if ρ ≥ τ, and R(x) = −γ otherwise, where no-deal
        // outcomes receive 0 and format violations receive −ψ" (ψ = 1.0, App. A). CaSiNo deal
        // (27, 15) of 36: ρ = (0.75, 15/36 ≈ 0.4167), both ≥ τ = 0.4. The learner broke the
        // format on some turn: it gets −ψ = −1 instead of 0.75; the opponent keeps 15/36.
        let s = casino();
        let violation = RewardConfig {
            psi_on: PsiOn::Violation,
            ..threshold()
        };
        let learner_broke = PerSeat::new(true, false);
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.75, 15.0 / 36.0));
        assert_rewards(
            terminal_rewards(&s, &o, &violation, &ROLES, &NO_BATNA, &learner_broke),
            -1.0,
            15.0 / 36.0,
        );
        // The default pays ψ only for a forfeit: the same episode keeps its ρ.
        assert_rewards(
            terminal_rewards(&s, &o, &threshold(), &ROLES, &NO_BATNA, &learner_broke),
            0.75,
            15.0 / 36.0,
        );
        // ψ = 0.5: −0.5; on a walk-away too (no deal would be 0); a backend error stays 0.
        let half = RewardConfig {
            psi: 0.5,
            ..violation.clone()
        };
        assert_rewards(
            terminal_rewards(&s, &o, &half, &ROLES, &NO_BATNA, &learner_broke),
            -0.5,
            15.0 / 36.0,
        );
        let walk = outcome(OutcomeKind::WalkAway, Some(Seat::Opponent), (0.0, 0.0));
        assert_rewards(
            terminal_rewards(&s, &walk, &violation, &ROLES, &NO_BATNA, &learner_broke),
            -1.0,
            0.0,
        );
        let error = outcome(OutcomeKind::Error, None, (0.0, 0.0));
        assert_rewards(
            terminal_rewards(&s, &error, &violation, &ROLES, &NO_BATNA, &learner_broke),
            0.0,
            0.0,
        );
    }

    #[test]
    fn batna_measures_a_deal_against_the_seats_alternative() {
        // Price B = 100, C = 60: the learner's deal at ρ 0.75 against a BATNA of ρ 0.5 gains
        // 0.25; the opponent, with no alternative, keeps its ρ. A deal below the BATNA is
        // negative; no deal leaves the BATNA and gets 0; a forfeit keeps −ψ.
        let s = price_task(125.0, 100.0, 60.0);
        let config = RewardConfig {
            kind: RewardKind::Batna,
            ..RewardConfig::default()
        };
        let batna = PerSeat::new(0.5, 0.0);
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.75, 0.25));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &batna, &CLEAN),
            0.25,
            0.25,
        );
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.2, 0.8));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &batna, &CLEAN),
            -0.3,
            0.8,
        );
        let o = outcome(OutcomeKind::WalkAway, Some(Seat::Learner), (0.5, 0.0));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &batna, &CLEAN),
            0.0,
            0.0,
        );
        let o = outcome(OutcomeKind::FormatForfeit, Some(Seat::Learner), (0.5, 0.0));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &batna, &CLEAN),
            -1.0,
            0.0,
        );
    }

    /// A price deal at `price` dollars (terms in cents), ρ as given: what `sale_to_list` reads.
    fn price_deal(price: f64, rho: (f64, f64)) -> Outcome {
        Outcome {
            terms: Some(Terms::Price((price * 100.0).round() as i64)),
            ..outcome(OutcomeKind::Deal, Some(Seat::Opponent), rho)
        }
    }

    #[test]
    fn sale_to_list_rewards_the_deal_by_dialogxperts_sl_and_a_failure_by_zero() {
        // DialogXpert App. E: "If a deal is reached, we compute the sale-to-list price ratio as
        // the reward. If no deal is made, the reward is set to 0"; SL = (P − L)/(B − L) for
        // the buyer (§4.3; the book's `decisions/rewards.md`), a seller's mirror (P − B)/(L − B).
        let config = RewardConfig {
            kind: RewardKind::SaleToList,
            ..RewardConfig::default()
        };
        // L = 125, B = 100, C = 60; a deal at P = 110 (ρ given as something else, to show
        // it is not read): buyer (110 − 125)/(100 − 125) = −15/−25 = 0.6; seller
        // (110 − 100)/(125 − 100) = 10/25 = 0.4.
        let s = price_task(125.0, 100.0, 60.0);
        let o = price_deal(110.0, (0.9, 0.1));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            0.6,
            0.4,
        );
        // The learner as the seller: the same deal, the seats' values exchanged.
        let sold = PerSeat::new(Role::Seller, Role::Buyer);
        assert_rewards(
            terminal_rewards(&s, &o, &config, &sold, &NO_BATNA, &CLEAN),
            0.4,
            0.6,
        );
        // At the asking price P = L = 125: buyer (0)/(−25) = 0, seller 25/25 = 1.
        let o = price_deal(125.0, (0.0, 1.0));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            1.0,
        );
        // Below the buyer's target, P = 90: buyer (90 − 125)/(−25) = 1.4, clipped to 1;
        // seller (90 − 100)/25 = −0.4.
        let o = price_deal(90.0, (1.0, 0.75));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            1.0,
            -0.4,
        );
        // A failed negotiation is SL 0 whatever its ending; the forfeiting seat still −ψ.
        for (kind, by) in [
            (OutcomeKind::WalkAway, Some(Seat::Learner)),
            (OutcomeKind::RejectLoop, Some(Seat::Opponent)),
            (OutcomeKind::MaxTurns, None),
        ] {
            let o = outcome(kind, by, (0.0, 0.0));
            assert_rewards(
                terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
                0.0,
                0.0,
            );
        }
        let o = outcome(OutcomeKind::FormatForfeit, Some(Seat::Learner), (0.0, 0.0));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            -1.0,
            0.0,
        );
        // B = L leaves no range to measure a sale against: 0 for both.
        let s = price_task(100.0, 100.0, 60.0);
        let o = price_deal(80.0, (0.5, 0.5));
        assert_rewards(
            terminal_rewards(&s, &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            0.0,
            0.0,
        );
        // A task without a listing price keeps surplus: CaSiNo (27, 15) of 36.
        let o = outcome(OutcomeKind::Deal, Some(Seat::Opponent), (0.75, 15.0 / 36.0));
        assert_rewards(
            terminal_rewards(&casino(), &o, &config, &ROLES, &NO_BATNA, &CLEAN),
            0.75,
            15.0 / 36.0,
        );
    }

    /// A table's ending: `kind`, ended by seat `by`.
    fn table_outcome(kind: OutcomeKind, by: Option<usize>) -> TableOutcome {
        TableOutcome {
            kind,
            by,
            offer: None,
            deal: None,
            detail: None,
            error_kind: None,
        }
    }

    fn assert_seats(actual: Vec<f64>, expected: &[f64]) {
        assert!(
            actual.len() == expected.len()
                && actual
                    .iter()
                    .zip(expected)
                    .all(|(a, e)| (a - e).abs() < TOL),
            "{actual:?} is not {expected:?}"
        );
    }

    #[test]
    fn a_table_seat_is_rewarded_by_the_same_rule_as_a_two_party_one() {
        // Three seats at an LLM-Deliberation game (issues: multi-item), τ = 0.4, γ = 0.5.
        let deliberation = TableFamily::Deliberation;
        let clean = [false; 3];
        // A deal: seat 0 at ρ 0.9 ≥ τ keeps it, seat 1 exactly at τ keeps 0.4, seat 2 at
        // 0.25 < τ gets −γ = −0.5.
        let deal = table_outcome(OutcomeKind::Deal, Some(1));
        let rho = [0.9, 0.4, 0.25];
        assert_seats(
            table_terminal_rewards(deliberation, &deal, &rho, &clean, &threshold()),
            &[0.9, 0.4, -0.5],
        );
        // Under the default (`surplus`) every seat keeps its ρ: today's table rewards.
        assert_seats(
            table_terminal_rewards(deliberation, &deal, &rho, &clean, &RewardConfig::default()),
            &[0.9, 0.4, 0.25],
        );
        // No deal: 0 for everyone under both designs (the record's ρ is 0 then).
        for kind in [OutcomeKind::WalkAway, OutcomeKind::MaxTurns] {
            let o = table_outcome(kind, Some(0));
            assert_seats(
                table_terminal_rewards(deliberation, &o, &[0.0; 3], &clean, &threshold()),
                &[0.0, 0.0, 0.0],
            );
        }
        // Seat 2 forfeits by format: −ψ for it alone (ψ = 1 by default, 0.25 here); the others
        // no deal, 0.
        let forfeit = table_outcome(OutcomeKind::FormatForfeit, Some(2));
        assert_seats(
            table_terminal_rewards(deliberation, &forfeit, &[0.0; 3], &clean, &threshold()),
            &[0.0, 0.0, -1.0],
        );
        let config = RewardConfig {
            psi: 0.25,
            ..threshold()
        };
        assert_seats(
            table_terminal_rewards(deliberation, &forfeit, &[0.0; 3], &clean, &config),
            &[0.0, 0.0, -0.25],
        );
        // Under `psi_on = "violation"` a seat that broke the format pays ψ on a deal too;
        // under the default only the forfeiter does.
        let broke = [false, true, false];
        let violation = RewardConfig {
            psi_on: PsiOn::Violation,
            ..threshold()
        };
        assert_seats(
            table_terminal_rewards(deliberation, &deal, &rho, &broke, &violation),
            &[0.9, -1.0, -0.5],
        );
        assert_seats(
            table_terminal_rewards(deliberation, &deal, &rho, &broke, &threshold()),
            &[0.9, 0.4, -0.5],
        );
        // A backend error rewards nobody.
        let error = table_outcome(OutcomeKind::Error, Some(0));
        assert_seats(
            table_terminal_rewards(deliberation, &error, &rho, &broke, &violation),
            &[0.0, 0.0, 0.0],
        );
    }
}
