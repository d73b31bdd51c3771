//! Group statistics, the first of the export's two passes: every reward of a GRPO group must be
//! known before any of its lines is written, so the record files are read once for the rewards
//! alone (a few fields per line, through [`RecordReader::read_as`]) and the lines are written on
//! a second reading. What is kept is a handful of numbers per group, never a record.
//!
//! A group is a (`run_id`, `group_id`) pair: group ids restart at `g0` in every run, so files
//! of several runs never mix their groups. Episodes that ended in `error` (the endpoint failed)
//! are left out here as everywhere: they are no sample of the policy.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::game::{OutcomeKind, PerSeat, Seat};
use crate::record::{OnDuplicate, PlayerSpec, ReadError, RecordFiles};
use crate::scenario::Role;

/// Below this a group's reward std counts as zero, and its advantages are 0.
pub(crate) const ZERO_STD: f64 = 1e-12;

/// Count, mean and sum of squared deviations of a stream of rewards (Welford's update). Chosen
/// over Σr and Σr² because a group whose rewards are all equal — common with a sparse reward —
/// then has a variance of exactly zero, where Σr²/n − mean² can leave a rounding residue that an
/// advantage would divide by.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Moments {
    pub count: u32,
    pub mean: f64,
    m2: f64,
}

impl Moments {
    pub fn push(&mut self, reward: f64) {
        self.count += 1;
        let delta = reward - self.mean;
        self.mean += delta / f64::from(self.count);
        self.m2 += delta * (reward - self.mean);
    }

    /// The population standard deviation (divided by n, as GRPO normalizes within a group).
    pub fn std(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        (self.m2 / f64::from(self.count)).max(0.0).sqrt()
    }

    /// (r − mean) / std, or 0 when the group's rewards do not vary.
    pub fn advantage(&self, reward: f64) -> f64 {
        let std = self.std();
        if std > ZERO_STD {
            (reward - self.mean) / std
        } else {
            0.0
        }
    }
}

/// What the first pass reads of each record: the group, each seat's role and player, the
/// rewards and the ending. Everything else on the line is skipped unread.
#[derive(Debug, Deserialize)]
struct GroupFacts {
    run_id: String,
    group_id: String,
    seats: PerSeat<SeatFacts>,
    rewards: PerSeat<f64>,
    outcome: EndingFacts,
    #[serde(default)]
    reward_issues: std::collections::BTreeMap<String, u32>,
}

#[derive(Debug, Deserialize)]
struct SeatFacts {
    role: Role,
    player: PlayerSpec,
}

#[derive(Debug, Deserialize)]
struct EndingFacts {
    kind: OutcomeKind,
}

/// Whether both seats of an episode were played by the same policy (self-play): their player
/// specs are equal. Only then is a role's reward comparable across the two seats. Two people
/// of a dataset's dialogue (both seats `human:<dialogue id>`) are two people, never one policy.
pub(crate) fn is_self_play(learner_player: &PlayerSpec, opponent_player: &PlayerSpec) -> bool {
    learner_player == opponent_player && !learner_player.is_person()
}

/// The running moments of one group: per seat, and per role over the self-play episodes.
#[derive(Debug, Clone, Default)]
struct GroupMoments {
    seats: PerSeat<Moments>,
    /// A group plays one scenario, so at most its two roles; a slot is claimed by the first
    /// role seen in it.
    roles: [(Option<Role>, Moments); 2],
}

impl GroupMoments {
    fn role(&self, role: Role) -> Option<&Moments> {
        self.roles
            .iter()
            .find(|(r, _)| *r == Some(role))
            .map(|(_, m)| m)
    }

    fn role_mut(&mut self, role: Role) -> Option<&mut Moments> {
        let slot = self
            .roles
            .iter()
            .position(|(r, _)| *r == Some(role))
            .or_else(|| self.roles.iter().position(|(r, _)| r.is_none()))?;
        self.roles[slot].0 = Some(role);
        Some(&mut self.roles[slot].1)
    }
}

/// The statistics a line carries about its seat's group.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct GroupStats {
    /// Episodes of the group that count (not `error`), whether or not this export writes them.
    pub group_size: u32,
    pub group_reward_mean: f64,
    /// Population std of the seat's reward in the group.
    pub group_reward_std: f64,
    /// (reward − group_reward_mean) / group_reward_std; 0 when the std is 0.
    pub advantage: f64,
    /// Self-play only (null otherwise): how many rewards of this role the group holds, over
    /// both seats.
    pub role_group_size: Option<u32>,
    pub role_reward_mean: Option<f64>,
    pub role_reward_std: Option<f64>,
    /// Self-play only: the advantage against the rewards of the same role in the group, over
    /// both seats (SPIRAL's role-conditioned advantage), so a group whose members swap seats
    /// compares a buyer with buyers.
    pub role_advantage: Option<f64>,
}

