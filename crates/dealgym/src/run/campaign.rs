//! `run --campaigns`: campaigns of deals played through the one driver and executor. A
//! campaign's deals are played in order, each with the standing the earlier ones left the seat
//! that carries the ledger (`campaign::Standing`, set on the deal's setup by the driver);
//! campaigns are played side by side, bounded by `--concurrency` (the executor holds one
//! permit per campaign while it plays).
//!
//! Each deal is one record, named and seeded as any planned episode: campaign c's deal k
//! (from 0) in member m is episode `g{G}-m{m}` with G = the deals of the campaigns before c,
//! plus k. So a group is one deal of one campaign, its members the `--group-size` plays of the
//! whole campaign, and every surface that reads records reads a campaign's deals unchanged;
//! the record's `campaign` block (and its setup's standing) links them.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use crate::campaign::{budget_of, load_campaigns, Campaign, EarlierDeal, LedgerState, Standing};
use crate::digest::Digest;
use crate::game::{EpisodeSeed, Seat};
use crate::record::{EpisodeRecord, RecordReader};
use crate::scenario::{load_scenarios, Family, LoadOptions, Scenario};

use super::{EpisodeError, EpisodeKit, Finished, Job, PlannedEpisode, RunError, RunOptions, Shard};

/// One member's play of one campaign.
#[derive(Debug, Clone)]
pub(crate) struct PlannedCampaign {
    pub campaign: Arc<Campaign>,
    /// Its deals' scenario digests, computed once per campaign.
    pub digests: Arc<Vec<Digest>>,
    /// The campaign's place in its file, from 0 (shards take whole campaigns by it).
    pub index: usize,
    /// The group of its first deal.
    pub first_group: u64,
    pub member: u64,
    pub seed: u64,
    /// Where a campaign written in part goes on (`--resume`): its first deal not written, and
    /// the ledger and earlier deals its last written deal left. `None`: from the first deal.
    pub resume: Option<Arc<Resumed>>,
}

/// A campaign's state after its deals already written, read back from their records.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// The first deal (from 0) left to play.
    pub from: usize,
    pub before: LedgerState,
    pub earlier: Vec<EarlierDeal>,
}

impl PlannedCampaign {
    /// Deal `k` (from 0) as a planned episode, with the standing `standing` for the seat that
    /// carries the ledger.
    fn deal(&self, k: usize, standing: Standing) -> PlannedEpisode {
        let scenario = self.campaign.deals[k].clone();
        PlannedEpisode {
            scenario_digest: self.digests[k],
            scenario,
            seeds: EpisodeSeed {
                run: self.seed,
                group: self.first_group + k as u64,
                member: self.member,
            },
            prefix: None,
            tag: None,
            standing: Some((self.campaign.seat, standing)),
            learner_role: None,
        }
    }

    /// The ids of its deals' episodes, in order.
    pub fn episode_ids(&self) -> Vec<String> {
        (0..self.campaign.deals.len())
            .map(|k| {
                EpisodeSeed {
                    run: self.seed,
                    group: self.first_group + k as u64,
                    member: self.member,
                }
                .episode_id()
            })
            .collect()
    }
}

/// Every campaign of a run, each played by `group_size` members.
pub(crate) fn plan_campaigns(
    campaigns: &[Arc<Campaign>],
    seed: u64,
    group_size: u32,
) -> Vec<PlannedCampaign> {
    let mut first_group = 0u64;
    let mut out = Vec::new();
    for (index, campaign) in campaigns.iter().enumerate() {
        let digests = Arc::new(campaign.deals.iter().map(|s| s.digest()).collect());
        for member in 0..u64::from(group_size.max(1)) {
            out.push(PlannedCampaign {
                campaign: campaign.clone(),
                digests: Arc::clone(&digests),
                index,
                first_group,
                member,
                seed,
                resume: None,
            });
        }
        first_group += campaign.deals.len() as u64;
    }
    out
}

/// The campaigns shard `shard` plays: whole campaigns, campaign c to shard `c mod count`.
pub(crate) fn shard_campaigns(plan: Vec<PlannedCampaign>, shard: &Shard) -> Vec<PlannedCampaign> {
    plan.into_iter()
        .filter(|p| shard.takes_group(p.index as u64))
        .collect()
}

