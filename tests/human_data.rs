//! The people's own dialogues (`dealgym dialogues import`, done here at test time from
//! `../shared/datasets`) as training and evaluation data: SFT exports give each person's own
//! turns as the assistant turns under the system prompt a model seat gets, never one person's
//! private thought in the other's lines; the report's people rows are the import's counts.
//! Without the datasets each test prints `SKIPPED: …` and returns.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::{read_log, run_to_end, temp_dir};
use dealgym::export::{export, ExportOptions, Format, Seats};
use dealgym::game::{OutcomeKind, Seat};
use dealgym::protocol::TurnFormat;
use dealgym::record::EpisodeRecord;
use dealgym::report::{report, ReportOptions, PEOPLE};
use dealgym::run::RunOptions;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The first `n` people's dialogues of `family`, each turn's empty Thought replaced by a mark
/// naming its seat and turn (what `dealgym annotate` would have written there), in `dir`.
fn marked_dialogues(family: &str, dir: &Path, n: usize) -> Option<(PathBuf, Vec<EpisodeRecord>)> {
    let all = common::dialogues(family)?;
    let records: Vec<EpisodeRecord> = read_log(&all)
        .into_iter()
        .take(n)
        .map(|mut r| {
            for (i, t) in r.turns.iter_mut().enumerate() {
                let mark = mark(t.seat, i);
                assert!(t.raw.starts_with("<thought></thought>"), "{}", t.raw);
                t.raw = t.raw.replacen(
                    "<thought></thought>",
                    &format!("<thought>{mark}</thought>"),
                    1,
                );
                t.parsed.thought = Some(mark);
            }
            r
        })
        .collect();
    assert_eq!(records.len(), n, "{family} has {n} people's dialogues");
    let path = dir.join(format!("{family}-marked.jsonl"));
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    Some((path, records))
}

fn mark(seat: Seat, turn: usize) -> String {
    format!("PRIVATE-{}-{turn}", seat.name())
}

/// Both seats' lines of `file` in `format`, and how many seat-episodes had no turn to write.
fn export_lines(file: &Path, format: Format) -> (Vec<serde_json::Value>, usize) {
    let mut options = ExportOptions::new(vec![file.to_path_buf()], format);
    options.seats = Seats::Both;
    options.scenario_dir = Path::new(MANIFEST).join("scenarios");
    let mut out = Vec::new();
    let summary = export(&options, &mut out).expect("export");
    let lines = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, summary.no_turns)
}

fn contents(messages: &serde_json::Value, role: &str) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

