//! The LLM judge, the pure half: the rubric (a minijinja template in `prompts/judges/`, or a
//! config's own file) rendered over an episode for one seat — or over one turn of it, with the
//! transcript up to that turn (`mode = "turn"`) — and the judge's reply read in a fixed answer
//! format: optional `TURN <k> <set>: <label>` lines, then a last line `SCORE: <x>` with x in
//! the configured range ([0, 1] by default). Reading is strict: anything else is unreadable,
//! which scores 0 and is counted, never guessed. The call itself is `llm/judge.rs`'s.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::game::{Seat, Setup, Turn};
use crate::protocol::render_action;
use crate::scenario::{Scenario, TableScenario};
use crate::table::TableTurn;

use super::config::JudgeMode;

/// The first line of every built-in rubric: what tells a judge request apart (the mock answers
/// these with verdicts).
pub const RUBRIC_MARKER: &str = "DEALGYM JUDGE RUBRIC";

/// The built-in rubrics, by the name `[rewards.judge] rubric` gives and the mode they judge
/// in: one name, a form per mode.
const BUILTIN: &[(&str, JudgeMode, &str)] = &[
    (
        "negotiation",
        JudgeMode::Episode,
        include_str!("../../../../prompts/judges/negotiation.j2"),
    ),
    (
        "negotiation",
        JudgeMode::Turn,
        include_str!("../../../../prompts/judges/negotiation_turn.j2"),
    ),
    // The hotel family's rubric: REPO's judge dimensions (style, emotional value, procedure,
    // progress), in our words.
    (
        "hotel",
        JudgeMode::Episode,
        include_str!("../../../../prompts/judges/hotel.j2"),
    ),
    (
        "hotel",
        JudgeMode::Turn,
        include_str!("../../../../prompts/judges/hotel_turn.j2"),
    ),
];

/// The source of a built-in rubric in the form for `mode`.
pub fn builtin_rubric(name: &str, mode: JudgeMode) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|(n, m, _)| *n == name && *m == mode)
        .map(|(_, _, s)| *s)
}

/// A label or label-set name: letters, digits and `_`, so a verdict line can be read exactly.
pub(crate) fn is_label_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A compiled rubric.
pub type Rubric = crate::template::SingleTemplate;

/// One turn as the rubric shows it, numbered `k` from 1 in record order.
#[derive(Debug, Clone, Serialize)]
pub struct JudgedTurn {
    pub k: u32,
    /// The seat that moved: `learner` or `opponent`, or a table seat's role.
    pub seat: String,
    pub role: String,
    /// Played by the seat being judged.
    pub judged: bool,
    pub talk: Option<String>,
    /// The judged seat's own Thought; `None` on the counterpart's turns, whose private
    /// reasoning the judge of this seat has no business reading.
    pub thought: Option<String>,
    /// The move that took effect, canonical from the mover's side.
    pub action: Option<String>,
}

/// A label set as the rubric lists it.
#[derive(Debug, Clone, Serialize)]
pub struct LabelSet {
    pub name: String,
    pub labels: Vec<String>,
}

/// What a rubric is rendered with.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeInput {
    /// The judged seat: `learner` or `opponent`, or a table seat's role.
    pub seat: String,
    pub role: String,
    /// What the judged seat was told, private values included: its own system prompt as the
    /// record holds it (`seats.<seat>.system_prompt`), so the judge can tell whether it
    /// pursued what mattered to it and kept its numbers to itself. Never the counterpart's.
    pub brief: String,
    pub family: String,
    pub title: String,
    pub description: String,
    pub turns: Vec<JudgedTurn>,
    pub label_sets: Vec<LabelSet>,
    /// The numbers of the judged seat's turns: those to label (the graded turn alone when one
    /// turn is graded).
    pub judged_turns: Vec<u32>,
    /// When one turn is graded (`mode = "turn"`): its number, the last of `turns`.
    pub turn: Option<u32>,
    /// The scores a verdict may give (`[rewards.judge] range`), for the rubric to ask for.
    pub score_min: f64,
    pub score_max: f64,
}

