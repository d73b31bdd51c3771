//! The mock endpoint's negotiator: it reads the system prompt dealgym rendered for its seat (the
//! listed price and its own budget or cost, the items and its values, the issues and its
//! weights), the offers so far in the chat, and answers like a time-dependent concession player,
//! in the turn format the prompt asked for. It sees exactly what a model would see, and keeps
//! to the rules the prompt tells it: where told that the same deal proposed K times in a row
//! ends the negotiation, it makes no proposal ([REJECT_DEAL]) rather than complete that run —
//! unless the prompt's rejection rule would end it on that instead.

use std::sync::LazyLock;

use regex::Regex;

use dealgym::agents::concession::{candidates, Stance, Tactic};
use dealgym::game::rules::{self, Move};
use dealgym::game::{Message, MessageRole, Rules, Seat};
use dealgym::negotiator::speak_with_act;
use dealgym::protocol::{
    parse, read_tool_calls, Action, BundleChoice, BundlePart, BundleSpec, IssueRange, IssueSpec,
    IssueValue, ItemSpec, TermSpace, Terms, TicketSpec, TurnFormat,
};
use dealgym::scenario::acts::{ina_reference, label_for_move};
use dealgym::scenario::BundleValues;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

static MAX_TURNS: LazyLock<Regex> = LazyLock::new(|| re(r"at most (\d+) turns"));
static SAME_DEAL: LazyLock<Regex> =
    LazyLock::new(|| re(r"proposes the same deal (\d+) times in a row"));
static REJECT_STREAK: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d+) turns in a row, yours and theirs, are (?:\[REJECT_DEAL\]|reject)"));
static GRAMMAR: LazyLock<Regex> = LazyLock::new(|| re(r"\[SUBMIT_DEAL\] ([^\n—]+?) —"));
/// The grammar line of a prompt that asks for tool calls.
static TOOLS_GRAMMAR: LazyLock<Regex> =
    LazyLock::new(|| re(r"make_offer\(terms, message\) — propose a deal; terms: ([^\n(]+)"));
static LISTED: LazyLock<Regex> = LazyLock::new(|| re(r"Listed price: \$([0-9.]+)"));
static BUDGET: LazyLock<Regex> = LazyLock::new(|| re(r"Your budget is \$([0-9.]+)"));
static COST: LazyLock<Regex> = LazyLock::new(|| re(r"The item cost you \$([0-9.]+)"));
/// A bundle's part: `- NAME (`KEY`, the main product…): LIST`.
static BUNDLE_PART: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^- (.+) \(`([a-z0-9_]+)`, (the main product|can be removed|can be dropped)[^)]*\): ([0-9.]+)$",
    )
});
/// The seat's own number per part: `- NAME: NUMBER`.
static OWN_NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^- .+: ([0-9.]+)$"));
static ITEM_COUNT: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^- ([a-z]+): (\d+)$"));
static ITEM_VALUE: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^- ([a-z]+): (\d+) per unit$"));
static ISSUE_INT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)^- ([a-z]+): a whole number from (-?\d+) to (-?\d+)$"));
static ISSUE_OPTIONS: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^- ([a-z]+): one of (.+)$"));
/// A campaign's standing: the seat's no-deal value, its best alternative (`_format.j2`).
static BATNA: LazyLock<Regex> =
    LazyLock::new(|| re(r"Without an agreement you get (-?[0-9.]+), your best alternative now"));
static ISSUE_WEIGHT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)^- ([a-z]+) \(weight ([0-9.]+)\): (.+)$"));

/// What the mock understood of its seat from the system prompt.
#[derive(Debug, Clone)]
pub struct Reading {
    pub format: TurnFormat,
    pub max_rounds: u32,
    /// The K of the same-deal reject loop, where the prompt tells one.
    pub same_deal_limit: Option<u32>,
    /// The K of the rejection reject loop, where the prompt tells one.
    pub reject_streak: Option<u32>,
    pub game: ReadGame,
    /// The dialogue acts the prompt asks the seat to label its turns with (`- #label — …`
    /// lines); empty where it asks for none.
    pub acts: Vec<String>,
}

/// The game as read from the prompt, in owned form.
#[derive(Debug, Clone)]
pub enum ReadGame {
    Price {
        stance: Stance,
    },
    Items {
        items: Vec<ItemSpec>,
        stance: Stance,
    },
    Issues {
        issues: Vec<IssueSpec>,
        stance: Stance,
    },
    Bundle {
        bundle: BundleSpec,
        stance: Stance,
    },
    /// A hotel call (`tickets.rs`).
    Tickets {
        tickets: Vec<TicketSpec>,
        stance: Stance,
    },
}

