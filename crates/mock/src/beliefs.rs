//! The mock's answers to belief probes (`run`'s `[probes] beliefs = true`): a request whose last
//! message opens with the probe marker is answered in the probe's format, deterministically
//! from the request's seed, with an estimate read from what the counterpart has proposed so
//! far — imperfect but informative, so a run's calibration figures are not trivial:
//! - a price: the counterpart's last price, moved toward where its limit likely is (a seller's
//!   cost below its ask, a buyer's budget above its bid), before any price a guess from the
//!   seat's own limit; noise that shrinks with the prices seen;
//! - items: the counterpart's items ordered by the share it kept for itself in its proposals;
//! - issues: the counterpart's issues ordered by how little it moved on each across its
//!   proposals (it holds on to what weighs most);
//!
//! with a random order (and, for items and issues, a random adjacent swap) where little was
//! seen, and a confidence that grows with the proposals seen (not with the accuracy: the
//! mock is overconfident early on items and issues, as a model may be).

use dealgym::agents::concession::Stance;
use dealgym::game::{mix, Message, MessageRole};
use dealgym::protocol::{parse, read_tool_calls, Action, TermSpace, Terms};
use dealgym::score::PROBE_MARKER;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::negotiator::{ReadGame, Reading};

/// Whether a chat is a belief probe: its last message is the probe's question.
pub(crate) fn is_probe(messages: &[Message]) -> bool {
    messages.last().is_some_and(|m| {
        m.role == MessageRole::User && m.content.trim_start().starts_with(PROBE_MARKER)
    })
}

/// The mock's answer to a probe, for a seat whose system prompt reads as `reading`.
pub(crate) fn answer(reading: &Reading, messages: &[Message], seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(&[seed, messages.len() as u64, 0xbe11ef]));
    let space = reading.game.space();
    let offers = counter_offers(messages, space);
    let k = offers.len() as f64;
    let jitter = rng.random_range(-8.0..=8.0);
    match &reading.game {
        ReadGame::Price {
            stance: Stance::Price { buyer, reserve, .. },
        } => {
            let last = offers.iter().rev().find_map(Terms::price);
            let guess = match (last, *buyer) {
                // The other side sells: its cost sits below its ask.
                (Some(p), true) => 0.85 * p,
                (Some(p), false) => 1.15 * p,
                (None, true) => 0.6 * reserve,
                (None, false) => 1.5 * reserve,
            };
            let noise = rng.random_range(-1.0..=1.0) * 0.25 / (1.0 + k);
            let confidence = ((30.0 + 12.0 * k).min(90.0) + jitter).clamp(0.0, 100.0);
            format!(
                "Estimate: {:.2}\nConfidence: {:.0}",
                guess * (1.0 + noise),
                confidence
            )
        }
        ReadGame::Items { items, .. } => {
            // The share of each item the counterpart kept in its proposals (seen from this
            // seat: it keeps count − x).
            let kept: Vec<f64> = (0..items.len())
                .map(|i| {
                    offers
                        .iter()
                        .filter_map(|t| match t {
                            Terms::Items(x) => x.get(i).map(|x| {
                                let count = f64::from(items[i].count.max(1));
                                (count - f64::from(*x)) / count
                            }),
                            _ => None,
                        })
                        .sum()
                })
                .collect();
            let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
            ordered(&names, &kept, offers.len(), &mut rng, jitter)
        }
        ReadGame::Issues { issues, .. } => {
            // How few values the counterpart named for each issue: the fewer, the more it holds.
            let held: Vec<f64> = (0..issues.len())
                .map(|i| {
                    let mut seen: Vec<String> = offers
                        .iter()
                        .filter_map(|t| match t {
                            Terms::Issues(v) => v.get(i).map(|v| format!("{v:?}")),
                            _ => None,
                        })
                        .collect();
                    seen.sort();
                    seen.dedup();
                    -(seen.len() as f64)
                })
                .collect();
            let names: Vec<&str> = issues.iter().map(|i| i.key.as_str()).collect();
            ordered(
                &names,
                &held,
                offers.len().saturating_sub(1),
                &mut rng,
                jitter,
            )
        }
        _ => "Estimate: I cannot tell.\nConfidence: 0".to_string(),
    }
}

