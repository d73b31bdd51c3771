//! Group statistics, the first of the export's two passes: every reward of a GRPO group must be
//! known before any of its lines is written, so the record files are read once for the rewards
//! alone (a few fields per line, through [`RecordReader::read_as`]) and the lines are written on
//! a second reading. What is kept is a handful of numbers per group, never a record.
//!
//! A group is a (`run_id`, `group_id`) pair: group ids restart at `g0` in every run, so files
//! of several runs never mix their groups. Episodes that ended in `error` (the endpoint failed)
//! are left out here as everywhere: they are no sample of the policy.
//!
//! Under `[rewards] turn_reward = "every_turn"` each turn has its own reward, and a per-turn
//! row's advantage is taken against its *turn group* ([`turn_group_key`]): the same turn
//! number of the same seat across the GRPO group's episodes — the CaSiNo harness's GRPO rows
//! (§3.3.2: "For each training prompt, the model generates 8 candidate completions; all reward
//! signals are computed for each, and the group mean serves as the baseline"; §3.3.3 slices
//! the self-play episodes' learner turns into such rows).

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::game::{OutcomeKind, PerSeat, Seat};
use crate::record::{OnDuplicate, PlayerSpec, ReadError, RecordFiles};
use crate::reward::TurnReward;
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
    /// Each turn's seat (the rest of the turn is skipped unread).
    #[serde(default)]
    turns: Vec<TurnFacts>,
    #[serde(default)]
    turn_rewards: Vec<Option<f64>>,
    #[serde(default)]
    reward_config: Option<RewardFacts>,
}

#[derive(Debug, Deserialize)]
struct TurnFacts {
    seat: Seat,
}

/// The one setting of a record's `reward_config` the first pass needs.
#[derive(Debug, Default, Deserialize)]
struct RewardFacts {
    #[serde(default)]
    turn_reward: TurnReward,
}

/// Whether a record's per-turn rows are scored turn by turn: it was rewarded under
/// `turn_reward = "every_turn"` and holds each turn's reward. Then a row's `reward` is its
/// turn's and its advantage is against its turn group ([`turn_group_key`]); otherwise (the
/// default `episode`, and `last_turn`, whose rows sum to a trajectory's return) every row of a
/// seat carries the episode's reward and advantage.
pub(crate) fn scored_per_turn(
    turn_reward: Option<TurnReward>,
    turn_rewards: &[Option<f64>],
) -> bool {
    turn_reward == Some(TurnReward::EveryTurn) && !turn_rewards.is_empty()
}

