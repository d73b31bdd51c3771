//! Prefix runs (`run --prefixes FILE`): GRPO prompts cut from logged dialogues — people's
//! (`dialogues/*.jsonl`) or an earlier run's episodes. Each source record gives one prefix and
//! one GRPO group: its members replay the same first N turns through the driver
//! ([`Driver::feed_prefix`](super::Driver::feed_prefix), the loop `replay --branch-from`
//! shares) and differ only in the sampling seeds the run's players continue with.
//!
//! **The cut.** N is `--prefix-turns N`, or for `--split S` (0 < S ≤ 1) `ceil(S × T)` capped at
//! `T − 1`, T being the record's turns (attempts, in record order): the prefix always leaves at
//! least one logged turn out, so S = 1 gives every turn but the last as context. With a
//! `--learner-role`, the cut then moves forward to the first logged turn spoken in that role.
//! A source is skipped, and counted by reason in the run's summary ([`PrefixReport`]), when it
//! is too short (N = 0, or N > T), when its first N turns already end it, or when no turn of
//! the learner's role follows the cut.
//!
//! **The targets** (`--targets`, [`Targets`]). By default a source gives one prefix — one GRPO
//! group — whose target is the turn after the cut. The CaSiNo harness's `prompt_split`
//! (§3.3.2) makes one prompt per target turn instead: every turn after the first N is a
//! target, with everything before it as context. `--targets every` does that for every such
//! turn, whichever side spoke it (a people's dialogue: both sides' turns are demonstrations);
//! `--targets learner` only for the turns of the source record's learner seat (§3.3.3: a
//! self-play log's "learner's turns are sliced into GRPO rows"). `--learner-role R` keeps the
//! turns spoken in R. Each target is its own group, planned in source order, then turn order.
//!
//! **The seats.** The learner takes the seat of the speaker of turn N (the next speaker after
//! the prefix); when that was the record's opponent, the seats are exchanged whole — each
//! seat's setup (role, regulation, floor, format, persona) and the first mover — so the learner
//! always writes the first new turn, and its system prompt is its new role's.
//!
//! **The rules.** The record's setup, with the run's corrections (`format_retries`) and turn cap
//! (`--max-rounds`), each raised where the prefix needs more to replay as logged (a model log
//! whose turn used more corrections; a prefix whose longer side has made the cap's moves: the
//! cap becomes that side's moves + 1), and `Rules.continuation` (the prefix's length and
//! `--continue-turns`). Per-turn rewards then score only the players' turns, and token-exact
//! seats and token exports start at the first call.
//!
//! Planning holds the source records in memory (13 MB for CaSiNo's people).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::{EpisodeError, PlannedEpisode, RunError, RunOptions, ScenarioSource};
use crate::agents::Played;
use crate::engine::{Players, ToMove};
use crate::game::{mix, EpisodeConfig, EpisodeSeed, OutcomeKind, Seat, Setup};
use crate::record::{EpisodeRecord, Parent, RecordReader, RecordsKind, TableRecord};
use crate::scenario::Role;
use crate::table::TableOptions;

/// Where a prefix run cuts each source record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cut {
    /// `--split S`: `ceil(S × T)` of the record's T turns, at most `T − 1`.
    Split(f64),
    /// `--prefix-turns N`: the first N turns.
    Turns(usize),
}

impl Cut {
    /// `--split S` with S in (0, 1].
    pub fn split(s: f64) -> Result<Cut, String> {
        if s.is_finite() && s > 0.0 && s <= 1.0 {
            Ok(Cut::Split(s))
        } else {
            Err(format!(
                "--split {s}: expected a share of the dialogue in (0, 1]"
            ))
        }
    }

    /// The prefix length in a record of `turns` turns, before any skip rule. The product is
    /// taken less a hair (1e-9) before rounding up, so 0.3 × 10 is 3, not 4.
    pub(crate) fn point(&self, turns: usize) -> usize {
        match *self {
            Cut::Turns(n) => n,
            Cut::Split(s) => {
                let n = (s * turns as f64 - 1e-9).ceil().max(0.0) as usize;
                n.min(turns.saturating_sub(1))
            }
        }
    }

    /// What the cut is, in the run id and the summary.
    pub(crate) fn describe(&self) -> String {
        match self {
            Cut::Split(s) => format!("split {s}"),
            Cut::Turns(n) => format!("prefix-turns {n}"),
        }
    }
}

/// Which logged turns of a source are GRPO targets (see the module's doc), named by
/// [`Targets::name`] (`--targets every`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Targets {
    /// One per source: the turn after the cut (the first of `--learner-role` from there).
    #[default]
    First,
    /// Every turn after the cut, whichever side spoke it: one group each (§3.3.2).
    Every,
    /// Every turn after the cut spoken by the source record's learner seat (§3.3.3).
    Learner,
}

