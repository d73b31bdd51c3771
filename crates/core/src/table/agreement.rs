//! When an offer at a table is a deal: the one home of the agreement rule, used by the engine on
//! explicit acceptances and by the paper's metrics on scores (who *would* accept).

use crate::scenario::{AgreementRule, PartyPosition, TableScenario};

/// Whether `seat` may count toward an agreement on `deal`: its score at or above its own
/// minimum, the lead's with the rule's bonus (the paper's bonus for closing a deal).
pub fn counts_toward(scenario: &TableScenario, seat: usize, deal: &[usize]) -> bool {
    let party = &scenario.parties[seat];
    let bonus = match (&scenario.rules.agreement, party.position) {
        (AgreementRule::Quorum { lead_bonus, .. }, PartyPosition::Lead) => *lead_bonus,
        _ => 0,
    };
    scenario.score(seat, deal) + bonus >= party.private.minimum
}

/// Whether `acceptors` (seats, the proposer among them) agree `deal` under the game's rule.
/// Unanimity: every seat accepts. Quorum: at least `at_least` acceptors that count toward it
/// ([`counts_toward`]), every veto seat among them.
pub(crate) fn is_agreed(scenario: &TableScenario, deal: &[usize], acceptors: &[usize]) -> bool {
    let counted: Vec<usize> = match &scenario.rules.agreement {
        AgreementRule::Unanimity => acceptors.to_vec(),
        AgreementRule::Quorum { .. } => acceptors
            .iter()
            .copied()
            .filter(|&s| counts_toward(scenario, s, deal))
            .collect(),
    };
    rule_met(scenario, &counted)
}

/// Whether `counted` (the seats whose acceptance counts) meet the game's rule by their number
/// and who they are: unanimity, every seat; a quorum, at least `at_least` with every veto seat.
/// Public rules alone, so a scripted party can ask it of the support it has seen
/// ([`is_agreed`] asks it of the acceptors that count by their scores).
pub(crate) fn rule_met(scenario: &TableScenario, counted: &[usize]) -> bool {
    match &scenario.rules.agreement {
        AgreementRule::Unanimity => (0..scenario.parties.len()).all(|s| counted.contains(&s)),
        AgreementRule::Quorum { at_least, veto, .. } => {
            counted.len() >= *at_least
                && veto.iter().all(|role| {
                    scenario
                        .seat_of(role)
                        .is_some_and(|seat| counted.contains(&seat))
                })
        }
    }
}

/// The seats that would accept `deal` by their scores alone: each at or above its minimum
/// (the lead with its bonus). What the paper's metrics count as agreeing.
pub(crate) fn would_accept(scenario: &TableScenario, deal: &[usize]) -> Vec<usize> {
    (0..scenario.parties.len())
        .filter(|&s| counts_toward(scenario, s, deal))
        .collect()
}

/// Whether a veto seat (the quorum's veto list; under unanimity, every seat) leaving ends the
/// table.
pub(crate) fn holds_veto(scenario: &TableScenario, seat: usize) -> bool {
    match &scenario.rules.agreement {
        AgreementRule::Unanimity => true,
        AgreementRule::Quorum { veto, .. } => {
            veto.iter().any(|r| scenario.seat_of(r) == Some(seat))
        }
    }
}

/// Whether an agreement is still possible with `present` seats at the table.
pub(crate) fn still_possible(scenario: &TableScenario, present: &[bool]) -> bool {
    let n = present.iter().filter(|p| **p).count();
    match &scenario.rules.agreement {
        AgreementRule::Unanimity => n == scenario.parties.len(),
        AgreementRule::Quorum { at_least, veto, .. } => {
            n >= *at_least
                && veto
                    .iter()
                    .all(|r| scenario.seat_of(r).is_some_and(|s| present[s]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::six_party;

    #[test]
    fn the_quorum_needs_the_veto_seats_and_each_acceptor_at_its_minimum() {
        let s = six_party();
        // A deal every party scores at its minimum or above on.
        let everyone = s
            .all_deals()
            .find(|d| would_accept(&s, d).len() == 6)
            .expect("the test game has a deal for all");
        assert!(is_agreed(&s, &everyone, &[0, 1, 2, 3, 4, 5]));
        let lead = s.lead().unwrap();
        let others: Vec<usize> = (0..6).filter(|&x| x != lead).collect();
        assert!(!is_agreed(&s, &everyone, &others), "the lead holds a veto");
        let four: Vec<usize> = (0..4).collect();
        assert!(
            !is_agreed(&s, &everyone, &four),
            "four of six is short of five"
        );
        // An acceptor below its own minimum does not count.
        let below = s
            .all_deals()
            .find(|d| {
                let w = would_accept(&s, d);
                w.len() == 5 && w.contains(&0) && w.contains(&1)
            })
            .expect("a deal one party is below its minimum on");
        let all: Vec<usize> = (0..6).collect();
        assert!(is_agreed(&s, &below, &all), "five that count are enough");
    }

    #[test]
    fn the_lead_counts_with_its_bonus() {
        let s = six_party();
        let lead = s.lead().unwrap();
        let min = s.parties[lead].private.minimum;
        let close = s
            .all_deals()
            .find(|d| {
                let v = s.score(lead, d);
                v < min && v + 10 >= min
            })
            .expect("a deal within the bonus");
        assert!(counts_toward(&s, lead, &close));
        let far = s
            .all_deals()
            .find(|d| s.score(lead, d) + 10 < min)
            .expect("a deal out of reach");
        assert!(!counts_toward(&s, lead, &far));
    }
}