/// The rubric's input for judging `seat` in an episode (scores asked in [0, 1]; see
/// [`JudgeInput::with_range`]).
pub fn judge_input(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    seat: Seat,
    brief: &str,
    labels: &BTreeMap<String, Vec<String>>,
) -> JudgeInput {
    let space = scenario.term_space();
    let turns: Vec<JudgedTurn> = turns
        .iter()
        .map(AsRef::as_ref)
        .enumerate()
        .map(|(i, t)| JudgedTurn {
            k: i as u32 + 1,
            seat: t.seat.name().to_string(),
            role: setup.seats[t.seat].role.to_string(),
            judged: false,
            talk: t.parsed.talk.clone(),
            thought: t.parsed.thought.clone(),
            action: t.played.as_ref().map(|a| render_action(a, space, true)),
        })
        .collect();
    let public = &scenario.public;
    let about = (
        scenario.family.name(),
        public.title.as_str(),
        public.description.as_str(),
    );
    let role = setup.seats[seat].role.to_string();
    judged_as(seat.name(), role, brief, about, turns, labels)
}

/// The rubric's input for judging the seat at index `seat` of an n-party table, from its
/// `turns` (every attempt, in order) as a two-party seat's ([`judge_input`]): each turn's
/// Talk, the judged seat's own Thought, the move that took effect; `brief` is the seat's
/// system prompt as the record holds it.
pub fn table_judge_input(
    scenario: &TableScenario,
    turns: &[&TableTurn],
    seat: usize,
    brief: &str,
    labels: &BTreeMap<String, Vec<String>>,
) -> JudgeInput {
    let space = scenario.term_space();
    let role_of = |seat: usize| {
        scenario
            .parties
            .get(seat)
            .map_or_else(|| format!("seat {seat}"), |p| p.role.clone())
    };
    let turns: Vec<JudgedTurn> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| JudgedTurn {
            k: i as u32 + 1,
            seat: role_of(t.seat),
            role: role_of(t.seat),
            judged: false,
            talk: t.parsed.talk.clone(),
            thought: t.parsed.thought.clone(),
            action: t.played().map(|a| render_action(a, space, true)),
        })
        .collect();
    let public = &scenario.public;
    let about = (
        scenario.family.name(),
        public.title.as_str(),
        public.instructions.as_str(),
    );
    let role = role_of(seat);
    judged_as(&role.clone(), role, brief, about, turns, labels)
}

/// The one rule of what a judge of `seat` reads, whichever rulebook played the episode: every
/// turn's Talk and move, the judged seat's own Thought only (the others' private reasoning is
/// none of its judge's business), the judged seat's turns numbered to label. `about` is the
/// family's name, the scenario's title and description.
fn judged_as(
    seat: &str,
    role: String,
    brief: &str,
    (family, title, description): (&str, &str, &str),
    mut turns: Vec<JudgedTurn>,
    labels: &BTreeMap<String, Vec<String>>,
) -> JudgeInput {
    for t in &mut turns {
        t.judged = t.seat == seat;
        if !t.judged {
            t.thought = None;
        }
    }
    JudgeInput {
        seat: seat.to_string(),
        role,
        brief: brief.to_string(),
        family: family.to_string(),
        title: title.to_string(),
        description: description.to_string(),
        judged_turns: turns.iter().filter(|t| t.judged).map(|t| t.k).collect(),
        turns,
        label_sets: labels
            .iter()
            .map(|(name, labels)| LabelSet {
                name: name.clone(),
                labels: labels.clone(),
            })
            .collect(),
        turn: None,
        score_min: 0.0,
        score_max: 1.0,
    }
}

/// The rubric's input for grading turn `index` (0-based, in record order) of an episode, for
/// the seat that played it: the transcript up to and including that turn — what the seat knew
/// when it wrote it, never what came after — with that turn alone to label.
pub fn judge_turn_input(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    index: usize,
    brief: &str,
    labels: &BTreeMap<String, Vec<String>>,
) -> JudgeInput {
    let seat = turns[index].as_ref().seat;
    judge_input(scenario, setup, &turns[..=index], seat, brief, labels).grading_turn(index)
}

impl JudgeInput {
    /// The input for grading turn `index` (0-based) alone, `self` being the transcript up to
    /// and including it — what the seat knew when it wrote it, never what came after: the
    /// one rule of `mode = "turn"`, for both kinds of episode.
    pub fn grading_turn(mut self, index: usize) -> JudgeInput {
        let k = index as u32 + 1;
        self.judged_turns = vec![k];
        self.turn = Some(k);
        self
    }

