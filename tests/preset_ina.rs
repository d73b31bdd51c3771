//! `--preset ina` through the binary: INA's agent is the seller of a bundle against `rule:ina`,
//! its reward INA's R = 0.2·R1 + 0.2·R2 + 0.3·R3 + 0.2·R4 (INA §5, eqs. 6–12, App. A). A
//! scripted episode's four terms and total are worked here from the paper's formulas and the
//! scenario file's numbers; the preset plays the bundle file against `rule:ina` unless the
//! flags say otherwise; and a learner not asked for intent labels cannot be scored on them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dealgym_cli, read_log, succeeded, temp_dir};
use dealgym::game::{OutcomeKind, Seat};
use dealgym::record::EpisodeRecord;
use dealgym::reward::Component;

const TOL: f64 = 1e-9;

/// The first scenario of `scenarios/bundle.jsonl` (`bundle:26:0`), as the generator wrote it.
fn first_bundle() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bundle.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

fn script(dir: &Path, name: &str, turns: &[String]) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(turns).unwrap()).unwrap();
    format!("script:{}", path.display())
}

/// `dealgym run --preset ina` with `flags`, one episode (not the preset's GRPO group of 3);
/// the one record, or the failed command's output.
fn run_ina(dir: &Path, name: &str, flags: &[&str]) -> Result<EpisodeRecord, String> {
    let out: PathBuf = dir.join(format!("{name}.jsonl"));
    let mut args: Vec<String> = [
        "run",
        "--preset",
        "ina",
        "--limit",
        "1",
        "--group-size",
        "1",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["--quiet".into(), "--out".into(), out.display().to_string()]);
    args.extend(flags.iter().map(|s| s.to_string()));
    let output = dealgym_cli(&args);
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let mut records = read_log(&out);
    assert_eq!(records.len(), 1, "{name}");
    Ok(records.remove(0))
}