/// The system prompts a model's seats get on `records`' scenarios, in the people's roles,
/// under the people's cap and spelling (and CaSiNo's walk-away points): per scenario id.
async fn model_system_prompts(
    family: &str,
    records: &[EpisodeRecord],
    dir: &Path,
) -> HashMap<String, EpisodeRecord> {
    let ids: Vec<&str> = records.iter().map(|r| r.scenario_id.as_str()).collect();
    let source = Path::new(MANIFEST).join(format!("scenarios/{family}.jsonl"));
    let lines: String = std::fs::read_to_string(source)
        .unwrap()
        .lines()
        .filter(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            ids.contains(&v["id"].as_str().unwrap())
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let scenarios = dir.join(format!("{family}-scenarios.jsonl"));
    std::fs::write(&scenarios, lines).unwrap();
    let mut o = RunOptions::new(
        vec![scenarios],
        "rule:linear",
        "rule:boulware",
        dir.join(format!("{family}-models.jsonl")),
    );
    o.progress = false;
    o.episode.learner_role = Some(records[0].seats.learner.role);
    // The people's rules (`dialogues::play`): the prompt tells every rule that can end the
    // episode, so a model seat is prompted alike under the same rules.
    o.episode.max_rounds = 20;
    o.episode.reject_loop = 0;
    o.episode.reject_streak = Some(0);
    o.episode.format_retries = 0;
    o.episode.learner_format = TurnFormat::Xml;
    o.episode.opponent_format = TurnFormat::Xml;
    if family == "casino" {
        o.episode.no_deal_value = Some(5.0);
    }
    run_to_end(&o).await;
    read_log(&o.out)
        .into_iter()
        .map(|r| (r.scenario_id.clone(), r))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sft_exports_give_each_person_their_turns_under_a_model_seats_system_prompt() {
    const N: usize = 8;
    let dir = temp_dir("human-sft");
    for family in ["casino", "craigslist", "job_interview", "dnd"] {
        let marked = {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || marked_dialogues(family, &dir, N))
                .await
                .unwrap()
        };
        let Some((file, records)) = marked else {
            return;
        };
        let models = model_system_prompts(family, &records, &dir).await;

        // messages: one line per person, their chat; their own turns are the assistant turns.
        // (A Deal or No Deal person can end the dialogue before the other says a word: that
        // seat has no line, and the export counts it.)
        let spoke: Vec<(&EpisodeRecord, Seat)> = records
            .iter()
            .flat_map(|r| Seat::BOTH.map(|s| (r, s)))
            .filter(|(r, s)| r.turns.iter().any(|t| t.seat == *s))
            .collect();
        let (lines, silent) = export_lines(&file, Format::Messages);
        assert_eq!(lines.len(), spoke.len(), "{family}");
        assert_eq!(silent, 2 * N - spoke.len(), "{family}");
        for (line, &(r, seat)) in lines.iter().zip(&spoke) {
            let at = format!("{family} {} {}", r.scenario_id, seat.name());
            assert_eq!(line["episode_id"], r.episode_id.as_str(), "{at}");
            assert_eq!(line["seat"], seat.name(), "{at}");
            assert_eq!(line["self_play"], false, "{at}: two people, not one policy");
            let messages = &line["messages"];
            let system = contents(messages, "system");
            assert_eq!(system, [r.seats[seat].system_prompt.clone()], "{at}");
            let model = &models[&r.scenario_id];
            assert_eq!(model.seats[seat].role, r.seats[seat].role, "{at}");
            assert_eq!(
                system[0], model.seats[seat].system_prompt,
                "{at}: a model in this seat is prompted alike"
            );
            let own: Vec<String> = r
                .turns
                .iter()
                .filter(|t| t.seat == seat)
                .map(|t| t.raw.clone())
                .collect();
            assert_eq!(contents(messages, "assistant"), own, "{at}");
            let text = messages.to_string();
            for (i, t) in r.turns.iter().enumerate() {
                let shown = text.contains(&mark(t.seat, i));
                assert_eq!(shown, t.seat == seat, "{at}: turn {i}'s thought");
            }
        }

        // prompt-completion: one line per person's turn; the completion is that turn.
        let (lines, _) = export_lines(&file, Format::PromptCompletion);
        let turns: usize = records.iter().map(|r| r.turns.len()).sum();
        assert_eq!(lines.len(), turns, "{family}");
        let by_episode: BTreeMap<&str, &EpisodeRecord> =
            records.iter().map(|r| (r.episode_id.as_str(), r)).collect();
        for line in &lines {
            let r = by_episode[line["episode_id"].as_str().unwrap()];
            let i = line["turn_index"].as_u64().unwrap() as usize;
            let t = &r.turns[i];
            assert_eq!(line["seat"], t.seat.name());
            assert_eq!(
                contents(&line["completion"], "assistant"),
                std::slice::from_ref(&t.raw)
            );
            let prompt = line["prompt"].to_string();
            for (j, other) in r.turns.iter().enumerate() {
                if other.seat != t.seat {
                    assert!(!prompt.contains(&mark(other.seat, j)), "turn {j} in {i}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reports_people_rows_are_the_imports_counts_beside_a_models() {
    let Some(people) = tokio::task::spawn_blocking(|| common::dialogues("casino"))
        .await
        .unwrap()
    else {
        return;
    };
    let dir = temp_dir("human-report");
    let records = read_log(&people);
    let deals = records
        .iter()
        .filter(|r| r.kind() == OutcomeKind::Deal)
        .count();
    let walk_aways = records
        .iter()
        .filter(|r| r.kind() == OutcomeKind::WalkAway)
        .count();
    // The people of CaSiNo: 1,030 dialogues, 1,005 deals and 25 walk-aways.
    assert_eq!((records.len(), deals, walk_aways), (1030, 1005, 25));

    let scenarios = common::scenario_files(&dir, 6);
    let mut o = RunOptions::new(
        scenarios
            .into_iter()
            .filter(|p| p.ends_with("casino.jsonl"))
            .collect(),
        "rule:linear",
        "rule:boulware",
        dir.join("models.jsonl"),
    );
    o.progress = false;
    o.episode.learner_role = Some("agent_1".parse().unwrap());
    run_to_end(&o).await;
    let models = read_log(&o.out);
    assert_eq!(models.len(), 6);

    let out = dir.join("report");
    report(&ReportOptions {
        files: vec![people.clone(), o.out.clone()],
        out: out.clone(),
        transcripts: 0,
        sample_seed: 0,
        taus: vec![0.5],
        quiet: true,
        on_duplicate: Default::default(),
        training_control: None,
        scenarios: Vec::new(),
    })
    .unwrap();
    let table = std::fs::read_to_string(out.join("tables/people_and_models.csv")).unwrap();
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<HashMap<&str, &str>> = lines
        .map(|l| header.iter().copied().zip(l.split(',')).collect())
        .collect();
    let num = |row: &HashMap<&str, &str>, column: &str| -> f64 { row[column].parse().unwrap() };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-5;
    for (seat, role) in [(Seat::Learner, "agent_1"), (Seat::Opponent, "agent_2")] {
        let row = rows
            .iter()
            .find(|r| r["role"] == role && r["player"] == PEOPLE)
            .expect("a people's row per role");
        assert_eq!(row["family"], "casino");
        assert_eq!(row["episodes"], "1030");
        assert!(close(num(row, "deal_pct"), 100.0 * 1005.0 / 1030.0));
        assert!(close(num(row, "walk_away_pct"), 100.0 * 25.0 / 1030.0));
        let mean_rho = records
            .iter()
            .map(|r| r.outcome.outcome.rho[seat])
            .sum::<f64>()
            / records.len() as f64;
        assert!(close(num(row, "mean_rho"), mean_rho), "{role}: {row:?}");
    }
    // The model's learner seat sits beside the people in its role; its opponent does not.
    let model_rows: Vec<_> = rows.iter().filter(|r| r["player"] != PEOPLE).collect();
    assert_eq!(model_rows.len(), 1, "{table}");
    assert_eq!(model_rows[0]["role"], "agent_1");
    assert_eq!(
        model_rows[0]["player"],
        models[0].player_name(Seat::Learner)
    );
    assert_eq!(model_rows[0]["episodes"], "6");
    // The aggregates are the models' episodes alone: a people's dialogue has no learner.
    let by_all = std::fs::read_to_string(out.join("tables/by_all.csv")).unwrap();
    let header: Vec<&str> = by_all.lines().next().unwrap().split(',').collect();
    let all: HashMap<&str, &str> = header
        .iter()
        .copied()
        .zip(by_all.lines().nth(1).unwrap().split(','))
        .collect();
    assert_eq!(all["episodes"], "6", "{by_all}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("1036 episodes: 1030 with people")
            && md.contains("and 6 played by models, of which 6 scored"),
        "{md}"
    );
    // People are never rated: the only pairing is the models', so no head-to-head table.
    assert!(!out.join("tables/crossplay.csv").exists());
    assert!(out.join("charts/outcomes_people_and_models.svg").exists());
}

#[test]
fn a_report_of_people_alone_says_so_and_draws_no_models_chart() {
    let Some(people) = common::dialogues("job_interview") else {
        return;
    };
    let dialogues = read_log(&people).len();
    let out = temp_dir("human-report-alone").join("report");
    report(&ReportOptions {
        files: vec![people],
        out: out.clone(),
        transcripts: 0,
        sample_seed: 0,
        taus: vec![0.5],
        quiet: true,
        on_duplicate: Default::default(),
        training_control: None,
        scenarios: Vec::new(),
    })
    .unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(&format!(
            "{dialogues} episodes, all with people (in \"People and models\""
        )),
        "{md}"
    );
    assert!(!md.contains("played by models"), "{md}");
    assert!(out.join("charts/outcomes_people_and_models.svg").exists());
    assert!(!out.join("charts/outcomes_by_family.svg").exists());
}
