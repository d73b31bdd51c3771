//! The `deliberation` family from LLM-Deliberation's files: the shipped scenario file is what the
//! importer writes from the game folders, bad game files get errors naming the file and the
//! line, and the paper's logs are found, judged complete and re-scored as expected — the
//! figures recomputed here from the written sessions by the paper's rule, and the book's table
//! is the command's own. Every test says SKIPPED and returns where `../shared/datasets` is
//! absent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use dealgym::dialogues::deliberation::{
    import_logs, report_table, ExperimentReport, Figures, LogOptions, Scoring, EXPERIMENTS,
};
use dealgym::dialogues::deliberation_paper::Notebook;
use dealgym::record::TableRecord;
use dealgym::scenario::import::deliberation::{import, read_game, GameError};
use dealgym::scenario::{
    load_table_scenarios, AgreementRule, Incentive, PartyPosition, TableScenario,
};

fn dataset() -> Option<PathBuf> {
    let dir = crate::common::datasets_dir()?.join("llm-deliberation");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("SKIPPED: no ../shared/datasets/llm-deliberation");
        None
    }
}

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/deliberation.jsonl")
}

#[test]
fn the_shipped_scenarios_are_the_importers() {
    let Some(dataset) = dataset() else { return };
    let scenarios = import(&dataset).unwrap();
    let mut text = String::new();
    for s in &scenarios {
        text.push_str(&serde_json::to_string(s).unwrap());
        text.push('\n');
    }
    assert_eq!(
        text,
        std::fs::read_to_string(shipped()).unwrap(),
        "scenarios/deliberation.jsonl is stale: run `dealgym scenarios import-deliberation`"
    );
    let loaded = load_table_scenarios(&shipped(), Default::default())
        .unwrap()
        .scenarios;
    assert_eq!(loaded, scenarios);
    // Seven settings of the base game, the cooperative one of each other game.
    let ids: Vec<&str> = loaded.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), 12);
    assert!(ids.contains(&"deliberation:base:targeted_adv"));
    assert!(ids.contains(&"deliberation:game3:cooperative"));
    for s in &loaded {
        let n = s.parties.len();
        let lead = &s.parties[s.lead().unwrap()];
        let veto = s
            .parties
            .iter()
            .find(|p| p.position == PartyPosition::Veto)
            .unwrap();
        assert_eq!(
            s.rules.agreement,
            AgreementRule::Quorum {
                at_least: n - 1,
                veto: vec![lead.role.clone(), veto.role.clone()],
                lead_bonus: 10
            },
            "{}",
            s.id
        );
        for p in &s.parties {
            assert!(!p.private.instructions.contains('#'), "{} {}", s.id, p.role);
        }
    }
    // The targeted adversary and its target, as the paper's run seated them.
    let targeted = loaded
        .iter()
        .find(|s| s.id == "deliberation:base:targeted_adv")
        .unwrap();
    let env = &targeted.parties[targeted.seat_of("environmental_league").unwrap()];
    assert_eq!(env.incentive, Incentive::TargetedAdv);
    let union = &targeted.parties[targeted.seat_of("local_labour_union").unwrap()];
    assert_eq!(union.position, PartyPosition::Target);
    // Filled placeholders are the score file's numbers: SportCo's D1 is its best score of D.
    let base = &loaded[0];
    let sportco = &base.parties[base.seat_of("sportco").unwrap()];
    let d1 = sportco.private.scores[3][0];
    assert!(sportco
        .private
        .instructions
        .contains(&format!("Issue D (max score {d1}): D1 ({d1})")));
}

/// A copy of the base game in a temporary folder, for breaking one file.
fn base_copy(dataset: &Path, name: &str) -> PathBuf {
    let from = dataset.join("games_descriptions/base");
    let to = crate::common::temp_dir(name).join("base");
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    copy(&from, &to);
    to
}

