//! The market family (issue 45) at the command line: `scenarios generate market` writes the
//! shipped file byte for byte and prints the book's statistics, `scenarios validate` reads it,
//! `run` plays it (scripted traders, the mock at a seat), `replay --verify` replays its records
//! and names what differs, `export --format verl` writes the token-exact seat's trajectory, and
//! a market file beside another family's is refused by name — the file, the line and why —
//! rather than read as some other kind or failing on its first unknown field.

use std::path::Path;

use dealgym::record::MarketRecord;
use dealgym_mock::MockConfig;

use crate::common::{dealgym_cli, succeeded, temp_dir, threaded_mock};

fn shipped() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/market.jsonl")
}

#[test]
fn scenarios_generate_market_writes_the_shipped_file_and_validate_reads_it() {
    let out = temp_dir("market-generate").join("market.jsonl");
    let printed = succeeded(dealgym_cli([
        "scenarios",
        "generate",
        "market",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(shipped()).unwrap(),
        "scenarios/market.jsonl is stale: run `dealgym scenarios generate market`"
    );
    let book = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/families/market.md"),
    )
    .unwrap();
    let table = String::from_utf8(printed.stdout).unwrap();
    assert!(book.contains(&table), "the book's statistics are stale");
    let said = succeeded(dealgym_cli([
        "scenarios",
        "validate",
        shipped().to_str().unwrap(),
    ]));
    assert!(String::from_utf8_lossy(&said.stdout).contains("600 markets, all valid"));
    let listed = succeeded(dealgym_cli([
        "scenarios",
        "list",
        shipped().to_str().unwrap(),
    ]));
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        listed.contains("| market | thin | unit | 100 |") && listed.contains("| all | | | 600 |"),
        "{listed}"
    );
}

