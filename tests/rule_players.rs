//! The built-in rule players over every family: every rule against every rule (itself
//! included, in both seatings), and the mock endpoint's negotiator against each rule. A rule
//! player concedes rather than propose the same terms again, so it almost never ends an episode
//! by repeating itself (`reject_loop` with its seat as `outcome.by`); before it did so in 56 %
//! of the CaSiNo episodes of such an eval, and `rule:ina` in 7–9 % of the AHP and Craigslist
//! ones by naming its limit price again (docs/src/guide/rule-players.md).

use crate::common;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};

use common::{all_scenario_files, read_log, temp_dir};
use dealgym::eval::{eval, pairings, parse_entrant, EvalOptions};
use dealgym::game::OutcomeKind;
use dealgym::record::EpisodeRecord;
use dealgym::run::RunOptions;
use dealgym_mock::{MockConfig, MockServer};

/// Scenarios per family.
const PER_FAMILY: usize = 8;

/// The largest share of a family's episodes a rule player — every one of `RULES`, `rule:ina`
/// and `rule:ina-code` included — may end by repeating itself: 1 %. A side at its limit with
/// nothing left to concede holds or leaves instead (INA's players: `ina_at_limit`).
const MOST: f64 = 0.01;

/// Play `players` against `opponents` (both seatings) on the first scenarios of every family.
async fn play(name: &str, players: &[String], opponents: &[String]) -> Vec<EpisodeRecord> {
    let out = temp_dir(name).join("eval.jsonl");
    let entrants = |flag, specs: &[String]| {
        specs
            .iter()
            .map(|s| parse_entrant(flag, s).unwrap())
            .collect::<Vec<_>>()
    };
    let mut run = RunOptions::new(all_scenario_files(), "", "", out.clone());
    run.limit = Some(PER_FAMILY);
    run.concurrency = 16;
    run.seed = 11;
    run.progress = false;
    let options = EvalOptions {
        run,
        pairings: pairings(
            &entrants("--player", players),
            &entrants("--opponent", opponents),
            false,
            true,
        )
        .unwrap(),
        on_duplicate: Default::default(),
    };
    eval(&options, std::future::pending()).await.unwrap();
    read_log(&out)
}

/// Per family: (episodes, those a rule seat ended by repeating itself).
fn self_loops(records: &[EpisodeRecord]) -> BTreeMap<String, (usize, usize)> {
    let mut by_family: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in records {
        let entry = by_family.entry(r.family.to_string()).or_default();
        entry.0 += 1;
        let outcome = &r.outcome.outcome;
        if outcome.kind == OutcomeKind::RejectLoop {
            let by = outcome.by.expect("a reject loop names its seat");
            if r.seats[by].player.as_str().starts_with("rule:") {
                entry.1 += 1;
            }
        }
    }
    by_family
}

fn assert_few(records: &[EpisodeRecord], what: &str) {
    let loops = self_loops(records);
    assert_eq!(
        loops.len(),
        crate::common::FAMILIES.len(),
        "every family: {loops:?}"
    );
    for (family, (episodes, repeated)) in &loops {
        let share = *repeated as f64 / *episodes as f64;
        assert!(
            share <= MOST,
            "{what}, {family}: a rule player ended {repeated} of {episodes} episodes by repeating itself"
        );
    }
}

const RULES: [&str; 5] = ["boulware", "linear", "conceder", "ina", "ina-code"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_players_do_not_end_episodes_by_repeating_themselves() {
    let players: Vec<String> = RULES.iter().map(|r| format!("{r}=rule:{r}")).collect();
    let opponents: Vec<String> = RULES.iter().map(|r| format!("vs-{r}=rule:{r}")).collect();
    let records = play("rule-loops-rules", &players, &opponents).await;
    assert_eq!(
        records.len(),
        crate::common::FAMILIES.len() * PER_FAMILY * RULES.len() * RULES.len() * 2
    );
    assert_few(&records, "rule against rule");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_learner_meets_rule_players_that_keep_moving() {
    let mock = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig::default(),
    )
    .await
    .unwrap();
    let players = vec![format!("mock=openai:mock@{}", mock.base_url())];
    let opponents: Vec<String> = RULES.iter().map(|r| format!("vs-{r}=rule:{r}")).collect();
    let records = play("rule-loops-mock", &players, &opponents).await;
    mock.stop();
    assert_eq!(
        records.len(),
        crate::common::FAMILIES.len() * PER_FAMILY * RULES.len() * 2
    );
    assert_few(&records, "the mock against a rule");
}
