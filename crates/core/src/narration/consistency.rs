//! Whether a narrated turn's Talk says what its decided move does: a price it names that is
//! not the one offered or accepted, an acceptance beside a move that does not accept, a
//! refusal beside one that does, a goodbye beside a move that stays. Read from the words
//! alone, conservatively (a phrase that is negated — "I can't accept" — is a refusal, not an
//! acceptance), and counted per turn: the consistency figure of a narrated seat is the share of
//! its turns with none (`score`). Never used to change a turn.

use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{Action, Terms};

/// One way a Talk contradicts its turn's move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contradiction {
    /// The move offers or accepts a price, and the Talk names prices (`$95`, `95 dollars`)
    /// other than the ones it may name without offering them (the other side's offer, the
    /// listing price), none of them the move's: those amounts, in cents.
    OtherPrice { named: Vec<i64> },
    /// The Talk accepts ("we have a deal", "I accept", "agreed"), as a statement — not in a
    /// question or after a condition ("if you agree, we have a deal") — and the move is not an
    /// acceptance.
    AcceptsWithoutAccepting,
    /// The move accepts and the Talk refuses ("I can't accept", "no deal").
    RefusesWhileAccepting,
    /// The Talk leaves ("I'm walking away", "goodbye") and the move stays in the negotiation.
    LeavesWithoutLeaving,
}

impl Contradiction {
    /// The kind's name, as records and reports write it.
    pub fn name(&self) -> &'static str {
        match self {
            Contradiction::OtherPrice { .. } => "other_price",
            Contradiction::AcceptsWithoutAccepting => "accepts_without_accepting",
            Contradiction::RefusesWhileAccepting => "refuses_while_accepting",
            Contradiction::LeavesWithoutLeaving => "leaves_without_leaving",
        }
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

/// An amount of money: `$1,234.50`, `$ 95`, `95 dollars`, `95 USD`, `95 bucks`.
static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\$\s*([0-9][0-9,]*(?:\.[0-9]+)?)|\b([0-9][0-9,]*(?:\.[0-9]+)?)\s*(?:dollars?|usd|bucks)\b",
    )
});
static ACCEPTS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(i accept|i'll accept|i will accept|we have a deal|you have a deal|it's a deal|it is a deal|deal!|agreed|i agree to (?:your|that|this|the)|that works for me|sounds good, deal)",
    )
});
static REFUSES: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(i reject|i decline|no deal|not acceptable|unacceptable|too (?:high|low|much) for me|(?:cannot|can't|won't|will not|do not|don't) accept)",
    )
});
static LEAVES: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(walk(?:ing)? away|goodbye|i'm leaving|i am leaving|i'm out\b|we are done|we're done|end (?:this|the) negotiation)",
    )
});
/// A negation just before a phrase: "not", "never", "can't", "won't", … within a few words
/// ("no" alone is not one: "No problem, I accept").
static NEGATED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(not|never|cannot|can't|cant|won't|wont|don't|dont|couldn't|wouldn't|shouldn't|refuse to|rather not)\b(?:\W+\w+){0,3}\W*$",
    )
});
/// A word that makes what follows it in its sentence a condition ("if you agree, we have a
/// deal"), anywhere before it; or a question, opening the sentence ("do we have a deal").
static CONDITIONAL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(if|when|once|unless|whether)\b|^\W*(do|does|can|could|would|will|shall|should)\b")
});

/// The sentence around `at..end` of `talk`: its words before `at`, and the mark that ends it.
fn sentence(talk: &str, at: usize, end: usize) -> (&str, Option<char>) {
    let start = talk[..at].rfind(['.', '!', '?', '\n']).map_or(0, |i| i + 1);
    let mark = talk[end..]
        .chars()
        .find(|c| matches!(c, '.' | '!' | '?' | '\n'));
    (&talk[start..at], mark)
}

/// The phrases of `pattern` in `talk` that are not negated.
fn says(talk: &str, pattern: &Regex) -> bool {
    pattern
        .find_iter(talk)
        .any(|m| !NEGATED.is_match(&talk[..m.start()]))
}

/// The phrases of `pattern` in `talk` said as a statement: not negated, not in a question,
/// not after a condition in their sentence.
fn states(talk: &str, pattern: &Regex) -> bool {
    pattern.find_iter(talk).any(|m| {
        let (before, mark) = sentence(talk, m.start(), m.end());
        !NEGATED.is_match(&talk[..m.start()]) && mark != Some('?') && !CONDITIONAL.is_match(before)
    })
}

/// The phrases of `pattern` in `talk` that are negated.
fn says_not(talk: &str, pattern: &Regex) -> bool {
    pattern
        .find_iter(talk)
        .any(|m| NEGATED.is_match(&talk[..m.start()]))
}

/// The amounts of money `talk` names, in cents.
fn amounts(talk: &str) -> Vec<i64> {
    AMOUNT
        .captures_iter(talk)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok())
        .map(crate::protocol::to_cents)
        .collect()
}

/// The price a move offers, or accepts (`accepted`: the offer on the table it accepts).
fn price_of(decided: &Action, accepted: Option<&Terms>) -> Option<i64> {
    let terms = match decided {
        Action::Submit(terms) => Some(terms),
        Action::Accept => accepted,
        _ => None,
    }?;
    match terms {
        Terms::Price(cents) | Terms::Bundle { price: cents, .. } => Some(*cents),
        _ => None,
    }
}