/// The mock at buyer_1 (token-exact, as `[players.m] tokens = "exact"` plays it), every other
/// trader `rule:zic`: the run writes market records, they replay identically, a changed one is
/// named by its turn and field, and verl exports one line per market for the mock's seat, its
/// prompt then response being the seat's recorded ids.
#[test]
fn a_market_with_the_mock_at_buyer_1_runs_replays_and_exports_verl() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("market-mock");
    let config = dir.join("players.toml");
    std::fs::write(
        &config,
        format!(
            "[players.m]\nendpoint = \"{}\"\nmodel = \"mock\"\nmax_tokens = 300\n\
             tokens = \"exact\"\ntoken_api = \"llama_cpp\"\n",
            mock.url
        ),
    )
    .unwrap();
    let out = dir.join("markets.jsonl");
    let run = succeeded(dealgym_cli([
        "run",
        "--scenarios",
        shipped().to_str().unwrap(),
        "--limit",
        "3",
        "--seat",
        "buyer_1=m",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(printed.contains("efficiency %"), "{printed}");
    let records: Vec<MarketRecord> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3);
    let mut traded = 0;
    for r in &records {
        assert_eq!(r.seats[0].role, "buyer_1");
        assert_eq!(r.seats[0].player, "m");
        assert!(
            r.seats[1..].iter().all(|s| s.player == "rule:zic"),
            "{:?}",
            r.seats
        );
        assert!(
            r.turns
                .iter()
                .any(|t| t.seat == 0 && (t.quote.is_some() || t.trade.is_some())),
            "the mock traded as a market seat (token-exact too)"
        );
        assert_eq!(r.seats[0].model.as_deref(), Some("mock"));
        let mock_turns = r.turns.iter().filter(|t| t.seat == 0).count();
        assert_eq!(
            r.calls.len(),
            mock_turns,
            "each model call's cost, none for the scripts"
        );
        assert!(r.calls.iter().all(|c| r.turns[c.turn].seat == 0));
        traded += usize::from(!r.outcome.trades.is_empty());
    }
    assert!(traded >= 2, "scripted traders trade in most markets");

    let verified = succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    let said = String::from_utf8_lossy(&verified.stdout).to_string()
        + &String::from_utf8_lossy(&verified.stderr);
    assert!(
        said.contains("3 episodes in 1 files replay identically"),
        "{said}"
    );

    // A turn's move changed: the replay names the turn and the field.
    let changed = dir.join("changed.jsonl");
    let mut bad = records[0].clone();
    let i = bad.turns.iter().position(|t| t.quote.is_some()).unwrap();
    bad.turns[i].completion.text = "Thought: x\nTalk: y\nAction: [WALK_AWAY]".into();
    std::fs::write(&changed, serde_json::to_string(&bad).unwrap() + "\n").unwrap();
    let output = dealgym_cli(["replay", "--verify", changed.to_str().unwrap()]);
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("turn.parsed"), "{said}");
    // Its outcome changed (a trade's price): named by its field.
    let mut bad = records
        .iter()
        .find(|r| !r.outcome.trades.is_empty())
        .unwrap()
        .clone();
    bad.outcome.trades[0].price += 100;
    std::fs::write(&changed, serde_json::to_string(&bad).unwrap() + "\n").unwrap();
    let output = dealgym_cli(["replay", "--verify", changed.to_str().unwrap()]);
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("outcome.trades"), "{said}");

    let exported = succeeded(dealgym_cli([
        "export",
        "--format",
        "verl",
        out.to_str().unwrap(),
    ]));
    let lines: Vec<serde_json::Value> = String::from_utf8(exported.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "one line per market for the mock's seat");
    let stderr = String::from_utf8_lossy(&exported.stderr);
    assert!(
        stderr.contains("without token ids"),
        "the scripted traders are skipped: {stderr}"
    );
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    for (line, r) in lines.iter().zip(&records) {
        let extra = &line["extra_fields"];
        assert_eq!(extra["kind"], "market");
        assert_eq!(extra["role"], "buyer_1");
        assert_eq!(extra["episode_id"].as_str(), Some(r.episode_id.as_str()));
        assert_eq!(
            line["reward_score"].as_f64(),
            Some(r.outcome.metrics.surplus[0])
        );
        let mut whole = ids(&line["prompt_ids"]);
        whole.extend(ids(&line["response_ids"]));
        let mut recorded = Vec::new();
        for t in r.turns.iter().filter(|t| t.seat == 0) {
            let tokens = t.completion.tokens.as_ref().expect("exact ids");
            recorded.extend(tokens.prompt_ids.iter().map(|&x| u64::from(x)));
            recorded.extend(tokens.completion_ids.iter().map(|&x| u64::from(x)));
        }
        assert!(
            recorded.starts_with(&whole) || whole == recorded,
            "the seat's recorded ids"
        );
        assert_eq!(whole, recorded);
    }
}

#[test]
fn a_market_file_beside_another_familys_is_refused_by_name() {
    let markets = shipped();
    let markets = markets.to_str().unwrap();
    let out = temp_dir("market-refused").join("episodes.jsonl");
    let casino = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl");
    // Every face plays markets; a market file beside another family's is refused by name.
    let args = [
        "run",
        "--scenarios",
        casino.to_str().unwrap(),
        "--scenarios",
        markets,
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:linear",
        "--limit",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = dealgym_cli(args);
    assert!(!output.status.success(), "{args:?}");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("market.jsonl")
            && err.contains("two-party or n-party table scenarios are read"),
        "{args:?}: {err}"
    );
    assert!(!out.exists(), "nothing was played");
}

