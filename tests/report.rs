//! `dealgym report` on a hand-built record file, whose figures are worked out by hand below and
//! must come out of the CSV tables exactly (to the six decimals the CSV is written with), and
//! on a `dealgym run` output over all five families, where every file must be written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use dealgym::game::{Episode, Seat};
use dealgym::record::EpisodeRecord;
use dealgym::report::{report, ReportOptions};
use dealgym::scenario::Role;
use dealgym_core::fixtures::{
    learner_first_as, play, price_task, record_of, training_record, turn,
};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealgym-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Craigslist L = 125, B = 100, C = 60 (|B − C| = 40), the learner buying first:
/// - deals at 92, 80, 64 and 220 (the learner offers, the regulated seller accepts):
///   learner ρ = (100 − P)/40 = 0.2, 0.5, 0.9, −3; first bids P/100 = 0.92, 0.8, 0.64, 2.2;
/// - a walk-away at once by the learner: ρ 0, no bid;
/// - a backend error on the learner's first call: counted apart.
fn hand_built(dir: &Path) -> PathBuf {
    let s = price_task(125.0, 100.0, 60.0);
    let mut episodes: Vec<Episode> = [92, 80, 64, 220]
        .iter()
        .map(|p| {
            play(
                &s,
                learner_first_as(&s, Role::Buyer),
                &[
                    turn(&format!("{p}?"), &format!("[SUBMIT_DEAL] price:{p}")),
                    turn("Fine.", "[ACCEPT_DEAL]"),
                ],
            )
        })
        .collect();
    episodes.push(play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[turn("Bye.", "[WALK_AWAY]")],
    ));
    let mut error = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
    error.fail_backend(Seat::Learner, "HTTP 500").unwrap();
    episodes.push(error);
    let text: String = episodes
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let mut r: EpisodeRecord = record_of(e);
            r.run_id = "hand".into();
            r.episode_id = format!("g{i}-m0");
            r.seats.learner.player = "script:hand.json".into();
            r.seats.opponent.player = "rule:linear".into();
            serde_json::to_string(&r).unwrap() + "\n"
        })
        .collect();
    let path = dir.join("hand.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// A CSV file as rows of column → field (no quoted fields in these tables).
fn csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn six(x: f64) -> String {
    format!("{x:.6}")
}

fn options(files: Vec<PathBuf>, out: PathBuf) -> ReportOptions {
    ReportOptions {
        files,
        out,
        transcripts: 200,
        sample_seed: 0,
        taus: vec![0.1, 0.3, 0.6],
        quiet: true,
        on_duplicate: Default::default(),
        training_control: None,
        scenarios: Vec::new(),
    }
}

#[test]
fn figures_of_a_hand_built_file_equal_the_hand_computed_values() {
    let dir = temp_dir("hand");
    let file = hand_built(&dir);
    let out = dir.join("report");
    let summary = report(&options(vec![file], out.clone())).unwrap();
    assert_eq!((summary.episodes, summary.transcripts), (6, 6));

    // 6 episodes, 1 error, 5 scored: 4 deals (80 %), 1 walk-away (20 %).
    // Learner ρ 0.2, 0.5, 0.9, −3, 0:
    //   mean (0.2 + 0.5 + 0.9 − 3 + 0)/5 = −0.28
    //   clipped to [−1, 1]: (0.2 + 0.5 + 0.9 − 1 + 0)/5 = 0.12
    //   median of −3, 0, 0.2, 0.5, 0.9 = 0.2, interval ranks ⌊2.5 − 1.96·√5/2⌋ = 0 → 1 and
    //   ⌈2.5 + 2.19⌉ + 1 = 6 → 5: [−3, 0.9]
    // First bid (0.92 + 0.8 + 0.64 + 2.2)/4 = 1.14; turns (2·4 + 1)/5 = 1.8.
    for table in ["by_family", "by_all", "by_player", "by_role"] {
        let rows = csv(&out.join("tables").join(format!("{table}.csv")));
        assert_eq!(rows.len(), 1, "{table}");
        let row = &rows[0];
        let expected = [
            ("episodes", "6".to_string()),
            ("errors", "1".to_string()),
            ("deal_pct", six(80.0)),
            ("walk_away_pct", six(20.0)),
            ("reject_loop_pct", six(0.0)),
            ("rho_deals_learner", six((0.2 + 0.5 + 0.9 - 3.0) / 4.0)),
            ("mean_rho_learner", six((0.2 + 0.5 + 0.9 - 3.0 + 0.0) / 5.0)),
            (
                "clipped_mean_rho_learner",
                six((0.2 + 0.5 + 0.9 - 1.0 + 0.0) / 5.0),
            ),
            ("median_rho_learner", six(0.2)),
            ("median_rho_learner_low", six(-3.0)),
            ("median_rho_learner_high", six(0.9)),
            ("first_bid_learner", six((0.92 + 0.8 + 0.64 + 2.2) / 4.0)),
            ("mean_turns", six(1.8)),
            ("turns_to_deal", six(2.0)),
            // AT in DialogXpert's turns (one exchange each, App. C): each 2-move deal is 1,
            // the walk-away counts at the cap, max_rounds = 6: (1·4 + 6)/5 = 2. In moves the
            // walk-away counts 12: (2·4 + 12)/5 = 4.
            ("average_turns", six(2.0)),
            ("average_moves", six(4.0)),
            // Learner points B − P: 8, 20, 36, −120 and the walk-away's 0 → −56/5; the
            // seller's P − C: 32, 20, 4, 160 → 216/5; score ratio −56/160 (joint 40 per deal).
            ("points_learner", six(-56.0 / 5.0)),
            ("points_opponent", six(216.0 / 5.0)),
            ("score_ratio_learner", six(-56.0 / 160.0)),
            // SL: (P − L)/(B − L) = (P − 125)/(−25): 1.32, 1.8, 2.44, −3.8, and the walk-away's
            // 0 → 1.76/5; over deals 1.76/4.
            ("sl_learner", six((1.32 + 1.8 + 2.44 - 3.8) / 5.0)),
            ("sale_to_list_learner", six((1.32 + 1.8 + 2.44 - 3.8) / 4.0)),
            ("malformed_deals_pct_learner", six(0.0)),
            ("malformed_deals_pct_opponent", String::new()),
            ("format_ok_pct_learner", six(100.0)),
            ("pareto_pct", String::new()),
        ];
        for (column, value) in expected {
            assert_eq!(row[column], value, "{table}.{column}");
        }
        assert_eq!(six(-0.28), row["mean_rho_learner"]);
        assert_eq!(six(0.12), row["clipped_mean_rho_learner"]);
        let (low, high): (f64, f64) = (
            row["deal_pct_low"].parse().unwrap(),
            row["deal_pct_high"].parse().unwrap(),
        );
        assert!((0.0..=80.0).contains(&low) && (80.0..=100.0).contains(&high));
    }
    let by_player = csv(&out.join("tables").join("by_player.csv"));
    assert_eq!(by_player[0]["group"], "script:hand.json");

    // Sensitivity, learner ρ of the deals 0.2, 0.5, 0.9, −3 (refused → ρ 0, the no-deal
    // value being 0) plus the walk-away's 0, over 5 scored episodes:
    //   as recorded: 4 deals, 80 %, over deals −1.4/4 = −0.35, per episode −0.28
    //   τ = 0.1: keeps 0.2, 0.5, 0.9 → 60 %, over deals 1.6/3, per episode 1.6/5 = 0.32
    //   τ = 0.3: keeps 0.5, 0.9 → 40 %, over deals 0.7, per episode 1.4/5 = 0.28
    //   τ = 0.6: keeps 0.9 → 20 %, over deals 0.9, per episode 0.18
    // ρ over the kept deals rises with τ (the paper's mean accepted quality, Table 4).
    let rows = csv(&out.join("tables").join("sensitivity.csv"));
    type Row = (String, String, String, String, String, String);
    let got: Vec<Row> = rows
        .iter()
        .map(|r| {
            (
                r["family"].clone(),
                r["tau"].clone(),
                r["deals"].clone(),
                r["deal_pct"].clone(),
                r["rho_deals_learner"].clone(),
                r["mean_rho_learner"].clone(),
            )
        })
        .collect();
    let expected: Vec<Row> = [
        (
            "",
            "4",
            80.0,
            -1.4 / 4.0,
            (0.2 + 0.5 + 0.9 - 3.0 + 0.0) / 5.0,
        ),
        ("0.100000", "3", 60.0, 1.6 / 3.0, (0.2 + 0.5 + 0.9) / 5.0),
        ("0.300000", "2", 40.0, 0.7, (0.5 + 0.9) / 5.0),
        ("0.600000", "1", 20.0, 0.9, 0.9 / 5.0),
    ]
    .iter()
    .map(|(tau, deals, pct, over_deals, rho)| {
        (
            "craigslist".to_string(),
            tau.to_string(),
            deals.to_string(),
            six(*pct),
            six(*over_deals),
            six(*rho),
        )
    })
    .collect();
    // One price family: its own rows, and no row pooling families (BATNA App. C: Table 4
    // averages the multi-item datasets; the price ones are omitted).
    assert_eq!(got, expected);

    // The ρ histogram holds the five learner values, −3 in the first bin.
    let histogram = csv(&out.join("tables").join("rho_histogram.csv"));
    assert_eq!(histogram.len(), 40);
    assert_eq!(histogram[0]["learner"], "1");
    let total: u64 = histogram
        .iter()
        .map(|r| r["learner"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 5);

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| craigslist | 6 | 1 | 80.0 ["), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<details class=\"episode\"").count(), 6);
    assert!(html.contains("-0.280 ["));
}

/// Two training runs over three steps, two GRPO groups a step, the learner buying (ρ =
/// (100 − P)/40): `trained` deals at 90 (ρ 0.25) and walks away at step 0, deals at 90 and 70
/// (0.75) at step 1, at 70 twice at step 2; `control` deals at 90 and walks away every step.
fn training_runs(dir: &Path) -> PathBuf {
    let plan: [(&str, u64, [Option<u32>; 2]); 6] = [
        ("trained", 0, [Some(90), None]),
        ("trained", 1, [Some(90), Some(70)]),
        ("trained", 2, [Some(70), Some(70)]),
        ("control", 0, [Some(90), None]),
        ("control", 1, [Some(90), None]),
        ("control", 2, [Some(90), None]),
    ];
    let mut text = String::new();
    for (run, step, prices) in plan {
        for (g, price) in prices.into_iter().enumerate() {
            let r = training_record(run, step, g, price);
            text += &(serde_json::to_string(&r).unwrap() + "\n");
        }
    }
    let path = dir.join("training.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_training_section_follows_rho_over_deals_per_step_and_against_the_control() {
    let dir = temp_dir("training");
    let out = dir.join("report");
    let mut o = options(vec![training_runs(&dir)], out.clone());
    o.training_control = Some("control".into());
    report(&o).unwrap();
    let tables = out.join("tables");
    // Per step: trained's deals 0.25; 0.25 and 0.75; 0.75 and 0.75.
    let steps = csv(&tables.join("training_steps.csv"));
    let rho: Vec<(&str, &str, &str)> = steps
        .iter()
        .map(|r| {
            (
                r["run"].as_str(),
                r["step"].as_str(),
                r["rho_deals"].as_str(),
            )
        })
        .collect();
    let (quarter, half, three) = (six(0.25), six(0.5), six(0.75));
    assert_eq!(
        rho,
        [
            ("control", "0", quarter.as_str()),
            ("control", "1", quarter.as_str()),
            ("control", "2", quarter.as_str()),
            ("trained", "0", quarter.as_str()),
            ("trained", "1", half.as_str()),
            ("trained", "2", three.as_str()),
        ]
    );
    // Against the control: over the three steps trained's five deals average
    // (0.25 + 0.25 + 3 · 0.75)/5 = 0.55, the control's 0.25; over the last third (step 2),
    // 0.75 against 0.25. Two groups a side: too few for a verdict.
    let compared = csv(&tables.join("training_compared.csv"));
    assert_eq!(compared.len(), 2, "all steps, then the last third");
    for (row, ours, difference) in [(&compared[0], 0.55, 0.30), (&compared[1], 0.75, 0.5)] {
        assert_eq!(row["run"], "trained");
        assert_eq!(row["against"], "control");
        assert_eq!(row["rho_deals"], six(ours), "{row:?}");
        assert_eq!(row["rho_deals_against"], six(0.25), "{row:?}");
        assert_eq!(row["rho_deals_difference"], six(difference), "{row:?}");
        assert_eq!(row["rho_deals_beyond"], "too few groups", "{row:?}");
    }
    assert!(out.join("charts").join("training_rho_deals.svg").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_report_of_a_run_over_all_five_families_writes_every_file() {
    let dir = temp_dir("run");
    let records = dir.join("run.jsonl");
    let mut run = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    run.current_dir(manifest())
        .args(["run", "--quiet", "--limit", "2"]);
    for family in ["ahp", "craigslist", "casino", "dnd", "job_interview"] {
        run.arg("--scenarios")
            .arg(format!("scenarios/{family}.jsonl"));
    }
    let status = run
        .args(["--learner", "rule:boulware", "--opponent", "rule:linear"])
        .arg("--out")
        .arg(&records)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");

    let out = dir.join("report");
    let shown = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args([
            "report",
            "--quiet",
            "--transcripts",
            "4",
            "--tau",
            "0.2,0.5",
        ])
        .arg(&records)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(shown.status.success(), "{shown:?}");

    for file in [
        "report.md",
        "report.html",
        "tables/by_all.csv",
        "tables/by_family.csv",
        "tables/by_player.csv",
        "tables/by_opponent.csv",
        "tables/by_opponent_persona.csv",
        "tables/by_learner_persona.csv",
        "tables/by_role.csv",
        "tables/by_family_player.csv",
        "tables/sensitivity.csv",
        "tables/rho_histogram.csv",
        "charts/rho_by_family.svg",
        "charts/deal_rate_by_family.svg",
        "charts/first_bid.svg",
        "charts/sensitivity.svg",
        "charts/rho_distribution.svg",
        "charts/outcomes_by_family.svg",
    ] {
        let text =
            std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!text.is_empty(), "{file}");
        if file.ends_with(".svg") {
            assert!(text.starts_with("<svg"), "{file}");
        }
    }
    // One row per family, then "all" is its own table.
    let families = csv(&out.join("tables/by_family.csv"));
    let names: Vec<&str> = families.iter().map(|r| r["group"].as_str()).collect();
    assert_eq!(
        names,
        ["ahp", "casino", "craigslist", "dnd", "job_interview"]
    );
    let episodes: u64 = families
        .iter()
        .map(|r| r["episodes"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(episodes, 10);
    let sensitivity = csv(&out.join("tables/sensitivity.csv"));
    assert_eq!(
        sensitivity.len(),
        6 * 3,
        "5 families and the multi-item average, 3 rows each"
    );
    assert_eq!(
        sensitivity
            .iter()
            .filter(|r| r["family"] == "multi-item average")
            .count(),
        3
    );

    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<table class=\"figures\" id=\"table-by_family\">"));
    // Every chart written is on the page, in the order it is read: the answer first.
    let svgs = std::fs::read_dir(out.join("charts")).unwrap().count();
    assert_eq!(svgs, 6, "one player: no per-player panels");
    assert_eq!(html.matches("<svg").count(), svgs);
    let at = |text: &str| html.find(text).unwrap_or_else(|| panic!("{text}"));
    assert!(at("id=\"answer\"") < at("id=\"families\""));
    assert!(at("id=\"families\"") < at("id=\"details\""));
    assert!(at("id=\"table-headline\"") < at("<details class=\"table\""));
    assert!(!html.contains("DESIGN"), "no internal document is named");
    assert_eq!(html.matches("<details class=\"episode\"").count(), 4);
    assert!(html.contains("<section class=\"turn learner\">"));
    assert!(html.contains("class=\"forwarded\""));
    assert!(html.contains("id=\"search\""));
    for fetch in [" src=", "<link", "url(", "@import"] {
        assert!(
            !html.contains(fetch),
            "nothing is fetched at view time: {fetch}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rho_over_deals_and_the_opponent_persona_rows_are_the_records_own() {
    use dealgym::run::RunOptions;
    use dealgym_mock::{MockConfig, MockServer};
    use std::collections::BTreeMap;
    use std::net::{Ipv4Addr, SocketAddr};

    // A small run of every family, the built-in mock in both seats (so both are LLM seats
    // and draw personas), some of its replies garbage so that not every episode is a deal.
    let server = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig {
            garbage_rate: 0.15,
            ..MockConfig::default()
        },
    )
    .await
    .unwrap();
    let dir = crate::common::temp_dir("report-rho-over-deals");
    let files = crate::common::scenario_files(&dir, 4);
    let records = dir.join("run.jsonl");
    let spec = format!("openai:mock@{}", server.base_url());
    let mut run_options = RunOptions::new(files, &spec, &spec, records.clone());
    run_options.progress = false;
    run_options.seed = 19;
    run_options.group_size = 2;
    run_options.personas.weights = BTreeMap::from([
        ("anchoring".to_string(), 1.0),
        ("cooperative".to_string(), 1.0),
        ("none".to_string(), 1.0),
    ]);
    crate::common::run_to_end(&run_options).await;
    let out = dir.join("report");
    report(&options(vec![records.clone()], out.clone())).unwrap();

    // The records, read as plain JSON: ρ over deals is the mean of the learner's ρ over the
    // episodes whose outcome is a deal (backend errors, none here, would be left out).
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&records)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), crate::common::FAMILIES.len() * 4 * 2);
    let kind = |r: &serde_json::Value| r["outcome"]["kind"].as_str().unwrap().to_string();
    let learner_rho = |r: &serde_json::Value| r["outcome"]["rho"]["learner"].as_f64().unwrap();
    let over_deals = |of: &[&serde_json::Value]| -> Option<f64> {
        let deals: Vec<f64> = of
            .iter()
            .filter(|r| kind(r) == "deal")
            .map(|r| learner_rho(r))
            .collect();
        (!deals.is_empty()).then(|| deals.iter().sum::<f64>() / deals.len() as f64)
    };
    let per_episode = |of: &[&serde_json::Value]| -> f64 {
        of.iter().map(|r| learner_rho(r)).sum::<f64>() / of.len() as f64
    };
    let all: Vec<&serde_json::Value> = lines.iter().collect();
    let deals = all.iter().filter(|r| kind(r) == "deal").count();
    assert!(
        deals > 0 && deals < all.len(),
        "some deals and some episodes without one: {deals} of {}",
        all.len()
    );
    let expected = over_deals(&all).unwrap();
    assert!(
        (expected - per_episode(&all)).abs() > 1e-6,
        "the two figures differ on these records"
    );

    // by_all: ρ over deals, and ρ per episode beside it.
    let by_all = csv(&out.join("tables/by_all.csv"));
    let number = |row: &HashMap<String, String>, key: &str| -> f64 {
        row[key]
            .parse()
            .unwrap_or_else(|e| panic!("{key} = {:?}: {e}", row[key]))
    };
    assert!((number(&by_all[0], "rho_deals_learner") - expected).abs() <= 5e-7);
    assert!((number(&by_all[0], "mean_rho_learner") - per_episode(&all)).abs() <= 5e-7);
    // Per family, the same.
    for row in csv(&out.join("tables/by_family.csv")) {
        let of: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|r| r["family"].as_str() == Some(row["group"].as_str()))
            .collect();
        match over_deals(&of) {
            Some(x) => assert!(
                (number(&row, "rho_deals_learner") - x).abs() <= 5e-7,
                "{row:?}"
            ),
            None => assert_eq!(row["rho_deals_learner"], "", "{row:?}"),
        }
    }
    // The headline of report.md says it per family, with the deal rate beside it, then the
    // multi-item families' average, each family once (BATNA App. C, Table 4's "Avg") — never
    // the pool of every episode (`expected` above, by_all's figure).
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let headline = md
        .lines()
        .find(|l| l.starts_with("Learner's bargained ratio"))
        .unwrap_or_else(|| panic!("a headline in {md}"));
    let mut multi = Vec::new();
    for family in crate::common::FAMILIES {
        let of: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|r| r["family"].as_str() == Some(family))
            .collect();
        let said = match over_deals(&of) {
            Some(x) => format!("{family}: {x:.3} ["),
            None => format!("{family}: – at"),
        };
        let part = headline
            .split("; — ")
            .find(|p| p.contains(&format!("{family}: ")))
            .unwrap_or_else(|| panic!("{family} in {headline}"));
        assert!(part.contains(&said), "{said} in {part}");
        let deal_pct =
            100.0 * of.iter().filter(|r| kind(r) == "deal").count() as f64 / of.len() as f64;
        assert!(
            part.contains(&format!("at a deal rate of {deal_pct:.1} [")),
            "{deal_pct} in {part}"
        );
        if ["casino", "dnd", "job_interview"].contains(&family) {
            multi.push(over_deals(&of));
        }
    }
    assert!(
        !headline.contains(&format!("ρ over deals): {expected:.3}")),
        "no pooled figure: {headline}"
    );
    // The average: the three families' figures summed over three, when each has one.
    let sensitivity = csv(&out.join("tables/sensitivity.csv"));
    let recorded = sensitivity
        .iter()
        .find(|r| r["family"] == "multi-item average" && r["tau"].is_empty())
        .unwrap();
    if multi.iter().all(Option::is_some) {
        let average = multi.iter().flatten().sum::<f64>() / 3.0;
        assert!(headline.contains(&format!("multi-item average (each multi-item family once, as the BATNA paper's Table 4): {average:.3} [")), "{headline}");
        assert!((number(recorded, "rho_deals_learner") - average).abs() <= 5e-7);
    } else {
        assert_eq!(recorded["rho_deals_learner"], "");
    }

    // Per opponent persona: one row per persona the records name for the opponent seat
    // (`none` without one), and the rows partition the episodes.
    let mut personas: BTreeMap<String, usize> = BTreeMap::new();
    for r in &lines {
        let persona = r["seats"]["opponent"]["persona"]
            .as_str()
            .unwrap_or("none")
            .to_string();
        *personas.entry(persona).or_default() += 1;
    }
    assert!(personas.len() > 1, "{personas:?}");
    let rows = csv(&out.join("tables/by_opponent_persona.csv"));
    let reported: BTreeMap<String, usize> = rows
        .iter()
        .map(|r| (r["group"].clone(), r["episodes"].parse().unwrap()))
        .collect();
    assert_eq!(reported, personas);
    assert_eq!(reported.values().sum::<usize>(), lines.len());
    for row in &rows {
        let of: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|r| {
                r["seats"]["opponent"]["persona"].as_str().unwrap_or("none") == row["group"]
            })
            .collect();
        if let Some(x) = over_deals(&of) {
            assert!(
                (number(row, "rho_deals_learner") - x).abs() <= 5e-7,
                "{row:?}"
            );
        }
    }
    // The learner's persona has its own table, named as such.
    assert!(out.join("tables/by_learner_persona.csv").exists());
    assert!(md.contains("### Per opponent persona"), "{md}");
    server.stop();
}
