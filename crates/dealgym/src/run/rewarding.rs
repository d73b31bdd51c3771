//! The rewards that need a call: after an episode ends and before its record is written, the
//! judge grades (and labels) each seat — or, in `mode = "turn"`, each turn of each seat — and
//! the reward model scores each seat's conversation — or, where turns get their own reward
//! (`[rewards] turn_reward`), each response: every turn with the messages its call was sent as
//! the query and the turn as the output (REPO §4, Figure 1) — all at once; the components land
//! in `reward_parts` (a per-turn verdict or score on its turn's `rewards`, like the other
//! per-turn signals), the labels on the turns, what went wrong in `reward_issues`, and the
//! totals (and turn rewards) are recombined. A failed or unreadable call never loses the
//! episode: it is counted, and the record is written all the same.

use std::collections::BTreeMap;
use std::path::Path;

use crate::game::{self, Message, PerSeat, Seat};
use crate::limits::{read_file, MAX_TEXT_FILE};
use crate::llm::{JudgeClient, LlmError, RewardModelClient};
use crate::record::{EpisodeRecord, TableRecord};
use crate::reward::judge::{
    builtin_rubric, judge_input, judge_turn_input, parse_verdict, table_judge_input, JudgeInput,
    Rubric,
};
use crate::reward::{issues, Component, JudgeConfig, JudgeMode, RewardConfig};
use crate::scenario::{Scenario, TableScenario};
use crate::table::TableTurn;

/// The judge and reward-model clients of a run, with the config they serve.
#[derive(Debug)]
pub struct Rewarding {
    config: RewardConfig,
    judge: Option<(JudgeClient, Rubric)>,
    reward_model: Option<RewardModelClient>,
}

/// The source of the rubric `judge.rubric` names: a built-in by name (in the form for the
/// judge's mode), else a template file.
pub(crate) fn rubric_source(judge: &JudgeConfig) -> Result<String, String> {
    if let Some(source) = builtin_rubric(&judge.rubric, judge.mode) {
        return Ok(source.to_string());
    }
    read_file(Path::new(&judge.rubric), MAX_TEXT_FILE).map_err(|e| match e.kind() {
        // The file is there, but too long or not text: say so, not that it is missing.
        std::io::ErrorKind::InvalidData => {
            format!("[rewards.judge] rubric `{}`: {e}", judge.rubric)
        }
        _ => format!(
            "[rewards.judge] rubric `{}` is neither a built-in rubric (negotiation) nor a readable file: {e}",
            judge.rubric
        ),
    })
}

/// The source of the judge's rubric when the config uses a judge, for the run id
/// ([`RewardConfig::identity`]); `None` otherwise, or when it cannot be read (building the
/// [`Rewarding`] then fails with the reason).
pub(crate) fn rubric(config: &RewardConfig) -> Option<String> {
    config
        .judge
        .as_ref()
        .filter(|_| config.uses(Component::Judge))
        .and_then(|j| rubric_source(j).ok())
}

impl Rewarding {
    /// The clients `config` needs; `None` when it uses neither a judge nor a reward model.
    pub(crate) fn new(
        config: &RewardConfig,
        http: &reqwest::Client,
    ) -> Result<Option<Rewarding>, String> {
        let judge = match &config.judge {
            Some(j) if config.uses(Component::Judge) => {
                let rubric = Rubric::new(rubric_source(j)?)
                    .map_err(|e| format!("[rewards.judge] rubric `{}`: {e}", j.rubric))?;
                let client = JudgeClient::new(http.clone(), j)
                    .map_err(|e| format!("[rewards.judge]: {e}"))?;
                Some((client, rubric))
            }
            _ => None,
        };
        let reward_model = match &config.reward_model {
            Some(rm) if config.uses(Component::RewardModel) => Some(
                RewardModelClient::new(http.clone(), rm)
                    .map_err(|e| format!("[rewards.reward_model]: {e}"))?,
            ),
            _ => None,
        };
        if judge.is_none() && reward_model.is_none() {
            return Ok(None);
        }
        Ok(Some(Rewarding {
            config: config.clone(),
            judge,
            reward_model,
        }))
    }