/// What a run of markets cannot honour is refused by name; `report` writes each player's
/// efficiency with its interval, and the faces that do not read market records yet
/// (`replay --render`, `merge`) say so rather than misreading them.
#[test]
fn market_runs_refuse_what_they_cannot_honour_and_record_readers_name_market_records() {
    let markets = shipped();
    let markets = markets.to_str().unwrap();
    let dir = temp_dir("market-refusals");
    let out = dir.join("episodes.jsonl");
    let out = out.to_str().unwrap();
    for (args, says) in [
        (
            vec![
                "run",
                "--scenarios",
                markets,
                "--learner",
                "rule:linear",
                "--out",
                out,
            ],
            "seats its traders by role",
        ),
        (
            vec![
                "run",
                "--scenarios",
                markets,
                "--seat",
                "mayor=rule:zic",
                "--out",
                out,
            ],
            "no trader `mayor`",
        ),
        (
            vec![
                "run",
                "--scenarios",
                markets,
                "--seat",
                "buyer_1=rule:linear",
                "--out",
                out,
            ],
            "`rule:zic`, `rule:sniper` or `rule:truthful`",
        ),
    ] {
        let output = dealgym_cli(&args);
        assert!(!output.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!Path::new(out).exists(), "nothing was played");
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        markets,
        "--limit",
        "1",
        "--seat",
        "seller_1=rule:truthful",
        "--out",
        out,
    ]));
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        out,
        "--out",
        report.to_str().unwrap(),
    ]));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("| rule:truthful | 1 | 0 | 1 |"), "{md}");
    assert!(md.contains("| all markets | 1 | 0 |"), "{md}");
    assert!(report.join("charts/market_efficiency.svg").exists());
    let merged = dir.join("merged.jsonl");
    for (args, says) in [
        (
            vec!["replay", out, "--render", "md", "--episode", "g0-m0"],
            "--render does not draw markets yet",
        ),
        (
            vec!["merge", merged.to_str().unwrap(), out],
            "`merge` does not join market shards yet",
        ),
    ] {
        let output = dealgym_cli(&args);
        assert!(!output.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!merged.exists());
}

/// `eval` over markets: each entrant (two scripted traders and the mock) trades every market
/// once at buyer_1 and once at seller_1, the other traders rule:zic; the table has a row per
/// entrant and seat with its figures and the ratings name every entrant; the records are
/// market records that replay; an entrant meets the same setups and scripted traders as the
/// others; the same seed gives the same records; `--resume` completes a cut file to the same
/// records.
#[test]
fn a_market_eval_seats_each_entrant_as_buyer_and_seller_and_its_records_replay() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("market-eval");
    let config = dir.join("players.toml");
    std::fs::write(
        &config,
        format!(
            "[players.m]\nendpoint = \"{}\"\nmodel = \"mock\"\nmax_tokens = 300\n",
            mock.url
        ),
    )
    .unwrap();
    let markets = shipped();
    let eval = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--scenarios",
            markets.to_str().unwrap(),
            "--limit",
            "3",
            "--player",
            "zic=rule:zic",
            "--player",
            "truthful=rule:truthful",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        dealgym_cli(&args)
    };
    let out = dir.join("eval.jsonl");
    let with_mock = ["--player", "mock=m", "--config", config.to_str().unwrap()];
    let output = succeeded(eval(&out, &with_mock));
    let table = String::from_utf8_lossy(&output.stdout).to_string();
    for entrant in ["zic", "truthful", "mock"] {
        for seat in ["buyer_1", "seller_1"] {
            assert!(
                table.contains(&format!("| {entrant} | {seat} | 3 | 0 | ")),
                "{entrant} at {seat}: {table}"
            );
        }
    }
    assert!(table.contains("the other traders play rule:zic"), "{table}");
    let rated = table.split("Ratings").nth(1).unwrap_or_default();
    for entrant in ["| zic |", "| truthful |", "| mock |"] {
        assert!(rated.contains(entrant), "{entrant}: {table}");
    }
    let records: Vec<MarketRecord> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3 * 2 * 3, "3 markets × 2 seats × 3 entrants");
    // Like for like: each market's setup is the same whoever sits at the entrant's seat, and
    // the seats it does not take are rule:zic.
    for r in &records {
        let twin = records
            .iter()
            .find(|o| o.episode_id == r.episode_id && o.scenario_id == r.scenario_id)
            .unwrap();
        assert_eq!(r.setup, twin.setup);
        assert!(
            r.seats
                .iter()
                .all(|s| s.player == "rule:zic" || s.role == "buyer_1" || s.role == "seller_1"),
            "{:?}",
            r.seats
        );
    }
    let mock_seats: Vec<&str> = records
        .iter()
        .flat_map(|r| &r.seats)
        .filter(|s| s.player == "m")
        .map(|s| s.role.as_str())
        .collect();
    assert_eq!(mock_seats.len(), 6, "{mock_seats:?}");
    assert_eq!(mock_seats.iter().filter(|r| **r == "buyer_1").count(), 3);
    let verified = succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    let said = String::from_utf8_lossy(&verified.stdout).to_string()
        + &String::from_utf8_lossy(&verified.stderr);
    assert!(
        said.contains("18 episodes in 1 files replay identically"),
        "{said}"
    );

    // Scripted entrants alone: the same seed gives the same records and the same table.
    let sorted = |path: &Path| {
        let mut lines: Vec<String> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    let first = succeeded(eval(&a, &["--player", "sniper=rule:sniper"]));
    let second = succeeded(eval(&b, &["--player", "sniper=rule:sniper"]));
    assert_eq!(sorted(&a), sorted(&b));
    assert_eq!(first.stdout, second.stdout);
    // A cut file is completed by --resume to the same records.
    let whole = sorted(&a);
    let kept: Vec<String> = std::fs::read_to_string(&a)
        .unwrap()
        .lines()
        .take(7)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&b, kept.concat()).unwrap();
    let resumed = succeeded(eval(&b, &["--player", "sniper=rule:sniper", "--resume"]));
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains("(18 planned, 7 already there)"),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(sorted(&b), whole);
    assert_eq!(resumed.stdout, first.stdout);
}

