//! The book's generated reference pages are what the code prints: a page edited by hand, or a
//! flag changed without regenerating its page, fails here with the command that writes it.

use std::process::Command;

/// What `dealgym docs PAGE` prints.
fn generated(page: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(["docs", page])
        .output()
        .expect("dealgym runs");
    assert!(
        out.status.success(),
        "dealgym docs {page}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("Markdown is UTF-8")
}

/// `dealgym docs PAGE`, checked against its committed page: equal, or the test names the first
/// line that differs and the command that rewrites the page.
fn committed_page_is_generated(page: &str, committed: &str) -> String {
    let generated = generated(page);
    let first_difference = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .map_or(
            committed.lines().count().min(generated.lines().count()),
            |i| i,
        )
        + 1;
    assert!(
        committed == generated,
        "docs/src/reference/{page}.md is not what the code says (from its line \
         {first_difference}): run `dealgym docs {page} > docs/src/reference/{page}.md`"
    );
    generated
}

#[test]
fn the_config_and_record_references_are_what_the_types_say() {
    let config =
        committed_page_is_generated("config", include_str!("../docs/src/reference/config.md"));
    for key in [
        "## FileConfig",
        "reject_streak",
        "[rewards.judge]",
        "api_key_env",
    ] {
        assert!(config.contains(key), "{key}");
    }
    let record =
        committed_page_is_generated("record", include_str!("../docs/src/reference/record.md"));
    for field in [
        "## EpisodeRecord",
        "error_kind",
        "reward_parts",
        "prompts_digest",
    ] {
        assert!(record.contains(field), "{field}");
    }
    let table = committed_page_is_generated(
        "table-record",
        include_str!("../docs/src/reference/table-record.md"),
    );
    for field in ["## TableRecord", "deal_final", "wrong_share", "acceptors"] {
        assert!(table.contains(field), "{field}");
    }
}

#[test]
fn the_cli_reference_is_what_the_flags_say() {
    let page = committed_page_is_generated("cli", include_str!("../docs/src/reference/cli.md"));
    // Every subcommand has its section, and the flags of the shared groups are there.
    for section in [
        "## `dealgym run`",
        "## `dealgym serve`",
        "## `dealgym presets doc`",
    ] {
        assert!(page.contains(section), "{section}");
    }
    for flag in [
        "`--scenarios <SCENARIOS>`",
        "`--duplicates <refuse|skip>`",
        "`--grace-s <SECONDS>`",
    ] {
        assert!(page.contains(flag), "{flag}");
    }
    assert!(
        !page.contains("dealgym docs`"),
        "the docs command itself is hidden"
    );
}