    /// Add the judge's and the reward model's components to `record` (an ended episode of
    /// `scenario`; `views` are each seat's messages as it saw them at the end, `prompt_lens`
    /// how long the moving seat's view was when each turn's call was made — views only grow,
    /// so that prefix is exactly what the turn was sent).
    pub(crate) async fn apply(
        &self,
        record: &mut EpisodeRecord,
        scenario: &Scenario,
        views: &PerSeat<Vec<Message>>,
        prompt_lens: &[usize],
    ) {
        let views = [views.learner.as_slice(), views.opponent.as_slice()];
        self.apply_to(&mut TwoParty { record, scenario }, &views, prompt_lens)
            .await;
    }

    /// [`apply`](Self::apply) at an n-party table: each seat's conversation (`views`, in seat
    /// order, as the seat saw it) and each of its turns go to the judge and the reward model
    /// as a two-party seat's do, and their parts land in the table record's fields of the
    /// same names.
    pub(crate) async fn apply_table(
        &self,
        record: &mut TableRecord,
        scenario: &TableScenario,
        views: &[&[Message]],
        prompt_lens: &[usize],
    ) {
        self.apply_to(&mut Table { record, scenario }, views, prompt_lens)
            .await;
    }

    /// The one rule of both: every verdict and score asked at once, then written into the
    /// record, and its totals recombined.
    async fn apply_to(
        &self,
        record: &mut impl Rewardable,
        views: &[&[Message]],
        prompt_lens: &[usize],
    ) {
        let judged = self.judge(&*record);
        let scored = self.score(&*record, views, prompt_lens);
        let (judged, scored) = futures_util::future::join(judged, scored).await;
        let judge = Component::Judge.name();
        for (graded, verdict) in judged {
            let score = match verdict {
                Judged::Score(score, labels) => {
                    for (k, labels) in labels {
                        if let Some(i) = (k as usize).checked_sub(1) {
                            record.set_labels(i, labels);
                        }
                    }
                    score
                }
                Judged::Unreadable => {
                    record.issue(issues::JUDGE_UNREADABLE, None);
                    0.0
                }
                Judged::Failed(why) => {
                    record.issue(issues::JUDGE_FAILED, Some(why));
                    continue;
                }
            };
            match graded {
                Graded::Seat(seat) => record.insert_part(seat, Component::Judge, score),
                Graded::Turn(i) => record.insert_turn_signal(i, judge, score),
            };
        }
        let reward_model = Component::RewardModel.name();
        for (graded, scored) in scored {
            match (scored, graded) {
                (Ok(score), Graded::Seat(seat)) => {
                    record.insert_part(seat, Component::RewardModel, score);
                }
                (Ok(score), Graded::Turn(i)) => {
                    record.insert_turn_signal(i, reward_model, score);
                }
                (Err(e), _) => {
                    record.issue(issues::REWARD_MODEL_FAILED, Some(e.to_string()));
                }
            }
        }
        record.recombine(&self.config);
    }

    /// What a per-turn service grades: each seat once (`per_turn` false), or each turn the
    /// players played (a logged prefix's turns are context, not graded).
    fn graded(record: &impl Rewardable, per_turn: bool) -> Vec<Graded> {
        if per_turn {
            record
                .played_turns()
                .into_iter()
                .map(Graded::Turn)
                .collect()
        } else {
            (0..record.seats()).map(Graded::Seat).collect()
        }
    }

    /// Every score the reward model is asked for, all at once: each seat's whole conversation,
    /// or, where turns get their own reward ([`RewardConfig::is_per_turn`]), each response —
    /// the messages the turn's call was sent, then the turn as its seat's history keeps it
    /// (the completion without its reasoning). None without a reward model.
    async fn score(
        &self,
        record: &impl Rewardable,
        views: &[&[Message]],
        prompt_lens: &[usize],
    ) -> Vec<(Graded, Result<f64, LlmError>)> {
        let Some(rm) = &self.reward_model else {
            return Vec::new();
        };
        let per_turn = self.config.is_per_turn(Component::RewardModel);
        let asks = Self::graded(record, per_turn)
            .into_iter()
            .map(|g| async move {
                let scored = match g {
                    Graded::Seat(seat) => rm.score(views.get(seat).copied().unwrap_or(&[])).await,
                    Graded::Turn(i) => {
                        let view = views.get(record.mover(i)).copied().unwrap_or(&[]);
                        let asked = prompt_lens.get(i).copied().unwrap_or(view.len());
                        let mut messages = view[..asked.min(view.len())].to_vec();
                        messages.push(record.own_message(i));
                        rm.score(&messages).await
                    }
                };
                (g, scored)
            });
        futures_util::future::join_all(asks).await
    }