/// What an eval over markets cannot honour is refused, naming the flag, before anything is
/// played.
#[test]
fn a_market_eval_refuses_what_it_cannot_honour_by_name() {
    let markets = shipped();
    let markets = markets.to_str().unwrap();
    let dir = temp_dir("market-eval-refusals");
    let out = dir.join("eval.jsonl");
    let out = out.to_str().unwrap();
    let base = [
        "eval",
        "--scenarios",
        markets,
        "--player",
        "z=rule:zic",
        "--out",
        out,
    ];
    for (extra, says) in [
        (
            vec!["--talk-ablation"],
            "--talk-ablation is not taken by an eval over markets",
        ),
        (vec!["--round-robin"], "--round-robin is not taken"),
        (vec!["--swap-seats"], "--swap-seats is not taken"),
        (vec!["--table-role", "buyer_1"], "--table-role is not taken"),
        (
            vec!["--opponent", "a=rule:zic", "--opponent", "b=rule:sniper"],
            "--opponent (more than once) is not taken",
        ),
        (vec!["--belief-probes"], "--belief-probes"),
        (vec!["--max-rounds", "4"], "max_rounds"),
        (
            vec!["--player", "l=rule:linear"],
            "`rule:zic`, `rule:sniper` or `rule:truthful`",
        ),
        (
            vec!["--player", "twin=rule:zic"],
            "--player twin and --player z have the same spec",
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra.iter().copied());
        let output = dealgym_cli(&args);
        assert!(!output.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!Path::new(out).exists(), "nothing was played");
    // The one --opponent is honoured: every other trader plays it, and the table names it.
    let output = succeeded(dealgym_cli(base.iter().copied().chain([
        "--limit",
        "1",
        "--opponent",
        "others=rule:truthful",
    ])));
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("the other traders play others (rule:truthful)"),
        "{table}"
    );
    let records: Vec<MarketRecord> = std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for r in &records {
        let zic: Vec<&str> = r
            .seats
            .iter()
            .filter(|s| s.player == "rule:zic")
            .map(|s| s.role.as_str())
            .collect();
        assert_eq!(zic.len(), 1, "only the entrant's seat: {:?}", r.seats);
        assert!(r
            .seats
            .iter()
            .all(|s| s.player == "rule:truthful" || s.player == "rule:zic"));
    }
}
