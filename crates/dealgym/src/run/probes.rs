//! Belief probes asked of a run's model seats (`[probes] beliefs = true`; the book's
//! `guide/eval.md`, "Does it know what the other side wants?"): before a chosen turn of its own,
//! a model seat is sent its own conversation so far and the probe question
//! (`score::belief_question`) in one extra chat call. The call is never forwarded, never joins
//! the seat's history or token trajectory (it is a plain chat call even for a token-exact
//! seat), draws nothing from the episode's seeds, and a failed call is recorded, not an
//! ending: the episode is the one it would have been without it. The driver asks
//! ([`ask_belief`]) and keeps the answers; the record's `probes` score them
//! (`score::Probe::scored`).

use std::path::Path;

use crate::agents::Player;
use crate::game::{mix, Episode, Message, MessageRole, PerSeat, Seat};
use crate::record::Existing;
use crate::scenario::Scenario;
use crate::score::{belief_question, check_probed_family, Probe};
use crate::vocab::Usage;

use super::config::ProbesConfig;
use super::driver::SeatPlayer;
use super::RunError;

/// What salts a probe call's sampling seed, so it is never a turn's seed.
const PROBE_SALT: u64 = 0x5052_4f42_4542_4c46;

/// One probe's answer, before it is scored into the record.
#[derive(Debug, Clone)]
pub(crate) struct ProbeAnswer {
    pub(crate) seat: Seat,
    pub(crate) turn: u32,
    pub(crate) answer: String,
    pub(crate) usage: Option<Usage>,
    pub(crate) failed: Option<String>,
}

impl ProbeAnswer {
    /// The answer scored against the scenario the episode was played on.
    pub(crate) fn scored(self, scenario: &Scenario, setup: &crate::game::Setup) -> Probe {
        Probe::scored(
            scenario,
            setup,
            self.seat,
            self.turn,
            self.answer,
            self.usage,
            self.failed,
        )
    }
}

/// The turn `seat` is about to play (1 for its first move) where `probes` ask before it and it
/// was not asked already (a turn asked again after a malformed completion is not probed
/// twice); `None` otherwise.
pub(crate) fn turn_to_probe(
    probes: &ProbesConfig,
    episode: &Episode,
    seat: Seat,
    asked: &[ProbeAnswer],
) -> Option<u32> {
    let turn = episode.moves()[seat] + 1;
    (probes.asks_before(turn) && !asked.iter().any(|a| a.seat == seat && a.turn == turn))
        .then_some(turn)
}

/// Ask `player` (a model seat) the probe before its turn `turn`: its own view of `episode`
/// and the question, in one chat call with a seed of its own. `None` for a player that is no
/// model (it is never probed).
pub(crate) async fn ask_belief(
    player: &Player,
    episode: &Episode,
    seat: Seat,
    turn: u32,
    sampling_seed: u64,
) -> Option<ProbeAnswer> {
    let client = player.chat_client()?;
    let answer = |answer: String, usage, failed| ProbeAnswer {
        seat,
        turn,
        answer,
        usage,
        failed,
    };
    let question = match belief_question(episode.scenario(), episode.setup(), seat) {
        Ok(q) => q,
        Err(e) => return Some(answer(String::new(), None, Some(e.to_string()))),
    };
    let mut messages = episode.view(seat).to_vec();
    messages.push(Message::new(MessageRole::User, question));
    let seed = mix(&[sampling_seed, u64::from(turn), PROBE_SALT]);
    Some(
        match client
            .complete_with(&messages, seed, serde_json::Map::new())
            .await
        {
            Ok(reply) => answer(reply.text, reply.call.usage, None),
            Err(e) => answer(String::new(), None, Some(e.to_string())),
        },
    )
}

/// Probes refused where they cannot be honoured: settings that do not fit
/// ([`ProbesConfig::check`]), no model seat to ask, a scenario whose family has no figure to
/// ask about. Nothing to check with probes off.
pub(crate) fn check_probes<'a>(
    probes: &ProbesConfig,
    players: &PerSeat<SeatPlayer>,
    scenarios: impl IntoIterator<Item = &'a Scenario>,
) -> Result<(), RunError> {
    probes.check().map_err(RunError::Options)?;
    require_model_seat(
        probes,
        has_model_seat(players),
        "run's seats",
        Seat::BOTH.map(|seat| players[seat].spec().to_string()),
    )?;
    check_probed_scenarios(probes, scenarios)
}

/// The one refusal of probes with no model seat to ask (a run's seats, an eval's entrants):
/// with `probes.beliefs` and no model among them, an error naming `whose` (`"run's seats"`,
/// `"eval's entrants"`) and their `specs`.
pub(crate) fn require_model_seat(
    probes: &ProbesConfig,
    any_model: bool,
    whose: &str,
    specs: impl IntoIterator<Item = String>,
) -> Result<(), RunError> {
    if !probes.beliefs || any_model {
        return Ok(());
    }
    let specs: Vec<String> = specs
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Err(RunError::Options(format!(
        "[probes] beliefs = true (--belief-probes) asks model seats (openai:… or a \
         [players.NAME] endpoint), and this {whose} are {}: there is no one to ask; drop the \
         probes or seat a model",
        specs.join(", ")
    )))
}

/// A resumed output written with the same `[probes]`: probes are no part of the run id (a run
/// with them plays the episodes it would without), so a resume that turned them on or off
/// would mix records with probes and records without. Refused: records with probes resumed
/// without them, and records none of which has a probe resumed with them (a run started
/// without probes; or, rarely, one none of whose episodes reached a probed turn).
pub(crate) fn check_resumed_probes(
    probes: &ProbesConfig,
    existing: &Existing,
    out: &Path,
) -> Result<(), RunError> {
    let episodes = existing.episodes();
    let out = out.display();
    if !probes.beliefs && existing.probed > 0 {
        return Err(RunError::Options(format!(
            "--resume: {out} holds {} records with belief probes, and this run has [probes] \
             beliefs off: resume with the same [probes] (--belief-probes), or write to another \
             --out",
            existing.probed
        )));
    }
    if probes.beliefs && episodes > 0 && existing.probed == 0 {
        return Err(RunError::Options(format!(
            "--resume: {out} holds {episodes} records and none has belief probes (the run was \
             started without them), and this run has [probes] beliefs = true \
             (--belief-probes): resume without probes, or write to another --out"
        )));
    }
    Ok(())
}

/// Whether a seat of `players` is a model a belief probe can ask (a chat endpoint's player).
pub(crate) fn has_model_seat(players: &PerSeat<SeatPlayer>) -> bool {
    Seat::BOTH.into_iter().any(|seat| match &players[seat] {
        SeatPlayer::Local(p) => p.chat_client().is_some(),
        SeatPlayer::External { .. } => false,
    })
}

/// The settings and the scenarios of [`check_probes`], without its model seat: an eval's
/// pairings of two rules (its baseline among them) play on unasked beside its models'.
pub(crate) fn check_probed_scenarios<'a>(
    probes: &ProbesConfig,
    scenarios: impl IntoIterator<Item = &'a Scenario>,
) -> Result<(), RunError> {
    probes.check().map_err(RunError::Options)?;
    if !probes.beliefs {
        return Ok(());
    }
    for scenario in scenarios {
        check_probed_family(scenario)
            .map_err(|e| RunError::Options(format!("scenario {}: {e}", scenario.id)))?;
    }
    Ok(())
}
