//! The names of a record's deal terms, read back from the record itself.
//!
//! A record stores an offer as data — a price in cents, item shares in the scenario's item
//! order, one value or option index per issue — and the scenario (which names items, issues and
//! options) is not part of it. But the record also holds the engine's canonical text of offers:
//! every forwarded message ends with the action line re-rendered for the receiver
//! (`[SUBMIT_DEAL] food:0 water:2 firewood:3`), and a deal has its `terms_text`. Those give the
//! keys in order and, for issues, the names of the options played. Item shares in forwarded
//! lines are the receiver's, so only their keys are taken. A price needs no names. An option
//! never played (only in a refused offer) reads `option N`.

use std::collections::HashMap;

use crate::protocol::{format_cents, Action, IssueValue, Terms};
use crate::record::EpisodeRecord;

const SUBMIT: &str = "[SUBMIT_DEAL]";

#[derive(Debug, Default)]
pub(super) struct TermNames {
    keys: Vec<String>,
    /// (issue index, option index) → the option's name.
    options: HashMap<(usize, usize), String>,
}

impl TermNames {
    pub(super) fn learn(record: &EpisodeRecord) -> TermNames {
        let mut names = TermNames::default();
        for turn in &record.turns {
            if let (Some(Action::Submit(terms)), Some(forwarded)) = (&turn.played, &turn.forwarded)
            {
                if let Some(line) = submitted_terms(forwarded) {
                    names.absorb(terms, line);
                }
            }
        }
        let outcome = &record.outcome.outcome;
        if let (Some(terms), Some(text)) = (&outcome.terms, &outcome.terms_text) {
            names.absorb(terms, text);
        }
        names
    }

    fn absorb(&mut self, terms: &Terms, text: &str) {
        let pairs = pairs(text);
        if self.keys.is_empty() {
            self.keys = pairs.iter().map(|(k, _)| k.to_string()).collect();
        }
        if let Terms::Issues(values) = terms {
            for (i, (value, (_, name))) in values.iter().zip(&pairs).enumerate() {
                if let IssueValue::Option(o) = value {
                    self.options.entry((i, *o)).or_insert_with(|| name.clone());
                }
            }
        }
    }

    /// The action as the grammar writes it, from the mover's side.
    pub(super) fn action(&self, action: &Action) -> String {
        match action {
            Action::Submit(terms) => format!("{SUBMIT} {}", self.terms(terms)),
            other => other.kind().token().to_string(),
        }
    }

    fn terms(&self, terms: &Terms) -> String {
        let key = |i: usize| {
            self.keys
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("#{}", i + 1))
        };
        match terms {
            Terms::Price(cents) => format!("price:{}", format_cents(*cents)),
            Terms::Items(shares) => shares
                .iter()
                .enumerate()
                .map(|(i, x)| format!("{}:{x}", key(i)))
                .collect::<Vec<_>>()
                .join(" "),
            Terms::Issues(values) => values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let value = match v {
                        IssueValue::Number(n) => n.to_string(),
                        IssueValue::Option(o) => self
                            .options
                            .get(&(i, *o))
                            .cloned()
                            .unwrap_or_else(|| format!("option {}", o + 1)),
                    };
                    format!("{}:{value}", key(i))
                })
                .collect::<Vec<_>>()
                .join(" "),
            // The canonical text's keys are `price`, then each removable part, delivery last.
            Terms::Bundle { price, parts } => {
                let flags = parts.accessories.iter().chain([&parts.delivery]);
                std::iter::once(format!("price:{}", format_cents(*price)))
                    .chain(flags.enumerate().map(|(i, kept)| {
                        format!("{}:{}", key(i + 1), if *kept { "in" } else { "out" })
                    }))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            Terms::Tickets(prices) => prices
                .iter()
                .enumerate()
                .map(|(i, p)| match p {
                    Some(cents) => format!("{}:{}", key(i), format_cents(*cents)),
                    None => format!("{}:{}", key(i), crate::protocol::UNCHANGED),
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The terms text after the last `[SUBMIT_DEAL]` of a forwarded message (either spelling).
fn submitted_terms(forwarded: &str) -> Option<&str> {
    let at = forwarded.rfind(SUBMIT)?;
    let rest = &forwarded[at + SUBMIT.len()..];
    let end = rest.find(['\n', '<']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// `key:value` pairs of a canonical terms text; a word without a colon continues the value
/// before it (an option name with spaces).
fn pairs(text: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for word in text.split_whitespace() {
        match (word.split_once(':'), pairs.last_mut()) {
            (Some((k, v)), _) => pairs.push((k.to_string(), v.to_string())),
            (None, Some((_, v))) => {
                v.push(' ');
                v.push_str(word);
            }
            (None, None) => {}
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_text_is_read_from_forwarded_lines_in_either_spelling() {
        assert_eq!(
            submitted_terms("Talk: ok\nAction: [SUBMIT_DEAL] food:0 water:2 firewood:3"),
            Some("food:0 water:2 firewood:3")
        );
        assert_eq!(
            submitted_terms("<talk>ok</talk>\n<action>[SUBMIT_DEAL] price:12.50</action>"),
            Some("price:12.50")
        );
        assert_eq!(submitted_terms("Talk: no\nAction: [REJECT_DEAL]"), None);
        assert_eq!(
            pairs("salary:35 position:Senior Engineer holiday:3"),
            [
                ("salary".to_string(), "35".to_string()),
                ("position".to_string(), "Senior Engineer".to_string()),
                ("holiday".to_string(), "3".to_string())
            ]
        );
    }

    #[test]
    fn issues_get_their_option_names_and_items_their_keys() {
        let mut names = TermNames::default();
        names.absorb(
            &Terms::Issues(vec![IssueValue::Number(35), IssueValue::Option(1)]),
            "salary:35 company:B",
        );
        let offer = Action::Submit(Terms::Issues(vec![
            IssueValue::Number(40),
            IssueValue::Option(1),
        ]));
        assert_eq!(names.action(&offer), "[SUBMIT_DEAL] salary:40 company:B");
        let unseen = Action::Submit(Terms::Issues(vec![
            IssueValue::Number(40),
            IssueValue::Option(0),
        ]));
        assert_eq!(
            names.action(&unseen),
            "[SUBMIT_DEAL] salary:40 company:option 1"
        );
        let mut names = TermNames::default();
        names.absorb(&Terms::Items(vec![3, 1, 0]), "food:0 water:2 firewood:3");
        assert_eq!(
            names.action(&Action::Submit(Terms::Items(vec![3, 1, 0]))),
            "[SUBMIT_DEAL] food:3 water:1 firewood:0",
            "the mover's own shares, with the keys of the receiver's line"
        );
        assert_eq!(
            TermNames::default().action(&Action::Submit(Terms::Price(1250))),
            "[SUBMIT_DEAL] price:12.50"
        );
        assert_eq!(
            TermNames::default().action(&Action::Accept),
            "[ACCEPT_DEAL]"
        );
    }
}