/// `names` ordered by `score` (highest first; ties and everything before any evidence in a
/// random order), with a random adjacent swap that grows rarer with the `evidence`, and the
/// confidence.
fn ordered(
    names: &[&str],
    score: &[f64],
    evidence: usize,
    rng: &mut ChaCha8Rng,
    jitter: f64,
) -> String {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.shuffle(rng);
    if evidence > 0 {
        order.sort_by(|a, b| score[*b].total_cmp(&score[*a]));
    }
    if order.len() > 1 && rng.random::<f64>() < 0.6 / (1.0 + evidence as f64) {
        let i = rng.random_range(0..order.len() - 1);
        order.swap(i, i + 1);
    }
    let confidence = ((40.0 + 12.0 * evidence as f64).min(85.0) + jitter).clamp(0.0, 100.0);
    let named: Vec<&str> = order.iter().map(|i| names[*i]).collect();
    format!(
        "Estimate: {}\nConfidence: {:.0}",
        named.join(" > "),
        confidence
    )
}

/// The counterpart's proposals in the chat, in this seat's terms.
fn counter_offers(messages: &[Message], space: TermSpace<'_>) -> Vec<Terms> {
    messages
        .iter()
        .filter(|m| {
            m.role == MessageRole::User && !m.content.trim_start().starts_with(PROBE_MARKER)
        })
        .filter_map(|m| {
            let action = if m.tool_calls.is_empty() {
                parse(&m.content, space, None).action
            } else {
                read_tool_calls(&m.tool_calls, &m.content, space, None).action
            };
            match action {
                Some(Action::Submit(t)) => Some(t),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::negotiator::read_prompt;
    use dealgym::game::Seat;
    use dealgym::score::{belief_question, Belief, Probe};
    use dealgym_core::fixtures::{casino, learner_first_as, play, turn};

    /// The learner (agent_1) of the CaSiNo fixture is asked about agent_2 (food/water/firewood
    /// 3/4/5). Before any proposal the mock's order is a guess; after agent_2 twice asks for
    /// all the firewood and most of the water (its own terms: what it gets), it ranks firewood
    /// first, then water, and says so with more confidence. Either answer is read by the engine's reader.
    #[test]
    fn the_mocks_answer_is_readable_and_learns_from_the_proposals() {
        let s = casino();
        let setup = learner_first_as(&s, dealgym::scenario::Role::Agent1);
        let moves = [
            turn("Mine.", "[SUBMIT_DEAL] food:3 water:3 firewood:3"),
            turn("No.", "[SUBMIT_DEAL] food:0 water:2 firewood:3"),
            turn("Hm.", "[SUBMIT_DEAL] food:3 water:2 firewood:2"),
            turn("No.", "[SUBMIT_DEAL] food:1 water:2 firewood:3"),
        ];
        let ask = |n: usize| {
            let e = play(&s, setup.clone(), &moves[..n]);
            let mut messages = e.view(Seat::Learner).to_vec();
            messages.push(Message::new(
                MessageRole::User,
                belief_question(&s, &setup, Seat::Learner).unwrap(),
            ));
            assert!(is_probe(&messages));
            let reading = read_prompt(e.system_prompt(Seat::Learner)).unwrap();
            let text = answer(&reading, &messages, 9);
            Probe::scored(&s, &setup, Seat::Learner, 1, text, None, None)
        };
        let before = ask(0);
        assert!(
            !before.unreadable && before.confidence.is_some(),
            "{before:?}"
        );
        let after = ask(4);
        assert_eq!(
            after.belief,
            Some(Belief::Order(vec![
                "firewood".into(),
                "water".into(),
                "food".into()
            ])),
            "{after:?}"
        );
        assert_eq!(after.accuracy, Some(1.0));
        assert!(after.confidence > before.confidence, "{before:?} {after:?}");
    }
}
