//! `dealgym eval` as a process, over every family: two rule players against two rule opponents
//! (and a round-robin) play every pairing × scenario (× seating) exactly once on the same
//! setups, resume after a cut, print the matrix the records give, and replay identically.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{read_log, scenario_files, temp_dir, FAMILIES};
use dealgym::game::{OutcomeKind, Seat};
use dealgym::record::EpisodeRecord;

/// Scenarios per family.
const PER_FAMILY: usize = 2;

fn dealgym(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `eval` over the first scenarios of every family, with `extra` flags.
fn eval_args(files: &[PathBuf], out: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["eval".to_string()];
    for f in files {
        args.extend(["--scenarios".to_string(), f.display().to_string()]);
    }
    args.extend(
        // The baseline row has its own test (`talk::`): these count the grid's own pairings.
        [
            "--seed",
            "3",
            "--concurrency",
            "4",
            "--quiet",
            "--no-baseline",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    args.push(out.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

const PLAYERS_VS_OPPONENTS: [&str; 8] = [
    "--player",
    "linear=rule:linear",
    "--player",
    "conceder=rule:conceder",
    "--opponent",
    "boulware=rule:boulware",
    "--opponent",
    "tough=rule:tough",
];

fn name(r: &EpisodeRecord, seat: Seat) -> String {
    r.seats[seat]
        .name
        .clone()
        .expect("eval records name their players")
}

/// What names an episode's setup across pairings: its scenario and its episode id (group and
/// member), the same in every pairing.
fn setup_key(r: &EpisodeRecord) -> (String, String) {
    (r.scenario_id.clone(), r.episode_id.clone())
}

#[test]
fn two_rule_players_against_two_rule_opponents_over_every_family() {
    let dir = temp_dir("eval-grid");
    let files = scenario_files(&dir, PER_FAMILY);
    let out = dir.join("eval.jsonl");
    let mut extra = PLAYERS_VS_OPPONENTS.to_vec();
    extra.push("--swap-seats");
    let summary = dir.join("summary.json");
    let summary_flag = summary.display().to_string();
    extra.extend(["--summary-json", summary_flag.as_str()]);
    let done = dealgym(&eval_args(&files, &out, &extra));
    assert!(done.status.success(), "{}", text(&done.stderr));
    let stdout = text(&done.stdout);
    let records = read_log(&out);

    // Every pairing × seating × scenario exactly once, each pairing and seating its own run.
    let scenarios = FAMILIES.len() * PER_FAMILY;
    assert_eq!(
        records.len(),
        2 * 2 * 2 * scenarios,
        "{}",
        text(&done.stderr)
    );
    let runs: BTreeMap<&str, Vec<&EpisodeRecord>> =
        records.iter().fold(BTreeMap::new(), |mut m, r| {
            m.entry(r.run_id.as_str()).or_default().push(r);
            m
        });
    assert_eq!(runs.len(), 8);
    for episodes in runs.values() {
        let pair: BTreeSet<(String, String)> = episodes
            .iter()
            .map(|r| (name(r, Seat::Learner), name(r, Seat::Opponent)))
            .collect();
        assert_eq!(pair.len(), 1, "one pairing per run");
        let ids: BTreeSet<(String, String)> = episodes.iter().map(|r| setup_key(r)).collect();
        assert_eq!(ids.len(), scenarios, "every scenario once per run");
        let families: BTreeSet<String> =
            episodes.iter().map(|r| format!("{:?}", r.family)).collect();
        assert_eq!(families.len(), FAMILIES.len());
    }
    let pairs: BTreeMap<(String, String), usize> =
        records.iter().fold(BTreeMap::new(), |mut m, r| {
            *m.entry((name(r, Seat::Learner), name(r, Seat::Opponent)))
                .or_default() += 1;
            m
        });
    assert_eq!(pairs.len(), 4);
    assert!(pairs.values().all(|n| *n == 2 * scenarios), "{pairs:?}");
    assert_eq!(
        records[0].seats.learner.player.as_str().split(':').next(),
        Some("rule")
    );

    // Paired seeds: the same scenario and episode id has one setup in one seating, and the
    // same setup with the roles exchanged in the other.
    let mut setups: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for r in &records {
        setups
            .entry(setup_key(r))
            .or_default()
            .insert(serde_json::to_string(&r.setup).unwrap());
    }
    assert_eq!(setups.len(), scenarios);
    for (key, seen) in &setups {
        assert_eq!(
            seen.len(),
            2,
            "{key:?}: one setup per seating, in every pairing"
        );
    }
    for r in &records {
        let twin = records
            .iter()
            .find(|o| {
                setup_key(o) == setup_key(r)
                    && name(o, Seat::Learner) == name(r, Seat::Learner)
                    && name(o, Seat::Opponent) == name(r, Seat::Opponent)
                    && o.run_id != r.run_id
            })
            .expect("each episode has a twin in the other seating");
        assert_eq!(twin.seats.learner.role, r.seats.opponent.role);
        assert_eq!(twin.seats.opponent.role, r.seats.learner.role);
        assert_eq!(twin.first_mover, r.first_mover);
        assert_eq!(twin.seats.learner.regulated, r.seats.learner.regulated);
        assert_eq!(twin.seeds, r.seeds);
    }

    // The printed matrix, one row per pairing: its episodes, and the learner seat's deal rate,
    // ρ over deals, ρ per episode and regret against the rule (every opponent here is one), per
    // family and for all, are the records'.
    let mut families: Vec<(String, Vec<&EpisodeRecord>)> = FAMILIES
        .iter()
        .map(|f| {
            let of: Vec<&EpisodeRecord> = records
                .iter()
                .filter(|r| serde_json::to_value(r.family).unwrap() == *f)
                .collect();
            (f.to_string(), of)
        })
        .collect();
    families.push(("all".to_string(), records.iter().collect()));
    for (family, of) in &families {
        let section = stdout
            .split(&format!("### {family}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no matrix for {family}:\n{stdout}"));
        let rows: Vec<&str> = section
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(
            rows[0],
            "| player | opponent | episodes | deal % [95% CI] | ρ over deals [95% CI] \
             | ρ per episode [95% CI] | regret [95% CI] |"
        );
        assert_eq!(rows.len(), 2 + 4, "two players × two opponents: {section}");
        let mut pairings = Vec::new();
        for row in &rows[2..] {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 7, "{row}");
            let (player, opponent) = (cells[0], cells[1]);
            pairings.push((player, opponent));
            let mine: Vec<&&EpisodeRecord> = of
                .iter()
                .filter(|r| name(r, Seat::Learner) == player && name(r, Seat::Opponent) == opponent)
                .collect();
            let scored: Vec<&&&EpisodeRecord> = mine
                .iter()
                .filter(|r| r.kind() != OutcomeKind::Error)
                .collect();
            let rho = scored
                .iter()
                .map(|r| r.outcome.outcome.rho.learner)
                .sum::<f64>()
                / scored.len() as f64;
            let deals = scored
                .iter()
                .filter(|r| r.kind() == OutcomeKind::Deal)
                .count();
            let deal_pct = 100.0 * deals as f64 / scored.len() as f64;
            let over_deals = scored
                .iter()
                .filter(|r| r.kind() == OutcomeKind::Deal)
                .map(|r| r.outcome.outcome.rho.learner)
                .sum::<f64>()
                / deals as f64;
            let printed = |cell: &str| -> f64 { cell.split(' ').next().unwrap().parse().unwrap() };
            assert_eq!(cells[2], mine.len().to_string(), "{row}");
            assert!(
                (printed(cells[3]) - deal_pct).abs() <= 0.05 + 1e-9,
                "{family} {player}/{opponent}: deal {deal_pct}, printed {row}"
            );
            if deals == 0 {
                assert_eq!(cells[4], "–", "no deal, no ρ over deals: {row}");
            } else {
                assert!(
                    (printed(cells[4]) - over_deals).abs() <= 0.0005 + 1e-9,
                    "{family} {player}/{opponent}: ρ over deals {over_deals}, printed {row}"
                );
            }
            assert!(
                (printed(cells[5]) - rho).abs() <= 0.0005 + 1e-9,
                "{family} {player}/{opponent}: ρ {rho}, printed {row}"
            );
            // Regret where the oracle searches the family (not bundle, not hotel).
            let regrets: Vec<f64> = scored
                .iter()
                .filter_map(|r| r.oracle.as_ref().map(|o| o.regret))
                .collect();
            if regrets.is_empty() {
                assert_eq!(cells[6], "–", "{family}: no oracle, no regret: {row}");
            } else {
                let regret = regrets.iter().sum::<f64>() / regrets.len() as f64;
                assert!(
                    (printed(cells[6]) - regret).abs() <= 0.005 + 1e-9,
                    "{family} {player}/{opponent}: regret {regret}, printed {row}"
                );
            }
        }
        assert_eq!(
            pairings,
            [
                ("conceder", "boulware"),
                ("conceder", "tough"),
                ("linear", "boulware"),
                ("linear", "tough"),
            ],
            "every pairing once, in order"
        );
    }
    assert!(
        stdout.lines().all(|l| l.chars().count() <= 120),
        "every line fits a 120-column terminal:\n{stdout}"
    );

    // Ratings: the two players, each compared with the other in every scenario, against each
    // opponent, in each seating: 10 × 2 × 2 = 40 comparisons; fixed opponents are not rated.
    let ratings = stdout
        .split("| player | rating |")
        .nth(1)
        .expect("a rating table");
    let rated: Vec<&str> = ratings
        .lines()
        .skip(2)
        .filter(|l| l.starts_with('|'))
        .collect();
    assert_eq!(rated.len(), 2, "{ratings}");
    for row in &rated {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        assert!(["linear", "conceder"].contains(&cells[0]), "{row}");
        assert_eq!(cells[3], (4 * scenarios).to_string(), "{row}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(json["ratings"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["matrix"].as_array().unwrap().len(),
        FAMILIES.len() + 1,
        "every family and all"
    );

    // Today's engine makes the same records of their completions.
    let mut verify = vec![
        "replay".to_string(),
        out.display().to_string(),
        "--verify".into(),
    ];
    for f in &files {
        verify.extend(["--scenarios".to_string(), f.display().to_string()]);
    }
    let verified = dealgym(&verify);
    assert!(
        verified.status.success(),
        "{}{}",
        text(&verified.stdout),
        text(&verified.stderr)
    );
    assert!(text(&verified.stdout).contains(&format!(
        "{} episodes in 1 files replay identically",
        8 * scenarios
    )));

    // Its report: the cross-play table and the ratings as CSV, equal to the records' figures.
    let report_dir = dir.join("report");
    let reported = dealgym(&[
        "report".into(),
        out.display().to_string(),
        "--out".into(),
        report_dir.display().to_string(),
        "--quiet".into(),
    ]);
    assert!(reported.status.success(), "{}", text(&reported.stderr));
    let csv = std::fs::read_to_string(report_dir.join("tables/crossplay.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("family,player,opponent,episodes,errors,deal_pct,deal_pct_low,deal_pct_high,rho_deals,rho_deals_low,rho_deals_high,mean_rho,mean_rho_low,mean_rho_high,regret,regret_low,regret_high")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        (FAMILIES.len() + 1) * 4,
        "four pairings in every family and all"
    );
    for row in &rows {
        let (family, player, opponent) = (row[0], row[1], row[2]);
        let of = &families.iter().find(|(f, _)| f == family).unwrap().1;
        let mine: Vec<&&EpisodeRecord> = of
            .iter()
            .filter(|r| name(r, Seat::Learner) == player && name(r, Seat::Opponent) == opponent)
            .collect();
        let rho = mine
            .iter()
            .map(|r| r.outcome.outcome.rho.learner)
            .sum::<f64>()
            / mine.len() as f64;
        let deals = mine
            .iter()
            .filter(|r| r.kind() == OutcomeKind::Deal)
            .count();
        let over_deals = mine
            .iter()
            .filter(|r| r.kind() == OutcomeKind::Deal)
            .map(|r| r.outcome.outcome.rho.learner)
            .sum::<f64>()
            / deals as f64;
        let number = |s: &str| -> f64 { s.parse().unwrap() };
        assert_eq!(row[3], mine.len().to_string(), "{row:?}");
        let deal_pct = 100.0 * deals as f64 / mine.len() as f64;
        assert!(
            (number(row[5]) - deal_pct).abs() <= 5e-7,
            "{row:?}: deal {deal_pct}"
        );
        if deals == 0 {
            assert_eq!(row[8], "", "{row:?}: no deal, no ρ over deals");
        } else {
            assert!(
                (number(row[8]) - over_deals).abs() <= 5e-7,
                "{row:?}: ρ over deals {over_deals}"
            );
        }
        assert!((number(row[11]) - rho).abs() <= 5e-7, "{row:?}: ρ {rho}");
        assert!(
            number(row[12]) <= number(row[11]) && number(row[11]) <= number(row[13]),
            "{row:?}"
        );
        // The regret against the rule, where the oracle searches the family.
        let regrets: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.oracle.as_ref().map(|o| o.regret))
            .collect();
        if regrets.is_empty() {
            assert_eq!(row[14], "", "{row:?}: no oracle, no regret");
        } else {
            let regret = regrets.iter().sum::<f64>() / regrets.len() as f64;
            assert!(
                (number(row[14]) - regret).abs() <= 5e-7,
                "{row:?}: regret {regret}"
            );
        }
    }
    let ratings = std::fs::read_to_string(report_dir.join("tables/ratings.csv")).unwrap();
    let rated: Vec<&str> = ratings.lines().skip(1).collect();
    assert_eq!(rated.len(), 2, "{ratings}");
    for row in rated {
        let cells: Vec<&str> = row.split(',').collect();
        assert!(["linear", "conceder"].contains(&cells[0]), "{row}");
        assert_eq!(cells[4], (4 * scenarios).to_string(), "{row}");
    }
    assert!(report_dir.join("charts/ratings.svg").exists());
    let by_player = std::fs::read_to_string(report_dir.join("tables/by_player.csv")).unwrap();
    assert!(
        by_player.lines().any(|l| l.starts_with("conceder,")),
        "{by_player}"
    );
}

/// A record without its wall-clock facts, to compare two plays of one episode.
fn without_timing(r: &EpisodeRecord) -> String {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("timing");
    v.to_string()
}

#[test]
fn resuming_a_cut_eval_adds_only_the_missing_episodes_and_the_same_records() {
    let dir = temp_dir("eval-resume");
    let files = scenario_files(&dir, PER_FAMILY);
    let out = dir.join("eval.jsonl");
    let args = eval_args(&files, &out, &PLAYERS_VS_OPPONENTS);
    let first = dealgym(&args);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let whole: BTreeMap<(String, String), String> = read_log(&out)
        .iter()
        .map(|r| ((r.run_id.clone(), r.episode_id.clone()), without_timing(r)))
        .collect();
    assert_eq!(whole.len(), 4 * FAMILIES.len() * PER_FAMILY);

    // Keep 25 whole lines and half of the next, as a kill mid-write leaves it.
    let file = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = file.lines().collect();
    let mut cut: String = lines[..25].iter().map(|l| format!("{l}\n")).collect();
    cut.push_str(&lines[25][..lines[25].len() / 2]);
    std::fs::write(&out, cut).unwrap();

    let refused = dealgym(&args);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("pass --resume"),
        "{}",
        text(&refused.stderr)
    );

    let mut resume = args.clone();
    resume.push("--resume".into());
    let resumed = dealgym(&resume);
    let stderr = text(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("removed a cut-off last line"), "{stderr}");
    let planned = 4 * FAMILIES.len() * PER_FAMILY;
    assert!(
        stderr.contains(&format!("4 pairings: {} episodes written", planned - 25))
            && stderr.contains(&format!("({planned} planned, 25 already there)")),
        "{stderr}"
    );
    let after: Vec<EpisodeRecord> = read_log(&out);
    assert_eq!(after.len(), planned, "every episode exactly once");
    let again: BTreeMap<(String, String), String> = after
        .iter()
        .map(|r| ((r.run_id.clone(), r.episode_id.clone()), without_timing(r)))
        .collect();
    assert_eq!(
        again, whole,
        "the resumed episodes are the ones the first eval played"
    );
    assert_eq!(
        text(&resumed.stdout),
        text(&first.stdout),
        "the tables are over the whole file"
    );

    // A file of another eval (other players) is refused even with --resume.
    let other = eval_args(
        &files,
        &out,
        &[
            "--player",
            "linear=rule:linear",
            "--opponent",
            "x=rule:tough",
            "--resume",
        ],
    );
    let refused = dealgym(&other);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("which is none of the 1 runs of this eval"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn a_round_robin_plays_every_player_against_every_other_in_both_seats() {
    let dir = temp_dir("eval-round-robin");
    let files = scenario_files(&dir, 1);
    let out = dir.join("eval.jsonl");
    let players = [
        "--round-robin",
        "--player",
        "linear=rule:linear",
        "--player",
        "tough=rule:tough",
        "--player",
        "boulware=rule:boulware",
    ];
    let done = dealgym(&eval_args(&files, &out, &players));
    assert!(done.status.success(), "{}", text(&done.stderr));
    let records = read_log(&out);
    let pairs: BTreeMap<(String, String), usize> =
        records.iter().fold(BTreeMap::new(), |mut m, r| {
            *m.entry((name(r, Seat::Learner), name(r, Seat::Opponent)))
                .or_default() += 1;
            m
        });
    let expected: BTreeSet<(String, String)> = [
        ("linear", "tough"),
        ("tough", "linear"),
        ("linear", "boulware"),
        ("boulware", "linear"),
        ("tough", "boulware"),
        ("boulware", "tough"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(pairs.keys().cloned().collect::<BTreeSet<_>>(), expected);
    assert!(pairs.values().all(|n| *n == FAMILIES.len()), "{pairs:?}");
    // Everybody sat in the learner seat, so everybody is rated.
    let stdout = text(&done.stdout);
    for player in ["linear", "tough", "boulware"] {
        assert!(
            stdout.contains(&format!("| {player} | ")),
            "{player} rated:\n{stdout}"
        );
    }
}

#[test]
fn a_bad_grid_is_refused_naming_the_flag() {
    let dir = temp_dir("eval-flags");
    let files = scenario_files(&dir, 1);
    let out = dir.join("eval.jsonl");
    for (flags, said) in [
        (
            vec![
                "--player",
                "a=rule:linear",
                "--player",
                "b=rule:tough",
                "--round-robin",
                "--opponent",
                "x=rule:tough",
            ],
            "--round-robin plays the --player list against itself",
        ),
        (
            vec!["--player", "a=rule:linear", "--round-robin"],
            "--round-robin needs at least 2 --player",
        ),
        (
            vec!["--player", "rule:linear", "--opponent", "x=rule:tough"],
            "--player `rule:linear`: expected NAME=SPEC",
        ),
        (
            vec!["--player", "a=rule:linear", "--opponent", "a=rule:tough"],
            "--opponent a=…: the name a is already used",
        ),
        (
            vec!["--player", "a=rule:linear"],
            "give at least one --opponent NAME=SPEC",
        ),
        (
            vec!["--player", "a=rule:nobody", "--opponent", "x=rule:tough"],
            "rule:nobody",
        ),
    ] {
        let refused = dealgym(&eval_args(&files, &out, &flags));
        let stderr = text(&refused.stderr);
        assert!(!refused.status.success(), "{flags:?}");
        assert!(stderr.contains(said), "{flags:?}: {stderr}");
    }
    assert!(!out.exists(), "nothing is written for a bad grid");
}

/// `report` of `paths` into `out`: its ratings CSV (header, rows) and its report.md.
fn report_of(paths: &[PathBuf], out: &Path) -> (Vec<Vec<String>>, String) {
    let mut args = vec!["report".to_string()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    args.extend(["--out".into(), out.display().to_string(), "--quiet".into()]);
    let reported = dealgym(&args);
    assert!(reported.status.success(), "{}", text(&reported.stderr));
    let csv = std::fs::read_to_string(out.join("tables/ratings.csv")).unwrap();
    let rows = csv
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (
        rows,
        std::fs::read_to_string(out.join("report.md")).unwrap(),
    )
}

#[test]
fn a_directory_of_evals_ranks_together_only_the_players_that_met_a_common_opponent_set() {
    let dir = temp_dir("eval-leaderboard");
    let scenarios = scenario_files(&dir, PER_FAMILY);
    let scenarios = &scenarios[..1];
    let evals = dir.join("evals");
    std::fs::create_dir_all(&evals).unwrap();
    let play = |file: &str, entrants: &[&str]| -> PathBuf {
        let out = evals.join(file);
        let done = dealgym(&eval_args(scenarios, &out, entrants));
        assert!(done.status.success(), "{}", text(&done.stderr));
        out
    };
    // Two evals with disjoint opponents: a and b meet x, c and d meet y.
    let x = play(
        "1-x.jsonl",
        &[
            "--player",
            "a=rule:linear",
            "--player",
            "b=rule:conceder",
            "--opponent",
            "x=rule:boulware",
        ],
    );
    let y = play(
        "2-y.jsonl",
        &[
            "--player",
            "c=rule:tough",
            "--player",
            "d=rule:linear",
            "--opponent",
            "y=rule:conceder",
        ],
    );
    // Each pairing plays the same episodes: as many situations per eval as one pairing's
    // records.
    let per_pairing = read_log(&x).len() / 2;
    let column = |rows: &[Vec<String>], name: &str| rows[0].iter().position(|c| c == name);
    // The groups have their own CSV; ratings.csv keeps its columns.
    let group_of = |report: &Path, ratings: &[Vec<String>]| -> BTreeMap<String, String> {
        assert!(column(ratings, "group").is_none(), "{ratings:?}");
        let text = std::fs::read_to_string(report.join("tables/rating_groups.csv")).unwrap();
        let rows: Vec<Vec<String>> = text
            .lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        assert_eq!(rows[0], ["player", "group"]);
        rows[1..]
            .iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect()
    };

    let (apart, page) = report_of(&[x.clone(), y.clone()], &dir.join("report-apart"));
    let groups = group_of(&dir.join("report-apart"), &apart);
    assert_eq!(groups.len(), 4, "{apart:?}");
    assert_eq!(groups["a"], groups["b"]);
    assert_eq!(groups["c"], groups["d"]);
    assert_ne!(
        groups["a"], groups["c"],
        "no comparison links the two evals"
    );
    // The two groups are listed one after the other, never interleaved on one scale.
    let order: Vec<&String> = apart[1..].iter().map(|r| &r[0]).collect();
    let first = [order[0].as_str(), order[1].as_str()];
    assert!(
        first == ["a", "b"] || first == ["b", "a"] || first == ["c", "d"] || first == ["d", "c"],
        "{order:?}"
    );
    let (one, other) = if groups["a"] == "1" {
        ("a and b", "c and d")
    } else {
        ("c and d", "a and b")
    };
    let said = format!(
        "{one} are ranked together: {per_pairing} shared situations link them (group 1). \
         {other} are ranked together: {per_pairing} shared situations link them (group 2); \
         they met no common opponent set with group 1 and are ranked apart. Compare ratings \
         within a group only."
    );
    assert!(page.contains(&said), "{said}\n{page}");

    // A third eval, c against x, links them: every player is ranked with every other.
    let bridge = play(
        "3-bridge.jsonl",
        &["--player", "c=rule:tough", "--opponent", "x=rule:boulware"],
    );
    assert_eq!(read_log(&bridge).len(), per_pairing);
    let (together, page) = report_of(std::slice::from_ref(&evals), &dir.join("report-all"));
    let groups = group_of(&dir.join("report-all"), &together);
    assert_eq!(groups.len(), 4, "{together:?}");
    assert!(groups.values().all(|g| g == "1"), "{groups:?}");
    // c meets x in the situations a and b met x in: no new situation, only a new link.
    let said = format!(
        "a, b, c and d are ranked together: {} shared situations link them.",
        2 * per_pairing
    );
    assert!(page.contains(&said), "{said}\n{page}");
    assert!(!page.contains("ranked apart"), "{page}");
    let comparisons = column(&together, "comparisons").unwrap();
    let c = together[1..].iter().find(|r| r[0] == "c").unwrap();
    assert_eq!(
        c[comparisons],
        (3 * per_pairing).to_string(),
        "c is compared with d against y, with a and b against x"
    );

    // A directory with no record file is refused, naming it.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let refused = dealgym(&[
        "report".into(),
        empty.display().to_string(),
        "--out".into(),
        dir.join("report-none").display().to_string(),
    ]);
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: the directory holds no record file",
            empty.display()
        )),
        "{stderr}"
    );
}
