//! Belief probes through the binary (`run --belief-probes`, `[probes] beliefs = true`; issue 44
//! item 3): against the mock on a price family, an item family and Job Interview, the records
//! gain scored probes and nothing else — the same run without probes writes the same records
//! once the `probes` field is taken out — `replay --verify` passes and catches a changed score,
//! and `report` has the calibration table; `eval` prints and writes each model player's mean
//! accuracy. Settings that cannot be honoured are refused.

use std::path::Path;

use dealgym_mock::MockConfig;

use crate::common::{dealgym_cli as dealgym, read_log, succeeded as ok, temp_dir, threaded_mock};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `run` of two mock seats on `family`'s first scenarios, with `extra` flags.
fn mock_run(url: &str, family: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let mock = format!("openai:mock@{url}");
    let mut args = vec![
        "run",
        "--scenarios",
        family,
        "--limit",
        "3",
        "--seed",
        "11",
        "--quiet",
        "--learner",
        &mock,
        "--opponent",
        &mock,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    dealgym(args)
}

/// Each line of `path` as JSON without its `probes` and `timing` (which no two runs share), by
/// episode id (episodes are written as they end).
fn without_probes(path: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let fields = v.as_object_mut().unwrap();
            fields.remove("probes");
            fields.remove("timing");
            (v["episode_id"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

#[test]
fn probes_are_scored_never_change_the_episode_replay_and_reach_the_report() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("probes-run");
    let config = dir.join("probes.toml");
    std::fs::write(&config, "[probes]\nbeliefs = true\nturns = [1, 2, 4]\n").unwrap();
    let mut all = Vec::new();
    for family in ["ahp", "casino", "job_interview"] {
        let file = format!("scenarios/{family}.jsonl");
        let with = dir.join(format!("{family}-probes.jsonl"));
        let plain = dir.join(format!("{family}-plain.jsonl"));
        ok(mock_run(
            &mock.url,
            &file,
            &with,
            &["--config", config.to_str().unwrap()],
        ));
        ok(mock_run(&mock.url, &file, &plain, &[]));
        // The same episodes, field for field, apart from the new one.
        assert_eq!(
            without_probes(&with),
            without_probes(&plain),
            "{family}: probes changed an episode"
        );
        assert!(!std::fs::read_to_string(&plain)
            .unwrap()
            .contains("\"probes\""));
        let records = read_log(&with);
        let probes: Vec<_> = records.iter().flat_map(|r| &r.probes).collect();
        assert!(!probes.is_empty(), "{family}: no probes");
        for r in &records {
            for p in &r.probes {
                assert!([1, 2, 4].contains(&p.turn), "{family}: turn {}", p.turn);
                assert!(p.failed.is_none(), "{family}: {:?}", p.failed);
                // The probe is no turn: the seat's history never holds the question.
                assert!(r
                    .turns
                    .iter()
                    .all(|t| !t.raw.contains("Estimate:") && !t.raw.contains("BELIEF PROBE")));
            }
        }
        let scored = probes.iter().filter(|p| p.accuracy.is_some()).count();
        assert!(scored > 0, "{family}: no probe scored");
        for p in &probes {
            if let Some(a) = p.accuracy {
                assert!((0.0..=1.0).contains(&a), "{family}: {a}");
                assert!(p.confidence.is_some(), "{family}: {p:?}");
            }
            match family {
                "ahp" => assert!(p.error.is_some() || p.unreadable, "{p:?}"),
                _ => assert!(p.rank_correlation.is_some() || p.unreadable, "{p:?}"),
            }
        }
        ok(dealgym(["replay", "--verify", with.to_str().unwrap()]));
        all.push(with);
    }

    // A changed score is caught.
    let tampered = dir.join("tampered.jsonl");
    let line = std::fs::read_to_string(&all[0]).unwrap();
    let first = line.lines().find(|l| l.contains("\"accuracy\":")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    let p = v["probes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p.get("accuracy").is_some())
        .unwrap();
    p["accuracy"] = serde_json::json!(0.123456);
    std::fs::write(&tampered, format!("{v}\n")).unwrap();
    let caught = dealgym(["replay", "--verify", tampered.to_str().unwrap()]);
    assert!(!caught.status.success(), "a changed probe score passed");
    assert!(
        text(&caught.stdout).contains("probes"),
        "{}",
        text(&caught.stdout)
    );

    // The report's calibration table and error by turn.
    let report = dir.join("report");
    let mut args = vec!["report".to_string()];
    args.extend(all.iter().map(|p| p.display().to_string()));
    args.extend(["--out".into(), report.display().to_string()]);
    ok(dealgym(args));
    let page = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(page.contains("Belief calibration"), "{page}");
    assert!(page.contains("mean accuracy"), "{page}");
    assert!(page.contains("Belief error by turn"), "{page}");
}

/// `eval --belief-probes` asks the model players (the baseline pairing, two rules, plays on
/// unasked) and prints and writes each player's mean accuracy with its interval, and each
/// player's own calibration rows (a calibrated player's two columns agree: its own, never
/// pooled with another player's).
#[test]
fn an_eval_with_probes_reports_each_players_accuracy() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("probes-eval");
    let out = dir.join("eval.jsonl");
    let summary = dir.join("summary.json");
    let player = format!("mock=openai:mock@{}", mock.url);
    let other = format!("other=openai:mock@{}", mock.url);
    let done = ok(dealgym([
        "eval",
        "--scenarios",
        "scenarios/casino.jsonl",
        "--limit",
        "3",
        "--seed",
        "2",
        "--quiet",
        "--player",
        &player,
        "--player",
        &other,
        "--opponent",
        "boulware=rule:boulware",
        "--belief-probes",
        "--out",
        out.to_str().unwrap(),
        "--summary-json",
        summary.to_str().unwrap(),
    ]));
    let stdout = text(&done.stdout);
    assert!(stdout.contains("Belief probes"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let players = json["beliefs"]["players"].as_array().unwrap();
    let names: Vec<&str> = players
        .iter()
        .map(|p| p["player"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mock", "other"], "only the models are asked");
    let accuracy = &players[0]["accuracy"];
    assert!(accuracy["low"].as_f64().unwrap() <= accuracy["value"].as_f64().unwrap());
    assert_eq!(players[0]["unscored"], 0, "{players:?}");
    // Each player's bins are its own: every row names its player, both players have rows,
    // and a player's counts add up to its scored probes that stated a confidence.
    let calibration = json["beliefs"]["calibration"].as_array().unwrap();
    for name in names {
        let rows: Vec<_> = calibration.iter().filter(|r| r["player"] == name).collect();
        assert!(!rows.is_empty(), "{name}: {calibration:?}");
        let binned: u64 = rows.iter().map(|r| r["n"].as_u64().unwrap()).sum();
        let stated = read_log(&out)
            .iter()
            .filter(|r| r.seats.learner.name.as_deref() == Some(name))
            .flat_map(|r| &r.probes)
            .filter(|p| p.accuracy.is_some() && p.confidence.is_some())
            .count() as u64;
        assert_eq!(binned, stated, "{name}");
    }
    // The baseline's episodes (two rules) carry no probes.
    for r in read_log(&out) {
        let asked = matches!(r.seats.learner.name.as_deref(), Some("mock" | "other"));
        assert_eq!(!r.probes.is_empty(), asked, "{}", r.episode_id);
    }
}

#[test]
fn probes_are_refused_where_they_cannot_be_honoured() {
    let dir = temp_dir("probes-refused");
    let out = dir.join("r.jsonl");
    let out = out.to_str().unwrap();
    // No model seat to ask.
    let done = dealgym([
        "run",
        "--scenarios",
        "scenarios/ahp.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:boulware",
        "--belief-probes",
        "--out",
        out,
    ]);
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(
        err.contains("[probes]") && err.contains("model seats"),
        "{err}"
    );
    // An eval of rules alone: no one to ask either, and nothing written.
    let done = dealgym([
        "eval",
        "--scenarios",
        "scenarios/ahp.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--player",
        "linear=rule:linear",
        "--opponent",
        "boulware=rule:boulware",
        "--belief-probes",
        "--out",
        out,
    ]);
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(
        err.contains("[probes]") && err.contains("entrants") && err.contains("rule:linear"),
        "{err}"
    );
    assert!(!Path::new(out).exists(), "an eval refused writes nothing");
    // A bundle has no single figure to ask about.
    let done = dealgym([
        "run",
        "--scenarios",
        "scenarios/bundle.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--learner",
        "openai:m@http://127.0.0.1:9/v1",
        "--opponent",
        "rule:boulware",
        "--belief-probes",
        "--out",
        out,
    ]);
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(err.contains("bundle") && err.contains("[probes]"), "{err}");
    // An n-party table.
    let done = dealgym([
        "run",
        "--scenarios",
        "scenarios/deliberation.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--belief-probes",
        "--out",
        out,
    ]);
    assert!(!done.status.success());
    assert!(
        text(&done.stderr).contains("n-party"),
        "{}",
        text(&done.stderr)
    );
    // A server's seats are its clients'.
    let config = dir.join("serve.toml");
    std::fs::write(&config, "[probes]\nbeliefs = true\n").unwrap();
    let done = dealgym([
        "serve",
        "--scenarios",
        "scenarios/ahp.jsonl",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(err.contains("[probes]") && err.contains("serve"), "{err}");
    // Turns without beliefs, and both turns and every.
    for toml in [
        "[probes]\nturns = [2]\n",
        "[probes]\nbeliefs = true\nturns = [2]\nevery = 3\n",
        "[probes]\nbeliefs = true\nturns = [0]\n",
    ] {
        let config = dir.join("bad.toml");
        std::fs::write(&config, toml).unwrap();
        let done = dealgym([
            "run",
            "--scenarios",
            "scenarios/ahp.jsonl",
            "--limit",
            "1",
            "--quiet",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out,
        ]);
        assert!(!done.status.success(), "{toml}");
        assert!(
            text(&done.stderr).contains("[probes]"),
            "{toml}: {}",
            text(&done.stderr)
        );
    }
}

/// A seat whose turn call fails after its probe was answered: the episode ends `error`, and
/// the probe (its answer and the tokens it cost) is still in the record.
#[test]
fn a_probe_answered_before_a_failed_turn_stays_in_the_error_record() {
    // The mock answers one chat request (the probe), then 503 to everything.
    let mock = threaded_mock(MockConfig {
        fail_after: 1,
        ..MockConfig::default()
    });
    let dir = temp_dir("probes-failed-turn");
    let config = dir.join("probes.toml");
    std::fs::write(
        &config,
        format!(
            "[probes]\nbeliefs = true\nturns = [1]\n[players.m]\nendpoint = \"{}\"\n\
             model = \"mock\"\nretries = 0\n",
            mock.url
        ),
    )
    .unwrap();
    let out = dir.join("r.jsonl");
    ok(dealgym([
        "run",
        "--scenarios",
        "scenarios/ahp.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--learner",
        "m",
        "--opponent",
        "rule:boulware",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = read_log(&out);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(
        r.outcome.outcome.kind,
        dealgym::game::OutcomeKind::Error,
        "{r:?}"
    );
    assert_eq!(r.probes.len(), 1, "the probe asked before the failed turn");
    let probe = &r.probes[0];
    assert!(
        probe.failed.is_none() && !probe.answer.is_empty(),
        "{probe:?}"
    );
    assert!(probe.usage.is_some(), "{probe:?}");
}

/// `--campaigns` and `--prefixes` check their scenarios' families as a plain run does: a
/// bundle campaign, or prefixes cut from bundle records, with probes are refused by name
/// before anything is played.
#[test]
fn probes_on_bundle_campaigns_and_prefixes_are_refused_by_family() {
    let dir = temp_dir("probes-campaigns-prefixes");
    let model = "openai:m@http://127.0.0.1:9/v1";
    let refused = |args: &[&str]| {
        let done = dealgym(args);
        assert!(!done.status.success(), "{args:?} was accepted");
        let err = text(&done.stderr);
        assert!(err.contains("bundle") && err.contains("[probes]"), "{err}");
    };
    let campaigns = dir.join("campaigns.jsonl");
    std::fs::write(
        &campaigns,
        "{\"id\": \"bundles\", \"ledger\": {\"kind\": \"best_offer\"}, \"deals\": [\"bundle:26:0\"]}\n",
    )
    .unwrap();
    let out = dir.join("r.jsonl");
    let out = out.to_str().unwrap();
    refused(&[
        "run",
        "--scenarios",
        "scenarios/bundle.jsonl",
        "--campaigns",
        campaigns.to_str().unwrap(),
        "--quiet",
        "--learner",
        model,
        "--opponent",
        "rule:boulware",
        "--belief-probes",
        "--out",
        out,
    ]);
    // Bundle records to cut prefixes from, played by rules.
    let sources = dir.join("sources.jsonl");
    ok(dealgym([
        "run",
        "--scenarios",
        "scenarios/bundle.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:boulware",
        "--out",
        sources.to_str().unwrap(),
    ]));
    refused(&[
        "run",
        "--prefixes",
        sources.to_str().unwrap(),
        "--prefix-turns",
        "1",
        "--scenarios",
        "scenarios/bundle.jsonl",
        "--quiet",
        "--learner",
        model,
        "--opponent",
        "rule:boulware",
        "--belief-probes",
        "--out",
        out,
    ]);
    // `replay --branch-from` with `[probes]` in its config runs the same checks: a bundle
    // record's branches have no figure to ask about, and rule seats no one to ask.
    let config = dir.join("probes.toml");
    std::fs::write(&config, "[probes]\nbeliefs = true\n").unwrap();
    let branch = |learner: &str| {
        dealgym([
            "replay",
            sources.to_str().unwrap(),
            "--branch-from",
            "1",
            "--scenarios",
            "scenarios/bundle.jsonl",
            "--learner",
            learner,
            "--opponent",
            "rule:boulware",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out,
        ])
    };
    let done = branch(model);
    assert!(
        !done.status.success(),
        "a bundle branch with probes was accepted"
    );
    let err = text(&done.stderr);
    assert!(err.contains("bundle") && err.contains("[probes]"), "{err}");
    let done = branch("rule:linear");
    assert!(
        !done.status.success(),
        "rule branches with probes were accepted"
    );
    let err = text(&done.stderr);
    assert!(
        err.contains("[probes]") && err.contains("model seats"),
        "{err}"
    );
    assert!(!Path::new(out).exists(), "a refused run writes nothing");
}

/// Probes are no part of the run id, so `--resume` checks them apart: a file written without
/// probes is not resumed with them, nor one written with them without.
#[test]
fn a_resume_that_turns_probes_on_or_off_is_refused() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("probes-resume");
    let config = dir.join("probes.toml");
    std::fs::write(&config, "[probes]\nbeliefs = true\nturns = [1]\n").unwrap();
    let probed = ["--config", config.to_str().unwrap()];
    for (first, resumed) in [(&[][..], &probed[..]), (&probed[..], &[][..])] {
        let out = dir.join(format!("r{}.jsonl", first.len()));
        ok(mock_run(&mock.url, "scenarios/ahp.jsonl", &out, first));
        let done = mock_run(
            &mock.url,
            "scenarios/ahp.jsonl",
            &out,
            &[resumed, &["--resume"]].concat(),
        );
        assert!(
            !done.status.success(),
            "resumed {resumed:?} after {first:?}"
        );
        let err = text(&done.stderr);
        assert!(
            err.contains("--resume") && err.contains("belief probes"),
            "{err}"
        );
    }
}
