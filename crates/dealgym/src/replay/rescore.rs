//! `replay --rescore`: the same episodes under another reward config. Metrics and the pure
//! rewards — terminal, format, length, points, strategic, rules — are functions of the
//! scenario, the setup, the turns and the outcome (`score`, `reward`), so they are recomputed
//! from the record, per turn and per seat, and the totals recombined under the new config.
//! The judge's and the reward model's components cannot be recomputed without calling them:
//! their stored values (and the turns' labels, and the issue counts) are kept, for the
//! components the new config uses; one it uses that the record lacks is marked failed (the
//! record's reward is then short of it, and `export` skips it). Everything
//! else — turns, outcome, utilities, ρ, ids, timing — is kept as it is. Episode rules are not applied: a rule that changes the outcome
//! (the turn cap, the no-deal value, regulation) needs the episode played again
//! (`--branch-from`, or a new run), not rescored.

use std::path::PathBuf;

use super::{create_out, Error, Records};
use crate::record::{Duplicates, EpisodeRecord, OnDuplicate};
use crate::reward::{episode_rewards, RewardConfig};
use crate::run::ScenarioSource;
use crate::scenario::Scenario;
use crate::score::episode_metrics;

/// What `--rescore` does.
#[derive(Debug, Clone)]
pub struct RescoreOptions {
    pub files: Vec<PathBuf>,
    /// Only this episode id.
    pub episode: Option<String>,
    /// Scenario files; empty: `scenarios/{family}.jsonl` of each record's family.
    pub scenarios: Vec<PathBuf>,
    /// The new reward config (the `[rewards]` table of `--config`).
    pub rewards: RewardConfig,
    pub out: PathBuf,
    /// What to do with an episode recorded twice (`--duplicates`).
    pub on_duplicate: OnDuplicate,
}

/// What `--rescore` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RescoreSummary {
    pub written: usize,
    /// Records whose rewards changed.
    pub rewards_changed: usize,
    /// Records whose metrics changed (the metrics code changed since they were written).
    pub metrics_changed: usize,
    /// Records skipped as duplicates (`--duplicates skip`).
    pub duplicates: Duplicates,
    /// Records of the other kind (table or two-party) the files hold, passed over.
    pub passed_over: crate::record::PassedOver,
}

/// `record` with its metrics and pure rewards recomputed on `scenario` (as the episode played
/// it: `Setup::scenario_for` of the file's) under `rewards`, its judge and reward-model
/// components kept; nothing else changes.
pub fn rescore(
    record: &EpisodeRecord,
    scenario: &Scenario,
    rewards: &RewardConfig,
) -> EpisodeRecord {
    let outcome = &record.outcome.outcome;
    let mut rescored = record.clone();
    rescored.outcome.metrics = episode_metrics(
        scenario,
        &record.setup,
        &record.turns,
        outcome.kind,
        outcome.terms.as_ref(),
        &outcome.utility,
    );
    let rewarded = episode_rewards(scenario, &record.setup, &record.turns, outcome, rewards);
    for (turn, signals) in rescored.turns.iter_mut().zip(rewarded.turns) {
        turn.rewards = signals;
    }
    rescored.rewards = rewarded.total;
    rescored.reward_parts = rewarded.parts;
    rescored.reward_config = Some(rewards.in_force());
    rescored.turn_rewards = rewarded.turn_rewards;
    rescored.keep_judged(record, rewards);
    mark_unjudged(&mut rescored, rewards);
    rescored
}

/// A component the new config uses that needs a call (judge, reward model) and that the
/// record does not hold for a seat — it was never asked, and rescoring calls nobody — is
/// marked as failed, with why: the total is short of it, so `export` skips the episode and the
/// summaries count it, rather than a made-up 0 passing for a verdict.
fn mark_unjudged(record: &mut EpisodeRecord, rewards: &RewardConfig) {
    use crate::game::Seat;
    use crate::reward::{issues, Component};
    for (c, issue) in [
        (Component::Judge, issues::JUDGE_FAILED),
        (Component::RewardModel, issues::REWARD_MODEL_FAILED),
    ] {
        if !rewards.uses(c) || record.reward_issues.contains_key(issue) {
            continue;
        }
        let missing = Seat::BOTH
            .into_iter()
            .filter(|seat| !record.reward_parts[*seat].contains(c))
            .count();
        if missing > 0 {
            record
                .reward_issues
                .insert(issue.to_string(), missing as u32);
            record.reward_errors.insert(
                issue.to_string(),
                format!(
                    "not called when the episode was played, and rescore calls no endpoint: \
                     the `{}` part is missing",
                    c.name()
                ),
            );
        }
    }
}