impl Targets {
    pub const ALL: [Targets; 3] = [Targets::First, Targets::Every, Targets::Learner];

    pub fn name(self) -> &'static str {
        match self {
            Targets::First => "first",
            Targets::Every => "every",
            Targets::Learner => "learner",
        }
    }
}

impl std::fmt::Display for Targets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Targets {
    type Err = String;

    fn from_str(name: &str) -> Result<Targets, String> {
        Targets::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| format!("unknown targets `{name}`: first, every or learner"))
    }
}

/// What a prefix run reads and how it cuts.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixOptions {
    /// Record files whose episodes give the prefixes (`--prefixes`, repeatable).
    pub files: Vec<PathBuf>,
    pub cut: Cut,
    /// Which turns after the cut are targets, each one group (`--targets`).
    pub targets: Targets,
    /// `--continue-turns K`: the players' moves after the prefix before the episode is
    /// truncated; `None`: they play on to the episode's end.
    pub continue_turns: Option<u32>,
}

/// Why a source record gives no prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    /// The cut is 0 turns, or beyond the record's turns.
    TooShort,
    /// The first N turns already end the episode.
    Ended,
    /// No turn spoken in `--learner-role` follows the cut.
    NoTurnOfRole,
}

impl SkipReason {
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::TooShort => "too_short",
            SkipReason::Ended => "already_ended",
            SkipReason::NoTurnOfRole => "no_turn_of_learner_role",
        }
    }
}

/// The skipped sources of one reason: how many, and the first (`FILE: EPISODE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub count: usize,
    pub(crate) example: String,
}

/// What planning made of the source records: read, planned as groups, skipped by reason.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrefixReport {
    pub sources: usize,
    pub groups: usize,
    pub skipped: BTreeMap<SkipReason, Skipped>,
}

impl PrefixReport {
    fn skip(&mut self, reason: SkipReason, example: String) {
        self.skipped
            .entry(reason)
            .or_insert(Skipped { count: 0, example })
            .count += 1;
    }

    /// Sources skipped, all reasons together.
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().map(|s| s.count).sum()
    }

    /// One line for the run's summary: `prefixes: 10 read, 8 planned, 2 skipped (too_short 2,
    /// e.g. FILE: EPISODE)`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "prefixes: {} source episodes read, {} planned as groups, {} skipped",
            self.sources,
            self.groups,
            self.skipped_total()
        );
        if !self.skipped.is_empty() {
            let reasons: Vec<String> = self
                .skipped
                .iter()
                .map(|(r, s)| format!("{} {} (e.g. {})", r.name(), s.count, s.example))
                .collect();
            line.push_str(&format!(" ({})", reasons.join(", ")));
        }
        line
    }
}

/// A logged episode a prefix is cut from, of either kind — a two-party [`EpisodeRecord`] or
/// a [`TableRecord`]: what the one cut rule, the skip rules, the feeding of the prefix and the
/// naming of continuations read of it. What each kind decides alone is the setup its
/// continuations are played under ([`Logged::continued`], [`Logged::branched`]).
pub trait Logged: Send + Sync + 'static {
    /// How the record names the seat of a turn (a two-party [`Seat`], a table's index).
    type Seat: Copy;
    /// What a continuation is played under (a two-party [`Setup`]; a table's options).
    type Setup: Clone + std::fmt::Debug + PartialEq + Send + Sync;
    fn run_id(&self) -> &str;
    fn episode_id(&self) -> &str;
    fn seeds(&self) -> EpisodeSeed;
    /// The logged turns (attempts, in record order).
    fn turn_count(&self) -> usize;
    /// How the logged episode ended.
    fn ending(&self) -> OutcomeKind;
    /// The corrections turn `i` was asked after (0 for a first attempt).
    fn attempt(&self, i: usize) -> u32;
    /// Whether turn `i` is a target under `targets`, spoken in `role` where one is asked for.
    fn is_target(&self, i: usize, targets: Targets, role: Option<Role>) -> bool;
    /// Turn `i` as it was played: its seat, and what its player answered with.
    fn played(&self, i: usize) -> (Self::Seat, Played);
    /// The setup of a continuation after `turns` turns (the prefix leaves the episode open),
    /// with `retries` corrections, under the run's `config` and `continue_turns`.
    fn continued(
        &self,
        turns: usize,
        retries: u32,
        config: &EpisodeConfig,
        continue_turns: Option<u32>,
    ) -> Result<Self::Setup, SkipReason>;
    /// The setup of a branch after `turns` turns: the record's own.
    fn branched(&self, turns: usize) -> Self::Setup;
}

