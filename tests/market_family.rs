//! The market family (issue 45) at the command line: `scenarios generate market` writes the
//! shipped file byte for byte and prints the book's statistics, `scenarios validate` reads it,
//! and the faces that do not play markets yet refuse it by name — the file, the line and why —
//! rather than reading it as some other kind or failing on its first unknown field.

use std::path::Path;

use crate::common::{dealgym_cli, succeeded, temp_dir};

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

#[test]
fn the_faces_that_do_not_play_markets_yet_refuse_a_market_file_by_name() {
    let markets = shipped();
    let markets = markets.to_str().unwrap();
    let out = temp_dir("market-refused").join("episodes.jsonl");
    for args in [
        vec![
            "run",
            "--scenarios",
            markets,
            "--seat",
            "buyer_1=rule:zic",
            "--out",
            out.to_str().unwrap(),
        ],
        vec![
            "run",
            "--scenarios",
            markets,
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:linear",
            "--out",
            out.to_str().unwrap(),
        ],
        vec![
            "eval",
            "--player",
            "a=rule:linear",
            "--opponent",
            "b=rule:linear",
            "--scenarios",
            markets,
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let output = dealgym_cli(&args);
        assert!(!output.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            err.contains("market.jsonl") && err.contains("do not play them yet"),
            "{args:?}: {err}"
        );
    }
    assert!(!out.exists(), "nothing was played");
}
