//! The run plan: which episodes a run plays, as pure data. Scenario g (in file order, after
//! `--scenario-split`, `--sample` and `--limit`: `select.rs`) gives GRPO group g of `group_size` members; member m of group g is episode
//! `g{g}-m{m}` with seeds (run seed, g, m). With `[episode] seatings = "both"` scenario i gives
//! two groups, 2i with the learner in the scenario's first role and 2i + 1 in its second. Nothing here does I/O or looks at players, so the
//! same scenarios, seed and group size always give the same plan, and resuming, limiting or
//! sharding a run are filters on it.
//!
//! Sharding ([`shard`]) hands out whole groups: group g goes to shard `g mod n`. Every episode
//! lands in exactly one shard, a GRPO group is never split across machines, shards differ in
//! size by at most one group, and each scenario file is spread over all shards (files are
//! usually sorted by family, so contiguous blocks would give one machine one family). Nothing
//! about an episode depends on the shard that plays it: the record is the same byte for byte.

use std::collections::HashSet;
use std::sync::Arc;

use crate::campaign::Standing;
use crate::digest::Digest;
use crate::game::{EpisodeSeed, Seat, Seatings};
use crate::record::EpisodeRecord;
use crate::scenario::{Role, Scenario};

use super::prefix::LoggedPrefix;

/// One episode of the plan.
#[derive(Debug, Clone)]
pub struct PlannedEpisode {
    pub(crate) scenario: Arc<Scenario>,
    /// The scenario's [`Scenario::digest`], computed once per scenario (the record keeps it).
    pub(crate) scenario_digest: Digest,
    pub(crate) seeds: EpisodeSeed,
    /// The logged prefix the episode continues (`run --prefixes`), shared by its group; `None`
    /// for an episode played from the start.
    pub(crate) prefix: Option<Arc<LoggedPrefix>>,
    /// The tag of the request that planned it (a server's rollout request, `r{N}`), put
    /// before its ids so no two requests of one log share an episode or a group.
    pub(crate) tag: Option<Arc<str>>,
    /// A campaign's deal: the seat that carries the ledger and what the earlier deals left it
    /// (`run --campaigns`, see `campaign.rs`); `None` outside campaigns.
    pub(crate) standing: Option<(Seat, Standing)>,
    /// The learner's role, where the plan chose the seating (`seatings = "both"`); `None`:
    /// as the episode config says.
    pub(crate) learner_role: Option<Role>,
}

impl PlannedEpisode {
    /// The episode's id: `{group}-m{member}`.
    pub fn episode_id(&self) -> String {
        format!("{}-m{}", self.group_id(), self.seeds.member)
    }

    /// The episode's GRPO group: the plan's `g{G}`, or the name its logged prefix gives its
    /// continuations (a branch's `E.bN`), after the request's tag where it has one (`r3-g0`).
    pub(crate) fn group_id(&self) -> String {
        let group = super::prefix::group_of(self.prefix.as_deref(), self.seeds);
        match &self.tag {
            Some(tag) => format!("{tag}-{group}"),
            None => group,
        }
    }

    /// This episode, planned by the request `tag`.
    pub(crate) fn tagged(self, tag: &Arc<str>) -> PlannedEpisode {
        PlannedEpisode {
            tag: Some(tag.clone()),
            ..self
        }
    }

    /// Name `record` (played from this plan entry) as the plan does: its ids and, for a
    /// continuation, its parent. The one place a played record gets the plan's names.
    pub fn name(&self, record: &mut EpisodeRecord) {
        record.episode_id = self.episode_id();
        record.group_id = self.group_id();
        if let Some(logged) = &self.prefix {
            record.parent = Some(logged.parent());
        }
    }
}

/// The first `n` episode ids of a plan with groups of `group_size`, in plan order: the ids
/// [`plan`] gives its episodes, without the scenarios (what `merge` checks a file against).
pub(crate) fn planned_ids(n: usize, group_size: u64) -> Vec<String> {
    let group_size = group_size.max(1);
    (0..n as u64)
        .map(|i| {
            EpisodeSeed {
                run: 0,
                group: i / group_size,
                member: i % group_size,
            }
            .episode_id()
        })
        .collect()
}

/// Every episode of a run: each scenario as one group of `group_size` members per seating
/// (`seatings = "both"`: two groups, the learner in the scenario's first role, then its second).
pub fn plan(
    scenarios: &[Arc<Scenario>],
    seed: u64,
    group_size: u32,
    seatings: Seatings,
) -> Vec<PlannedEpisode> {
    let seated: Vec<(&Arc<Scenario>, Option<Role>)> = scenarios
        .iter()
        .flat_map(|scenario| {
            let roles = scenario.roles();
            match seatings {
                Seatings::One => vec![(scenario, None)],
                Seatings::Both => roles.iter().map(|r| (scenario, Some(*r))).collect(),
            }
        })
        .collect();
    seated
        .into_iter()
        .enumerate()
        .flat_map(|(g, (scenario, learner_role))| {
            let scenario_digest = scenario.digest();
            (0..group_size).map(move |m| PlannedEpisode {
                scenario: scenario.clone(),
                scenario_digest,
                seeds: EpisodeSeed {
                    run: seed,
                    group: g as u64,
                    member: u64::from(m),
                },
                prefix: None,
                tag: None,
                standing: None,
                learner_role,
            })
        })
        .collect()
}