impl Logged for EpisodeRecord {
    type Seat = Seat;
    type Setup = Setup;

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn episode_id(&self) -> &str {
        &self.episode_id
    }

    fn seeds(&self) -> EpisodeSeed {
        self.seeds
    }

    fn turn_count(&self) -> usize {
        self.turns.len()
    }

    fn ending(&self) -> OutcomeKind {
        self.kind()
    }

    fn attempt(&self, i: usize) -> u32 {
        self.turns[i].attempt
    }

    fn is_target(&self, i: usize, targets: Targets, role: Option<Role>) -> bool {
        let seat = self.turns[i].seat;
        (targets != Targets::Learner || seat == Seat::Learner)
            && role.is_none_or(|r| self.setup.seats[seat].role == r)
    }

    fn played(&self, i: usize) -> (Seat, Played) {
        let turn = &self.turns[i];
        let played = Played {
            completion: turn.completion(),
            call: turn.call.clone(),
            latency_ms: self.timing.turn_ms.get(i).copied().unwrap_or(0),
            retries: self.timing.call_retries.get(i).copied().unwrap_or(0),
            replica: self.timing.turn_replica.get(i).copied().flatten(),
            planning: turn.planning.clone(),
        };
        (turn.seat, played)
    }

    /// The learner takes the next speaker's seat, the seats exchanged whole where that was
    /// the opponent; the turn cap is raised where the prefix's longer side has made its moves.
    fn continued(
        &self,
        turns: usize,
        retries: u32,
        config: &EpisodeConfig,
        continue_turns: Option<u32>,
    ) -> Result<Setup, SkipReason> {
        // The next speaker: the seat of the logged turn after the prefix, or, when the prefix
        // is every turn of an episode a backend failure ended, the seat that failed.
        let next = match self.turns.get(turns) {
            Some(turn) => turn.seat,
            None => self.outcome.outcome.by.ok_or(SkipReason::Ended)?,
        };
        let mut setup = self.setup.to_continue(turns, continue_turns);
        setup.rules.format_retries = retries;
        let prefix = &self.turns[..turns];
        let most = Seat::BOTH
            .into_iter()
            .map(|seat| {
                prefix
                    .iter()
                    .filter(|t| t.seat == seat && t.played.is_some())
                    .count() as u32
            })
            .max()
            .unwrap_or(0);
        setup.rules.max_rounds = config.max_rounds.max(most + 1);
        if next == Seat::Opponent {
            setup = exchanged(&setup);
        }
        Ok(setup)
    }

    fn branched(&self, turns: usize) -> Setup {
        self.setup.to_continue(turns, None)
    }
}

/// A table's continuation keeps the record's seats, schedule and options — its players are
/// seated by role (`--seat`), so no seat changes hands — with the corrections the prefix
/// needs. A table has no learner seat and no continuation cap: `--targets learner`,
/// `--learner-role` and `--continue-turns` are refused before planning
/// (`refuse_for_tables`).
impl Logged for TableRecord {
    type Seat = usize;
    type Setup = TableOptions;

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn episode_id(&self) -> &str {
        &self.episode_id
    }

    fn seeds(&self) -> EpisodeSeed {
        self.seeds
    }

    fn turn_count(&self) -> usize {
        self.turns.len()
    }

    fn ending(&self) -> OutcomeKind {
        self.outcome.outcome.kind
    }

    /// The attempts of one schedule slot before turn `i`.
    fn attempt(&self, i: usize) -> u32 {
        let slot = self.turns[i].turn.slot;
        self.turns[..i]
            .iter()
            .rev()
            .take_while(|t| t.turn.slot == slot)
            .count() as u32
    }

    fn is_target(&self, _: usize, targets: Targets, role: Option<Role>) -> bool {
        targets != Targets::Learner && role.is_none()
    }

    fn played(&self, i: usize) -> (usize, Played) {
        let turn = &self.turns[i];
        let played = Played {
            completion: turn.turn.completion.clone(),
            call: turn.call.clone(),
            latency_ms: turn.latency_ms,
            retries: turn.retries,
            replica: None,
            planning: turn.planning.clone(),
        };
        (turn.turn.seat, played)
    }

    fn continued(
        &self,
        _: usize,
        retries: u32,
        _: &EpisodeConfig,
        _: Option<u32>,
    ) -> Result<TableOptions, SkipReason> {
        Ok(TableOptions {
            retries,
            ..self.options.clone()
        })
    }

    fn branched(&self, _: usize) -> TableOptions {
        self.options.clone()
    }
}

