//! `dealgym dialogues import`: the datasets' own dialogues as episode records — the import's
//! counts per family and skip reasons, every CaSiNo deal matched, every record read back by
//! the record reader and replayed identically by `replay --verify`. Without
//! `../shared/datasets` each test says SKIPPED and returns.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use dealgym::dialogues::{FamilyImport, HUMAN_NAME};
use dealgym::game::{OutcomeKind, Seat};
use dealgym::record::EpisodeRecord;
use dealgym::replay::{verify, VerifyOptions};

/// Read, imported, outcome-matched, skipped.
fn counts(f: &FamilyImport) -> (usize, usize, usize, usize) {
    (f.read, f.imported, f.matched, f.skipped.total())
}

fn reasons(f: &FamilyImport) -> BTreeMap<String, usize> {
    f.skipped
        .0
        .iter()
        .map(|(k, (n, _))| (k.clone(), *n))
        .collect()
}

/// Every record of a family's file, checked to be the people's: `human:<id>` in both seats,
/// both named `human`, one episode per imported dialogue.
fn records_of(family: &str) -> Option<(FamilyImport, Vec<EpisodeRecord>)> {
    let report = common::dialogue_import(family)?;
    let records = common::read_log(report.file.as_ref().unwrap());
    assert_eq!(
        records.len(),
        report.imported,
        "{family}: one record per import"
    );
    for r in &records {
        let spec = &r.seats.learner.player;
        assert!(spec.is_person(), "{spec}");
        for seat in Seat::BOTH {
            assert_eq!(&r.seats[seat].player, spec);
            assert_eq!(r.seats[seat].name.as_deref(), Some(HUMAN_NAME));
            assert!(!r.seats[seat].regulated);
        }
        assert_eq!(r.setup.rules.reject_loop, 0);
        assert_eq!(r.setup.rules.format_retries, 0);
    }
    Some((report, records))
}

fn verified_clean(files: Vec<PathBuf>) {
    let report = verify(&VerifyOptions {
        files,
        episode: None,
        scenarios: vec![],
        prompts_dir: None,
        rewards: None,
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
}

#[test]
fn casino_every_dialogue_imported_and_every_deal_matched() {
    let Some((report, records)) = records_of("casino") else {
        return;
    };
    assert_eq!(counts(&report), (1030, 1030, 1030, 0));
    assert!(report.mismatched.0.is_empty(), "{:?}", report.mismatched);
    let kinds = |kind| records.iter().filter(|r| r.kind() == kind).count();
    assert_eq!(kinds(OutcomeKind::Deal), 1005, "every deal the people made");
    assert_eq!(kinds(OutcomeKind::WalkAway), 25);
    // A walk-away is worth CaSiNo's 5 points to each side, as the dataset's points say.
    let walked = records
        .iter()
        .find(|r| r.kind() == OutcomeKind::WalkAway)
        .unwrap();
    assert_eq!(walked.outcome.outcome.utility.learner, 5.0);
    // The annotated dialogues keep their strategy labels on the turns.
    let labelled = records
        .iter()
        .filter(|r| {
            r.turns
                .iter()
                .any(|t| t.dataset_labels.contains_key("strategy"))
        })
        .count();
    assert_eq!(labelled, 396);
    assert_eq!(
        report
            .adjusted
            .count("move folded into a later move of the same turn"),
        95
    );
}

#[test]
fn craigslist_counts_and_skip_reasons() {
    let Some((report, records)) = records_of("craigslist") else {
        return;
    };
    assert_eq!(counts(&report), (1435, 1102, 1102, 333));
    let reasons = reasons(&report);
    assert_eq!(
        reasons["no scenario in craigslist.jsonl (the scenario importer drops it)"],
        332
    );
    assert_eq!(
        reasons["accept with no offer of the other side before it"],
        1
    );
    assert_eq!(
        report.adjusted.count("offer restated before its accept"),
        17
    );
    assert!(records.iter().any(|r| r
        .turns
        .iter()
        .any(|t| t.dataset_labels.contains_key("dialogue_act"))));
    // A dialogue that stopped with no accept or walk-away ends as max_turns where it stopped.
    let stopped: Vec<_> = records
        .iter()
        .filter(|r| r.setup.rules.max_moves.is_some())
        .collect();
    assert_eq!(stopped.len(), 165, "Craigslist's dialogues the people left");
    for r in stopped {
        assert_eq!(r.kind(), OutcomeKind::MaxTurns);
        assert_eq!(Some(r.turns.len() as u32), r.setup.rules.max_moves);
    }
}

#[test]
fn dnd_every_dialogue_of_the_corpus_imported_and_matched() {
    let Some((report, _)) = records_of("dnd") else {
        return;
    };
    assert_eq!(counts(&report), (6318, 6318, 6318, 0));
}

#[test]
fn job_interview_counts_and_accepts_whose_time_is_unknown() {
    let Some((report, records)) = records_of("job_interview") else {
        return;
    };
    assert_eq!(counts(&report), (109, 96, 96, 13));
    let reasons = reasons(&report);
    assert_eq!(
        reasons["accept time unknown: a later solution follows the accepted one"],
        8
    );
    assert_eq!(
        reasons["accept time unknown: the proposer talks on after the other side did"],
        5
    );
    assert!(records.iter().all(|r| r.kind() == OutcomeKind::Deal));
}

#[test]
fn every_imported_episode_replays_identically() {
    let files: Vec<PathBuf> = ["casino", "craigslist", "dnd", "job_interview"]
        .into_iter()
        .filter_map(common::dialogues)
        .collect();
    if files.is_empty() {
        return;
    }
    verified_clean(files);
}

#[test]
fn the_command_prints_the_table_and_says_ahp_has_no_dialogues() {
    let Some(datasets) = common::datasets_dir() else {
        println!("SKIPPED: no ../shared/datasets");
        return;
    };
    let out = common::temp_dir("dialogues-cli");
    let output = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["dialogues", "import", "--datasets"])
        .arg(&datasets)
        .arg("--out")
        .arg(&out)
        .args(["--family", "casino", "--family", "ahp"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.contains("| casino | 1030 | 1030 | 1030 | 0 |"),
        "{table}"
    );
    assert!(
        table.contains("ahp: the dataset has no dialogues"),
        "{table}"
    );
    assert!(out.join("casino.jsonl").exists());
    assert!(!out.join("ahp.jsonl").exists());
}