/// Rescore every record of `options.files` into `options.out` (a new file), one record at a
/// time. A record whose scenario is missing or has changed since the run stops it, naming the
/// episode: metrics computed on another scenario would be quietly wrong.
pub fn rescore_files(options: &RescoreOptions) -> Result<RescoreSummary, Error> {
    super::table::two_party_only(&options.files, "--rescore")?;
    let mut scenarios = ScenarioSource::new(&options.scenarios)?;
    let mut writer = create_out(&options.out, &options.files)?;
    let mut summary = RescoreSummary::default();
    let mut records = Records::open(
        &options.files,
        options.episode.as_deref(),
        options.on_duplicate,
    );
    for located in &mut records {
        let record = located?.record;
        // The scenario as the episode played it (a budget its setup set, `Setup::scenario_for`):
        // the metrics and rewards read that B, as they did when the episode ended.
        let scenario = record
            .setup
            .scenario_for(scenarios.checked(&record)?)
            .map_err(|e| {
                Error::Options(format!(
                    "episode {}: its setup does not fit scenario {}: {e}",
                    record.episode_id, record.scenario_id
                ))
            })?;
        let rescored = rescore(&record, &scenario, &options.rewards);
        summary.rewards_changed += usize::from(rescored.rewards != record.rewards);
        summary.metrics_changed += usize::from(rescored.outcome.metrics != record.outcome.metrics);
        writer.write(&rescored)?;
        summary.written += 1;
    }
    summary.duplicates = records.duplicates().clone();
    summary.passed_over = records.passed_over();
    if let (Some(id), 0) = (&options.episode, summary.written) {
        return Err(Error::NoSuchEpisode {
            episode: id.clone(),
            files: super::list_files(&options.files),
        });
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{job, learner_first_as, play, turn};
    use crate::game::PerSeat;

    use crate::reward::RewardKind;
    use crate::scenario::Role;

    #[test]
    fn rescoring_changes_rewards_only() {
        // Job fixture, the worker (learner) moves first and asks for salary 20 at company B:
        // worker 100 · (0.6 · 0 + 0.2 · 0.5) = 10 of 80 (ρ 0.125); recruiter
        // 100 · (0.5 · 1 + 0.5 · 1) = 100 of 100 (ρ 1). The recruiter accepts.
        let s = job();
        let episode = play(
            &s,
            learner_first_as(&s, Role::Worker),
            &[
                turn(
                    "Cheap.",
                    "[SUBMIT_DEAL] salary:20 company:Apple position:Engineer holiday:2",
                ),
                turn("Yes.", "[ACCEPT_DEAL]"),
            ],
        );
        let record = crate::fixtures::record_of(episode);
        assert_eq!(record.rewards, PerSeat::new(0.125, 1.0));
        let threshold = RewardConfig {
            kind: RewardKind::Threshold,
            ..RewardConfig::default()
        };
        let rescored = rescore(&record, &s, &threshold);
        // Threshold τ = 0.4: 0.125 < τ → −γ = −0.5; 1 ≥ τ → 1.
        assert_eq!(rescored.rewards, PerSeat::new(-0.5, 1.0));
        assert_eq!(rescored.reward_config, Some(threshold.in_force()));
        let mut back = rescored.clone();
        back.rewards = record.rewards;
        back.reward_config = record.reward_config.clone();
        assert_eq!(
            back, record,
            "nothing but the rewards and the settings they were scored under changed"
        );
    }

    #[test]
    fn a_judge_the_record_never_had_is_marked_missing_not_zero() {
        let s = job();
        let moves = [
            turn(
                "Hi.",
                "[SUBMIT_DEAL] salary:20 company:Apple position:Engineer holiday:2",
            ),
            turn("Yes.", "[ACCEPT_DEAL]"),
        ];
        let record =
            crate::fixtures::record_of(play(&s, learner_first_as(&s, Role::Worker), &moves));
        let judged: RewardConfig = toml::from_str(
            "[weights]\nterminal = 1.0\njudge = 1.0\n[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"",
        )
        .expect("a reward table");
        let rescored = rescore(&record, &s, &judged);
        assert!(rescored.reward_missing());
        assert_eq!(rescored.reward_issues["judge_failed"], 2);
        assert!(rescored.reward_errors["judge_failed"].contains("rescore calls no endpoint"));
        // Under the terminal reward alone, nothing is missing.
        assert!(!rescore(&record, &s, &RewardConfig::default()).reward_missing());
    }
}
