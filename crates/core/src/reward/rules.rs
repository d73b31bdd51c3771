//! Rule rewards: `[[rewards.rules]]` regular expressions over one part of a turn, each with a
//! score, for guardrails such as "never state your budget". A turn gets the score of every rule
//! whose target matches; a seat's `rules` component is the sum over its turns.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use regex::Regex;

use crate::cache::BoundedCache;
use crate::protocol::{render_action, TermSpace};

use super::config::{RuleConfig, RuleTarget};
use super::turn::SignalTurn;

/// A rule's pattern, compiled once per process (a run asks for the same few patterns on every
/// turn). The error is the regex crate's message.
pub(crate) fn compile(pattern: &str) -> Result<Arc<Regex>, String> {
    static COMPILED: LazyLock<BoundedCache<String, Result<Arc<Regex>, String>>> =
        LazyLock::new(|| BoundedCache::new(1024));
    COMPILED.get_or_insert_with(pattern.to_string(), || {
        Regex::new(pattern).map(Arc::new).map_err(|e| e.to_string())
    })
}

/// The text of `turn` a rule with `target` reads; `None` where the turn has no such part.
/// Borrowed where the turn holds it; only the action is rendered.
fn target_text<'t>(
    turn: &'t impl SignalTurn,
    target: RuleTarget,
    space: TermSpace<'_>,
) -> Option<Cow<'t, str>> {
    match target {
        RuleTarget::Talk => turn.parsed().talk.as_deref().map(Cow::Borrowed),
        RuleTarget::Thought => turn.parsed().thought.as_deref().map(Cow::Borrowed),
        RuleTarget::Action => turn
            .parsed()
            .action
            .as_ref()
            .map(|a| Cow::Owned(render_action(a, space, true))),
        RuleTarget::Raw => Some(Cow::Borrowed(turn.raw())),
    }
}

/// The rules that match `turn`, with their scores, in config order. A pattern that does not
/// compile matches nothing (configs are checked when loaded, so this is never reached there).
pub(crate) fn rule_scores<'a>(
    rules: &'a [RuleConfig],
    turn: &impl SignalTurn,
    space: TermSpace<'_>,
) -> Vec<(&'a str, f64)> {
    rules
        .iter()
        .filter(|rule| {
            let Some(text) = target_text(turn, rule.target, space) else {
                return false;
            };
            compile(&rule.pattern).is_ok_and(|re| re.is_match(&text))
        })
        .map(|rule| (rule.name.as_str(), rule.score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price};
    use crate::scenario::Role;

    fn rule(name: &str, pattern: &str, target: RuleTarget, score: f64) -> RuleConfig {
        RuleConfig {
            name: name.into(),
            pattern: pattern.into(),
            target,
            score,
        }
    }

    #[test]
    fn each_target_reads_its_own_part_of_the_turn() {
        // Price B = 180: the buyer thinks about its budget, says 150 and submits 150.
        let s = price();
        let e = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &["Thought: my budget is 180\nTalk: I can pay $150.\nAction: [SUBMIT_DEAL] price: $150"
                .to_string()],
        );
        let t = &e.turns()[0];
        let space = s.term_space();
        let rules = vec![
            rule("budget_in_talk", r"(?i)budget", RuleTarget::Talk, -1.0),
            rule(
                "budget_in_thought",
                r"(?i)budget",
                RuleTarget::Thought,
                0.25,
            ),
            rule(
                "canonical_action",
                r"^\[SUBMIT_DEAL\] price:150$",
                RuleTarget::Action,
                0.5,
            ),
            rule("dollar_in_raw", r"\$150", RuleTarget::Raw, -0.1),
            rule("dollar_in_action", r"\$", RuleTarget::Action, -2.0),
        ];
        let found = rule_scores(&rules, t, space);
        // The Talk never says "budget"; the Thought does; the action is canonical (no $); the
        // raw text keeps the $.
        assert_eq!(
            found,
            [
                ("budget_in_thought", 0.25),
                ("canonical_action", 0.5),
                ("dollar_in_raw", -0.1)
            ]
        );
        let total: f64 = found.iter().map(|(_, s)| s).sum();
        assert!((total - 0.65).abs() < 1e-9);
    }

    #[test]
    fn a_turn_without_the_target_part_matches_nothing() {
        let s = price();
        let e = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &["Hello there".to_string()],
        );
        let t = &e.turns()[0];
        let rules = vec![
            rule("any_talk", ".*", RuleTarget::Talk, 1.0),
            rule("any_action", ".*", RuleTarget::Action, 1.0),
            rule("any_raw", "Hello", RuleTarget::Raw, 1.0),
        ];
        assert_eq!(rule_scores(&rules, t, s.term_space()), [("any_raw", 1.0)]);
        assert!(compile("(").is_err());
    }
}