/// What a table prefix run cannot honour, refused by name: a table seats its players by role
/// and ends with its schedule.
pub(crate) fn refuse_for_tables(
    prefixes: &PrefixOptions,
    config: &EpisodeConfig,
) -> Result<(), RunError> {
    let refused = if prefixes.targets == Targets::Learner {
        Some("--targets learner: a table has no learner seat (use first or every)")
    } else if prefixes.continue_turns.is_some() {
        Some("--continue-turns: a table's continuation plays on to the end of its schedule")
    } else if config.learner_role.is_some() {
        Some("--learner-role: a table seats its players by role (--seat ROLE=SPEC)")
    } else {
        None
    };
    match refused {
        Some(why) => Err(RunError::Options(format!(
            "{why}; the prefixes are table records"
        ))),
        None => Ok(()),
    }
}

/// A logged prefix an episode continues: the source record (either kind, [`Logged`]), how
/// many of its turns are replayed, and the setup the episode is played under (see the
/// module's doc).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedPrefix<R: Logged = EpisodeRecord> {
    /// Shared by the prefixes of one source (one per target turn).
    pub(crate) record: Arc<R>,
    pub(crate) turns: usize,
    pub(crate) setup: R::Setup,
    /// The GRPO group its continuations form, where the prefix names it (a branch's
    /// `E.bN`); `None`: the plan's `g{G}`.
    pub(crate) group: Option<String>,
}

impl<R: Logged> LoggedPrefix<R> {
    /// The prefix of `record`'s first `turns` turns, continued by players under `config`'s
    /// corrections and turn cap, for `continue_turns` moves (or to the end). Errors with why
    /// the record cannot give this prefix.
    pub(crate) fn new(
        record: impl Into<Arc<R>>,
        turns: usize,
        config: &EpisodeConfig,
        continue_turns: Option<u32>,
    ) -> Result<LoggedPrefix<R>, SkipReason> {
        let record = record.into();
        let logged = record.turn_count();
        if turns == 0 || turns > logged {
            return Err(SkipReason::TooShort);
        }
        // Every turn of an episode a backend failure ended leaves it open: the seat that
        // failed is asked again. Any other whole episode has nothing to continue.
        if turns == logged && record.ending() != OutcomeKind::Error {
            return Err(SkipReason::Ended);
        }
        // Corrections: as many as the run allows, or as the log used (up to and including the
        // next turn, which may be a retry the prefix's last turn asked for).
        let used = (0..(turns + 1).min(logged))
            .map(|i| record.attempt(i))
            .max()
            .unwrap_or(0);
        let retries = config.format_retries.max(used);
        let setup = record.continued(turns, retries, config, continue_turns)?;
        Ok(LoggedPrefix {
            record,
            turns,
            setup,
            group: None,
        })
    }

    /// A branch of `record` after its first `turns` turns (`replay --branch-from`): the
    /// record's own setup — seats, first mover, corrections and turn cap as logged — played on
    /// by new players from there, the branches forming group `E.bN`
    /// ([`branch_group_id`]). The caller has checked the prefix leaves the
    /// episode open.
    pub fn branch(record: impl Into<Arc<R>>, turns: usize) -> LoggedPrefix<R> {
        let record = record.into();
        LoggedPrefix {
            setup: record.branched(turns),
            group: Some(branch_group_id(record.episode_id(), turns)),
            record,
            turns,
        }
    }

    /// The seeds of branch `member` under the run's `seed`: the group drawn from the parent's
    /// seeds and the prefix length, so different parents and prefixes get different sampling
    /// seeds.
    pub(crate) fn branch_seeds(&self, seed: u64, member: u32) -> EpisodeSeed {
        let parent = self.record.seeds();
        EpisodeSeed {
            run: seed,
            group: mix(&[parent.run, parent.group, parent.member, self.turns as u64]),
            member: u64::from(member),
        }
    }

    /// What the continuing episode's record names as its parent.
    pub(crate) fn parent(&self) -> Parent {
        Parent {
            run_id: self.record.run_id().to_string(),
            episode_id: self.record.episode_id().to_string(),
            prefix_turns: self.turns,
        }
    }
}

/// The GRPO group of an episode seeded `seeds`: the plan's `g{G}`, or the name its logged
/// prefix gives its continuations (a branch's `E.bN`).
pub(crate) fn group_of<R: Logged>(prefix: Option<&LoggedPrefix<R>>, seeds: EpisodeSeed) -> String {
    match prefix.and_then(|p| p.group.as_ref()) {
        Some(group) => group.clone(),
        None => seeds.group_id(),
    }
}

