//! Campaigns (`run --campaigns`): deals played in order, each finding the reservation the
//! earlier deals left the seat that carries the ledger — in its setup, its prompt and its
//! utilities — through the real binary, against rule players and the built-in mock; the
//! records replayed, exported per deal and per campaign, evaluated and reported; bad campaign
//! files refused by file, line and field. Every campaign here comes from
//! `scenarios/campaigns.jsonl`, which `dealgym scenarios campaigns` wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dealgym_cli, read_log, succeeded, temp_dir, threaded_mock};
use dealgym::record::EpisodeRecord;
use dealgym::scenario::{load_scenarios, LoadOptions};
use dealgym_mock::MockConfig;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The generated example campaigns, one JSON object each.
fn examples() -> Vec<Value> {
    std::fs::read_to_string(repo("scenarios/campaigns.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first example campaign whose id starts with `prefix`.
fn example(prefix: &str) -> Value {
    examples()
        .into_iter()
        .find(|c| c["id"].as_str().unwrap().starts_with(prefix))
        .unwrap_or_else(|| panic!("no example campaign {prefix}*"))
}

fn write_campaigns(dir: &Path, campaigns: &[Value]) -> PathBuf {
    let file = dir.join("campaigns.jsonl");
    let text: String = campaigns.iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(&file, text).unwrap();
    file
}

/// The records of `out` by (campaign, member), each campaign's deals in order.
fn by_campaign(records: &[EpisodeRecord]) -> BTreeMap<(String, u64), Vec<&EpisodeRecord>> {
    let mut out: BTreeMap<(String, u64), Vec<&EpisodeRecord>> = BTreeMap::new();
    for r in records {
        let c = r.campaign.as_ref().expect("every deal names its campaign");
        out.entry((c.campaign.clone(), r.seeds.member))
            .or_default()
            .push(r);
    }
    for deals in out.values_mut() {
        deals.sort_by_key(|r| r.campaign.as_ref().map(|c| c.position));
    }
    out
}

/// The prompt's spelling of a utility (`game::prompt`'s: whole, else two decimals).
fn told(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

#[test]
fn an_early_good_deal_raises_the_next_reservation_in_its_prompt_and_its_utilities() {
    let dir = temp_dir("campaign-raise");
    let offers = example("job-offers-");
    let deals = offers["deals"].as_array().unwrap();
    let (first, second) = (deals[0].clone(), deals[1].clone());
    let ledger = serde_json::json!({"kind": "best_offer"});
    let file = write_campaigns(
        &dir,
        &[
            serde_json::json!({"id": "after-a-good-deal", "ledger": ledger, "deals": [first, second]}),
            serde_json::json!({"id": "alone", "ledger": ledger, "deals": [second]}),
        ],
    );
    let out = dir.join("episodes.jsonl");
    succeeded(dealgym_cli([
        "run".as_ref(),
        "--campaigns".as_ref(),
        file.as_os_str(),
        "--learner".as_ref(),
        "rule:boulware".as_ref(),
        "--opponent".as_ref(),
        "rule:conceder".as_ref(),
        "--first-mover".as_ref(),
        "learner".as_ref(),
        "--seed".as_ref(),
        "7".as_ref(),
        "--quiet".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]));
    let records = read_log(&out);
    let campaigns = by_campaign(&records);
    let after = &campaigns[&("after-a-good-deal".to_string(), 0)];
    let alone = &campaigns[&("alone".to_string(), 0)];
    assert_eq!((after.len(), alone.len()), (2, 1));

    // The early deal closed, and well: that is what the later deal must show.
    let early = after[0];
    assert_eq!(early.outcome.outcome.kind.name(), "deal");
    let u1 = early.outcome.outcome.utility.learner;
    assert!(u1 > 50.0, "the first deal is a good one: {u1}");

    // The later deal's setup, prompt and utilities carry it; the same deal alone does not.
    let later = after[1];
    let alone = alone[0];
    assert_eq!(later.scenario_id, alone.scenario_id);
    let standing = later.setup.seats.learner.campaign.as_ref().unwrap();
    assert_eq!(standing.batna, u1);
    assert_eq!(standing.before.value, u1);
    assert_eq!(later.setup.seats.learner.floor, u1);
    let alone_standing = alone.setup.seats.learner.campaign.as_ref().unwrap();
    assert_eq!(alone_standing.batna, 0.0);
    let prompt = &later.seats.learner.system_prompt;
    for says in [
        format!(
            "Without an agreement you get {}, your best alternative now",
            told(u1)
        ),
        format!(
            "the best offer of your earlier negotiations: it is worth {} to you",
            told(u1)
        ),
        format!("- deal 1, Job offer: agreed, worth {} to you", told(u1)),
        "This negotiation is deal 2 of 2 in a campaign".to_string(),
    ] {
        assert!(prompt.contains(&says), "{says}\nnot in\n{prompt}");
    }
    let alone_prompt = &alone.seats.learner.system_prompt;
    assert!(alone_prompt.contains("Without an agreement you get 0, your best alternative now"));
    assert!(!alone_prompt.contains("The earlier deals:"));
    // The counterpart is told nothing of it.
    assert!(!later.seats.opponent.system_prompt.contains("campaign"));

    // Utilities: walking away from the later deal is worth u1 (its no-deal ρ says so), so a
    // deal is only taken above it, and the gain over it is what the deal added.
    let outcome = &later.outcome.outcome;
    let u2 = outcome.utility.learner;
    assert!(
        u2 >= u1 - 1e-9,
        "the later deal is worth {u2}, below its BATNA {u1}"
    );
    let no_deal_rho = later.outcome.metrics.seats.learner.no_deal_rho.unwrap();
    let scale = u2 / outcome.rho.learner;
    assert!(
        (no_deal_rho - u1 / scale).abs() < 1e-9,
        "{no_deal_rho} is not {u1}/{scale}"
    );
    assert_eq!(alone.outcome.metrics.seats.learner.no_deal_rho, None);
    let ledger = later.campaign.as_ref().unwrap();
    assert_eq!(ledger.before.value, u1);
    assert_eq!(ledger.after.value, u1.max(u2));
    let closed = outcome.kind.name() == "deal";
    assert_eq!(ledger.gain, if closed { u2 - u1 } else { 0.0 });
    assert_eq!(ledger.value, u1.max(u2));
}

#[test]
fn campaigns_against_the_mock_chain_their_ledgers_and_go_through_every_surface() {
    let dir = temp_dir("campaign-mock");
    let chosen: Vec<Value> = [
        "job-offers-",
        "ahp-budget-",
        "craigslist-quantity-",
        "casino-best-",
    ]
    .into_iter()
    .map(example)
    .collect();
    let file = write_campaigns(&dir, &chosen);
    let mock = threaded_mock(MockConfig::default());
    let learner = format!("openai:mock@{}", mock.url);
    let run = |out: &Path| {
        succeeded(dealgym_cli([
            "run".as_ref(),
            "--campaigns".as_ref(),
            file.as_os_str(),
            "--learner".as_ref(),
            learner.as_ref(),
            "--opponent".as_ref(),
            "rule:boulware".as_ref(),
            "--group-size".as_ref(),
            "2".as_ref(),
            "--concurrency".as_ref(),
            "3".as_ref(),
            "--seed".as_ref(),
            "3".as_ref(),
            "--quiet".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ]))
    };
    let out = dir.join("episodes.jsonl");
    run(&out);
    let records = read_log(&out);
    let deals: usize = chosen
        .iter()
        .map(|c| c["deals"].as_array().unwrap().len())
        .sum();
    assert_eq!(records.len(), deals * 2, "every deal of every member");
    let campaigns = by_campaign(&records);
    assert_eq!(campaigns.len(), chosen.len() * 2);

    let scenarios: BTreeMap<String, f64> =
        load_scenarios(&repo("scenarios/ahp.jsonl"), LoadOptions::default())
            .unwrap()
            .scenarios
            .into_iter()
            .filter_map(|s| match s.game {
                dealgym::scenario::DealSpace::Price { buyer, .. } => Some((s.id, buyer.budget)),
                _ => None,
            })
            .collect();
    for ((id, _), deals) in &campaigns {
        let source = chosen.iter().find(|c| c["id"] == id.as_str()).unwrap();
        let names: Vec<&str> = source["deals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        let played: Vec<&str> = deals.iter().map(|r| r.scenario_id.as_str()).collect();
        assert_eq!(played, names, "{id}: the deals in the file's order");
        for (k, r) in deals.iter().enumerate() {
            let ledger = r.campaign.as_ref().unwrap();
            assert_eq!(ledger.position as usize, k + 1);
            let standing = r.setup.seats.learner.campaign.as_ref().unwrap();
            assert_eq!(standing.before, ledger.before);
            assert_eq!(
                standing.earlier.len(),
                k,
                "{id}: every earlier deal is told"
            );
            if k > 0 {
                // Each deal finds the ledger the one before it left.
                let previous = deals[k - 1].campaign.as_ref().unwrap();
                assert_eq!(ledger.before, previous.after, "{id} deal {}", k + 1);
            }
            if id.starts_with("ahp-budget-") {
                // Money left is the purse less every price paid, and caps the budget.
                let money = source["ledger"]["money"].as_f64().unwrap();
                let paid: f64 = deals[..k]
                    .iter()
                    .filter(|d| d.outcome.outcome.kind.name() == "deal")
                    .filter_map(|d| d.outcome.outcome.terms.as_ref().and_then(|t| t.price()))
                    .sum();
                assert!((ledger.before.value - (money - paid)).abs() < 1e-6);
                let cap = scenarios[&r.scenario_id].min(money - paid).max(0.0);
                assert_eq!(standing.budget, Some(cap));
                let told = format!(
                    "Your budget is ${}",
                    dealgym::protocol::format_cents(dealgym::protocol::to_cents(cap))
                );
                assert!(r.seats.learner.system_prompt.contains(&told), "{told}");
            }
        }
    }

    // Replay rebuilds every deal, prompts and capped budgets included.
    let verify = succeeded(dealgym_cli([
        "replay".as_ref(),
        "--verify".as_ref(),
        out.as_os_str(),
    ]));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("replay identically"));

    // The same seed and the same model outputs give the same records.
    let again = dir.join("again.jsonl");
    run(&again);
    let key = |r: &EpisodeRecord| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("timing");
        (r.episode_id.clone(), v.to_string())
    };
    let mut a: Vec<_> = records.iter().map(key).collect();
    let mut b: Vec<_> = read_log(&again).iter().map(key).collect();
    a.sort();
    b.sort();
    assert!(a == b, "a second run with the same seed differs");

    // Export: a trajectory per campaign played, and the campaign on every per-deal line.
    let trajectories = dir.join("campaigns.out.jsonl");
    succeeded(dealgym_cli([
        "export".as_ref(),
        out.as_os_str(),
        "--format".as_ref(),
        "campaigns".as_ref(),
        "--out".as_ref(),
        trajectories.as_os_str(),
    ]));
    let lines: Vec<Value> = std::fs::read_to_string(&trajectories)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), campaigns.len());
    for line in &lines {
        let deals = line["deals"].as_array().unwrap();
        assert_eq!(line["complete"], true);
        let positions: Vec<u64> = deals
            .iter()
            .map(|d| d["position"].as_u64().unwrap())
            .collect();
        assert_eq!(positions, (1..=deals.len() as u64).collect::<Vec<_>>());
        assert!(deals
            .iter()
            .all(|d| !d["messages"].as_array().unwrap().is_empty()));
        let total: f64 = deals.iter().map(|d| d["reward"].as_f64().unwrap()).sum();
        assert!((line["return"].as_f64().unwrap() - total).abs() < 1e-9);
    }
    let per_deal = succeeded(dealgym_cli([
        "export".as_ref(),
        out.as_os_str(),
        "--format".as_ref(),
        "messages".as_ref(),
    ]));
    let per_deal = String::from_utf8_lossy(&per_deal.stdout);
    assert_eq!(per_deal.lines().count(), records.len());
    assert!(per_deal
        .lines()
        .all(|l| l.contains("\"campaign\":{\"campaign\":")));

    // Report and eval read and play campaigns like any other episodes.
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report".as_ref(),
        out.as_os_str(),
        "--out".as_ref(),
        report.as_os_str(),
    ]));
    assert!(report.join("report.md").exists());
    let eval_out = dir.join("eval.jsonl");
    let eval = succeeded(dealgym_cli([
        "eval".as_ref(),
        "--campaigns".as_ref(),
        file.as_os_str(),
        "--player".as_ref(),
        "tough=rule:tough".as_ref(),
        "--player".as_ref(),
        "linear=rule:linear".as_ref(),
        "--opponent".as_ref(),
        "boulware=rule:boulware".as_ref(),
        "--quiet".as_ref(),
        "--out".as_ref(),
        eval_out.as_os_str(),
    ]));
    assert!(String::from_utf8_lossy(&eval.stdout).contains("| tough |"));
    assert!(String::from_utf8_lossy(&eval.stdout).contains("| baseline |"));
    // Two players and the baseline row.
    assert_eq!(read_log(&eval_out).len(), deals * 3);
}