impl ReadGame {
    pub(crate) fn space(&self) -> TermSpace<'_> {
        match self {
            ReadGame::Price { .. } => TermSpace::Price,
            ReadGame::Items { items, .. } => TermSpace::Items(items),
            ReadGame::Issues { issues, .. } => TermSpace::Issues(issues),
            ReadGame::Bundle { bundle, .. } => TermSpace::Bundle(bundle),
            ReadGame::Tickets { tickets, .. } => TermSpace::Tickets(tickets),
        }
    }

    /// The seller's public opening ask the prompt shows: the whole bundle at its list price
    /// (what a bundle seat's first bid is read against); `None` for the other games.
    fn opening(&self) -> Option<Terms> {
        match self {
            ReadGame::Bundle { bundle, .. } => {
                let parts = BundleChoice::full(bundle);
                Some(Terms::Bundle {
                    price: dealgym::protocol::to_cents(parts.list_price(bundle)),
                    parts,
                })
            }
            _ => None,
        }
    }

    fn stance(&self) -> &Stance {
        match self {
            ReadGame::Price { stance }
            | ReadGame::Items { stance, .. }
            | ReadGame::Issues { stance, .. }
            | ReadGame::Bundle { stance, .. } => stance,
            ReadGame::Tickets { stance, .. } => stance,
        }
    }
}