/// Feed the first `n` turns of `record` to `episode` through `players` (each with the call,
/// latency and retries the log has for it): the one loop that replays a logged prefix, for
/// both kinds, `replay --branch-from` and `run --prefixes`. The episode must have been set up
/// so the record replays under it. An episode the prefix ends — within its turns or right
/// after them — is an error ([`EpisodeError::PrefixEnds`]): there is nothing to continue.
pub(crate) fn feed_prefix<R, E, P>(
    record: &R,
    n: usize,
    episode: &mut E,
    players: &mut P,
    ending: impl Fn(&E) -> Option<OutcomeKind>,
) -> Result<(), EpisodeError>
where
    R: Logged,
    E: ToMove<Seat = R::Seat>,
    P: Players<E>,
    P::Answer: From<Played>,
    EpisodeError: From<P::Error>,
{
    let open = |episode: &E, fed: usize| match ending(episode) {
        Some(kind) => Err(EpisodeError::PrefixEnds {
            episode: record.episode_id().to_string(),
            prefix: fed,
            kind: kind.name(),
        }),
        None => Ok(()),
    };
    for i in 0..n.min(record.turn_count()) {
        open(episode, i)?;
        let (seat, played) = record.played(i);
        players.take(episode, seat, played.into())?;
    }
    open(episode, n)
}

/// The group id of the branches of `parent_episode` after `prefix` turns (`E.bN`).
pub fn branch_group_id(parent_episode: &str, prefix: usize) -> String {
    format!("{parent_episode}.b{prefix}")
}

/// `setup` with the seats exchanged whole: each seat's setup goes to the other seat, and so
/// does the first move, so the same role opens and the logged turns replay unchanged.
fn exchanged(setup: &Setup) -> Setup {
    let mut swapped = setup.clone();
    swapped.seats.learner = setup.seats.opponent.clone();
    swapped.seats.opponent = setup.seats.learner.clone();
    swapped.first_mover = setup.first_mover.other();
    swapped
}

/// Where the cut falls in `record`: the cut's point, moved forward to the first turn spoken in
/// `role` when one is asked for.
fn cut_point(record: &impl Logged, cut: Cut, role: Option<Role>) -> Result<usize, SkipReason> {
    let n = cut.point(record.turn_count());
    if role.is_none() {
        return Ok(n);
    }
    (n..record.turn_count())
        .find(|&i| record.is_target(i, Targets::Every, role))
        .ok_or(SkipReason::NoTurnOfRole)
}

/// The prefix lengths of `record`'s targets: the cut point alone ([`cut_point`]) for
/// `first`; for `every` and `learner`, each turn after the cut's point that is a target (of
/// the learner seat for `learner`, spoken in `role` where one is asked for).
fn target_cuts(
    record: &impl Logged,
    cut: Cut,
    targets: Targets,
    role: Option<Role>,
) -> Result<Vec<usize>, SkipReason> {
    if targets == Targets::First {
        return cut_point(record, cut, role).map(|n| vec![n]);
    }
    let logged = record.turn_count();
    let n = cut.point(logged);
    if n == 0 || n > logged {
        return Err(SkipReason::TooShort);
    }
    if n == logged {
        return Err(SkipReason::Ended);
    }
    let cuts: Vec<usize> = (n..logged)
        .filter(|&i| record.is_target(i, targets, role))
        .collect();
    if cuts.is_empty() {
        return Err(SkipReason::NoTurnOfRole);
    }
    Ok(cuts)
}

/// A prefix run's plan: its episodes (`P`: two-party, or tables), what planning made of the
/// sources, and what the run id is made of.
pub(crate) struct PrefixPlan<P = PlannedEpisode> {
    pub planned: Vec<P>,
    pub report: PrefixReport,
    /// The cut, the continuation and each planned source (`RUN/EPISODE`), in plan order.
    pub identity: Vec<String>,
}

/// Plan a prefix run: each target of each usable source record (at most `options.limit`
/// sources from each file) is group g (in reading order, skipped sources leaving no gap) of
/// `group_size` members with seeds (seed, g, m); scenarios come from `options.scenarios`, else
/// `scenarios/{family}.jsonl`.
pub(crate) fn plan_prefixes(
    prefixes: &PrefixOptions,
    options: &RunOptions,
) -> Result<PrefixPlan, RunError> {
    let mut scenarios = ScenarioSource::new(&options.scenarios)?;
    let mut scenario: Option<Arc<crate::scenario::Scenario>> = None;
    plan_logged(
        prefixes,
        options,
        RecordsKind::TwoParty,
        |prefix: &Arc<LoggedPrefix>, first, seeds| {
            let scenario = match (first, &scenario) {
                (false, Some(known)) => known.clone(),
                _ => scenario.insert(scenarios.checked(&prefix.record)?).clone(),
            };
            let scenario_digest = prefix
                .record
                .scenario_digest
                .unwrap_or_else(|| scenario.digest());
            Ok(PlannedEpisode {
                scenario,
                scenario_digest,
                seeds,
                prefix: Some(prefix.clone()),
                tag: None,
                standing: None,
                learner_role: None,
            })
        },
    )
}