#[test]
fn bad_game_files_name_the_file_and_the_line() {
    let Some(dataset) = dataset() else { return };
    // A score file missing a line.
    let game = base_copy(&dataset, "delib-missing-score");
    let scores = game.join("scores_files/mayor.txt");
    let text = std::fs::read_to_string(&scores).unwrap();
    let short: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    std::fs::write(&scores, short[1..].join("\n")).unwrap();
    let err = read_game(&game).unwrap_err();
    assert!(matches!(err, GameError::Line { line: 6, .. }), "{err}");
    assert!(
        err.to_string()
            .contains("scores_files/mayor.txt: line 6: a line is missing"),
        "{err}"
    );
    // A score line with one option too few.
    let game = base_copy(&dataset, "delib-options");
    let scores = game.join("scores_files/union.txt");
    let text = std::fs::read_to_string(&scores).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2] = lines[2].rsplit_once(',').unwrap().0.to_string();
    std::fs::write(&scores, lines.join("\n")).unwrap();
    let err = read_game(&game).unwrap_err().to_string();
    assert!(
        err.contains("scores_files/union.txt: line 3: 3 scores for the 4 options of issue C"),
        "{err}"
    );
    // A config line with four fields.
    let game = base_copy(&dataset, "delib-config");
    let config = game.join("config.txt");
    let text = std::fs::read_to_string(&config).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = lines[3].rsplit_once(',').unwrap().0.to_string();
    std::fs::write(&config, lines.join("\n")).unwrap();
    let err = read_game(&game).unwrap_err().to_string();
    assert!(err.contains("config.txt: line 4: 4 fields"), "{err}");
}

/// Sessions found and complete per experiment, as counted with Python's `zipfile` and `json` over
/// the dataset (history files of 4N + 2 rounds ending with the lead; answers files with a final
/// vote and more than 4N rounds).
const COUNTS: [(&str, usize, usize); 25] = [
    ("all_coop_base_7player_gpt4", 90, 80),
    ("all_coop_temp1_base_gpt4", 33, 32),
    ("all_greedy_base_gpt4", 11, 1),
    ("llama2_13b", 53, 28),
    ("llama2_70b_base_all_coop", 22, 21),
    ("llama3_70b", 33, 33),
    ("mixtral_base_all_coop", 23, 23),
    ("mixtralFivePlayers_base_all_coop", 21, 21),
    ("mixtralFourPlayers_base_all_coop", 21, 21),
    ("mixtralThreePlayers_base_all_coop", 21, 21),
    ("ouput_base_rewritten_allcoop_gpt4", 21, 21),
    ("output_adv_game_targeted_adv_gpt3_base_rest_gpt4", 21, 21),
    ("output_adv_game_targeted_union_base_gpt4", 27, 24),
    ("output_adv_game_untargeted_base_gpt4", 22, 22),
    ("output_base_best_allcoop_gpt4", 21, 21),
    ("output_base_leading_gpt3_rest_gpt4_allcoop", 22, 22),
    ("output_difficult_17_2_base_allcoop_gpt4", 20, 20),
    ("output_difficult_30_4_base_allcoop_gpt4", 20, 20),
    ("output_env_greedy_gpt4_rest_coop_base", 21, 21),
    ("output_game1_57_21_gpt4_allcoop", 20, 20),
    ("output_game2_57_18_gpt4_allcoop", 20, 20),
    ("output_game3_57_34_gpt4_allcoop", 21, 21),
    ("output_leading_greedy_gpt4_rest_coop_base", 22, 22),
    ("output_two_greedy_mayor_union_gpt4_rest_coop_base", 20, 20),
    ("output_union_mayor_gpt3_rest_gpt4_base_all_coop", 21, 21),
];

/// One session re-scored here: any, final, unanimous, wrong share.
type Rescored = (bool, bool, bool, Option<f64>);