/// One slice of a plan split over `count` machines: shard `index` (0-based) of `count`, and where
/// that choice came from (a flag or a scheduler's environment variable), for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub(crate) index: u64,
    pub count: u64,
    /// `--shard`, `SLURM_ARRAY_TASK_ID`, `JOB_COMPLETION_INDEX`: said in the summary.
    pub(crate) from: String,
}

impl Shard {
    /// Shard `index` of `count`, chosen by `from`; refused unless `index < count`.
    pub(crate) fn new(index: u64, count: u64, from: impl Into<String>) -> Result<Shard, String> {
        let from = from.into();
        if count == 0 {
            return Err(format!("{from}: the shard count must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "{from}: shard index {index} is not below the shard count {count} (shards are numbered 0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count, from })
    }

    /// `--shard i/n`: shard i (0-based) of n.
    pub fn parse(given: &str) -> Result<Shard, String> {
        let bad =
            || format!("--shard `{given}`: expected i/n, e.g. 0/8 (shards are numbered from 0)");
        let (i, n) = given.split_once('/').ok_or_else(bad)?;
        let i = i.trim().parse().map_err(|_| bad())?;
        let n = n.trim().parse().map_err(|_| bad())?;
        Shard::new(i, n, "--shard")
    }

    /// The shard a cluster scheduler gave this process, when no `--shard` was given: a Slurm
    /// array task (`SLURM_ARRAY_TASK_ID` minus `SLURM_ARRAY_TASK_MIN` of
    /// `SLURM_ARRAY_TASK_COUNT`) or a Kubernetes Indexed Job pod (`JOB_COMPLETION_INDEX` of
    /// `count`, else of `DEALGYM_SHARD_COUNT`). `count` (`--shard-count`) overrides the
    /// scheduler's count. `None` outside either; `env` looks a variable up (the process
    /// environment, or a map in tests).
    pub fn from_env(
        count: Option<u64>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, String> {
        let number = |name: &str| -> Result<Option<u64>, String> {
            match env(name) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{name}={v:?}: expected a whole number (0, 1, 2, …)")),
            }
        };
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let n = match count {
                Some(n) => n,
                None => number("SLURM_ARRAY_TASK_COUNT")?.ok_or(
                    "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: give --shard-count N or --shard i/n",
                )?,
            };
            let index = id.checked_sub(min).ok_or_else(|| {
                format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")
            })?;
            return Shard::new(index, n, "SLURM_ARRAY_TASK_ID").map(Some);
        }
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let n = match count {
                Some(n) => n,
                None => number("DEALGYM_SHARD_COUNT")?.ok_or(
                    "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but the shard count is not: give --shard-count N or set DEALGYM_SHARD_COUNT to the Job's completions",
                )?,
            };
            return Shard::new(index, n, "JOB_COMPLETION_INDEX").map(Some);
        }
        Ok(None)
    }

    /// Whether this shard plays group `group` (of a run's plan, or of every pairing of an
    /// eval: all episodes of one setup stay on one machine).
    pub(crate) fn takes_group(&self, group: u64) -> bool {
        group % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "shard {}/{} (from {})",
            self.index, self.count, self.from
        )
    }
}

/// The episodes of the plan that shard `shard` plays: whole groups, group g to shard
/// `g mod count`, in plan order.
pub(crate) fn shard(plan: Vec<PlannedEpisode>, shard: &Shard) -> Vec<PlannedEpisode> {
    plan.into_iter()
        .filter(|p| shard.takes_group(p.seeds.group))
        .collect()
}

