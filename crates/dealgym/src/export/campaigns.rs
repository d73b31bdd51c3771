//! `campaigns`: one line per campaign played (per run, campaign and member) and seat — the
//! seat's trajectory through the campaign's deals, in order. Each deal holds the seat's
//! conversation as `messages` writes it, its reward and outcome, and what the deal did to the
//! ledger (before, after, the BATNA, the gain over it); the line holds the campaign's value to
//! the seat that carries the ledger and the sum of the seat's rewards (its return).
//!
//! A campaign's deals are records like any other, and a run writes them as they end, so one
//! campaign's records are not side by side: the deals are gathered as the records are read
//! and written once every file has been read. Memory grows with the campaigns' deals, not with
//! the other records (records of no campaign give no line here).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use crate::campaign::{DealLedger, LedgerState};
use crate::game::{Message, OutcomeKind, Seat};
use crate::record::EpisodeRecord;
use crate::scenario::Role;

use super::messages::conversation;
use super::views::Replayed;
use super::{write_line, Head};

/// One deal of a campaign's trajectory.
#[derive(Debug, Clone, Serialize)]
struct Deal {
    position: u32,
    episode_id: String,
    group_id: String,
    scenario_id: String,
    role: Role,
    outcome: OutcomeKind,
    reward: f64,
    rho: f64,
    utility: f64,
    batna: f64,
    gain: f64,
    before: LedgerState,
    after: LedgerState,
    messages: Vec<Message>,
}

/// One campaign played, by one seat: (run id, campaign, member, seat).
type CampaignKey = (String, String, u64, Seat);

/// The trajectories gathered so far: for each campaign played and seat, the latest deal's
/// ledger and the deals.
#[derive(Default)]
pub(crate) struct Trajectories {
    by_campaign: BTreeMap<CampaignKey, (DealLedger, Vec<Deal>)>,
}

#[derive(Serialize)]
struct Line<'a> {
    run_id: &'a str,
    campaign: &'a str,
    member: u64,
    seat: Seat,
    /// The seat that carries the ledger.
    ledger_seat: Seat,
    ledger: &'a str,
    deals: &'a [Deal],
    /// The deals written, of the campaign's.
    complete: bool,
    /// What the campaign is worth to the seat that carries the ledger, after its last deal
    /// here.
    value: f64,
    /// The sum of the seat's rewards over the deals.
    #[serde(rename = "return")]
    total_reward: f64,
}

impl Trajectories {
    /// Add `record`'s deal for the seat of `head` (a record of no campaign adds nothing and
    /// says so).
    pub fn add(&mut self, head: &Head, record: &EpisodeRecord, replayed: &Replayed) -> bool {
        let Some(ledger) = &record.campaign else {
            return false;
        };
        let seat = head.seat;
        let outcome = &record.outcome.outcome;
        let deal = Deal {
            position: ledger.position,
            episode_id: record.episode_id.clone(),
            group_id: record.group_id.clone(),
            scenario_id: record.scenario_id.clone(),
            role: head.role,
            outcome: record.kind(),
            reward: head.reward,
            rho: head.rho,
            utility: outcome.utility[seat],
            batna: ledger.batna,
            gain: ledger.gain,
            before: ledger.before,
            after: ledger.after,
            messages: conversation(record, replayed, head),
        };
        let key = (
            record.run_id.clone(),
            ledger.campaign.clone(),
            record.seeds.member,
            seat,
        );
        let entry = self
            .by_campaign
            .entry(key)
            .or_insert_with(|| (ledger.clone(), Vec::new()));
        if ledger.position > entry.0.position {
            entry.0 = ledger.clone();
        }
        entry.1.push(deal);
        true
    }

    /// Write one line per campaign and seat, deals in order; the number of lines.
    pub fn write(mut self, out: &mut dyn Write) -> io::Result<usize> {
        let mut lines = 0;
        for ((run_id, campaign, member, seat), (last, deals)) in &mut self.by_campaign {
            deals.sort_by_key(|d| d.position);
            let line = Line {
                run_id,
                campaign,
                member: *member,
                seat: *seat,
                ledger_seat: last.seat,
                ledger: &last.ledger,
                deals,
                complete: deals.len() == last.deals as usize,
                value: last.value,
                total_reward: deals.iter().map(|d| d.reward).sum(),
            };
            write_line(out, &line)?;
            lines += 1;
        }
        Ok(lines)
    }
}