/// The paper's rule, written out again over the sessions file: each party accepts at or above
/// its minimum (the lead with 10 more), a deal needs n − 1 acceptors with the lead and the
/// second veto among them. Returns (any, final, unanimous, wrong share) per complete session.
fn rescore(scenario: &TableScenario, roles: &[String], session: &Value) -> Rescored {
    let seats: Vec<usize> = roles.iter().map(|r| scenario.seat_of(r).unwrap()).collect();
    let lead_role = scenario.parties[scenario.lead().unwrap()].role.clone();
    let veto_role = scenario
        .parties
        .iter()
        .find(|p| p.position == PartyPosition::Veto)
        .unwrap()
        .role
        .clone();
    let score = |seat: usize, deal: &[usize]| -> i64 {
        deal.iter()
            .enumerate()
            .map(|(i, &o)| scenario.parties[seat].private.scores[i][o])
            .sum()
    };
    let accepts = |seat: usize, deal: &[usize]| {
        let bonus = if scenario.parties[seat].role == lead_role {
            10
        } else {
            0
        };
        score(seat, deal) + bonus >= scenario.parties[seat].private.minimum
    };
    let verdict = |deal: &[usize]| {
        let yes: Vec<&String> = seats
            .iter()
            .zip(roles)
            .filter(|(&s, _)| accepts(s, deal))
            .map(|(_, r)| r)
            .collect();
        let passes =
            yes.len() + 1 >= roles.len() && yes.contains(&&lead_role) && yes.contains(&&veto_role);
        (passes, yes.len() == roles.len())
    };
    let deal_of = |t: &Value| -> Option<(String, Vec<usize>)> {
        let role = t["role"].as_str()?.to_string();
        (t["proposed"]["kind"] == "deal").then(|| {
            let deal = t["proposed"]["deal"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect();
            (role, deal)
        })
    };
    let mut all: Vec<(String, Vec<usize>)> = session["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(deal_of)
        .collect();
    let last = session.get("final_turn").and_then(deal_of);
    all.extend(last.clone());
    let any = all.iter().any(|(r, d)| *r == lead_role && verdict(d).0);
    let (fin, unanimous) = last.map_or((false, false), |(_, d)| verdict(&d));
    let wrong = all
        .iter()
        .filter(|(r, d)| !accepts(scenario.seat_of(r).unwrap(), d))
        .count();
    let share = (!all.is_empty()).then(|| wrong as f64 / all.len() as f64);
    (any, fin, unanimous, share)
}

#[test]
fn the_logs_are_found_complete_and_rescored() {
    let Some(dataset) = dataset() else { return };
    let dir = crate::common::temp_dir("delib-logs");
    let out = dir.join("sessions.jsonl");
    let records = dir.join("records.jsonl");
    let reports = import_logs(&LogOptions {
        dataset: dataset.clone(),
        scenarios: shipped(),
        out: Some(out.clone()),
        records: Some(records.clone()),
        scoring: Scoring::Both,
    })
    .unwrap();
    assert_eq!(reports.len(), EXPERIMENTS.len());
    for ((name, found, complete), r) in COUNTS.iter().zip(&reports) {
        assert_eq!(
            (r.experiment.as_str(), r.found, r.complete),
            (*name, *found, *complete)
        );
        assert_eq!(r.unknown_agents, 0, "{name}");
    }
    // The figures, recomputed from the written sessions.
    let scenarios: BTreeMap<String, TableScenario> =
        load_table_scenarios(&shipped(), Default::default())
            .unwrap()
            .scenarios
            .into_iter()
            .map(|s| (s.id.clone(), s))
            .collect();
    let mut per: BTreeMap<String, Vec<Rescored>> = BTreeMap::new();
    for line in std::fs::read_to_string(&out).unwrap().lines() {
        let session: Value = serde_json::from_str(line).unwrap();
        if session["complete"] != true {
            continue;
        }
        let experiment = session["experiment"].as_str().unwrap().to_string();
        // The base id (`…:5_parties` is a reduced table), its parties those that speak.
        let id = session["scenario_id"].as_str().unwrap();
        let base_id = id.split(':').take(3).collect::<Vec<_>>().join(":");
        let scenario = &scenarios[&base_id];
        let roles: Vec<String> = if id == base_id {
            scenario.parties.iter().map(|p| p.role.clone()).collect()
        } else {
            let mut spoke: Vec<String> = session["turns"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t["role"].as_str().map(str::to_string))
                .collect();
            spoke.sort();
            spoke.dedup();
            spoke
        };
        per.entry(experiment)
            .or_default()
            .push(rescore(scenario, &roles, &session));
    }
    let mut scored = 0;
    for r in &reports {
        let Some(f) = &r.figures else {
            assert!(r.unscored.is_some() || r.complete == 0, "{}", r.experiment);
            continue;
        };
        let sessions = &per[&r.experiment];
        let n = sessions.len() as f64;
        let rate = |k: fn(&Rescored) -> bool| sessions.iter().filter(|s| k(s)).count() as f64 / n;
        let wrong: Vec<f64> = sessions.iter().filter_map(|s| s.3).collect();
        assert_eq!(f.sessions, sessions.len(), "{}", r.experiment);
        assert_eq!(f.deal_any, rate(|s| s.0), "{}", r.experiment);
        assert_eq!(f.deal_final, rate(|s| s.1), "{}", r.experiment);
        assert_eq!(f.unanimous_final, rate(|s| s.2), "{}", r.experiment);
        let mean = wrong.iter().sum::<f64>() / wrong.len() as f64;
        assert!((f.wrong - mean).abs() < 1e-12, "{}", r.experiment);
        scored += 1;
    }
    assert_eq!(scored, 23);
    // Every complete session is a table record that replays as recorded, and the records'
    // metrics give the same figures.
    let mut from_records: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut replayed = 0;
    // The scenarios the records name are written beside them: the shipped ones, and the
    // reduced tables of the smaller Mixtral runs.
    let beside: BTreeMap<String, TableScenario> = load_table_scenarios(
        &dealgym::dialogues::deliberation::records_scenarios(&records),
        Default::default(),
    )
    .unwrap()
    .scenarios
    .into_iter()
    .map(|s| (s.id.clone(), s))
    .collect();
    for (id, s) in &beside {
        if let Some(shipped) = scenarios.get(id) {
            assert_eq!(s, shipped, "{id}");
        }
    }
    for line in std::fs::read_to_string(&records).unwrap().lines() {
        let record: TableRecord = serde_json::from_str(line).unwrap();
        assert!(record.source.is_some());
        record
            .replay(std::sync::Arc::new(beside[&record.scenario_id].clone()))
            .unwrap();
        replayed += 1;
        let m = &record.outcome.metrics;
        let e = from_records
            .entry(
                record
                    .run_id
                    .trim_start_matches("llm-deliberation:")
                    .to_string(),
            )
            .or_default();
        e.0 += 1;
        e.1 += usize::from(m.deal_any);
        e.2 += usize::from(m.deal_final);
        e.3 += usize::from(m.unanimous_final);
    }
    assert_eq!(replayed, reports.iter().map(|r| r.records).sum::<usize>());
    for r in &reports {
        assert_eq!(
            (r.records, r.not_recorded),
            (r.complete, 0),
            "{}",
            r.experiment
        );
        let Some(f) = &r.figures else { continue };
        let (n, any, fin, unanimous) = from_records[&r.experiment];
        assert_eq!(n, f.sessions);
        assert_eq!(any as f64 / n as f64, f.deal_any, "{}", r.experiment);
        assert_eq!(fin as f64 / n as f64, f.deal_final, "{}", r.experiment);
        assert_eq!(
            unanimous as f64 / n as f64,
            f.unanimous_final,
            "{}",
            r.experiment
        );
    }
    // The book's table is the command's.
    let book = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/data/deliberation.md"),
    )
    .unwrap();
    let shown = book
        .split("<!-- deliberation-logs -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /deliberation-logs -->").next())
        .unwrap();
    assert_eq!(
        shown,
        report_table(&reports, Scoring::Both),
        "docs/src/data/deliberation.md's table is stale: run \
         `dealgym dialogues deliberation --scoring both`"
    );
}