/// The one planning loop of a prefix run over the records of `kind` (read as `R`): the cut,
/// the targets and the skip rules, each planned target one group of `group_size` members,
/// each made by `member` (given the prefix, whether it is its source's first, and the
/// member's seeds).
pub(crate) fn plan_logged<R, P>(
    prefixes: &PrefixOptions,
    options: &RunOptions,
    kind: RecordsKind,
    mut member: impl FnMut(&Arc<LoggedPrefix<R>>, bool, EpisodeSeed) -> Result<P, RunError>,
) -> Result<PrefixPlan<P>, RunError>
where
    R: Logged + serde::de::DeserializeOwned,
{
    if !options.episode.talk.is_on() {
        // The prefix was played under its log's forwarding, and the continuation must replay
        // it: it keeps the log's own `talk`, so a run-wide one would be ignored.
        return Err(RunError::Options(
            "[episode] talk = \"off\" (--talk off) with --prefixes: a continuation plays on \
             under its log's own talk setting; record the prefixes with --talk off instead"
                .into(),
        ));
    }
    let mut report = PrefixReport::default();
    let mut planned = Vec::new();
    let mut identity = vec![
        prefixes.cut.describe(),
        match prefixes.continue_turns {
            Some(k) => format!("continue-turns {k}"),
            None => "continue to the end".to_string(),
        },
    ];
    if prefixes.targets != Targets::First {
        identity.insert(1, format!("targets {}", prefixes.targets.name()));
    }
    for file in &prefixes.files {
        let reader = RecordReader::open(file)?.only(kind).read_as::<R>();
        for record in reader.take(options.limit.unwrap_or(usize::MAX)) {
            let record = Arc::new(record?);
            report.sources += 1;
            let example = format!("{}: {}", file.display(), record.episode_id());
            let role = options.episode.learner_role;
            let cuts = match target_cuts(&*record, prefixes.cut, prefixes.targets, role) {
                Ok(cuts) => cuts,
                Err(reason) => {
                    report.skip(reason, example);
                    continue;
                }
            };
            let mut first = true;
            let mut refused = None;
            for n in cuts {
                let prefix = match LoggedPrefix::new(
                    record.clone(),
                    n,
                    &options.episode,
                    prefixes.continue_turns,
                ) {
                    Ok(prefix) => Arc::new(prefix),
                    Err(reason) => {
                        refused.get_or_insert(reason);
                        continue;
                    }
                };
                let group = report.groups as u64;
                options.check_plan_size(report.groups + 1, "prefixes", 1)?;
                let source = format!("{}/{}", record.run_id(), record.episode_id());
                identity.push(match prefixes.targets {
                    Targets::First => source,
                    _ => format!("{source}@{n}"),
                });
                for m in 0..options.group_size {
                    let seeds = EpisodeSeed {
                        run: options.seed,
                        group,
                        member: u64::from(m),
                    };
                    planned.push(member(&prefix, first, seeds)?);
                    first = false;
                }
                report.groups += 1;
            }
            if first {
                report.skip(refused.unwrap_or(SkipReason::TooShort), example);
            }
        }
    }
    Ok(PrefixPlan {
        planned,
        report,
        identity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price, record_of, turn};
    use crate::game::{Continuation, Episode};

    /// A logged price episode of 6 turns: the buyer (learner) opens at 120, the seller
    /// counters at 170, the buyer's malformed turn is corrected (attempt 1: 130), the seller
    /// says 160, the buyer walks away.
    fn logged() -> EpisodeRecord {
        let s = price();
        let e = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[
                turn("120?", "[SUBMIT_DEAL] price:120"),
                turn("170.", "[SUBMIT_DEAL] price:170"),
                "no format".to_string(),
                turn("130?", "[SUBMIT_DEAL] price:130"),
                turn("160.", "[SUBMIT_DEAL] price:160"),
                turn("Bye.", "[WALK_AWAY]"),
            ],
        );
        record_of(e)
    }

    #[test]
    fn the_learner_takes_the_next_speakers_seat_with_its_whole_setup() {
        let record = logged();
        let config = EpisodeConfig::default();
        // After 1 turn the seller speaks: the seats are exchanged whole.
        let p = LoggedPrefix::new(record.clone(), 1, &config, Some(1)).unwrap();
        assert_eq!(p.setup.seats.learner, record.setup.seats.opponent);
        assert_eq!(p.setup.seats.opponent, record.setup.seats.learner);
        assert_eq!(p.setup.first_mover, Seat::Opponent);
        // After 2 the buyer does: nothing moves.
        let p = LoggedPrefix::new(record.clone(), 2, &config, None).unwrap();
        assert_eq!(p.setup.seats, record.setup.seats);
        assert_eq!(
            p.setup.rules.continuation,
            Some(Continuation {
                prefix_turns: 2,
                moves: None
            })
        );
        // Either way the prefix replays as logged and the learner is to move.
        for n in [1, 2, 3, 4] {
            let p = LoggedPrefix::new(record.clone(), n, &config, Some(1)).unwrap();
            let e =
                Episode::replay(price(), p.setup.clone(), record.completions().take(n)).unwrap();
            assert_eq!(e.to_move(), Some(Seat::Learner), "after {n}");
        }
    }

    #[test]
    fn corrections_and_the_cap_are_raised_only_as_the_prefix_needs() {
        let record = logged();
        let config = EpisodeConfig {
            format_retries: 0,
            max_rounds: 1,
            ..EpisodeConfig::default()
        };
        // Turns 0..2 used no correction, but turn 3 is the buyer's retry: 1 is needed.
        let p = LoggedPrefix::new(record.clone(), 3, &config, None).unwrap();
        assert_eq!(p.setup.rules.format_retries, 1);
        // 1 move each in the first 2 turns: the cap becomes 2.
        let p = LoggedPrefix::new(record.clone(), 2, &config, None).unwrap();
        assert_eq!(p.setup.rules.format_retries, 0);
        assert_eq!(p.setup.rules.max_rounds, 2);
        // A run's own higher values stand.
        let generous = EpisodeConfig {
            format_retries: 4,
            max_rounds: 9,
            ..EpisodeConfig::default()
        };
        let p = LoggedPrefix::new(record.clone(), 5, &generous, None).unwrap();
        assert_eq!(
            (p.setup.rules.format_retries, p.setup.rules.max_rounds),
            (4, 9)
        );
        // The rest is the record's.
        assert_eq!(p.setup.rules.reject_loop, record.setup.rules.reject_loop);
        // Too short, and a prefix that is the whole (walked-away) episode.
        assert_eq!(
            LoggedPrefix::new(record.clone(), 0, &config, None),
            Err(SkipReason::TooShort)
        );
        assert_eq!(
            LoggedPrefix::new(record.clone(), 7, &config, None),
            Err(SkipReason::TooShort)
        );
        assert_eq!(
            LoggedPrefix::new(record, 6, &config, None),
            Err(SkipReason::Ended)
        );
    }

    #[test]
    fn a_learner_role_moves_the_cut_to_its_next_turn() {
        let record = logged();
        // Turn 1 is the seller's; the buyer speaks next at turn 2.
        assert_eq!(cut_point(&record, Cut::Turns(1), Some(Role::Buyer)), Ok(2));
        assert_eq!(cut_point(&record, Cut::Turns(1), Some(Role::Seller)), Ok(1));
        assert_eq!(
            cut_point(&record, Cut::Turns(5), Some(Role::Seller)),
            Err(SkipReason::NoTurnOfRole)
        );
    }

    #[test]
    fn a_split_rounds_up_and_leaves_a_turn_out() {
        let s = |x| Cut::split(x).unwrap();
        assert_eq!(s(0.5).point(7), 4);
        assert_eq!(s(0.5).point(8), 4);
        assert_eq!(s(0.3).point(10), 3, "not 4 from 3.0000000000000004");
        assert_eq!(s(0.01).point(10), 1);
        assert_eq!(s(1.0).point(10), 9, "the last turn is the learner's");
        assert_eq!(s(1.0).point(1), 0, "nothing to cut");
        assert_eq!(Cut::Turns(12).point(3), 12);
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            assert!(Cut::split(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_split_makes_one_prompt_per_target_turn_after_the_cut() {
        // T = 6 turns: buyer (learner) 0, seller 1, buyer 2 (malformed) and 3 (its retry),
        // seller 4, buyer 5. Split 0.5: the first ceil(3) = 3 are context, so turns 3, 4, 5
        // are targets: T − ceil(S·T) = 3 prompts, each with every turn before it as context.
        let record = logged();
        let half = Cut::split(0.5).unwrap();
        assert_eq!(
            target_cuts(&record, half, Targets::First, None),
            Ok(vec![3])
        );
        assert_eq!(
            target_cuts(&record, half, Targets::Every, None),
            Ok(vec![3, 4, 5])
        );
        // The learner's turns only (the buyer's, 3 and 5); or the seller's role only.
        assert_eq!(
            target_cuts(&record, half, Targets::Learner, None),
            Ok(vec![3, 5])
        );
        assert_eq!(
            target_cuts(&record, half, Targets::Every, Some(Role::Seller)),
            Ok(vec![4])
        );
        // A small split: ceil(0.01 · 6) = 1, so 5 targets; S = 1 leaves the last turn alone.
        let some = Cut::split(0.01).unwrap();
        assert_eq!(
            target_cuts(&record, some, Targets::Every, None).map(|c| c.len()),
            Ok(5)
        );
        let all = Cut::split(1.0).unwrap();
        assert_eq!(target_cuts(&record, all, Targets::Every, None), Ok(vec![5]));
        // No target: too short, nothing after the cut, no turn of the seat or role asked.
        assert_eq!(
            target_cuts(&record, Cut::Turns(0), Targets::Every, None),
            Err(SkipReason::TooShort)
        );
        assert_eq!(
            target_cuts(&record, Cut::Turns(6), Targets::Every, None),
            Err(SkipReason::Ended)
        );
        assert_eq!(
            target_cuts(&record, Cut::Turns(5), Targets::Every, Some(Role::Seller)),
            Err(SkipReason::NoTurnOfRole)
        );
        // Every target is a prefix the learner continues.
        for n in [3, 4, 5] {
            let p = LoggedPrefix::new(record.clone(), n, &EpisodeConfig::default(), Some(1));
            assert_eq!(p.map(|p| p.turns), Ok(n));
        }
    }

    /// A table of the six-party fixture whose first seat writes a malformed turn and retries:
    /// the table's side of the one prefix rule.
    fn logged_table() -> TableRecord {
        use crate::game::Completion;
        use crate::scenario::{load_table_scenarios, LoadOptions};
        use crate::table::{TableEpisode, TableSetup};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/table/six_party.jsonl");
        let scenario = Arc::new(
            load_table_scenarios(&path, LoadOptions::default())
                .unwrap()
                .scenarios
                .remove(0),
        );
        let options = TableOptions::default();
        let setup = TableSetup::new(&scenario, &options, 9).unwrap();
        let mut e = TableEpisode::new(scenario.clone(), setup).unwrap();
        let deal = scenario.all_deals().next().unwrap();
        let offer = format!(
            "Thought: t\nTalk: how about\nAction: [SUBMIT_DEAL] {}",
            scenario.render_deal(&deal)
        );
        let seat = e.to_move().unwrap();
        e.step(seat, Completion::from("no format")).unwrap();
        for _ in 0..3 {
            let seat = e.to_move().unwrap();
            e.step(seat, Completion::from(offer.as_str())).unwrap();
        }
        TableRecord::of(
            "run",
            EpisodeSeed {
                run: 0,
                group: 0,
                member: 0,
            },
            &e,
            &options,
            &[],
            &[],
        )
    }

    #[test]
    fn a_table_prefix_keeps_its_setup_and_raises_only_the_corrections_it_needs() {
        let record = logged_table();
        assert_eq!(record.turns.len(), 4);
        assert_eq!(
            (record.attempt(0), record.attempt(1), record.attempt(2)),
            (0, 1, 0)
        );
        let strict = EpisodeConfig {
            format_retries: 0,
            ..EpisodeConfig::default()
        };
        // Turn 1 is the retry turn 0 asked for: a prefix of 1 needs one correction.
        let p = LoggedPrefix::new(record.clone(), 1, &strict, None).unwrap();
        assert_eq!(p.setup.retries, 1);
        assert_eq!(p.setup.regulated, record.options.regulated);
        let p = LoggedPrefix::new(record.clone(), 3, &strict, None).unwrap();
        assert_eq!(p.setup.retries, 1, "the retry is within the prefix");
        // The same skip rules as two-party prefixes; a table episode still open at its last
        // logged turn (it had not ended) can be continued from every turn but none past.
        assert_eq!(
            LoggedPrefix::<TableRecord>::new(record.clone(), 0, &strict, None),
            Err(SkipReason::TooShort)
        );
        assert_eq!(
            LoggedPrefix::<TableRecord>::new(record.clone(), 5, &strict, None),
            Err(SkipReason::TooShort)
        );
        // A table has no learner seat: `--targets learner` finds no target.
        assert_eq!(
            target_cuts(&record, Cut::Turns(1), Targets::Learner, None),
            Err(SkipReason::NoTurnOfRole)
        );
        assert_eq!(
            target_cuts(&record, Cut::Turns(1), Targets::Every, None),
            Ok(vec![1, 2, 3])
        );
        let b = LoggedPrefix::branch(record.clone(), 2);
        assert_eq!(b.group.as_deref(), Some("g0-m0.b2"));
        assert_eq!(b.setup, record.options);
    }
}