    /// The same input asking for scores in `[low, high]`.
    pub fn with_range(mut self, [low, high]: [f64; 2]) -> JudgeInput {
        (self.score_min, self.score_max) = (low, high);
        self
    }
}

/// A readable verdict: the score, and the labels of each judged turn (by its number `k`).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub score: f64,
    pub labels: BTreeMap<u32, BTreeMap<String, String>>,
}

/// REPO's judge on a turn given its history (Figure 6, "Scoring procedure": "First, evaluate
/// each turn in the dialogue history according to the criteria. If the history score is
/// negative, output 0. If the history score is not negative, then evaluate only the BD's new
/// reply"): per turn, in order, its verdict — or 0 where the verdicts on the same seat's earlier
/// turns sum below 0. Our per-turn judge grades each turn once, so the history score is the sum
/// of the seat's earlier verdicts as the judge gave them. `None` where a turn has no verdict
/// (not judged, or the call failed): it adds nothing to the history.
pub(crate) fn zero_after_negative_history<S: Copy + Ord>(
    verdicts: &[(S, Option<f64>)],
) -> Vec<Option<f64>> {
    let mut history: BTreeMap<S, f64> = BTreeMap::new();
    verdicts
        .iter()
        .map(|(seat, verdict)| {
            let sum = history.entry(*seat).or_insert(0.0);
            let score = verdict.map(|v| if *sum < 0.0 { 0.0 } else { v });
            *sum += verdict.unwrap_or(0.0);
            score
        })
        .collect()
}

/// Read a judge's reply. The answer block is the trailing run of lines that begin with `TURN `
/// or `SCORE:` (free text before it is the judge's reasoning, ignored even where a line of it
/// happens to begin so, as is a `<think>` block);
/// in the block every line must be a well-formed `TURN <k> <set>: <label>` for a turn in
/// `judged` and a label of that set, each (turn, set) exactly once and all of them present, and
/// the last line `SCORE: <x>` with low ≤ x ≤ high (`range`, [0, 1] by default; REPO's judge
/// deducts, §4, so a range may reach below 0). Anything else: `Err` with what was wrong.
pub fn parse_verdict(
    reply: &str,
    judged: &[u32],
    label_sets: &BTreeMap<String, Vec<String>>,
    range: [f64; 2],
) -> Result<Verdict, String> {
    let reply = crate::protocol::after_think(reply);
    let lines: Vec<&str> = reply
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let in_block = |l: &&&str| l.starts_with("TURN ") || l.starts_with("SCORE:");
    let start = lines.len() - lines.iter().rev().take_while(in_block).count();
    if start == lines.len() {
        return Err("no answer block (the reply does not end with TURN or SCORE lines)".into());
    }
    let (last, labelled) = lines[start..].split_last().ok_or("no answer block")?;
    let score_text = last
        .strip_prefix("SCORE:")
        .ok_or_else(|| format!("the last line is not `SCORE: <x>`: {last:?}"))?
        .trim();
    let score: f64 = score_text
        .parse()
        .map_err(|_| format!("the score is not a number: {score_text:?}"))?;
    let [low, high] = range;
    if !(score.is_finite() && (low..=high).contains(&score)) {
        return Err(format!("the score {score} is outside [{low}, {high}]"));
    }
    let judged: BTreeSet<u32> = judged.iter().copied().collect();
    let mut labels: BTreeMap<u32, BTreeMap<String, String>> = BTreeMap::new();
    for line in labelled {
        let (k, set, label) = read_label_line(line)
            .ok_or_else(|| format!("not a `TURN <k> <set>: <label>` line: {line:?}"))?;
        if !judged.contains(&k) {
            return Err(format!("turn {k} is not one to label"));
        }
        let Some(allowed) = label_sets.get(set) else {
            return Err(format!("no label set `{set}`"));
        };
        if !allowed.iter().any(|l| l == label) {
            return Err(format!("`{label}` is not a label of `{set}`"));
        }
        if labels
            .entry(k)
            .or_default()
            .insert(set.to_string(), label.to_string())
            .is_some()
        {
            return Err(format!("turn {k} is labelled twice for `{set}`"));
        }
    }
    for k in &judged {
        for set in label_sets.keys() {
            if !labels.get(k).is_some_and(|l| l.contains_key(set)) {
                return Err(format!("turn {k} has no `{set}` label"));
            }
        }
    }
    Ok(Verdict { score, labels })
}

