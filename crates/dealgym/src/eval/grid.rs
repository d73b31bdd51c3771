//! The eval grid as pure data: which named players meet, in which seats, and with which roles.
//! Nothing here loads a scenario or builds a player; every pairing then plays the same run plan
//! (`run::plan`), so the same seed gives every pairing the same scenarios and setups.

use crate::game::Talk;

/// A named player of an eval: `--player NAME=SPEC` or `--opponent NAME=SPEC`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entrant {
    /// What tables call it (and what records keep in `seats.*.name`).
    pub(crate) name: String,
    /// A player spec as `run` takes it: `rule:NAME`, `openai:MODEL@URL`, `script:FILE`, or a
    /// `[players.NAME]` of the config.
    pub(crate) spec: String,
}

/// One cell of the grid: `learner` in the learner seat against `opponent`; with
/// `roles_exchanged`, every setup is played with the seats' roles exchanged (`--swap-seats`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    pub(crate) learner: Entrant,
    pub(crate) opponent: Entrant,
    pub(crate) roles_exchanged: bool,
    /// Whether the pairing's Talk is forwarded: `Off` for the talk ablation's twin
    /// ([`with_talk_ablation`]), whose learner plays as [`no_talk_name`] of its name.
    pub(crate) talk: Talk,
}

impl Pairing {
    /// What folds this pairing into its run id (with the scenario ids): the two names and the
    /// seating, so two names for one spec, or the two seatings of one pair, are separate runs.
    pub(crate) fn identity(&self) -> Vec<String> {
        let seating = if self.roles_exchanged {
            "roles-exchanged"
        } else {
            "roles-as-drawn"
        };
        let mut words = vec![
            "eval".to_string(),
            self.learner.name.clone(),
            self.opponent.name.clone(),
            seating.to_string(),
        ];
        // Only where off: the run ids of every other pairing stay what they were.
        if !self.talk.is_on() {
            words.push("talk-off".to_string());
        }
        words
    }
}

/// The name the no-talk, fixed-concession baseline plays under in a two-party eval.
pub(crate) const BASELINE_NAME: &str = "baseline";

/// The players of a two-party eval with the baseline row added: `rule:fixed-concession` as
/// `baseline`, after the `--player`s (the book's `guide/eval.md`, "Baselines"), so every
/// player's figures have a floor beside them on the same setups. A player or an opponent
/// already named so is refused, naming `--no-baseline`.
pub fn with_baseline(
    mut players: Vec<Entrant>,
    opponents: &[Entrant],
) -> Result<Vec<Entrant>, GridError> {
    if players
        .iter()
        .chain(opponents)
        .any(|p| p.name == BASELINE_NAME)
    {
        return Err(GridError::BaselineName);
    }
    players.push(Entrant {
        name: BASELINE_NAME.to_string(),
        spec: format!("rule:{}", crate::negotiator::FIXED_CONCESSION),
    });
    Ok(players)
}

/// What the talk ablation's twin of `name` is called in records and tables: `NAME (no talk)`.
/// The space keeps it apart from every name `--player` takes.
pub(crate) fn no_talk_name(name: &str) -> String {
    format!("{name}{NO_TALK}")
}

/// The player whose talk-ablation twin `name` is ([`no_talk_name`]), if it is one.
pub(crate) fn with_talk_name(name: &str) -> Option<&str> {
    name.strip_suffix(NO_TALK)
}

const NO_TALK: &str = " (no talk)";

/// `--talk-ablation`: each pairing followed by its twin with talk off (each move forwarded as
/// its action and terms alone, both seats), the learner named `NAME (no talk)`, on
/// the same setups — so the tables can set a player's figures with and without talk side by
/// side. The baseline, which never talks, has no twin.
pub fn with_talk_ablation(pairings: Vec<Pairing>) -> Vec<Pairing> {
    let mut out = Vec::with_capacity(pairings.len() * 2);
    for pairing in pairings {
        let twin = (pairing.learner.name != BASELINE_NAME).then(|| Pairing {
            learner: Entrant {
                name: no_talk_name(&pairing.learner.name),
                spec: pairing.learner.spec.clone(),
            },
            talk: Talk::Off,
            ..pairing.clone()
        });
        out.push(pairing);
        out.extend(twin);
    }
    out
}

