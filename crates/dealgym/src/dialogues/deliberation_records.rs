//! LLM-Deliberation sessions as table records: each complete session played through the table
//! engine with its own turn order, so that `TableRecord::replay` checks it and every surface
//! that reads table records reads it.
//!
//! - The schedule is the log's own (the record's `source` says so, and replay keeps it): the
//!   lead's opening, every logged turn in order (round `k` holding turns `(k − 1)·n + 1 … k·n`),
//!   then the lead's final proposal. There are no vote slots: the paper's logs hold no votes (its
//!   notebooks judge agreement on scores), so the episode ends at the end of its schedule and the
//!   record's metrics carry the paper's figures, read from the proposals.
//! - Each turn's completion is written in the tagged grammar: an empty thought, the public answer
//!   as the talk, and `[SUBMIT_DEAL]` with the deal the notebook's reading finds in the answer, or
//!   `[TALK]` where it finds none. The current layout's full answer (with the scratchpad) is the
//!   completion's reasoning, never forwarded.
//! - The seats' system prompts are dealgym's, rendered from the scenario; the paper's own round
//!   prompts stay in the sessions file.

use std::sync::Arc;

use crate::game::{Completion, EpisodeSeed};
use crate::record::{TablePlayerInfo, TableRecord};
use crate::scenario::TableScenario;
use crate::table::{Slot, SlotKind, TableEpisode, TableOptions, TableSetup};

use super::deliberation::{LogTurn, LoggedSession, Proposed};

/// The completion a logged turn is played as.
pub fn completion(scenario: &TableScenario, turn: &LogTurn) -> Completion {
    // The talk must not end the line early or start a new part: the answer on its lines as is,
    // a line that would read as a label indented.
    let talk: Vec<String> = turn
        .public_answer
        .trim()
        .lines()
        .map(|l| {
            let lower = l.trim_start().to_ascii_lowercase();
            if ["thought:", "talk:", "action:"]
                .iter()
                .any(|p| lower.starts_with(p))
            {
                format!("  {l}")
            } else {
                l.to_string()
            }
        })
        .collect();
    let action = match &turn.proposed {
        Proposed::Deal { deal } => format!("[SUBMIT_DEAL] {}", scenario.render_deal(deal)),
        _ => "[TALK]".to_string(),
    };
    Completion {
        text: format!("Thought: \nTalk: {}\nAction: {action}", talk.join("\n")),
        reasoning: turn.full_answer.clone(),
        ..Completion::default()
    }
}

/// The record of one complete session (`index` its place in the experiment), or why it could
/// not be played.
pub(crate) fn session_record(
    experiment: &str,
    group: u64,
    index: u64,
    source: &str,
    scenario: &Arc<TableScenario>,
    session: &LoggedSession,
) -> Result<TableRecord, String> {
    let n = scenario.parties.len();
    let seat_of = |t: &LogTurn| {
        t.role
            .as_deref()
            .and_then(|r| scenario.seat_of(r))
            .ok_or_else(|| format!("`{}` is no party of {}", t.agent, scenario.id))
    };
    let lead = scenario.lead().ok_or("the game has no lead")?;
    let final_turn = session.final_turn.as_ref().ok_or("no final proposal")?;
    let mut schedule = Vec::with_capacity(session.turns.len() + 1);
    for (i, t) in session.turns.iter().enumerate() {
        let seat = seat_of(t)?;
        let kind = if i == 0 && seat == lead {
            SlotKind::Opening
        } else {
            SlotKind::Round {
                round: (i.saturating_sub(1) / n) as u32 + 1,
            }
        };
        schedule.push(Slot { seat, kind });
    }
    schedule.push(Slot {
        seat: lead,
        kind: SlotKind::Final,
    });
    let options = TableOptions {
        retries: 0,
        ..TableOptions::default()
    };
    let seeds = EpisodeSeed {
        run: 0,
        group,
        member: index,
    };
    let mut setup = TableSetup::new(scenario, &options, 0).map_err(|e| e.to_string())?;
    setup.schedule = schedule;
    let mut episode = TableEpisode::new(scenario.clone(), setup).map_err(|e| e.to_string())?;
    for t in session.turns.iter().chain(std::iter::once(final_turn)) {
        let seat = if std::ptr::eq(t, final_turn) {
            lead
        } else {
            seat_of(t)?
        };
        let step = episode
            .step(seat, completion(scenario, t))
            .map_err(|e| e.to_string())?;
        if let Some(error) = step.error {
            return Err(format!("turn of `{}`: {}", t.agent, error.message));
        }
    }
    let players: Vec<TablePlayerInfo> = scenario
        .parties
        .iter()
        .map(|_| TablePlayerInfo {
            player: format!("log:{experiment}"),
            model: None,
        })
        .collect();
    let mut record = TableRecord::of(
        &format!("llm-deliberation:{experiment}"),
        seeds,
        &episode,
        &options,
        &players,
        &[],
    );
    record.source = Some(format!("llm-deliberation/logs/{source}:{}", session.file));
    Ok(record)
}