    /// Every verdict the judge is asked for, all at once: one per seat (`mode = "episode"`),
    /// or one per turn the players played (`mode = "turn"`; a logged prefix's turns are
    /// context, not graded). None without a judge.
    async fn judge(&self, record: &impl Rewardable) -> Vec<(Graded, Judged)> {
        let Some((_, _, config)) = self.judge_parts() else {
            return Vec::new();
        };
        let graded = Self::graded(record, config.mode == JudgeMode::Turn);
        let asks = graded.iter().map(|g| async move {
            let input = record.judge_input(*g, &config.labels);
            (*g, self.verdict(input.with_range(config.range)).await)
        });
        futures_util::future::join_all(asks).await
    }

    fn judge_parts(&self) -> Option<(&JudgeClient, &Rubric, &JudgeConfig)> {
        let (client, rubric) = self.judge.as_ref()?;
        Some((client, rubric, self.config.judge.as_ref()?))
    }

    /// The judge's verdict on one rendered input.
    async fn verdict(&self, input: JudgeInput) -> Judged {
        let Some((client, rubric, config)) = self.judge_parts() else {
            return Judged::Failed("no judge".into());
        };
        let prompt = match rubric.render(&input) {
            Ok(prompt) => prompt,
            Err(e) => return Judged::Failed(format!("the rubric did not render: {e}")),
        };
        let reply = match client.reply(&prompt).await {
            Ok(reply) => reply,
            Err(e) => return Judged::Failed(e.to_string()),
        };
        match parse_verdict(&reply, &input.judged_turns, &config.labels, config.range) {
            Ok(v) => Judged::Score(v.score, v.labels),
            Err(_) => Judged::Unreadable,
        }
    }
}

/// What one verdict or score grades.
#[derive(Debug, Clone, Copy)]
enum Graded {
    /// A seat's whole episode (the seat's index: learner 0 and opponent 1, or a table's).
    Seat(usize),
    /// One turn (its index in the record), for the seat that played it.
    Turn(usize),
}

/// What the judge and the reward model read of an ended episode's record and write into it,
/// whichever kind it is: seats by index, turns by their index in the record.
trait Rewardable: Sync {
    fn seats(&self) -> usize;
    /// The turns the players played (a logged prefix's are context, not graded).
    fn played_turns(&self) -> Vec<usize>;
    fn mover(&self, turn: usize) -> usize;
    /// The turn as its seat's history keeps it (the completion without its reasoning).
    fn own_message(&self, turn: usize) -> Message;
    fn judge_input(&self, graded: Graded, labels: &BTreeMap<String, Vec<String>>) -> JudgeInput;
    fn set_labels(&mut self, turn: usize, labels: BTreeMap<String, String>);
    fn insert_part(&mut self, seat: usize, c: Component, value: f64);
    fn insert_turn_signal(&mut self, turn: usize, name: &str, value: f64);
    /// Count an issue, keeping the episode's first error of its kind where there is one.
    fn issue(&mut self, issue: &str, why: Option<String>);
    fn recombine(&mut self, config: &RewardConfig);
}

struct TwoParty<'a> {
    record: &'a mut EpisodeRecord,
    scenario: &'a Scenario,
}

