//! The market family (issue 45) at the command line: the faces that do not play markets yet
//! refuse `scenarios/market.jsonl` by name — the file, the line and why — rather than reading
//! it as some other kind or failing on its first unknown field.

use std::path::Path;

use crate::common::{dealgym_cli, temp_dir};

#[test]
fn the_faces_that_do_not_play_markets_yet_refuse_a_market_file_by_name() {
    let markets = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/market.jsonl");
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
        vec!["scenarios", "validate", markets],
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
