//! The utilities reproduce the datasets' own recorded outcomes, read from the committed scenario
//! files (written by `dealgym scenarios import`); and the committed files are exactly what the
//! importer writes from the raw data, where `../shared/datasets` is present.

use std::path::{Path, PathBuf};

use dealgym::game::{EpisodeConfig, EpisodeSeed, PerSeat, Setup};
use dealgym::protocol::parse_terms;
use dealgym::scenario::{import, load_scenarios, Family, HumanEnding, LoadOptions, Role, Scenario};
use dealgym::score::seat_values;

fn committed(family: Family) -> Vec<Scenario> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{}.jsonl", family.name()));
    load_scenarios(&path, LoadOptions::default())
        .expect("committed scenario file loads")
        .scenarios
}

/// Compare each recorded points entry of every agreed dialogue with the utility of the agreed
/// terms. Returns (dialogues checked, mismatches described).
fn check_agreed(scenarios: &[Scenario]) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for s in scenarios {
        for h in s
            .human
            .iter()
            .filter(|h| h.ending == HumanEnding::Deal && !h.points.is_empty())
        {
            let (Some(text), Some(view)) = (&h.terms, h.view) else {
                mismatches.push(format!("{}: a deal without terms", s.id));
                continue;
            };
            let (terms, _) = parse_terms(text, s.term_space()).expect("recorded terms parse");
            for p in &h.points {
                let own = if p.role == view {
                    terms.clone()
                } else {
                    terms.flipped(s.term_space())
                };
                let u = s.utility(p.role, &own);
                if (u - p.points).abs() > 1e-9 {
                    mismatches.push(format!(
                        "{} {}: utility {u} but the data records {}",
                        s.id, p.role, p.points
                    ));
                }
            }
            checked += 1;
        }
    }
    (checked, mismatches)
}

#[test]
fn casino_points_of_every_accepted_deal() {
    let scenarios = committed(Family::Casino);
    let (checked, mismatches) = check_agreed(&scenarios);
    assert_eq!(
        checked, 1005,
        "CaSiNo has 1,005 dialogues that end in an accepted deal"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn casino_walk_away_gives_five_each_as_a_scenario_option() {
    let mut walkaways = 0;
    for mut s in committed(Family::Casino) {
        let Some(h) = s
            .human
            .iter()
            .find(|h| h.ending == HumanEnding::WalkAway)
            .cloned()
        else {
            continue;
        };
        // Default: no deal is worth 0. CaSiNo's own rule, set on the scenario: 5 each.
        let seed = EpisodeSeed {
            run: 0,
            group: 0,
            member: 0,
        };
        let setup = Setup::draw(
            &s,
            &EpisodeConfig::default(),
            PerSeat::default(),
            &mut seed.setup_rng(),
        )
        .unwrap();
        assert_eq!(seat_values(&s, &setup, None).0, PerSeat::new(0.0, 0.0));
        s.no_deal_value = 5.0;
        let setup = Setup::draw(
            &s,
            &EpisodeConfig::default(),
            PerSeat::default(),
            &mut seed.setup_rng(),
        )
        .unwrap();
        let (utility, _) = seat_values(&s, &setup, None);
        for p in &h.points {
            let seat = setup.seat_of(p.role).unwrap();
            assert_eq!(utility[seat], p.points, "{} {}", s.id, p.role);
        }
        walkaways += 1;
    }
    assert_eq!(walkaways, 25, "CaSiNo has 25 walk-away dialogues");
}

#[test]
fn deal_or_no_deal_rewards_of_agreed_dialogues() {
    let scenarios = committed(Family::Dnd);
    let (checked, mismatches) = check_agreed(&scenarios);
    let both_sides: usize = scenarios
        .iter()
        .flat_map(|s| &s.human)
        .filter(|h| h.ending == HumanEnding::Deal && h.points.len() == 2)
        .count();
    eprintln!(
        "dnd: {checked} agreed dialogues checked, {both_sides} with both sides' recorded rewards"
    );
    assert!(checked > 4000, "only {checked} agreed dialogues");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn human_deals_of_every_family_are_valid_terms() {
    for family in Family::ALL {
        for s in committed(family) {
            for h in s.human.iter().filter(|h| h.ending == HumanEnding::Deal) {
                let text = h
                    .terms
                    .as_deref()
                    .unwrap_or_else(|| panic!("{}: deal without terms", s.id));
                let (terms, well_formed) = parse_terms(text, s.term_space())
                    .unwrap_or_else(|e| panic!("{}: recorded terms `{text}`: {e}", s.id));
                assert!(well_formed);
                assert_eq!(
                    terms.render(s.term_space()),
                    text,
                    "{}: recorded terms are canonical",
                    s.id
                );
                if family == Family::JobInterview {
                    for role in [Role::Worker, Role::Recruiter] {
                        let u = s.utility(role, &terms);
                        assert!(
                            (0.0..=100.0 + 1e-9).contains(&u),
                            "{}: {role} utility {u}",
                            s.id
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn job_interview_best_contract_matches_enumeration() {
    for s in committed(Family::JobInterview) {
        for role in [Role::Worker, Role::Recruiter] {
            let enumerated = s
                .all_deals()
                .map(|t| s.utility(role, &t))
                .fold(f64::MIN, f64::max);
            let best = s.max_utility(role);
            assert!(
                (best - enumerated).abs() < 1e-9,
                "{} {role}: {best} vs {enumerated}",
                s.id
            );
        }
    }
}

fn datasets_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("DEALGYM_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    dir.is_dir().then_some(dir)
}

#[test]
fn committed_scenarios_are_what_the_importer_writes() {
    let Some(d) = datasets_dir() else {
        eprintln!("SKIPPED: ../shared/datasets is not present here (set DEALGYM_DATASETS); only the committed files were checked");
        return;
    };
    let files = |names: &[&str]| names.iter().map(|n| d.join(n)).collect::<Vec<_>>();
    let mut ahp: Vec<PathBuf> = std::fs::read_dir(d.join("amazonhistoryprice"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    ahp.sort();
    let inputs = [
        (Family::Ahp, ahp),
        (Family::Craigslist, {
            // The train file where the official bundle's copy is there (import-scenarios.sh).
            let mut cra = files(&[
                "craigslistbargains/test.json",
                "craigslistbargains/validation.json",
            ]);
            cra.extend(
                files(&["craigslistbargains/train.json"])
                    .into_iter()
                    .filter(|p| p.is_file()),
            );
            cra
        }),
        (
            Family::Casino,
            files(&[
                "casino/casino_train.json",
                "casino/casino_valid.json",
                "casino/casino_test.json",
            ]),
        ),
        (
            Family::Dnd,
            files(&[
                "dealornodeal/data.txt",
                "dealornodeal/test.txt",
                "dealornodeal/val.txt",
                "dealornodeal/selfplay.txt",
            ]),
        ),
        (Family::JobInterview, files(&["job_interview/ji.test.json"])),
    ];
    for (family, files) in inputs {
        let report =
            import::import(family, &files).unwrap_or_else(|e| panic!("import {family}: {e}"));
        let committed = committed(family);
        assert_eq!(
            report.scenarios.len(),
            committed.len(),
            "{family}: scenario count"
        );
        for (fresh, kept) in report.scenarios.iter().zip(&committed) {
            assert_eq!(fresh, kept, "{family}: {} differs from the importer's output; rerun scripts/import-scenarios.sh", kept.id);
        }
    }
}