/// A grid that cannot be made from the flags given; each message names the flag to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    #[error("{flag} `{given}`: expected NAME=SPEC, e.g. {example}")]
    NotNameSpec {
        flag: &'static str,
        given: String,
        example: &'static str,
    },
    #[error("{flag} {name}=…: the name {name} is already used by another --player or --opponent; give each player its own name")]
    DuplicateName { flag: &'static str, name: String },
    #[error("--round-robin plays the --player list against itself: drop --opponent, or drop --round-robin to play every --player against every --opponent")]
    RoundRobinWithOpponents,
    #[error("--round-robin needs at least 2 --player NAME=SPEC (got {0})")]
    RoundRobinTooFew(usize),
    #[error("give at least one --player NAME=SPEC")]
    NoPlayers,
    #[error("give at least one --opponent NAME=SPEC, or --round-robin to play the players against each other")]
    NoOpponents,
    #[error("baseline=… (--player or --opponent): `baseline` is the name of the no-talk, fixed-concession baseline every two-party eval adds; give your player another name, or pass --no-baseline")]
    BaselineName,
}

/// Read `NAME=SPEC` as given to `flag`. A name is one word (letters, digits, `-`, `_`, `.`,
/// `/`, `:`); the spec is the rest, after the first `=`.
pub fn parse_entrant(flag: &'static str, given: &str) -> Result<Entrant, GridError> {
    let bad = || GridError::NotNameSpec {
        flag,
        given: given.to_string(),
        example: "tough=rule:tough or qwen=openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1",
    };
    let (name, spec) = given.split_once('=').ok_or_else(bad)?;
    let (name, spec) = (name.trim(), spec.trim());
    let word = |c: char| c.is_alphanumeric() || "-_./:".contains(c);
    if name.is_empty() || spec.is_empty() || !name.chars().all(word) {
        return Err(bad());
    }
    Ok(Entrant {
        name: name.to_string(),
        spec: spec.to_string(),
    })
}