/// The standing of deal `k` of `planned`, given the ledger `before` it and the earlier deals:
/// its BATNA from the ledger kind, and for a `budget` ledger the budget it may spend.
fn standing(
    kit: &EpisodeKit,
    planned: &PlannedCampaign,
    k: usize,
    before: LedgerState,
    earlier: &[EarlierDeal],
) -> Standing {
    let campaign = &planned.campaign;
    let scenario = &campaign.deals[k];
    let no_deal = kit.episode.no_deal_value.unwrap_or(scenario.no_deal_value);
    Standing {
        campaign: campaign.id.clone(),
        position: k as u32 + 1,
        deals: campaign.deals.len() as u32,
        ledger: campaign.ledger.clone(),
        before,
        batna: campaign.ledger.batna(&before, no_deal),
        // The buyer's budget as the deal plays it (`[episode] craigslist_budget` may set it),
        // capped by the money left.
        budget: kit
            .episode
            .craigslist_budget
            .budget_for(scenario)
            .or_else(|| budget_of(scenario))
            .and_then(|b| campaign.ledger.budget_cap(&before, b)),
        earlier: earlier.to_vec(),
    }
}

/// What a deal's record tells the next deals: its ending and the seat's utility and price.
fn earlier_deal(record: &EpisodeRecord, scenario: &Scenario, seat: Seat) -> EarlierDeal {
    let outcome = &record.outcome.outcome;
    EarlierDeal {
        scenario: scenario.id.clone(),
        title: scenario.public.title.clone(),
        ending: outcome.kind.name().to_string(),
        utility: outcome.utility[seat],
        price: outcome.terms.as_ref().and_then(|t| t.price()),
    }
}

/// Play one member's campaign: each deal in order through the driver (`play`), each record
/// handed to `deal_done` as its deal ends, the ledger carried from one deal's record to the
/// next deal's standing (a backend `error` is no deal: the ledger stays). `go_on` is asked
/// before each deal after the first (a stop drains between deals). A deal that could not be
/// played, or panicked, ends the campaign there: its ledger would be a guess.
pub(crate) async fn play_campaign<P, F, Fut>(
    kit: Arc<EpisodeKit>,
    planned: PlannedCampaign,
    play: P,
    mut deal_done: impl FnMut(String, Result<Finished, EpisodeError>) -> Fut,
    go_on: impl Fn() -> bool,
) where
    P: Fn(Arc<EpisodeKit>, PlannedEpisode) -> F,
    F: std::future::Future<Output = Result<Finished, EpisodeError>>,
    Fut: std::future::Future<Output = bool>,
{
    let (from, mut before, mut earlier) = match &planned.resume {
        Some(r) => (r.from, r.before, r.earlier.clone()),
        None => (0, planned.campaign.ledger.opening(), Vec::new()),
    };
    for k in from..planned.campaign.deals.len() {
        if k > from && !go_on() {
            return;
        }
        let deal = planned.deal(k, standing(&kit, &planned, k, before, &earlier));
        let episode = deal.episode_id();
        let played = play(kit.clone(), deal).await;
        let next = match &played {
            Ok(finished) if !finished.internal_error => {
                finished.record.campaign.as_ref().map(|c| {
                    let scenario = &planned.campaign.deals[k];
                    (
                        c.after,
                        earlier_deal(&finished.record, scenario, planned.campaign.seat),
                    )
                })
            }
            _ => None,
        };
        if !deal_done(episode, played).await {
            return;
        }
        // A backend `error` is no deal (the ledger stays as it was) and the campaign goes on;
        // a deal that could not be played, or panicked, ends it.
        match next {
            Some((after, told)) => {
                before = after;
                earlier.push(told);
            }
            None => return,
        }
    }
}