/// The figures of one experiment's report, by name.
fn report<'a>(reports: &'a [ExperimentReport], name: &str) -> &'a ExperimentReport {
    reports.iter().find(|r| r.experiment == name).unwrap()
}

/// `(sessions, any, final, unanimous, wrong)` of a report's figures.
fn five(f: &Figures) -> (usize, f64, f64, f64, f64) {
    (
        f.sessions,
        f.deal_any,
        f.deal_final,
        f.unanimous_final,
        f.wrong,
    )
}

/// Each figure within rounding of the notebook's printed digits, and to four decimals as
/// quoted.
fn assert_figures(name: &str, got: &Figures, want: (usize, f64, f64, f64, f64)) {
    let got = five(got);
    assert_eq!(got.0, want.0, "{name}: sessions");
    for (g, w) in [
        (got.1, want.1),
        (got.2, want.2),
        (got.3, want.3),
        (got.4, want.4),
    ] {
        assert!(
            (g - w).abs() < 1e-12,
            "{name}: {g} is not the notebook's {w}"
        );
        assert_eq!(format!("{g:.4}"), format!("{w:.4}"), "{name}");
    }
}

/// The paper mode gives the figures the authors' notebooks printed, on the sessions they
/// scored: `deals_evaluation.ipynb`'s stored outputs (LLM-Deliberation commits 9bd6a78,
/// 2023-10-06, and 2c682c0, 2023-12-04, read from the repository's history; the notebook is not
/// in the dataset) for the base and greedy-lead GPT-4 experiments, and the shipped
/// `evaluate_deals.ipynb`'s stored output for the 7-player one, read here from the dataset. The
/// rule mode differs from them where the notebooks' strict `>` and carried-over verdict bite.
#[test]
fn the_paper_mode_gives_the_notebooks_stored_figures() {
    let Some(dataset) = dataset() else { return };
    let dir = crate::common::temp_dir("delib-paper");
    let out = dir.join("sessions.jsonl");
    let reports = import_logs(&LogOptions {
        dataset: dataset.clone(),
        scenarios: shipped(),
        out: Some(out.clone()),
        records: None,
        scoring: Scoring::Both,
    })
    .unwrap();
    let paper = |name: &str| {
        let p = report(&reports, name).paper.as_ref().unwrap();
        assert_eq!(p.not_scored, 0, "{name}");
        p.figures.as_ref().unwrap()
    };
    let rule = |name: &str| report(&reports, name).figures.as_ref().unwrap();

    // The base GPT-4 experiment, deals_evaluation.ipynb as of 2023-10-06, 21 sessions:
    // "at any round: 1.0", "at the last round: 0.8095238095238095" (17 of 21), "with all
    // agreement: 0.3333333333333333" (7 of 21), "violating rules: 0.014652014652014652" — six
    // sessions with 1 of their 26 proposals wrong and one with 2: (6/26 + 2/26) / 21 = 4/273.
    let base = "output_base_best_allcoop_gpt4";
    assert_eq!(
        report(&reports, base).paper.as_ref().unwrap().notebook,
        Notebook::Early
    );
    assert_figures(
        base,
        paper(base),
        (
            21,
            1.0,
            0.8095238095238095,
            0.3333333333333333,
            0.014652014652014652,
        ),
    );
    // The printed digits are these fractions (to the last bit of the notebook's float sums).
    for (fraction, printed) in [
        (17.0_f64 / 21.0, 0.8095238095238095),
        (7.0 / 21.0, 0.3333333333333333),
        (4.0 / 273.0, 0.014652014652014652),
    ] {
        assert!((fraction - printed).abs() < 1e-15, "{fraction} {printed}");
    }
    // The rule (at or above, the lead's bonus in every branch) passes two more final
    // proposals, one more of them unanimous.
    assert_eq!(
        (rule(base).deal_final, rule(base).unanimous_final),
        (19.0 / 21.0, 8.0 / 21.0)
    );

    // The greedy lead, deals_evaluation.ipynb as of 2023-12-04, 22 sessions: "0.5" (11 of 22),
    // "0.2727272727272727" (6 of 22), "0.09090909090909091" (2 of 22), "0.01223776223776224"
    // — three sessions with 1 of 26 wrong and two with 2: (3/26 + 4/26) / 22 = 7/572.
    let greedy = "output_leading_greedy_gpt4_rest_coop_base";
    assert_figures(
        greedy,
        paper(greedy),
        (
            22,
            0.5,
            0.2727272727272727,
            0.09090909090909091,
            0.01223776223776224,
        ),
    );
    for (fraction, printed) in [
        (6.0_f64 / 22.0, 0.2727272727272727),
        (2.0 / 22.0, 0.09090909090909091),
        (7.0 / 572.0, 0.01223776223776224),
    ] {
        assert!((fraction - printed).abs() < 1e-15, "{fraction} {printed}");
    }
    assert!(rule(greedy).deal_any > paper(greedy).deal_any);
    assert!(rule(greedy).deal_final > paper(greedy).deal_final);

    // evaluate_deals.ipynb scores on the experiment folder's own config and score files: those
    // the two folders ship are their game's, so the paper mode scores on the scenario's tables.
    for (folder, game) in [
        (
            "all_coop_base_7player_gpt4/all_coop_7players",
            "base_7players",
        ),
        ("all_coop_temp1_base_gpt4", "base"),
    ] {
        let logs = dataset.join("logs").join(folder);
        let game = dataset.join("games_descriptions").join(game);
        for entry in std::fs::read_dir(logs.join("scores_files")).unwrap() {
            let entry = entry.unwrap();
            let shipped = game.join("scores_files").join(entry.file_name());
            assert_eq!(
                std::fs::read(entry.path()).unwrap(),
                std::fs::read(&shipped).unwrap(),
                "{}",
                shipped.display()
            );
        }
    }

    // The 7-player experiment: evaluate_deals.ipynb's stored output, in the dataset.
    let notebook: Value = serde_json::from_str(
        &std::fs::read_to_string(dataset.join("evaluation/evaluate_deals.ipynb")).unwrap(),
    )
    .unwrap();
    let printed: String = notebook["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["outputs"].as_array().cloned().unwrap_or_default())
        .flat_map(|o| o["text"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    let figure = |label: &str| -> f64 {
        printed
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let stored_finals: Vec<String> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("Final deal: ").map(str::to_string))
        .collect();
    assert_eq!(stored_finals.len(), 66);
    let seven = "all_coop_base_7player_gpt4";
    let stored = report(&reports, seven).stored.as_ref().unwrap();
    assert_eq!(stored.through, "history22_08_04.json");
    assert_figures(
        seven,
        stored.paper.as_ref().unwrap(),
        (
            66,
            figure("Percentage of achieved deals at any round: "),
            figure("Percentage of achieved deals at the last round: "),
            figure("Percentage of achieved deals with all agreement at the last round: "),
            figure("Percentage of deals violating rules: "),
        ),
    );
    // 64, 42 and 14 of 66; one session with 1 of its 30 proposals wrong.
    assert_figures(
        seven,
        stored.paper.as_ref().unwrap(),
        (66, 64.0 / 66.0, 42.0 / 66.0, 14.0 / 66.0, 1.0 / 30.0 / 66.0),
    );
    // The notebook's own code on all 80 complete sessions (a re-run of it in Python on the
    // same files): 77, 51 and 15 of 80, the same one wrong proposal.
    assert_figures(
        seven,
        paper(seven),
        (80, 77.0 / 80.0, 51.0 / 80.0, 15.0 / 80.0, 1.0 / 30.0 / 80.0),
    );
    // The sessions behind the stored figures are the ones it listed: its "Final deal" lines
    // are the final answers of the 66 sessions through 22:08, read as its `extract_deal` reads
    // them (per issue the first letter-and-digit 1–9, newlines removed, "" where none).
    let read = |text: &str| -> String {
        let flat: Vec<char> = text.chars().filter(|&c| c != '\n').collect();
        "ABCDEF"
            .chars()
            .map(|issue| {
                flat.windows(2)
                    .find(|w| w[0] == issue && ('1'..='9').contains(&w[1]))
                    .map_or(String::new(), |w| w.iter().collect())
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut ours: Vec<String> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|s| {
            s["experiment"] == seven
                && s["file"].as_str().unwrap() <= "history22_08_04.json"
                && s["paper"].get("scored").is_some()
        })
        .map(|s| read(s["final_turn"]["public_answer"].as_str().unwrap()))
        .collect();
    let mut listed = stored_finals;
    ours.sort();
    listed.sort();
    assert_eq!(ours, listed);
    // The complete sessions logged later are the 14 the stored output leaves out.
    assert_eq!(report(&reports, seven).complete - stored.complete, 14);
}

/// The base game's score files read here by hand: (config name, rows, minimum) per party.
fn base_by_hand(dataset: &Path) -> Vec<(String, Vec<Vec<i64>>, i64)> {
    let dir = dataset.join("games_descriptions/base");
    std::fs::read_to_string(dir.join("config.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let text = std::fs::read_to_string(dir.join(format!("scores_files/{}.txt", fields[1])))
                .unwrap();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let rows = lines[..lines.len() - 1]
                .iter()
                .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
                .collect();
            (
                fields[0].to_string(),
                rows,
                lines[lines.len() - 1].trim().parse().unwrap(),
            )
        })
        .collect()
}

/// The four metrics, Pareto and the Nash product on base-game deals, each expected value
/// worked out here from the score files.
#[test]
fn base_game_metrics_match_the_score_files_by_hand() {
    use dealgym::score::{deliberation_metrics, is_pareto, nash_product, Proposal};
    let Some(dataset) = dataset() else { return };
    let parties = base_by_hand(&dataset);
    let scenario = load_table_scenarios(&shipped(), Default::default())
        .unwrap()
        .scenarios
        .into_iter()
        .find(|s| s.id == "deliberation:base:cooperative")
        .unwrap();
    let seat = |name: &str| {
        scenario
            .parties
            .iter()
            .position(|p| p.name == name)
            .unwrap()
    };
    let score = |p: usize, deal: &[usize]| -> i64 {
        deal.iter()
            .enumerate()
            .map(|(i, &o)| parties[p].1[i][o])
            .sum()
    };
    let accepts = |p: usize, deal: &[usize]| {
        let bonus = if parties[p].0 == "SportCo" { 10 } else { 0 };
        score(p, deal) + bonus >= parties[p].2
    };
    let sportco = parties.iter().position(|p| p.0 == "SportCo").unwrap();
    let dot = parties
        .iter()
        .position(|p| p.0 == "Department of Tourism")
        .unwrap();
    // Every deal of 3 × 3 × 4 × 4 × 5 options.
    let mut deals = Vec::new();
    for a in 0..3 {
        for b in 0..3 {
            for c in 0..4 {
                for d in 0..4 {
                    for e in 0..5 {
                        deals.push(vec![a, b, c, d, e]);
                    }
                }
            }
        }
    }
    assert_eq!(deals.len(), 720);
    let yes = |deal: &[usize]| (0..6).filter(|&p| accepts(p, deal)).count();
    let passes = |deal: &[usize]| yes(deal) >= 5 && accepts(sportco, deal) && accepts(dot, deal);
    let five = deals.iter().find(|d| passes(d) && yes(d) == 5).unwrap();
    let six = deals.iter().find(|d| yes(d) == 6).unwrap();
    let initial = vec![0, 0, 3, 0, 4];
    assert!(!passes(&initial), "the opening deal passes by hand");
    // A party proposing below its own minimum (by hand), not the lead.
    let (low_party, low_deal) = deals
        .iter()
        .find_map(|d| {
            (0..6)
                .find(|&p| p != sportco && !accepts(p, d))
                .map(|p| (p, d.clone()))
        })
        .unwrap();
    let lead = seat("SportCo");
    let to_seat = |p: usize| seat(&parties[p].0);
    let proposal = |p: usize, deal: &[usize], is_final| Proposal {
        seat: to_seat(p),
        deal: deal.to_vec(),
        is_final,
    };
    // Opening, a wrong proposal, a five-way deal mid-way, then a final one: unanimous or not.
    let proposals = vec![
        proposal(sportco, &initial, false),
        proposal(low_party, &low_deal, false),
        proposal(sportco, five, false),
        proposal(sportco, six, true),
    ];
    let m = deliberation_metrics(&scenario, &proposals, Some(six));
    assert!(m.deal_any && m.deal_final && m.unanimous_final);
    let wrong = proposals
        .iter()
        .zip([sportco, low_party, sportco, sportco])
        .filter(|(p, party)| !accepts(*party, &p.deal))
        .count();
    assert_eq!(m.wrong_share, Some(wrong as f64 / 4.0));
    let m = deliberation_metrics(
        &scenario,
        &[
            proposal(sportco, &initial, false),
            proposal(sportco, five, true),
        ],
        Some(five),
    );
    assert!(m.deal_any && m.deal_final && !m.unanimous_final);
    // A final proposal by the lead that does not pass; an earlier one that did still counts as
    // "any".
    let m = deliberation_metrics(
        &scenario,
        &[
            proposal(sportco, five, false),
            proposal(sportco, &initial, true),
        ],
        None,
    );
    assert!(m.deal_any && !m.deal_final && !m.unanimous_final);
    // Only the lead's proposals make a deal.
    let m = deliberation_metrics(&scenario, &[proposal(dot, six, false)], None);
    assert!(!m.deal_any);
    assert_eq!(lead, to_seat(sportco));
    // Pareto over all six parties and the Nash product, by hand.
    for deal in [six, five, &initial] {
        let mine: Vec<i64> = (0..6).map(|p| score(p, deal)).collect();
        let dominated = deals.iter().any(|o| {
            let theirs: Vec<i64> = (0..6).map(|p| score(p, o)).collect();
            theirs.iter().zip(&mine).all(|(t, m)| t >= m)
                && theirs.iter().zip(&mine).any(|(t, m)| t > m)
        });
        assert_eq!(is_pareto(&scenario, deal), !dominated, "{deal:?}");
        let gains: Vec<i64> = (0..6).map(|p| score(p, deal) - parties[p].2).collect();
        let expected = gains
            .iter()
            .all(|g| *g >= 0)
            .then(|| gains.iter().map(|g| *g as f64).product::<f64>());
        assert_eq!(nash_product(&scenario, deal), expected, "{deal:?}");
    }
}