/// The pairings of an eval, in a fixed order: each player (in the order given) against each
/// opponent (in the order given) — or, with `round_robin`, against each other player, so every
/// two players meet in both seat orders — each followed by its roles-exchanged twin with
/// `swap_seats`.
pub fn pairings(
    players: &[Entrant],
    opponents: &[Entrant],
    round_robin: bool,
    swap_seats: bool,
) -> Result<Vec<Pairing>, GridError> {
    let mut seen: Vec<&str> = Vec::new();
    for (flag, entrant) in players
        .iter()
        .map(|e| ("--player", e))
        .chain(opponents.iter().map(|e| ("--opponent", e)))
    {
        if seen.contains(&entrant.name.as_str()) {
            return Err(GridError::DuplicateName {
                flag,
                name: entrant.name.clone(),
            });
        }
        seen.push(&entrant.name);
    }
    if players.is_empty() {
        return Err(GridError::NoPlayers);
    }
    let against: &[Entrant] = match (round_robin, opponents.is_empty()) {
        (true, false) => return Err(GridError::RoundRobinWithOpponents),
        (true, true) if players.len() < 2 => {
            return Err(GridError::RoundRobinTooFew(players.len()))
        }
        (true, true) => players,
        (false, true) => return Err(GridError::NoOpponents),
        (false, false) => opponents,
    };
    let seatings: &[bool] = if swap_seats { &[false, true] } else { &[false] };
    let mut out = Vec::new();
    for learner in players {
        for opponent in against.iter().filter(|o| o.name != learner.name) {
            for &roles_exchanged in seatings {
                out.push(Pairing {
                    learner: learner.clone(),
                    opponent: opponent.clone(),
                    roles_exchanged,
                    talk: Talk::On,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entrants(flag: &'static str, given: &[&str]) -> Vec<Entrant> {
        given
            .iter()
            .map(|g| parse_entrant(flag, g).unwrap())
            .collect()
    }

    fn cells(p: &[Pairing]) -> Vec<String> {
        p.iter()
            .map(|p| {
                let swap = if p.roles_exchanged { "~" } else { "" };
                format!("{}-{}{swap}", p.learner.name, p.opponent.name)
            })
            .collect()
    }

    #[test]
    fn name_spec_is_split_at_the_first_equals_sign() {
        let e = parse_entrant("--player", " q = openai:m@http://h/v1?x=1").unwrap();
        assert_eq!(
            (e.name.as_str(), e.spec.as_str()),
            ("q", "openai:m@http://h/v1?x=1")
        );
        for bad in ["rule:tough", "=rule:tough", "t=", "two words=rule:tough"] {
            let err = parse_entrant("--opponent", bad).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("--opponent `{bad}`: expected NAME=SPEC")),
                "{err}"
            );
        }
    }

    #[test]
    fn players_meet_every_opponent_and_swapping_adds_a_twin_per_pairing() {
        let players = entrants("--player", &["a=rule:linear", "b=rule:conceder"]);
        let opponents = entrants("--opponent", &["x=rule:boulware", "y=rule:tough"]);
        let plain = pairings(&players, &opponents, false, false).unwrap();
        assert_eq!(cells(&plain), ["a-x", "a-y", "b-x", "b-y"]);
        assert_eq!(plain[2].learner.spec, "rule:conceder");
        assert_eq!(plain[2].opponent.spec, "rule:boulware");
        let swapped = pairings(&players, &opponents, false, true).unwrap();
        assert_eq!(
            cells(&swapped),
            ["a-x", "a-x~", "a-y", "a-y~", "b-x", "b-x~", "b-y", "b-y~"]
        );
        assert_ne!(swapped[0].identity(), swapped[1].identity());
    }

    #[test]
    fn the_baseline_joins_the_players_and_the_ablation_twins_each_pairing_but_its() {
        let players = entrants("--player", &["a=rule:linear"]);
        let opponents = entrants("--opponent", &["x=rule:boulware"]);
        let players = with_baseline(players, &opponents).unwrap();
        assert_eq!(players[1].spec, "rule:fixed-concession");
        let grid = pairings(&players, &opponents, false, false).unwrap();
        assert_eq!(cells(&grid), ["a-x", "baseline-x"]);
        let ablated = with_talk_ablation(grid);
        assert_eq!(cells(&ablated), ["a-x", "a (no talk)-x", "baseline-x"]);
        assert_eq!(ablated[1].talk, Talk::Off);
        assert_eq!(ablated[1].learner.spec, "rule:linear");
        assert_eq!(with_talk_name(&ablated[1].learner.name), Some("a"));
        assert_eq!(with_talk_name("a"), None);
        assert!(ablated[1].identity().contains(&"talk-off".to_string()));
        assert!(!ablated[0].identity().contains(&"talk-off".to_string()));
        let taken = entrants("--player", &["baseline=rule:tough"]);
        let err = with_baseline(taken, &opponents).unwrap_err().to_string();
        assert!(err.contains("--no-baseline"), "{err}");
        let as_opponent = entrants("--opponent", &["baseline=rule:tough"]);
        let err = with_baseline(entrants("--player", &["a=rule:linear"]), &as_opponent)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--no-baseline"),
            "an opponent named baseline: {err}"
        );
    }

    #[test]
    fn a_round_robin_plays_both_seat_orders() {
        let players = entrants(
            "--player",
            &["a=rule:linear", "b=rule:tough", "c=rule:tough"],
        );
        let grid = pairings(&players, &[], true, false).unwrap();
        assert_eq!(cells(&grid), ["a-b", "a-c", "b-a", "b-c", "c-a", "c-b"]);
        // Two names for one spec are two runs.
        assert_ne!(grid[1].identity(), grid[0].identity());
    }

    #[test]
    fn a_bad_grid_names_the_flag_to_fix() {
        let players = entrants("--player", &["a=rule:linear", "b=rule:tough"]);
        let opponents = entrants("--opponent", &["a=rule:boulware"]);
        let err = pairings(&players, &opponents, false, false).unwrap_err();
        assert_eq!(
            err,
            GridError::DuplicateName {
                flag: "--opponent",
                name: "a".into()
            }
        );
        assert!(err
            .to_string()
            .starts_with("--opponent a=…: the name a is already used"));
        let twice = entrants("--player", &["a=rule:linear", "a=rule:tough"]);
        assert!(matches!(
            pairings(&twice, &[], true, false),
            Err(GridError::DuplicateName {
                flag: "--player",
                ..
            })
        ));
        let x = entrants("--opponent", &["x=rule:boulware"]);
        let err = pairings(&players, &x, true, false).unwrap_err().to_string();
        assert!(
            err.contains("--round-robin") && err.contains("drop --opponent"),
            "{err}"
        );
        let err = pairings(&players[..1], &[], true, false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--round-robin needs at least 2 --player NAME=SPEC (got 1)"
        );
        let err = pairings(&players, &[], false, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--opponent NAME=SPEC") && err.contains("--round-robin"),
            "{err}"
        );
        assert_eq!(pairings(&[], &x, false, false), Err(GridError::NoPlayers));
    }
}