impl Rewardable for TwoParty<'_> {
    fn seats(&self) -> usize {
        Seat::BOTH.len()
    }
    fn played_turns(&self) -> Vec<usize> {
        (0..self.record.turns.len())
            .filter(|i| !self.record.setup.rules.is_logged_turn(*i))
            .collect()
    }
    fn mover(&self, turn: usize) -> usize {
        usize::from(self.record.turns[turn].seat == Seat::Opponent)
    }
    fn own_message(&self, turn: usize) -> Message {
        let turn = &self.record.turns[turn];
        game::own_message(&turn.raw, &turn.tool_calls)
    }
    fn judge_input(&self, graded: Graded, labels: &BTreeMap<String, Vec<String>>) -> JudgeInput {
        let r = &*self.record;
        match graded {
            Graded::Seat(seat) => {
                let seat = Seat::BOTH[seat];
                judge_input(
                    self.scenario,
                    &r.setup,
                    &r.turns,
                    seat,
                    &r.seats[seat].system_prompt,
                    labels,
                )
            }
            Graded::Turn(i) => judge_turn_input(
                self.scenario,
                &r.setup,
                &r.turns,
                i,
                &r.seats[r.turns[i].seat].system_prompt,
                labels,
            ),
        }
    }
    fn set_labels(&mut self, turn: usize, labels: BTreeMap<String, String>) {
        if let Some(t) = self.record.turns.get_mut(turn) {
            t.labels = labels;
        }
    }
    fn insert_part(&mut self, seat: usize, c: Component, value: f64) {
        self.record.reward_parts[Seat::BOTH[seat]].insert(c, value);
    }
    fn insert_turn_signal(&mut self, turn: usize, name: &str, value: f64) {
        self.record.turns[turn].rewards.insert(name.into(), value);
    }
    fn issue(&mut self, issue: &str, why: Option<String>) {
        count(
            &mut self.record.reward_issues,
            &mut self.record.reward_errors,
            issue,
            why,
        );
    }
    fn recombine(&mut self, config: &RewardConfig) {
        self.record.recombine(config);
    }
}

struct Table<'a> {
    record: &'a mut TableRecord,
    scenario: &'a TableScenario,
}

impl Rewardable for Table<'_> {
    fn seats(&self) -> usize {
        self.record.seats.len()
    }
    fn played_turns(&self) -> Vec<usize> {
        (0..self.record.turns.len())
            .filter(|i| !self.record.is_logged_turn(*i))
            .collect()
    }
    fn mover(&self, turn: usize) -> usize {
        self.record.turns[turn].turn.seat
    }
    fn own_message(&self, turn: usize) -> Message {
        let completion = &self.record.turns[turn].turn.completion;
        game::own_message(&completion.text, &completion.tool_calls)
    }
    fn judge_input(&self, graded: Graded, labels: &BTreeMap<String, Vec<String>>) -> JudgeInput {
        let r = &*self.record;
        let brief = |seat: usize| {
            r.setup
                .seats
                .get(seat)
                .map_or("", |s| s.system_prompt.as_str())
        };
        let turns: Vec<&TableTurn> = r.turns.iter().map(|t| &t.turn).collect();
        match graded {
            Graded::Seat(seat) => {
                table_judge_input(self.scenario, &turns, seat, brief(seat), labels)
            }
            Graded::Turn(i) => {
                let seat = turns[i].seat;
                table_judge_input(self.scenario, &turns[..=i], seat, brief(seat), labels)
                    .grading_turn(i)
            }
        }
    }
    fn set_labels(&mut self, turn: usize, labels: BTreeMap<String, String>) {
        if let Some(t) = self.record.turns.get_mut(turn) {
            t.labels = labels;
        }
    }
    fn insert_part(&mut self, seat: usize, c: Component, value: f64) {
        if let Some(role) = self.record.seats.get(seat).map(|s| s.role.clone()) {
            self.record
                .reward_parts
                .entry(role)
                .or_default()
                .insert(c, value);
        }
    }
    fn insert_turn_signal(&mut self, turn: usize, name: &str, value: f64) {
        self.record.turns[turn].rewards.insert(name.into(), value);
    }
    fn issue(&mut self, issue: &str, why: Option<String>) {
        count(
            &mut self.record.reward_issues,
            &mut self.record.reward_errors,
            issue,
            why,
        );
    }
    fn recombine(&mut self, config: &RewardConfig) {
        self.record.recombine(config);
    }
}

/// What the judge made of one seat or turn.
enum Judged {
    Score(f64, BTreeMap<u32, BTreeMap<String, String>>),
    Unreadable,
    /// The call failed after its retries (or the rubric did not render): why.
    Failed(String),
}

/// Count an issue, and keep the episode's first error of its kind where there is one.
fn count(
    issues: &mut BTreeMap<String, u32>,
    errors: &mut BTreeMap<String, String>,
    issue: &str,
    why: Option<String>,
) {
    *issues.entry(issue.to_string()).or_insert(0) += 1;
    if let Some(why) = why {
        errors.entry(issue.to_string()).or_insert(why);
    }
}
