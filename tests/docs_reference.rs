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

#[test]
fn the_cli_reference_is_what_the_flags_say() {
    let committed = include_str!("../docs/src/reference/cli.md");
    let page = generated("cli");
    let first_difference = committed
        .lines()
        .zip(page.lines())
        .position(|(a, b)| a != b)
        .map_or(committed.lines().count().min(page.lines().count()), |i| i)
        + 1;
    assert!(
        committed == page,
        "docs/src/reference/cli.md is not what the flags say (from its line {first_difference}): \
         run `dealgym docs cli > docs/src/reference/cli.md`"
    );
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