/// Read the campaigns file `file`, its deals' scenarios found in `scenarios` (every file
/// loaded) or, with none, in `scenarios/{family}.jsonl` of each id's family (`family:…`).
pub(crate) fn read_campaigns_for(
    file: &Path,
    scenarios: &[PathBuf],
) -> Result<Vec<Arc<Campaign>>, RunError> {
    let loaded: RefCell<HashMap<String, Arc<Scenario>>> = RefCell::new(HashMap::new());
    let families: RefCell<HashSet<Family>> = RefCell::new(HashSet::new());
    let failed: RefCell<Option<RunError>> = RefCell::new(None);
    let absorb = |path: &Path| match load_scenarios(path, LoadOptions::default()) {
        Ok(report) => {
            let mut map = loaded.borrow_mut();
            for s in report.scenarios {
                map.entry(s.id.clone()).or_insert_with(|| Arc::new(s));
            }
        }
        Err(e) => {
            failed.borrow_mut().get_or_insert(e.into());
        }
    };
    for path in scenarios {
        absorb(path);
    }
    let find = |id: &str| {
        if scenarios.is_empty() {
            let family = id.split(':').next().and_then(|f| Family::from_str(f).ok());
            if let Some(family) = family {
                if families.borrow_mut().insert(family) {
                    let path = Path::new(crate::scenario::SCENARIO_DIR)
                        .join(format!("{}.jsonl", family.name()));
                    if crate::scenario::scenario_file_exists(&path) {
                        absorb(&path);
                    }
                }
            }
        }
        loaded.borrow().get(id).cloned()
    };
    let read = load_campaigns(file, find);
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    Ok(read?.into_iter().map(Arc::new).collect())
}

/// The words a campaign run's id digests: each campaign's id, seat, ledger and deals.
pub(crate) fn identity(campaigns: &[Arc<Campaign>]) -> Vec<String> {
    let mut words = vec!["campaigns".to_string()];
    for c in campaigns {
        words.push(format!("{}|{:?}|{:?}", c.id, c.seat, c.ledger));
        words.extend(c.deals.iter().map(|s| s.id.clone()));
    }
    words
}

/// Whether `options` plays campaigns (`--campaigns FILE`).
pub(crate) fn campaign_file(options: &RunOptions) -> Option<&Path> {
    options.campaigns.as_deref()
}

/// The campaigns of a run (or of every pairing of an eval), planned and sharded.
pub(crate) struct CampaignPlan {
    /// What the run id folds in: every campaign's id, seat, ledger and deals.
    pub identity: Vec<String>,
    /// The members' campaigns this process plays (its shard's).
    pub planned: Vec<PlannedCampaign>,
    /// Their deals, all told.
    pub deals: usize,
    /// The deals of the whole plan, every shard's.
    pub whole_plan: usize,
}

impl CampaignPlan {
    /// The scenarios of the deals this process plays (a deal's scenario once per member).
    pub fn scenarios(&self) -> impl Iterator<Item = &Scenario> {
        self.planned
            .iter()
            .flat_map(|p| p.campaign.deals.iter().map(|s| &**s))
    }

    /// Read `file` and plan its campaigns under `options` (seed, group size, shard), checking
    /// the plan's size for `pairings` pairings.
    pub fn read(options: &RunOptions, file: &Path, pairings: usize) -> Result<Self, RunError> {
        let campaigns = read_campaigns_for(file, &options.scenarios)?;
        let deals: usize = campaigns.iter().map(|c| c.deals.len()).sum();
        options.check_plan_size(deals, "campaign deals", pairings)?;
        let plan = plan_campaigns(&campaigns, options.seed, options.group_size);
        let whole_plan = plan.iter().map(|p| p.campaign.deals.len()).sum();
        let planned = match &options.shard {
            Some(s) => shard_campaigns(plan, s),
            None => plan,
        };
        Ok(CampaignPlan {
            identity: identity(&campaigns),
            deals: planned.iter().map(|p| p.campaign.deals.len()).sum(),
            planned,
            whole_plan,
        })
    }