/// `TURN <k> <set>: <label>` → (k, set, label), each part exactly as the format writes it.
fn read_label_line(line: &str) -> Option<(u32, &str, &str)> {
    let rest = line.strip_prefix("TURN ")?;
    let (head, label) = rest.split_once(':')?;
    let (k, set) = head.trim_end().split_once(' ')?;
    let label = label.trim();
    let k: u32 = k.parse().ok()?;
    (is_label_word(set) && is_label_word(label)).then_some((k, set, label))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, learner_first_as, play, turn};
    use crate::scenario::Role;

    /// The default range.
    const UNIT: [f64; 2] = [0.0, 1.0];

    fn sets() -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([
            (
                "strategy".to_string(),
                vec!["anchor".to_string(), "concede".to_string()],
            ),
            (
                "emotion".to_string(),
                vec!["calm".to_string(), "angry".to_string()],
            ),
        ])
    }

    #[test]
    fn a_readable_verdict_gives_its_score() {
        let v = parse_verdict(
            "The buyer did fine.\n\nSCORE: 0.75\n",
            &[1, 3],
            &BTreeMap::new(),
            UNIT,
        )
        .unwrap();
        assert_eq!(v.score, 0.75);
        assert!(v.labels.is_empty());
        // The bounds are scores; a <think> block before is ignored.
        assert_eq!(
            parse_verdict("SCORE: 0", &[], &BTreeMap::new(), UNIT)
                .unwrap()
                .score,
            0.0
        );
        let v = parse_verdict(
            "<think>SCORE: 0.2</think>\nSCORE: 1",
            &[],
            &BTreeMap::new(),
            UNIT,
        );
        assert_eq!(v.unwrap().score, 1.0);
        // Reasoning whose lines happen to begin like the block is still reasoning: the block
        // is the trailing run.
        let v = parse_verdict(
            "TURN 1 is where the buyer anchored low.\nSCORE: that matters a lot.\nSo:\nSCORE: 0.4",
            &[1],
            &BTreeMap::new(),
            UNIT,
        );
        assert_eq!(v.unwrap().score, 0.4);
    }

    #[test]
    fn anything_else_is_unreadable_never_guessed() {
        let none = BTreeMap::new();
        for reply in [
            "I would give it 0.8.",
            "SCORE: high",
            "SCORE: 0.8\nThanks!",
            "Score: 0.8",
            "SCORE: 0.5 out of 1",
            "",
        ] {
            assert!(
                parse_verdict(reply, &[1], &none, UNIT).is_err(),
                "{reply:?}"
            );
        }
        // Out of range.
        let err = parse_verdict("SCORE: 1.5", &[1], &none, UNIT).unwrap_err();
        assert!(err.contains("outside [0, 1]"), "{err}");
        assert!(parse_verdict("SCORE: -0.1", &[1], &none, UNIT).is_err());
        assert!(parse_verdict("SCORE: NaN", &[1], &none, UNIT).is_err());
        // A TURN line when no labels were asked for.
        assert!(parse_verdict("TURN 1 strategy: anchor\nSCORE: 0.5", &[1], &none, UNIT).is_err());
    }

    #[test]
    fn a_judge_that_deducts_gives_negative_verdicts_within_its_range() {
        // REPO's judge deducts (§4: "deduct 5 … deduct 20 … deduct 30"): with range
        // [-100, 0] a verdict of −25 (5 + 20 deducted) reads as −25, and 0 (nothing
        // deducted) as 0.
        let none = BTreeMap::new();
        let deduct = [-100.0, 0.0];
        let v = parse_verdict("Two deductions: 5 and 20.\nSCORE: -25", &[1], &none, deduct);
        assert_eq!(v.unwrap().score, -25.0);
        assert_eq!(
            parse_verdict("SCORE: 0", &[1], &none, deduct)
                .unwrap()
                .score,
            0.0
        );
        // A positive score is outside a deducting range; −0.5 is inside [−1, 1] but not [0, 1].
        let err = parse_verdict("SCORE: 0.5", &[1], &none, deduct).unwrap_err();
        assert!(err.contains("outside [-100, 0]"), "{err}");
        assert_eq!(
            parse_verdict("SCORE: -0.5", &[1], &none, [-1.0, 1.0])
                .unwrap()
                .score,
            -0.5
        );
        assert!(parse_verdict("SCORE: -0.5", &[1], &none, UNIT).is_err());
    }

    #[test]
    fn labels_are_read_per_turn_and_set_and_checked_against_the_sets() {
        let reply = "Reasoning first.\nTURN 1 strategy: anchor\nTURN 1 emotion: calm\n\
                     TURN 3 strategy: concede\nTURN 3 emotion: angry\nSCORE: 0.4";
        let v = parse_verdict(reply, &[1, 3], &sets(), UNIT).unwrap();
        assert_eq!(v.score, 0.4);
        assert_eq!(v.labels[&1]["strategy"], "anchor");
        assert_eq!(v.labels[&3]["emotion"], "angry");
        // A label outside its set, a set that does not exist, a turn not judged, a turn
        // labelled twice, a missing label: all unreadable.
        for (bad, why) in [
            (reply.replace("angry", "furious"), "is not a label"),
            (
                reply.replace("TURN 3 emotion", "TURN 3 mood"),
                "no label set",
            ),
            (
                reply.replace("TURN 3 strategy", "TURN 2 strategy"),
                "not one to label",
            ),
            (
                reply.replace("TURN 3 emotion: angry", "TURN 1 emotion: angry"),
                "labelled twice",
            ),
            (
                reply.replace("TURN 3 emotion: angry\n", ""),
                "has no `emotion`",
            ),
            (
                reply.replace("TURN 1 strategy: anchor", "TURN one strategy: anchor"),
                "not a",
            ),
        ] {
            let err = parse_verdict(&bad, &[1, 3], &sets(), UNIT).unwrap_err();
            assert!(err.contains(why), "{why}: {err}");
        }
    }

    #[test]
    fn the_builtin_rubric_renders_the_transcript_and_the_label_sets() {
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                "Thought: their firewood is worth little to me\nTalk: We need food.\n\
                 Action: [SUBMIT_DEAL] food:3 water:2 firewood:0"
                    .to_string(),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        let rubric = Rubric::new(
            builtin_rubric("negotiation", JudgeMode::Episode)
                .unwrap()
                .to_string(),
        )
        .unwrap();
        let brief = "You value water at 5 points per unit.";
        let input = judge_input(&s, e.setup(), e.turns(), Seat::Opponent, brief, &sets());
        assert_eq!(input.judged_turns, [2]);
        let prompt = rubric.render(&input).unwrap();
        assert!(prompt.starts_with(RUBRIC_MARKER), "{prompt}");
        assert!(prompt.contains("We need food."), "{prompt}");
        assert!(
            prompt.contains("[SUBMIT_DEAL] food:3 water:2 firewood:0"),
            "{prompt}"
        );
        assert!(
            prompt.contains("LABEL SET emotion: calm | angry"),
            "{prompt}"
        );
        assert!(prompt.contains("TURNS TO LABEL: 2"), "{prompt}");
        // The judged seat's own brief and thoughts, never the counterpart's private reasoning.
        assert!(prompt.contains(brief), "{prompt}");
        assert!(prompt.contains("thought (private): thinking"), "{prompt}");
        assert!(!prompt.contains("firewood is worth little"), "{prompt}");
        let plain = rubric
            .render(&judge_input(
                &s,
                e.setup(),
                e.turns(),
                Seat::Learner,
                "",
                &BTreeMap::new(),
            ))
            .unwrap();
        assert!(!plain.contains("LABEL SET"), "{plain}");
        assert!(plain.contains("SCORE: 0.75"), "{plain}");
        assert!(Rubric::new("{% if %}".into()).is_err());
    }

    #[test]
    fn the_turn_rubric_shows_the_transcript_up_to_the_graded_turn_and_asks_for_the_range() {
        // Three turns: agent_1 (learner) submits, agent_2 rejects, agent_1 submits again.
        // Grading turn index 1 (k = 2, the opponent's REJECT) shows turns 1 and 2 only.
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("We need food.", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                "Thought: they want all the food\nTalk: No, that is too much.\n\
                 Action: [REJECT_DEAL]"
                    .to_string(),
                turn("Then two food?", "[SUBMIT_DEAL] food:2 water:2 firewood:0"),
            ],
        );
        let input =
            judge_turn_input(&s, e.setup(), e.turns(), 1, "brief", &sets()).with_range([-1.0, 1.0]);
        assert_eq!((input.seat.as_str(), input.turn), ("opponent", Some(2)));
        assert_eq!(input.judged_turns, [2]);
        assert_eq!(input.turns.len(), 2, "nothing after the graded turn");
        let rubric = Rubric::new(
            builtin_rubric("negotiation", JudgeMode::Turn)
                .unwrap()
                .to_string(),
        )
        .unwrap();
        let prompt = rubric.render(&input).unwrap();
        assert!(prompt.starts_with(RUBRIC_MARKER), "{prompt}");
        assert!(prompt.contains("[2] agent_2 (graded turn)"), "{prompt}");
        assert!(prompt.contains("they want all the food"), "{prompt}");
        assert!(!prompt.contains("Then two food?"), "{prompt}");
        assert!(prompt.contains("SCORE RANGE: -1.0 to 1.0"), "{prompt}");
        assert!(prompt.contains("TURNS TO LABEL: 2"), "{prompt}");
        // The two modes are two rubrics under one name; an unknown name is none.
        assert_ne!(
            builtin_rubric("negotiation", JudgeMode::Episode),
            builtin_rubric("negotiation", JudgeMode::Turn)
        );
        assert_eq!(builtin_rubric("nope", JudgeMode::Turn), None);
    }

    #[test]
    fn the_hotel_rubric_grades_the_agent_on_the_repo_dimensions() {
        let s = crate::fixtures::hotel();
        let e = play(
            &s,
            learner_first_as(&s, Role::Bd),
            &[turn(
                "Hello. Could the Comfort King Room today be a selling price of 140?",
                "[SUBMIT_DEAL] t1:140 t2:97",
            )],
        );
        for mode in [JudgeMode::Episode, JudgeMode::Turn] {
            let rubric = Rubric::new(builtin_rubric("hotel", mode).unwrap().to_string()).unwrap();
            let input = match mode {
                JudgeMode::Episode => judge_input(
                    &s,
                    e.setup(),
                    e.turns(),
                    Seat::Learner,
                    "b",
                    &BTreeMap::new(),
                ),
                JudgeMode::Turn => {
                    judge_turn_input(&s, e.setup(), e.turns(), 0, "b", &BTreeMap::new())
                        .with_range([-100.0, 0.0])
                }
            };
            let prompt = rubric.render(&input).unwrap();
            assert!(prompt.starts_with(RUBRIC_MARKER), "{prompt}");
            for dimension in [
                "- style:",
                "- emotional value:",
                "- procedure:",
                "- progress:",
            ] {
                assert!(prompt.contains(dimension), "{dimension}: {prompt}");
            }
            assert!(prompt.contains("[SUBMIT_DEAL] t1:140 t2:97"), "{prompt}");
            assert!(prompt.contains("SCORE: <a number from"), "{prompt}");
        }
    }

    #[test]
    fn after_a_negative_history_repos_judge_gives_0() {
        // REPO Figure 6: "If the history score is negative, output 0." The agent's verdicts on
        // its turns 1, 3, 5, 7: 0, −5, −20, 0; the hotel's on 2, 4: −30, 0.
        // Agent: turn 1, history 0 → 0; turn 3, history 0 → −5; turn 5, history −5 < 0 → 0
        // (not −20); turn 7, history −25 → 0. Hotel: turn 2 → −30; turn 4, history −30 → 0.
        use crate::game::Seat::{Learner as L, Opponent as O};
        let verdicts = [
            (L, Some(0.0)),
            (O, Some(-30.0)),
            (L, Some(-5.0)),
            (O, Some(0.0)),
            (L, Some(-20.0)),
            (O, None),
            (L, Some(0.0)),
        ];
        assert_eq!(
            zero_after_negative_history(&verdicts),
            [
                Some(0.0),
                Some(-30.0),
                Some(-5.0),
                Some(0.0),
                Some(0.0),
                None,
                Some(0.0)
            ]
        );
        // A history at 0 or above lets the new reply's own score through: under a range that
        // reaches above 0, +10 then −5 (history 10) then −20 (history 5) keep every score.
        let v = [(L, Some(10.0)), (L, Some(-5.0)), (L, Some(-20.0))];
        assert_eq!(
            zero_after_negative_history(&v),
            [Some(10.0), Some(-5.0), Some(-20.0)]
        );
    }
}