/// `Google 1.00, Amazon 0.85` (after an optional `depends on the company: `) → name/value pairs.
fn option_values(text: &str) -> Vec<(String, f64)> {
    let list = text.split_once(": ").map(|(_, rest)| rest).unwrap_or(text);
    list.split(", ")
        .filter_map(|piece| {
            let (name, value) = piece.trim().rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

fn number(r: &Regex, text: &str) -> Option<f64> {
    r.captures(text).and_then(|c| c[1].parse().ok())
}

/// Read a system prompt. `None` when it is not one of dealgym's.
pub(crate) fn read_prompt(system: &str) -> Option<Reading> {
    let format = if system.contains("make_offer(terms, message)") {
        TurnFormat::Tools
    } else if system.contains("<thought>") {
        TurnFormat::Xml
    } else {
        TurnFormat::Tagged
    };
    let max_rounds = number(&MAX_TURNS, system).map(|n| n as u32).unwrap_or(6);
    let grammar = match format {
        TurnFormat::Tools => &TOOLS_GRAMMAR,
        _ => &GRAMMAR,
    };
    let grammar = grammar
        .captures(system)?
        .get(1)?
        .as_str()
        .trim()
        .to_string();
    // A campaign's BATNA, where the prompt tells one: no deal worth less is taken.
    let batna = number(&BATNA, system);
    let game = if grammar.contains(":in|out") {
        read_bundle(system, batna)?
    } else if grammar.starts_with("price:") {
        let listed = number(&LISTED, system)?;
        let alternative = batna.unwrap_or(0.0);
        let stance = match (number(&BUDGET, system), number(&COST, system)) {
            (Some(budget), _) => Stance::price(true, listed, budget - alternative),
            (None, Some(cost)) => Stance::price(false, listed, cost + alternative),
            _ => return None,
        };
        ReadGame::Price { stance }
    } else if grammar.starts_with("t1:") {
        crate::tickets::read_tickets(system)?
    } else if grammar.contains("OPTION") {
        read_issues(system, batna)?
    } else {
        read_items(system, batna)?
    };
    Some(Reading {
        format,
        max_rounds,
        same_deal_limit: number(&SAME_DEAL, system).map(|n| n as u32),
        reject_streak: number(&REJECT_STREAK, system).map(|n| n as u32),
        game,
        acts: system
            .lines()
            .filter_map(|l| l.strip_prefix("- #"))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect(),
    })
}

/// A bundle prompt: the parts with their keys and list prices, then the seat's own number per
/// part in the same order (the buyer's worth, the seller's cost).
fn read_bundle(system: &str, batna: Option<f64>) -> Option<ReadGame> {
    let (public, private) = system.split_once("## What only you know")?;
    let private = private
        .split_once("Do not reveal")
        .map_or(private, |(own, _)| own);
    let mut parts: Vec<(BundlePart, &str)> = Vec::new();
    for c in BUNDLE_PART.captures_iter(public) {
        parts.push((
            BundlePart {
                name: c[1].to_string(),
                key: c[2].to_string(),
                list_price: c[4].parse().ok()?,
            },
            c.get(3)?.as_str(),
        ));
    }
    let own: Vec<f64> = OWN_NUMBER
        .captures_iter(private)
        .filter_map(|c| c[1].parse().ok())
        .collect();
    let (main, rest) = parts.split_first()?;
    let (delivery, accessories) = rest.split_last()?;
    if main.1 != "the main product" || delivery.0.key != "delivery" || own.len() != parts.len() {
        return None;
    }
    let bundle = BundleSpec {
        main: main.0.clone(),
        accessories: accessories.iter().map(|(p, _)| p.clone()).collect(),
        delivery_fee: delivery.0.list_price,
    };
    let values = BundleValues {
        main: own[0],
        accessories: own[1..own.len() - 1].to_vec(),
        delivery: own[own.len() - 1],
    };
    let buyer = private.contains("worth to you");
    Some(ReadGame::Bundle {
        stance: Stance::bundle(buyer, &bundle, &values, batna.unwrap_or(0.0)),
        bundle,
    })
}

fn read_items(system: &str, batna: Option<f64>) -> Option<ReadGame> {
    let items: Vec<ItemSpec> = ITEM_COUNT
        .captures_iter(system)
        .filter_map(|c| {
            Some(ItemSpec {
                name: c[1].to_string(),
                count: c[2].parse().ok()?,
            })
        })
        .collect();
    let values: Vec<u32> = items
        .iter()
        .map(|it| {
            ITEM_VALUE
                .captures_iter(system)
                .find(|c| c[1] == it.name)
                .and_then(|c| c[2].parse().ok())
                .unwrap_or(1)
        })
        .collect();
    if items.is_empty() {
        return None;
    }
    let all = candidates(TermSpace::Items(&items), |terms| match terms {
        Terms::Items(shares) => shares
            .iter()
            .zip(&values)
            .map(|(x, v)| f64::from(x * v))
            .sum(),
        _ => 0.0,
    });
    let best = all.iter().map(|c| c.utility).fold(0.0, f64::max);
    Some(ReadGame::Items {
        stance: Stance::discrete(all, batna.unwrap_or(0.0).max(0.3 * best)),
        items,
    })
}

fn read_issues(system: &str, batna: Option<f64>) -> Option<ReadGame> {
    // Public issue list: "- key: a whole number from A to B" / "- key: one of X, Y".
    let mut issues: Vec<(usize, IssueSpec)> = Vec::new();
    for c in ISSUE_INT.captures_iter(system) {
        let at = c.get(0)?.start();
        let range = IssueRange::Integer {
            min: c[2].parse().ok()?,
            max: c[3].parse().ok()?,
        };
        issues.push((
            at,
            IssueSpec {
                key: c[1].to_string(),
                label: c[1].to_string(),
                range,
            },
        ));
    }
    for c in ISSUE_OPTIONS.captures_iter(system) {
        let at = c.get(0)?.start();
        let options = c[2].split(", ").map(|o| o.trim().to_string()).collect();
        issues.push((
            at,
            IssueSpec {
                key: c[1].to_string(),
                label: c[1].to_string(),
                range: IssueRange::Discrete { options },
            },
        ));
    }
    issues.sort_by_key(|(at, _)| *at);
    let issues: Vec<IssueSpec> = issues.into_iter().map(|(_, s)| s).collect();
    if issues.is_empty() {
        return None;
    }
    // Private weights, read once: "- key (weight W): higher is better …" / "… Google 1.00, …".
    struct Pref {
        issue: usize,
        weight: f64,
        lower: bool,
        joint_with: Option<usize>,
        options: Vec<(String, f64)>,
    }
    let prefs: Vec<Pref> = ISSUE_WEIGHT
        .captures_iter(system)
        .filter_map(|c| {
            let issue = issues.iter().position(|s| s.key == c[1])?;
            let how = &c[3];
            let joint_with = how
                .strip_prefix("depends on the ")
                .and_then(|r| r.split(':').next())
                .and_then(|with| issues.iter().position(|s| s.key == with));
            Some(Pref {
                issue,
                weight: c[2].parse().ok()?,
                lower: how.starts_with("lower"),
                joint_with,
                options: option_values(how),
            })
        })
        .collect();
    let option_name = |i: usize, v: Option<&IssueValue>| match (&issues[i].range, v) {
        (IssueRange::Discrete { options }, Some(IssueValue::Option(o))) => options.get(*o).cloned(),
        _ => None,
    };
    let score = |values: &[IssueValue]| -> f64 {
        let mut total = 0.0;
        for p in &prefs {
            let v = match (&issues[p.issue].range, values.get(p.issue)) {
                (IssueRange::Integer { min, max }, Some(IssueValue::Number(x))) if max > min => {
                    let up = (x - min) as f64 / (max - min) as f64;
                    if p.lower {
                        1.0 - up
                    } else {
                        up
                    }
                }
                (IssueRange::Discrete { .. }, v) => {
                    let mut name = option_name(p.issue, v).unwrap_or_default();
                    if let Some(j) = p.joint_with {
                        name = format!(
                            "{name} at {}",
                            option_name(j, values.get(j)).unwrap_or_default()
                        );
                    }
                    p.options
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, v)| *v)
                        .unwrap_or(0.0)
                }
                _ => 0.0,
            };
            total += p.weight * v;
        }
        100.0 * total
    };
    let all = candidates(TermSpace::Issues(&issues), |terms| match terms {
        Terms::Issues(values) => score(values.as_slice()),
        _ => 0.0,
    });
    let best = all.iter().map(|c| c.utility).fold(0.0, f64::max);
    Some(ReadGame::Issues {
        stance: Stance::discrete(all, batna.unwrap_or(0.0).max(0.4 * best)),
        issues,
    })
}

/// The mock's completion for a chat, or `None` when the prompt is not one of dealgym's. `seed`
/// (the request's) breaks ties between deals of equal worth.
pub fn respond(messages: &[Message], tactic: Tactic, seed: u64) -> Option<String> {
    let system = messages.iter().find(|m| m.role == MessageRole::System)?;
    Some(respond_with(
        &read_prompt(&system.content)?,
        messages,
        tactic,
        seed,
    ))
}

/// The mock's completion for a chat whose system prompt was already read.
pub(crate) fn respond_with(
    reading: &Reading,
    messages: &[Message],
    tactic: Tactic,
    seed: u64,
) -> String {
    let space = reading.game.space();
    let read = |m: &Message| {
        if m.tool_calls.is_empty() {
            parse(&m.content, space, None).action
        } else {
            read_tool_calls(&m.tool_calls, &m.content, space, None).action
        }
    };
    let own_offers: Vec<Terms> = messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .filter_map(|m| match read(m) {
            Some(Action::Submit(t)) => Some(t),
            _ => None,
        })
        .collect();
    let t = messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .count() as u32;
    let offer = messages
        .last()
        .filter(|m| m.role == MessageRole::User)
        .and_then(|m| match read(m) {
            Some(Action::Submit(terms)) => Some(terms),
            _ => None,
        });
    let mut decision = reading.game.stance().decide(
        tactic,
        t,
        reading.max_rounds,
        offer.as_ref(),
        &own_offers,
        seed,
    );
    // The moves so far that were not [TALK], in order, each with whether it was this seat's.
    let moves: Vec<(bool, Action)> = messages
        .iter()
        .filter(|m| m.role != MessageRole::System)
        .filter_map(|m| Some((m.role == MessageRole::Assistant, read(m)?)))
        .filter(|(_, a)| *a != Action::Talk)
        .collect();
    if matches!(decision.action, Action::Submit(_))
        && ends_in_a_loop(reading, &decision.action, &moves)
        && !ends_in_a_loop(reading, &Action::Reject, &moves)
    {
        decision.action = Action::Reject;
    }
    let labels: Vec<&str> = reading.acts.iter().map(String::as_str).collect();
    let act = if labels.is_empty() {
        None
    } else {
        let opening = reading.game.opening();
        let reference = ina_reference(offer.as_ref(), own_offers.last(), opening.as_ref());
        label_for_move(&labels, &decision.action, &own_offers, reference)
    };
    speak_with_act(&decision, space, reading.format, t, act)
}

/// Whether playing `action` now would end the game by a reject loop the prompt told: the
/// engine's own rule ([`rules::reject_loop`]) over the moves so far, each with whether it was
/// this seat's, with the K values read from the prompt (an untold rule is off).
fn ends_in_a_loop(reading: &Reading, action: &Action, moves: &[(bool, Action)]) -> bool {
    let told = Rules {
        max_rounds: reading.max_rounds,
        reject_loop: reading.same_deal_limit.unwrap_or(0),
        reject_streak: reading.reject_streak.unwrap_or(0),
        format_retries: 0,
        max_moves: None,
        continuation: None,
        talk: Default::default(),
    };
    let seat = |own: bool| if own { Seat::Learner } else { Seat::Opponent };
    let history: Vec<Move> = moves
        .iter()
        .map(|(own, a)| (*own, a))
        .chain([(true, action)])
        .map(|(own, a)| Move {
            seat: seat(own),
            action: a.clone(),
        })
        .collect();
    rules::reject_loop(&history, Seat::Learner, &told).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dealgym::game::{Episode, EpisodeConfig, Seat};
    use dealgym_core::fixtures::{price, setup_with};

    /// What the mock reads of the learner's prompt under `config`.
    fn told(config: EpisodeConfig) -> Reading {
        let s = price();
        let e = Episode::new(s.clone(), setup_with(&s, &config)).unwrap();
        read_prompt(e.system_prompt(Seat::Learner)).unwrap()
    }

    #[test]
    fn it_keeps_to_the_reject_loop_rules_its_prompt_tells() {
        let told_both = told(EpisodeConfig::default());
        assert_eq!(
            (told_both.same_deal_limit, told_both.reject_streak),
            (Some(3), Some(3))
        );
        let off = told(EpisodeConfig {
            reject_loop: 0,
            reject_streak: Some(0),
            ..EpisodeConfig::default()
        });
        assert_eq!((off.same_deal_limit, off.reject_streak), (None, None));

        let p = |cents| Action::Submit(Terms::Price(cents));
        let moves = [
            (true, p(100)),
            (false, p(200)),
            (true, p(100)),
            (false, p(190)),
        ];
        // A third 100 in a row would end it; another price would not; untold, it is no rule.
        assert!(ends_in_a_loop(&told_both, &p(100), &moves));
        assert!(!ends_in_a_loop(&told_both, &p(101), &moves));
        assert!(!ends_in_a_loop(&off, &p(100), &moves));
        // Its own rejection breaks the run.
        let broken = [(true, p(100)), (true, Action::Reject), (true, p(100))];
        assert!(!ends_in_a_loop(&told_both, &p(100), &broken));
        // A rejection that would be the third in a row is not the way out.
        let rejections = [(true, Action::Reject), (false, Action::Reject)];
        assert!(ends_in_a_loop(&told_both, &Action::Reject, &rejections));
        assert!(!ends_in_a_loop(
            &told_both,
            &Action::Reject,
            &rejections[1..]
        ));
        assert!(!ends_in_a_loop(&off, &Action::Reject, &rejections));
    }

    /// A campaign's standing with the no-deal value `batna`, on the learner's seat.
    fn with_batna(
        s: &std::sync::Arc<dealgym::scenario::Scenario>,
        role: dealgym::scenario::Role,
        batna: f64,
    ) -> Reading {
        use dealgym::campaign::{BestOffer, LedgerKind, LedgerState, Standing};
        let standing = Standing {
            campaign: "c".into(),
            position: 2,
            deals: 2,
            ledger: LedgerKind::BestOffer(BestOffer { start: 0.0 }),
            before: LedgerState {
                value: batna,
                closed: 1,
                utility: batna,
            },
            batna,
            budget: None,
            earlier: vec![],
        };
        let config = EpisodeConfig {
            learner_role: Some(role),
            ..EpisodeConfig::default()
        };
        let setup = setup_with(s, &config)
            .with_standing(s, Seat::Learner, standing, None)
            .unwrap();
        let e = Episode::new(s.clone(), setup).unwrap();
        read_prompt(e.system_prompt(Seat::Learner)).unwrap()
    }

    #[test]
    fn a_campaigns_batna_raises_what_it_holds_out_for() {
        use dealgym::scenario::Role;
        // Issues: no contract worth less than the BATNA, above its own 40% of the best.
        let s = dealgym_core::fixtures::job();
        let ReadGame::Issues { stance, .. } = with_batna(&s, Role::Worker, 95.0).game else {
            panic!("an issues game");
        };
        let Stance::Discrete { reserve, .. } = stance else {
            panic!("a discrete stance");
        };
        assert_eq!(reserve, 95.0);
        // Price: a buyer holding a deal worth 15 pays at most its budget less 15.
        let s = price();
        let ReadGame::Price { stance } = with_batna(&s, Role::Buyer, 15.0).game else {
            panic!("a price game");
        };
        let budget = match &s.game {
            dealgym::scenario::DealSpace::Price { buyer, .. } => buyer.budget,
            _ => unreachable!(),
        };
        assert!(matches!(stance, Stance::Price { reserve, .. } if reserve == budget - 15.0));
    }
}