/// Each of the turns' (seat, turn number) pairs: the turn number is the turn's place among its
/// seat's turns in record order (the `seat_turn` of a `prompt-completion` row). A turn group
/// is a GRPO group's turns of one seat and one turn number: the same scenario, the same setup
/// and the same place in the conversation — at turn number 0 the very same prompt.
pub(crate) fn turn_group_key(seats: impl Iterator<Item = Seat>) -> Vec<(Seat, usize)> {
    let mut counts = PerSeat::new(0usize, 0usize);
    seats
        .map(|seat| {
            let k = counts[seat];
            counts[seat] += 1;
            (seat, k)
        })
        .collect()
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

/// The running moments of one group: per seat, and per role over the self-play episodes; and
/// the same per turn number for the episodes scored per turn.
#[derive(Debug, Clone, Default)]
struct GroupMoments {
    seats: PerSeat<Moments>,
    /// A group plays one scenario, so at most its two roles; a slot is claimed by the first
    /// role seen in it.
    roles: [(Option<Role>, Moments); 2],
    /// Turn number k → the moments of the turn rewards of each seat's k-th turn (and, in
    /// self-play, of each role's). Empty unless the group's episodes are scored per turn.
    turns: Vec<TurnMoments>,
}

/// The moments of one turn number of a group: per seat, and per role in self-play.
#[derive(Debug, Clone, Default)]
struct TurnMoments {
    seats: PerSeat<Moments>,
    roles: [(Option<Role>, Moments); 2],
}

/// The moments of `role` among `roles`, if it has a slot.
fn role_of(roles: &[(Option<Role>, Moments); 2], role: Role) -> Option<&Moments> {
    roles.iter().find(|(r, _)| *r == Some(role)).map(|(_, m)| m)
}

/// The moments of `role` among `roles`, claiming a free slot for it.
fn role_mut_of(roles: &mut [(Option<Role>, Moments); 2], role: Role) -> Option<&mut Moments> {
    let slot = roles
        .iter()
        .position(|(r, _)| *r == Some(role))
        .or_else(|| roles.iter().position(|(r, _)| r.is_none()))?;
    roles[slot].0 = Some(role);
    Some(&mut roles[slot].1)
}

/// The statistics a line carries about its seat's group.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
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
                if let Some(role) = role_mut_of(&mut group.roles, facts.seats[seat].role) {
                    role.push(reward);
                }
            }
        }
        let turn_reward = facts.reward_config.as_ref().map(|c| c.turn_reward);
        if !scored_per_turn(turn_reward, &facts.turn_rewards) {
            return;
        }
        let keys = turn_group_key(facts.turns.iter().map(|t| t.seat));
        for ((seat, k), reward) in keys.into_iter().zip(&facts.turn_rewards) {
            // A logged prefix's turn has no reward: no sample of the policy.
            let Some(reward) = *reward else { continue };
            if group.turns.len() <= k {
                group.turns.resize_with(k + 1, TurnMoments::default);
            }
            let at = &mut group.turns[k];
            at.seats[seat].push(reward);
            if self_play {
                if let Some(role) = role_mut_of(&mut at.roles, facts.seats[seat].role) {
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
        let by_role = role_of(&group.roles, role).filter(|_| self_play);
        Some(GroupStats::of(&group.seats[seat], by_role, reward))
    }

    /// The statistics of the `reward` of `seat`'s turn number `turn` (its place among the
    /// seat's turns) in its turn group ([`turn_group_key`]): the same turn of the same seat
    /// across the group's episodes scored per turn. `None` for a group the first pass did not
    /// see, or a turn number none of its episodes gave a reward.
    #[allow(clippy::too_many_arguments)]
    pub fn turn_stats(
        &self,
        run_id: &str,
        group_id: &str,
        seat: Seat,
        turn: usize,
        role: Role,
        self_play: bool,
        reward: f64,
    ) -> Option<GroupStats> {
        let at = self.runs.get(run_id)?.get(group_id)?.turns.get(turn)?;
        let moments = &at.seats[seat];
        if moments.count == 0 {
            return None;
        }
        let by_role = role_of(&at.roles, role).filter(|_| self_play);
        Some(GroupStats::of(moments, by_role, reward))
    }
}

impl GroupStats {
    /// The statistics of `reward` among `moments` (and among `by_role` in self-play).
    fn of(moments: &Moments, by_role: Option<&Moments>, reward: f64) -> GroupStats {
        GroupStats {
            group_size: moments.count,
            group_reward_mean: moments.mean,
            group_reward_std: moments.std(),
            advantage: moments.advantage(reward),
            role_group_size: by_role.map(|m| m.count),
            role_reward_mean: by_role.map(|m| m.mean),
            role_reward_std: by_role.map(Moments::std),
            role_advantage: by_role.map(|m| m.advantage(reward)),
        }
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
            turns: Vec::new(),
            turn_rewards: Vec::new(),
            reward_config: None,
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

    /// `facts` of an episode scored per turn: its turns' seats, their rewards (`None` for a
    /// logged prefix's turn) and `turn_reward = "every_turn"`.
    fn per_turn(group: &str, turns: &[(Seat, Option<f64>)]) -> GroupFacts {
        let mut f = facts(group, [Role::Agent1, Role::Agent2], ["a", "b"], [0.3, 0.3]);
        f.turns = turns
            .iter()
            .map(|(seat, _)| TurnFacts { seat: *seat })
            .collect();
        f.turn_rewards = turns.iter().map(|(_, r)| *r).collect();
        f.reward_config = Some(RewardFacts {
            turn_reward: TurnReward::EveryTurn,
        });
        f
    }

    #[test]
    fn a_turn_is_measured_against_the_same_turn_of_its_seat_across_the_group() {
        use Seat::{Learner as L, Opponent as O};
        // CaSiNo harness §3.3.2: each row's group is the completions for the same prompt, the
        // group mean its baseline. Three episodes of g0, the learner's turn rewards:
        //   A: 1.0, 0.5        B: 0.0, 0.5, 1.0        C: (a logged turn), 0.5
        // learner turn 0: A 1.0, B 0.0 (C's turn 0 is logged: no sample) → mean 0.5, std 0.5,
        //   A's advantage (1.0 − 0.5)/0.5 = 1, B's −1;
        // learner turn 1: 0.5, 0.5, 0.5 → std 0, advantages 0;
        // learner turn 2: B alone → group of 1, advantage 0.
        let mut table = GroupTable::default();
        let s = Some;
        table.add(&per_turn("g0", &[(L, s(1.0)), (O, s(0.2)), (L, s(0.5))]));
        table.add(&per_turn(
            "g0",
            &[
                (L, s(0.0)),
                (O, s(0.9)),
                (L, s(0.5)),
                (O, s(0.1)),
                (L, s(1.0)),
            ],
        ));
        table.add(&per_turn("g0", &[(L, None), (O, s(0.4)), (L, s(0.5))]));
        let at = |seat, k, reward| {
            table
                .turn_stats("r", "g0", seat, k, Role::Agent1, false, reward)
                .unwrap()
        };
        let a0 = at(L, 0, 1.0);
        assert_eq!(a0.group_size, 2);
        assert!(close(a0.group_reward_mean, 0.5) && close(a0.group_reward_std, 0.5));
        assert!(close(a0.advantage, 1.0));
        assert!(close(at(L, 0, 0.0).advantage, -1.0));
        let t1 = at(L, 1, 0.5);
        assert_eq!(
            (t1.group_size, t1.group_reward_std, t1.advantage),
            (3, 0.0, 0.0)
        );
        assert_eq!(
            (at(L, 2, 1.0).group_size, at(L, 2, 1.0).advantage),
            (1, 0.0)
        );
        // The opponent's turn 0: 0.2, 0.9, 0.4 → mean 0.5, squared deviations 0.09 + 0.16 +
        // 0.01 = 0.26, / 3, std √(0.26/3) = 0.294392; 0.9's advantage 0.4/0.294392 = 1.358732.
        let o0 = at(O, 0, 0.9);
        assert!(close(o0.group_reward_mean, 0.5));
        assert!((o0.advantage - 0.4 / (0.26f64 / 3.0).sqrt()).abs() < 1e-12);
        // No turn number 3 of the learner, no other group; the episode statistics are as ever.
        assert!(table
            .turn_stats("r", "g0", L, 3, Role::Agent1, false, 0.0)
            .is_none());
        assert_eq!(
            table
                .stats("r", "g0", L, Role::Agent1, false, 0.3)
                .unwrap()
                .group_size,
            3
        );
    }

    #[test]
    fn only_every_turn_records_are_scored_per_turn() {
        assert!(scored_per_turn(Some(TurnReward::EveryTurn), &[Some(1.0)]));
        assert!(!scored_per_turn(Some(TurnReward::EveryTurn), &[]));
        assert!(!scored_per_turn(Some(TurnReward::LastTurn), &[Some(1.0)]));
        assert!(!scored_per_turn(None, &[Some(1.0)]));
        // A `last_turn` record adds no turn group.
        let mut table = GroupTable::default();
        let mut f = per_turn("g0", &[(Seat::Learner, Some(1.0))]);
        f.reward_config = Some(RewardFacts {
            turn_reward: TurnReward::LastTurn,
        });
        table.add(&f);
        assert!(table
            .turn_stats("r", "g0", Seat::Learner, 0, Role::Agent1, false, 1.0)
            .is_none());
        assert_eq!(
            turn_group_key([Seat::Learner, Seat::Opponent, Seat::Learner].into_iter()),
            [(Seat::Learner, 0), (Seat::Opponent, 0), (Seat::Learner, 1)]
        );
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