/// Per-group reward moments of a set of record files: the first pass.
#[derive(Debug, Default)]
pub(crate) struct GroupTable {
    /// run id → group id → moments.
    runs: HashMap<String, HashMap<String, GroupMoments>>,
    groups: usize,
}

impl GroupTable {
    /// Read every record of `files` (in order) for its group, roles and rewards; an episode
    /// the files hold twice is refused or counted once, as `on_duplicate` says (the second
    /// pass reads the same records).
    pub fn collect(files: &[PathBuf], on_duplicate: OnDuplicate) -> Result<GroupTable, ReadError> {
        let mut table = GroupTable::default();
        for facts in RecordFiles::open(files, on_duplicate).read_as::<GroupFacts>() {
            table.add(&facts?.record);
        }
        Ok(table)
    }

    fn add(&mut self, facts: &GroupFacts) {
        // Neither a backend error nor a reward short of a failed judge or reward-model part
        // is a sample of the policy's reward: they enter no group statistic.
        if facts.outcome.kind == OutcomeKind::Error
            || crate::reward::issues::reward_missing(&facts.reward_issues)
        {
            return;
        }
        let run = self.runs.entry(facts.run_id.clone()).or_default();
        let group = match run.get_mut(&facts.group_id) {
            Some(group) => group,
            None => {
                self.groups += 1;
                run.entry(facts.group_id.clone()).or_default()
            }
        };
        let self_play = is_self_play(&facts.seats.learner.player, &facts.seats.opponent.player);
        for seat in Seat::BOTH {
            let reward = facts.rewards[seat];
            group.seats[seat].push(reward);
            if self_play {
                if let Some(role) = group.role_mut(facts.seats[seat].role) {
                    role.push(reward);
                }
            }
        }
    }

