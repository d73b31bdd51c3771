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

/// The part of a Markdown page from the heading `heading` to the next heading of its level.
fn section<'a>(page: &'a str, heading: &str) -> &'a str {
    let start = page
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}` section"));
    let rest = &page[start + heading.len()..];
    let level = heading.split(' ').next().unwrap_or("##");
    let end = rest.find(&format!("\n{level} ")).unwrap_or(rest.len());
    &rest[..end]
}

/// The security chapter states every limit of the server with its default and its flag: a
/// `dealgym serve` flag that is a limit (as clap defines the command: the CLI reference is
/// generated from it) without a row in its "Every limit" table, or with an empty default,
/// fails here.
#[test]
fn every_serve_flag_that_is_a_limit_has_a_row_in_the_security_chapter() {
    const LIMIT_WORDS: [&str; 8] = [
        "max",
        "limit",
        "timeout",
        "bytes",
        "memory",
        "concurrency",
        "connections",
        "sessions",
    ];
    let cli = generated("cli");
    let limits: Vec<String> = section(&cli, "## `dealgym serve`")
        .lines()
        .filter_map(|line| line.strip_prefix("* `--"))
        .filter_map(|rest| rest.split([' ', '`']).next())
        .filter(|flag| LIMIT_WORDS.iter().any(|word| flag.contains(word)))
        .map(|flag| format!("--{flag}"))
        .collect();
    assert!(
        limits.len() >= 10,
        "the serve section of `dealgym docs cli` was not read: {limits:?}"
    );
    let chapter = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/operations/security.md"),
    )
    .expect("the security chapter");
    let rows: Vec<Vec<&str>> = section(&chapter, "## Every limit")
        .lines()
        .filter(|line| line.starts_with('|') && !line.starts_with("|---"))
        .skip(1)
        .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let missing: Vec<&String> = limits
        .iter()
        .filter(|flag| {
            !rows.iter().any(|cells| {
                cells.len() == 4
                    && cells[2].contains(&format!("`{flag}`"))
                    && !cells[1].is_empty()
                    && !cells[3].is_empty()
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/src/operations/security.md, \"Every limit\": no row (limit | default | flag | past it) for {missing:?}"
    );
}