    /// The jobs left for `kit` given the episodes already written (`done`, in `out`), and the
    /// deals skipped: a campaign whose deals are all written is skipped; one written in part
    /// (a stop, a crash) goes on from its first deal not written, with the ledger and the
    /// earlier deals its last written deal's record holds.
    pub fn jobs(
        &self,
        kit: &Arc<EpisodeKit>,
        done: &std::collections::HashSet<String>,
        out: &Path,
    ) -> Result<(Vec<Job>, usize), RunError> {
        let mut todo = Vec::new();
        let mut skipped = 0;
        let mut partial: Vec<(PlannedCampaign, usize)> = Vec::new();
        for p in &self.planned {
            let ids = p.episode_ids();
            let written = ids.iter().take_while(|id| done.contains(*id)).count();
            if ids[written..].iter().any(|id| done.contains(id)) {
                return Err(RunError::Options(format!(
                    "{}: campaign {} (member {}) has deals written after one that is not: the file is not one this run wrote in order",
                    out.display(),
                    p.campaign.id,
                    p.member
                )));
            }
            skipped += written;
            if written == ids.len() {
                continue;
            }
            if written == 0 {
                todo.push(Job::Campaign(kit.clone(), p.clone()));
            } else {
                partial.push((p.clone(), written));
            }
        }
        if partial.is_empty() {
            return Ok((todo, skipped));
        }
        let last: HashMap<String, usize> = partial
            .iter()
            .enumerate()
            .map(|(i, (p, written))| (p.episode_ids()[written - 1].clone(), i))
            .collect();
        let mut found: Vec<Option<Resumed>> = vec![None; partial.len()];
        for record in RecordReader::open(out)?.only(crate::record::RecordsKind::TwoParty) {
            let record = record?;
            if record.run_id != kit.run_id {
                continue;
            }
            if let Some(&i) = last.get(&record.episode_id) {
                let (p, written) = &partial[i];
                found[i] = resumed_after(&record, p, *written);
            }
        }
        for ((mut p, _), resumed) in partial.into_iter().zip(found) {
            let resumed = resumed.ok_or_else(|| {
                RunError::Options(format!(
                    "{}: campaign {} (member {}): the record of its last written deal holds no campaign ledger to go on from",
                    out.display(),
                    p.campaign.id,
                    p.member
                ))
            })?;
            p.resume = Some(Arc::new(resumed));
            todo.push(Job::Campaign(kit.clone(), p));
        }
        Ok((todo, skipped))
    }
}

/// Where `planned` goes on after its first `written` deals, the last of which is `record`.
fn resumed_after(
    record: &EpisodeRecord,
    planned: &PlannedCampaign,
    written: usize,
) -> Option<Resumed> {
    let seat = planned.campaign.seat;
    let ledger = record.campaign.as_ref()?;
    let standing = record.setup.seats[seat].campaign.as_ref()?;
    let mut earlier = standing.earlier.clone();
    earlier.push(earlier_deal(
        record,
        &planned.campaign.deals[written - 1],
        seat,
    ));
    Some(Resumed {
        from: written,
        before: ledger.after,
        earlier,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{BestOffer, LedgerKind};
    use crate::fixtures::{casino, job};

    fn campaign(id: &str, deals: usize) -> Arc<Campaign> {
        Arc::new(Campaign {
            id: id.into(),
            seat: Seat::Learner,
            ledger: LedgerKind::BestOffer(BestOffer { start: 0.0 }),
            deals: (0..deals)
                .map(|i| if i % 2 == 0 { job() } else { casino() })
                .collect(),
            file: "c.jsonl".into(),
            line: 1,
        })
    }

    #[test]
    fn each_deal_is_a_group_and_each_member_plays_the_whole_campaign() {
        let plan = plan_campaigns(&[campaign("a", 2), campaign("b", 3)], 9, 2);
        let ids: Vec<(String, u64, Vec<String>)> = plan
            .iter()
            .map(|p| (p.campaign.id.clone(), p.member, p.episode_ids()))
            .collect();
        let row = |id: &str, m: u64, ids: &[&str]| {
            (
                id.to_string(),
                m,
                ids.iter().map(|s| s.to_string()).collect(),
            )
        };
        assert_eq!(
            ids,
            [
                row("a", 0, &["g0-m0", "g1-m0"]),
                row("a", 1, &["g0-m1", "g1-m1"]),
                row("b", 0, &["g2-m0", "g3-m0", "g4-m0"]),
                row("b", 1, &["g2-m1", "g3-m1", "g4-m1"]),
            ]
        );
        assert!(plan.iter().all(|p| p.seed == 9 && p.resume.is_none()));
        assert_eq!(plan[2].digests[1], casino().digest());
        // Shards take whole campaigns, every member of one on the same shard.
        let second = shard_campaigns(plan, &Shard::new(1, 2, "t").unwrap());
        let taken: Vec<(&str, u64)> = second
            .iter()
            .map(|p| (p.campaign.id.as_str(), p.member))
            .collect();
        assert_eq!(taken, [("b", 0), ("b", 1)]);
    }
}