    /// How many groups the files hold.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// The statistics of `seat`'s `reward` in its group; `role` is the seat's role, and
    /// `self_play` whether the episode was self-play (only then are role statistics given).
    /// `None` for a group the first pass did not see.
    pub fn stats(
        &self,
        run_id: &str,
        group_id: &str,
        seat: Seat,
        role: Role,
        self_play: bool,
        reward: f64,
    ) -> Option<GroupStats> {
        let group = self.runs.get(run_id)?.get(group_id)?;
        let moments = group.seats[seat];
        let by_role = group.role(role).filter(|_| self_play);
        Some(GroupStats {
            group_size: moments.count,
            group_reward_mean: moments.mean,
            group_reward_std: moments.std(),
            advantage: moments.advantage(reward),
            role_group_size: by_role.map(|m| m.count),
            role_reward_mean: by_role.map(|m| m.mean),
            role_reward_std: by_role.map(Moments::std),
            role_advantage: by_role.map(|m| m.advantage(reward)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn facts(group: &str, roles: [Role; 2], players: [&str; 2], rewards: [f64; 2]) -> GroupFacts {
        let seat = |i: usize| SeatFacts {
            role: roles[i],
            player: players[i].into(),
        };
        GroupFacts {
            run_id: "r".into(),
            group_id: group.into(),
            seats: PerSeat::new(seat(0), seat(1)),
            rewards: PerSeat::new(rewards[0], rewards[1]),
            outcome: EndingFacts {
                kind: OutcomeKind::Deal,
            },
            reward_issues: Default::default(),
        }
    }

    #[test]
    fn moments_are_population_mean_and_std() {
        // 1, 0.5, 0.5, 0: mean 0.5; squared deviations 0.25 + 0 + 0 + 0.25 = 0.5; /4 = 0.125;
        // std = √0.125 = 0.353553…; advantage of 1 = 0.5/0.353553 = √2, of 0 = −√2.
        let mut m = Moments::default();
        for r in [1.0, 0.5, 0.5, 0.0] {
            m.push(r);
        }
        assert_eq!(m.count, 4);
        assert!(close(m.mean, 0.5));
        assert!(close(m.std(), 0.125f64.sqrt()));
        assert!(close(m.advantage(1.0), 2f64.sqrt()));
        assert!(close(m.advantage(0.0), -(2f64.sqrt())));
        assert!(close(m.advantage(0.5), 0.0));
    }

    #[test]
    fn a_group_of_equal_rewards_has_zero_std_and_zero_advantages() {
        let mut m = Moments::default();
        for _ in 0..7 {
            m.push(0.1);
        }
        assert_eq!(m.std(), 0.0, "exactly zero, not a rounding residue");
        assert_eq!(m.advantage(0.1), 0.0);
        assert_eq!(Moments::default().advantage(1.0), 0.0);
    }

    #[test]
    fn groups_are_per_run_and_error_and_reward_missing_episodes_do_not_count() {
        let mut table = GroupTable::default();
        let roles = [Role::Buyer, Role::Seller];
        table.add(&facts("g0", roles, ["a", "b"], [1.0, 0.0]));
        table.add(&facts("g0", roles, ["a", "b"], [0.0, 1.0]));
        let mut other_run = facts("g0", roles, ["a", "b"], [0.5, 0.5]);
        other_run.run_id = "s".into();
        table.add(&other_run);
        let mut failed = facts("g0", roles, ["a", "b"], [0.0, 0.0]);
        failed.outcome.kind = OutcomeKind::Error;
        table.add(&failed);
        // A reward short of a failed judge part is no sample of the reward either.
        let mut unjudged = facts("g0", roles, ["a", "b"], [0.0, 0.0]);
        unjudged.reward_issues.insert("judge_failed".into(), 1);
        table.add(&unjudged);
        // An unreadable verdict scores 0 by design: that episode counts.
        let mut unreadable = facts("g2", roles, ["a", "b"], [0.0, 0.0]);
        unreadable
            .reward_issues
            .insert("judge_unreadable".into(), 1);
        table.add(&unreadable);
        assert_eq!(table.groups(), 3);
        let s = table
            .stats("r", "g0", Seat::Learner, Role::Buyer, false, 1.0)
            .unwrap();
        // learner rewards 1, 0: mean 0.5, std 0.5, advantage of 1 = +1.
        assert_eq!((s.group_size, s.group_reward_mean), (2, 0.5));
        assert!(close(s.group_reward_std, 0.5) && close(s.advantage, 1.0));
        assert_eq!(s.role_advantage, None, "not self-play");
        let s = table
            .stats("s", "g0", Seat::Learner, Role::Buyer, false, 0.5)
            .unwrap();
        assert_eq!((s.group_size, s.advantage), (1, 0.0));
        assert!(table
            .stats("r", "g1", Seat::Learner, Role::Buyer, false, 0.0)
            .is_none());
    }

    #[test]
    fn one_policy_on_both_seats_is_self_play_two_people_are_not() {
        let spec = |s: &str| PlayerSpec::from(s);
        assert!(is_self_play(
            &spec("openai:qwen@http://h/v1"),
            &spec("openai:qwen@http://h/v1")
        ));
        assert!(!is_self_play(
            &spec("openai:qwen@http://h/v1"),
            &spec("rule:linear")
        ));
        assert!(!is_self_play(
            &PlayerSpec::person("938"),
            &PlayerSpec::person("938")
        ));
    }

    #[test]
    fn self_play_role_advantage_pools_both_seats_of_a_role() {
        // A seat-swapped self-play group of two episodes:
        //   A: learner agent_1 0.8, opponent agent_2 0.2
        //   B: learner agent_2 0.6, opponent agent_1 0.4
        // learner seat: 0.8, 0.6 → mean 0.7, std 0.1; B's learner advantage (0.6−0.7)/0.1 = −1.
        // role agent_2: 0.2 (A opponent), 0.6 (B learner) → mean 0.4, std 0.2;
        //   B's learner role advantage (0.6−0.4)/0.2 = +1: a good agent_2, in a seat that the
        //   other role does better in.
        // role agent_1: 0.8, 0.4 → mean 0.6, std 0.2; A's learner (0.8−0.6)/0.2 = +1,
        //   B's opponent (0.4−0.6)/0.2 = −1.
        let mut table = GroupTable::default();
        let p = ["rule:linear", "rule:linear"];
        table.add(&facts("g0", [Role::Agent1, Role::Agent2], p, [0.8, 0.2]));
        table.add(&facts("g0", [Role::Agent2, Role::Agent1], p, [0.6, 0.4]));
        let b_learner = table
            .stats("r", "g0", Seat::Learner, Role::Agent2, true, 0.6)
            .unwrap();
        assert!(close(b_learner.group_reward_mean, 0.7));
        assert!(close(b_learner.group_reward_std, 0.1));
        assert!(close(b_learner.advantage, -1.0));
        assert_eq!(b_learner.role_group_size, Some(2));
        assert!(close(b_learner.role_reward_mean.unwrap(), 0.4));
        assert!(close(b_learner.role_reward_std.unwrap(), 0.2));
        assert!(close(b_learner.role_advantage.unwrap(), 1.0));
        let a_learner = table
            .stats("r", "g0", Seat::Learner, Role::Agent1, true, 0.8)
            .unwrap();
        assert!(close(a_learner.role_advantage.unwrap(), 1.0));
        let b_opponent = table
            .stats("r", "g0", Seat::Opponent, Role::Agent1, true, 0.4)
            .unwrap();
        assert!(close(b_opponent.role_advantage.unwrap(), -1.0));
    }
}