#[test]
fn bad_campaign_files_are_refused_by_file_line_and_field() {
    let dir = temp_dir("campaign-bad");
    let good = example("job-offers-");
    let ji = good["deals"][0].clone();
    let ahp = example("ahp-budget-")["deals"][0].clone();
    for (name, bad, says) in [
        (
            "missing",
            serde_json::json!({"id": "m", "ledger": {"kind": "best_offer"}, "deals": [ji, "job_interview:no-such-record"]}),
            ":2: field `deals[1]`: no scenario `job_interview:no-such-record`",
        ),
        (
            "empty",
            serde_json::json!({"id": "e", "ledger": {"kind": "best_offer"}, "deals": []}),
            ":2: field `deals`: a campaign needs at least one deal",
        ),
        (
            "penalty",
            serde_json::json!({"id": "q", "ledger": {"kind": "quantity", "target": 2, "shortfall_penalty": -5}, "deals": [ahp]}),
            ":2: field `ledger.shortfall_penalty`: must be a finite number from 0",
        ),
        (
            "money",
            serde_json::json!({"id": "b", "ledger": {"kind": "budget", "money": "lots"}, "deals": [ahp]}),
            ":2: field `ledger.money`: invalid type",
        ),
    ] {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let file = write_campaigns(&sub, &[good.clone(), bad]);
        let out = dealgym_cli([
            "run".as_ref(),
            "--campaigns".as_ref(),
            file.as_os_str(),
            "--learner".as_ref(),
            "rule:boulware".as_ref(),
            "--opponent".as_ref(),
            "rule:boulware".as_ref(),
            "--out".as_ref(),
            sub.join("out.jsonl").as_os_str(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}");
        let expected = format!("{}{says}", file.display());
        assert!(
            err.contains(&expected),
            "{name}: {err}\nshould say\n{expected}"
        );
        assert!(!sub.join("out.jsonl").exists(), "{name}: nothing is played");
    }
}

#[test]
fn the_shipped_example_campaigns_are_what_the_generator_writes() {
    let dir = temp_dir("campaign-generate");
    let out = dir.join("campaigns.jsonl");
    succeeded(dealgym_cli([
        "scenarios".as_ref(),
        "campaigns".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]));
    let written = std::fs::read_to_string(&out).unwrap();
    let shipped = std::fs::read_to_string(repo("scenarios/campaigns.jsonl")).unwrap();
    assert!(
        written == shipped,
        "scenarios/campaigns.jsonl is not what `dealgym scenarios campaigns` writes now: run it"
    );
    let kinds: Vec<String> = examples()
        .iter()
        .map(|c| c["ledger"]["kind"].as_str().unwrap().to_string())
        .collect();
    for kind in ["best_offer", "quantity", "budget"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} example");
    }
}

#[test]
fn a_campaign_written_in_part_resumes_with_the_ledger_its_records_left() {
    let dir = temp_dir("campaign-resume");
    let chosen: Vec<Value> = ["job-offers-", "ahp-budget-", "craigslist-quantity-"]
        .into_iter()
        .map(example)
        .collect();
    let file = write_campaigns(&dir, &chosen);
    let run = |out: &Path, resume: bool| {
        let mut args: Vec<std::ffi::OsString> = [
            "run",
            "--learner",
            "rule:boulware",
            "--opponent",
            "rule:linear",
            "--seed",
            "11",
            "--quiet",
            "--campaigns",
        ]
        .iter()
        .map(Into::into)
        .collect();
        args.push(file.clone().into());
        args.push("--out".into());
        args.push(out.into());
        if resume {
            args.push("--resume".into());
        }
        succeeded(dealgym_cli(args))
    };
    let whole = dir.join("whole.jsonl");
    run(&whole, false);
    let records = read_log(&whole);
    // Keep each campaign's first deal only (and the first two of the quantity campaign), as a
    // run stopped between deals would have left them.
    let kept: Vec<String> = std::fs::read_to_string(&whole)
        .unwrap()
        .lines()
        .zip(&records)
        .filter(|(_, r)| {
            let c = r.campaign.as_ref().unwrap();
            c.position == 1 || (c.campaign.starts_with("craigslist") && c.position == 2)
        })
        .map(|(line, _)| format!("{line}\n"))
        .collect();
    assert!(kept.len() < records.len());
    let part = dir.join("part.jsonl");
    std::fs::write(&part, kept.concat()).unwrap();
    let resumed = run(&part, true);
    let said = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        said.contains(&format!(
            "({} planned, {} already there)",
            records.len(),
            kept.len()
        )),
        "{said}"
    );
    // The resumed deals are those of the run that was not interrupted.
    let key = |r: &EpisodeRecord| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("timing");
        (r.episode_id.clone(), v.to_string())
    };
    let mut a: Vec<_> = records.iter().map(key).collect();
    let mut b: Vec<_> = read_log(&part).iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(x == y, "episode {} differs after --resume", x.0);
    }
}