#[test]
fn under_the_ina_preset_a_scripted_bundle_episode_earns_the_papers_r1_to_r4() {
    let dir = temp_dir("preset-ina-scored");
    let s = first_bundle();
    let bundle = &s["game"]["bundle"];
    let keys: Vec<&str> = bundle["bundle"]["accessories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    // The customer wants the main product and the second accessory (bundle:26:0: the washer
    // and its drying rack), without the first accessory and delivery.
    let terms = |price: u32| {
        format!(
            "[SUBMIT_DEAL] price:{price} {}:out {}:in delivery:out",
            keys[0], keys[1]
        )
    };
    let seller_cost = bundle["seller"]["main"].as_f64().unwrap()
        + bundle["seller"]["accessories"][1].as_f64().unwrap();
    assert_eq!(seller_cost, 14665.0, "13913 + 752, as the file has them");

    // The customer (the opponent, who opens: §3.3) bids 15000, 15500, 16000, then accepts the
    // seller's 17000. The seller labels each turn with an INA intent (`learner_acts`).
    let customer: Vec<String> = [
        terms(15000),
        terms(15500),
        terms(16000),
        "[ACCEPT_DEAL]".to_string(),
    ]
    .iter()
    .map(|a| format!("Thought: t\nTalk: How about this?\nAction: {a}"))
    .collect();
    let seller = vec![
        format!(
            "Thought: t\nTalk: The washer and the rack are yours for 18000.\nAction: {} #negotiate-price-increase",
            terms(18000)
        ),
        format!(
            "Thought: t\nTalk: The washer and the rack are yours for 17500.\nAction: {} #negotiate-price-increase",
            terms(17500)
        ),
        format!(
            "Thought: t\nTalk: Deal at 17000, my final word.\nAction: {} #accept",
            terms(17000)
        ),
    ];
    let (learner, opponent) = (
        script(&dir, "seller", &seller),
        script(&dir, "customer", &customer),
    );
    let r = run_ina(
        &dir,
        "scored",
        &["--learner", &learner, "--opponent", &opponent],
    )
    .unwrap();
    assert_eq!(
        r.scenario_id, "bundle:26:0",
        "the preset's own scenario file"
    );
    assert_eq!(r.kind(), OutcomeKind::Deal);
    assert_eq!(r.seats.learner.role, dealgym::scenario::Role::Seller);
    assert_eq!(r.first_mover, Seat::Opponent, "the customer opens");

    // R1 (eq. 6; dealgym's rule check of the label): 18000 against the customer's 15000 and
    // 17500 against its 15500 are price increases, as labelled (1, 1); a [SUBMIT_DEAL]
    // labelled `accept` is not (0). Mean: 2/3.
    let r1 = (1.0 + 1.0 + 0.0) / 3.0;
    // R2 (eq. 7): the final selling price over the agent's initial price: 17000/18000.
    let r2 = 17000.0 / 18000.0;
    // R3 (eqs. 8–10): P_b the customer's proposed price, 16000 (not the agreed 17000),
    // P_a-min the seller's cost of that bundle, 14665; the final intent Accept: G = 1.
    // x = 1335/14665 = 0.09103, R3 = e^x = 1.0953 (the agreed price would give
    // e^(2335/14665) = 1.1726).
    let r3 = ((16000.0 - seller_cost) / seller_cost).exp();
    assert!((r3 - 1.0953).abs() < 5e-5, "{r3}");
    assert!((((17000.0 - seller_cost) / seller_cost).exp() - 1.1726).abs() < 5e-5);
    // R4 (eq. 11): the first utterance of an intent has nothing to repeat (1); the second
    // `negotiate-price-increase` shares with the first the words the×2, washer, and, rack,
    // are, yours, for of 9: cos = (2·2 + 6)/(√11·√11) = 10/11, so 1 − 10/11; the `accept`
    // utterance is the first of its intent (1). Mean: (1 + 1/11 + 1)/3 = 23/33.
    let r4 = (1.0 + (1.0 - 10.0 / 11.0) + 1.0) / 3.0;
    // R (eq. 12) with App. A's weights.
    let total = 0.2 * r1 + 0.2 * r2 + 0.3 * r3 + 0.2 * r4;

    let parts = &r.reward_parts.learner;
    for (component, want) in [
        (Component::IntentConsistency, r1),
        (Component::PriceGap, r2),
        (Component::NegotiationStrategy, r3),
        (Component::Interactiveness, r4),
    ] {
        let got = parts
            .get(component)
            .unwrap_or_else(|| panic!("no {} part", component.name()));
        assert!(
            (got - want).abs() < TOL,
            "{}: {got} vs {want}",
            component.name()
        );
    }
    assert!(
        !parts.contains(Component::Terminal),
        "the terminal reward is not INA's"
    );
    assert!(
        (r.rewards.learner - total).abs() < TOL,
        "{} vs {total}",
        r.rewards.learner
    );
    // The customer was not asked to label and wrote no labels: it has no R1 at all, not 0.
    assert!(!r
        .reward_parts
        .opponent
        .contains(Component::IntentConsistency));
    assert!(r.reward_parts.opponent.contains(Component::PriceGap));

    succeeded(dealgym_cli([
        "replay",
        "--verify",
        dir.join("scored.jsonl").to_str().unwrap(),
    ]));
}

#[test]
fn the_ina_preset_plays_bundles_against_rule_ina_unless_the_flags_say_otherwise() {
    let dir = temp_dir("preset-ina-play");
    let walk = script(
        &dir,
        "walk",
        &["Thought: t\nTalk: I cannot sell at that.\nAction: [WALK_AWAY] #reject".to_string()],
    );
    // Neither --scenarios nor --opponent: the preset's [play].
    let r = run_ina(&dir, "default", &["--learner", &walk]).unwrap();
    assert_eq!(r.scenario_id, "bundle:26:0");
    assert_eq!(r.seats.opponent.player.as_str(), "rule:ina");
    assert_eq!(r.first_mover, Seat::Opponent);
    // rule:ina opened for the customer; the seller walked away: INA's final Reject, G = −1.
    // R3 = F(x)·(−1), x = (P_b − P_a-min)/P_a-min over the customer's bid and the seller's
    // cost of the bundle it bid for, both read here from the record and the scenario file.
    let Some(dealgym::protocol::Action::Submit(bid)) = &r.turns[0].played else {
        panic!("rule:ina opens with a bid: {:?}", r.turns[0].played)
    };
    let dealgym::protocol::Terms::Bundle { price, parts } = bid else {
        panic!("{bid:?}")
    };
    let bundle = &first_bundle()["game"]["bundle"]["seller"];
    let mut cost = bundle["main"].as_f64().unwrap();
    for (i, kept) in parts.accessories.iter().enumerate() {
        if *kept {
            cost += bundle["accessories"][i].as_f64().unwrap();
        }
    }
    if parts.delivery {
        cost += bundle["delivery"].as_f64().unwrap();
    }
    let x = (*price as f64 / 100.0 - cost) / cost;
    let r3 = if x < 0.0 { 0.0 } else { -x.exp() };
    let got = r.reward_parts.learner.get(Component::NegotiationStrategy);
    assert!((got.unwrap() - r3).abs() < TOL, "{got:?} vs {r3}");
    // Walking away labelled `reject` does what it says: R1 = 1.
    assert_eq!(
        r.reward_parts.learner.get(Component::IntentConsistency),
        Some(1.0)
    );

    // The opponent flag wins; the family is the preset's config: a file of another family
    // is refused, naming what it holds, and a config that names the family plays it.
    let craigslist = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/craigslist.jsonl");
    let err = run_ina(
        &dir,
        "other-family",
        &[
            "--learner",
            &walk,
            "--scenarios",
            craigslist.to_str().unwrap(),
        ],
    )
    .unwrap_err();
    assert!(
        err.contains("bundle") && err.contains("craigslist"),
        "{err}"
    );
    let config = dir.join("craigslist.toml");
    std::fs::write(&config, "[scenarios]\nfamily = \"craigslist\"\n").unwrap();
    let r = run_ina(
        &dir,
        "flags",
        &[
            "--learner",
            &walk,
            "--opponent",
            "rule:boulware",
            "--config",
            config.to_str().unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(r.seats.opponent.player.as_str(), "rule:boulware");
    assert!(
        r.scenario_id.starts_with("craigslist:"),
        "{}",
        r.scenario_id
    );
}

#[test]
fn the_ina_preset_refuses_a_learner_that_is_not_asked_for_intent_labels() {
    let dir = temp_dir("preset-ina-refused");
    let config = dir.join("unlabelled.toml");
    std::fs::write(&config, "[episode]\nlearner_acts = false\n").unwrap();
    let walk = script(
        &dir,
        "walk",
        &["Thought: t\nTalk: No.\nAction: [WALK_AWAY]".to_string()],
    );
    let err = run_ina(
        &dir,
        "refused",
        &["--learner", &walk, "--config", config.to_str().unwrap()],
    )
    .unwrap_err();
    assert!(
        err.contains("intent_consistency") && err.contains("learner_acts = true"),
        "{err}"
    );
    // Without R1 in the weights the same learner plays.
    std::fs::write(
        &config,
        "[episode]\nlearner_acts = false\n[rewards.weights]\nprice_gap = 0.2\nnegotiation_strategy = 0.3\ninteractiveness = 0.2\n",
    )
    .unwrap();
    let r = run_ina(
        &dir,
        "without-r1",
        &["--learner", &walk, "--config", config.to_str().unwrap()],
    )
    .unwrap();
    assert!(!r
        .reward_parts
        .learner
        .contains(Component::IntentConsistency));
}