/// The plan without the episodes already written (`--resume`).
pub(crate) fn without_done(
    plan: Vec<PlannedEpisode>,
    done: &HashSet<String>,
) -> Vec<PlannedEpisode> {
    plan.into_iter()
        .filter(|p| !done.contains(&p.episode_id()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{load_scenarios, LoadOptions};

    fn scenarios(n: usize) -> Vec<Arc<Scenario>> {
        let file = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("scenarios/casino.jsonl");
        load_scenarios(&file, LoadOptions::default())
            .unwrap()
            .scenarios
            .into_iter()
            .take(n)
            .map(Arc::new)
            .collect()
    }

    #[test]
    fn planned_ids_follow_the_plans_order() {
        assert_eq!(
            planned_ids(5, 2),
            ["g0-m0", "g0-m1", "g1-m0", "g1-m1", "g2-m0"]
        );
        assert_eq!(planned_ids(2, 0), ["g0-m0", "g1-m0"]);
    }

    #[test]
    fn groups_share_a_scenario_and_ids_follow_the_order() {
        let s = scenarios(3);
        let p = plan(&s, 7, 2, Seatings::One);
        let ids: Vec<String> = p.iter().map(PlannedEpisode::episode_id).collect();
        assert_eq!(ids, ["g0-m0", "g0-m1", "g1-m0", "g1-m1", "g2-m0", "g2-m1"]);
        assert_eq!(p[2].scenario.id, s[1].id);
        assert_eq!(p[3].scenario.id, s[1].id);
        assert!(p.iter().all(|e| e.seeds.run == 7));
        assert_eq!(p[3].seeds.group_id(), "g1");
    }

    #[test]
    fn both_seatings_give_each_scenario_a_group_per_role() {
        // Two scenarios, groups of 2, both seatings: scenario 0 → g0 (its first role), g1 (its
        // second); scenario 1 → g2, g3. 2 · 2 · 2 = 8 episodes, the ids as `planned_ids` says.
        let s = scenarios(2);
        let p = plan(&s, 7, 2, Seatings::Both);
        assert_eq!(p.len(), 8);
        let ids: Vec<String> = p.iter().map(PlannedEpisode::episode_id).collect();
        assert_eq!(ids, planned_ids(8, 2));
        let roles = s[0].roles();
        let seated: Vec<(&str, Option<Role>)> = p
            .iter()
            .map(|e| (e.scenario.id.as_str(), e.learner_role))
            .collect();
        for (i, (id, role)) in seated.iter().enumerate() {
            let (scenario, seating) = (i / 4, (i / 2) % 2);
            assert_eq!(*id, s[scenario].id, "{i}");
            assert_eq!(*role, Some(roles[seating]), "{i}");
        }
        // One seating: the config decides (no role from the plan).
        assert!(plan(&s, 7, 2, Seatings::One)
            .iter()
            .all(|e| e.learner_role.is_none()));
    }

    #[test]
    fn resuming_filters_the_plan_and_keeps_its_order() {
        let p = plan(&scenarios(2), 0, 2, Seatings::One);
        let done: HashSet<String> = ["g0-m1", "g1-m0"].iter().map(|s| s.to_string()).collect();
        let left: Vec<String> = without_done(p, &done)
            .iter()
            .map(PlannedEpisode::episode_id)
            .collect();
        assert_eq!(left, ["g0-m0", "g1-m1"]);
    }

    #[test]
    fn shards_partition_the_plan_into_whole_balanced_groups() {
        let s = scenarios(7);
        for group_size in [1, 3] {
            let whole = plan(&s, 1, group_size, Seatings::One);
            for n in 1..=9u64 {
                let mut seen: HashSet<String> = HashSet::new();
                let mut sizes = Vec::new();
                for i in 0..n {
                    let part = shard(whole.clone(), &Shard::new(i, n, "t").unwrap());
                    sizes.push(part.len());
                    for e in &part {
                        assert!(seen.insert(e.episode_id()), "{} twice", e.episode_id());
                        // The whole group is here.
                        let members = part.iter().filter(|o| o.seeds.group == e.seeds.group);
                        assert_eq!(members.count(), group_size as usize);
                    }
                }
                assert_eq!(seen.len(), whole.len(), "every episode in one shard");
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= group_size as usize, "balanced: {sizes:?}");
            }
        }
        let ids: Vec<String> = shard(plan(&s, 0, 1, Seatings::One), &Shard::parse("1/3").unwrap())
            .iter()
            .map(PlannedEpisode::episode_id)
            .collect();
        assert_eq!(ids, ["g1-m0", "g4-m0"]);
    }

    #[test]
    fn a_shard_is_read_from_the_flag_or_the_scheduler() {
        assert_eq!(Shard::parse(" 2/8").unwrap().index, 2);
        for bad in ["2", "8/8", "a/2", "1/0", "-1/2"] {
            assert!(
                Shard::parse(bad).unwrap_err().starts_with("--shard"),
                "{bad}"
            );
        }
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Shard::from_env(None, env(&[])).unwrap(), None);
        let slurm = Shard::from_env(
            None,
            env(&[
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "8"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!((slurm.index, slurm.count), (4, 8));
        assert_eq!(slurm.to_string(), "shard 4/8 (from SLURM_ARRAY_TASK_ID)");
        let k8s = env(&[("JOB_COMPLETION_INDEX", "3"), ("DEALGYM_SHARD_COUNT", "4")]);
        let k = Shard::from_env(None, k8s).unwrap().unwrap();
        assert_eq!((k.index, k.count), (3, 4));
        let err = Shard::from_env(Some(3), k8s).unwrap_err();
        assert!(
            err.contains("JOB_COMPLETION_INDEX: shard index 3 is not below"),
            "{err}"
        );
        let err = Shard::from_env(None, env(&[("JOB_COMPLETION_INDEX", "3")])).unwrap_err();
        assert!(err.contains("DEALGYM_SHARD_COUNT"), "{err}");
        let err = Shard::from_env(None, env(&[("SLURM_ARRAY_TASK_ID", "x1")])).unwrap_err();
        assert!(err.starts_with("SLURM_ARRAY_TASK_ID=\"x1\""), "{err}");
        let err = Shard::from_env(None, env(&[("SLURM_ARRAY_TASK_ID", "1")])).unwrap_err();
        assert!(err.contains("--shard-count"), "{err}");
    }
}