/// Where `talk` contradicts `decided` (`accepted`: the terms an acceptance takes, where the
/// rulebook has them; `known`: prices, in cents, the Talk may name without offering them — the
/// other side's offer, the listing price). A price named within a dollar or half a percent of
/// another is that price (a model rounds `$119.99` to `$120`).
pub fn contradictions(
    talk: &str,
    decided: &Action,
    accepted: Option<&Terms>,
    known: &[i64],
) -> Vec<Contradiction> {
    let talk = talk.replace('\u{2019}', "'");
    let talk = talk.as_str();
    let mut found = Vec::new();
    if let Some(price) = price_of(decided, accepted) {
        let close = |a: i64, b: i64| (a - b).abs() <= 100.max(b.abs() / 200);
        let named: Vec<i64> = amounts(talk)
            .into_iter()
            .filter(|c| !known.iter().any(|k| close(*c, *k)))
            .collect();
        if !named.is_empty() && !named.iter().any(|c| close(*c, price)) {
            found.push(Contradiction::OtherPrice { named });
        }
    }
    let accepting = *decided == Action::Accept;
    if !accepting && states(talk, &ACCEPTS) {
        found.push(Contradiction::AcceptsWithoutAccepting);
    }
    if accepting && (says(talk, &REFUSES) || says_not(talk, &ACCEPTS)) {
        found.push(Contradiction::RefusesWhileAccepting);
    }
    if !matches!(decided, Action::WalkAway | Action::Accept) && says(talk, &LEAVES) {
        found.push(Contradiction::LeavesWithoutLeaving);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contradictions_of(
        talk: &str,
        decided: &Action,
        accepted: Option<&Terms>,
    ) -> Vec<Contradiction> {
        contradictions(talk, decided, accepted, &[])
    }

    fn offer(dollars: i64) -> Action {
        Action::Submit(Terms::Price(dollars * 100))
    }

    #[test]
    fn a_talk_that_names_the_offered_price_or_none_is_consistent() {
        assert!(contradictions_of("I can pay $120 for it.", &offer(120), None).is_empty());
        assert!(contradictions_of("How about $119.50?", &offer(120), None).is_empty());
        assert!(
            contradictions_of("It is worn; I can offer a little.", &offer(120), None).is_empty()
        );
        // A price beside the one offered is not a contradiction, nor one the Talk may name
        // without offering it (the other side's offer, the listing price).
        assert!(contradictions_of("$200 is too much; $120 is fair.", &offer(120), None).is_empty());
        assert!(contradictions("Your $150 is too high.", &offer(120), None, &[15_000]).is_empty());
        assert_eq!(
            contradictions(
                "Your $150 is too high; $140 then.",
                &offer(120),
                None,
                &[15_000]
            ),
            vec![Contradiction::OtherPrice {
                named: vec![14_000]
            }]
        );
    }

    #[test]
    fn a_talk_that_names_another_price_is_counted_with_what_it_named() {
        assert_eq!(
            contradictions_of(
                "I can pay 150 dollars, or $1,200 for two.",
                &offer(120),
                None
            ),
            vec![Contradiction::OtherPrice {
                named: vec![15_000, 120_000]
            }]
        );
        // An acceptance takes the price on the table.
        let on_table = Terms::Price(9_000);
        assert!(contradictions_of("$90 it is. Deal!", &Action::Accept, Some(&on_table)).is_empty());
        assert_eq!(
            contradictions_of("Fine, $95.", &Action::Accept, Some(&on_table))[0].name(),
            "other_price"
        );
    }

    #[test]
    fn accepting_words_beside_a_move_that_does_not_accept_are_counted_and_negations_are_not() {
        assert_eq!(
            contradictions_of("Great, we have a deal!", &Action::Reject, None),
            vec![Contradiction::AcceptsWithoutAccepting]
        );
        assert!(contradictions_of("I can't accept that.", &Action::Reject, None).is_empty());
        assert_eq!(
            contradictions_of("I cannot accept this.", &Action::Accept, None),
            vec![Contradiction::RefusesWhileAccepting]
        );
        assert!(
            contradictions_of("That works for me. We have a deal.", &Action::Accept, None)
                .is_empty()
        );
        assert_eq!(
            contradictions_of("This is going nowhere, goodbye.", &offer(120), None),
            vec![Contradiction::LeavesWithoutLeaving]
        );
        assert!(contradictions_of("I don't want to walk away yet.", &offer(120), None).is_empty());
        assert!(contradictions_of("Goodbye.", &Action::WalkAway, None).is_empty());
    }

    #[test]
    fn questions_conditions_and_pleasantries_are_not_contradictions() {
        for talk in [
            "$120 — do we have a deal?",
            "If you agree to $120, we have a deal.",
            "Can we agree on $120?",
        ] {
            assert!(
                contradictions_of(talk, &offer(120), None).is_empty(),
                "{talk}"
            );
        }
        for talk in [
            "Deal! Thanks and goodbye.",
            "No problem, I accept.",
            "It\u{2019}s a deal.",
        ] {
            assert!(
                contradictions_of(talk, &Action::Accept, None).is_empty(),
                "{talk}"
            );
        }
        for talk in [
            "It\u{2019}s a deal!",
            "I will take it at that price, we have a deal!",
            "Yes, I can confirm: we have a deal.",
            "I do believe we have a deal.",
        ] {
            assert_eq!(
                contradictions_of(talk, &Action::Reject, None),
                vec![Contradiction::AcceptsWithoutAccepting],
                "{talk}"
            );
        }
        assert_eq!(
            contradictions_of("I can\u{2019}t accept this.", &Action::Accept, None),
            vec![Contradiction::RefusesWhileAccepting]
        );
    }
}
