//! The README's sample output is what the commands print, as the book's reference pages are
//! what the code says (`docs_reference`): `dealgym demo`'s tables, and the head and per-family
//! table of `dealgym report` over that demo's record, each between marker comments in README.md.
//! A figure, a family or a column the code changes without the README following fails here;
//! after a deliberate change, rewrite the blocks with
//! `DEALGYM_BLESS=1 cargo test --test integration readme::` and commit them with the change.
//!
//! Only what a seeded demo fixes goes into a block: the demo's stdout holds its tables alone
//! (the record's path, the run id and the timings go to stderr), and the report's excerpt
//! leaves out its `Files:` line and every table naming the mock's port.

use std::path::Path;
use std::process::Command;

use crate::common::temp_dir;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
const BLESS: &str = "DEALGYM_BLESS=1 cargo test --test integration readme::";

/// `dealgym ARGS`'s stdout, run from the repository's root; a failure names the command.
fn dealgym(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("dealgym runs");
    assert!(
        out.status.success(),
        "dealgym {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("dealgym prints UTF-8")
}

/// The byte range of README's generated block `name`: the lines after its
/// `<!-- BEGIN GENERATED name: ... -->` line, up to its `<!-- END GENERATED name -->` line.
fn block(readme: &str, name: &str) -> std::ops::Range<usize> {
    let begin = format!("<!-- BEGIN GENERATED {name}:");
    let end = format!("<!-- END GENERATED {name} -->");
    let at = readme
        .find(&begin)
        .unwrap_or_else(|| panic!("README.md has no `{begin}` line"));
    let start = at + readme[at..].find('\n').expect("a line after the marker") + 1;
    let stop = start
        + readme[start..]
            .find(&end)
            .unwrap_or_else(|| panic!("README.md has no `{end}` after `{begin}`"));
    start..stop
}

/// The demo's block: its stdout, fenced.
fn demo_block(stdout: &str) -> String {
    format!("```\n{stdout}```\n")
}

/// The report's block: the headline paragraph after the `Files:` line, quoted, and the table of
/// the `### Per family:` section, as `report.md` writes them.
fn report_block(report: &str) -> String {
    let paragraphs: Vec<&str> = report.split("\n\n").collect();
    let files = paragraphs
        .iter()
        .position(|p| p.starts_with("Files: "))
        .expect("report.md names its files");
    let headline = paragraphs
        .get(files + 1)
        .expect("report.md's headline after its files");
    let quoted: String = headline.lines().map(|l| format!("> {l}\n")).collect();
    let heading = report
        .find("\n### Per family:")
        .expect("report.md has its `### Per family:` section");
    let table: String = report[heading + 1..]
        .lines()
        .skip(1)
        .skip_while(|l| l.is_empty())
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        !table.is_empty(),
        "report.md's `### Per family:` section has no table"
    );
    format!("{quoted}\n{table}")
}

/// `readme` with each named block replaced by its generated text.
fn with_blocks(readme: &str, blocks: &[(&str, String)]) -> String {
    let mut text = readme.to_string();
    for (name, generated) in blocks {
        let range = block(&text, name);
        text.replace_range(range, generated);
    }
    text
}

#[test]
fn the_readmes_demo_output_and_report_excerpt_are_what_the_commands_print() {
    let dir = temp_dir("readme-demo");
    let record = dir.join("demo.jsonl");
    let record = record.to_str().expect("a UTF-8 temporary path");
    let demo = dealgym(&["demo", "--out", record]);
    let report_dir = dir.join("report");
    let report_dir = report_dir.to_str().expect("a UTF-8 temporary path");
    dealgym(&["report", record, "--out", report_dir, "--quiet"]);
    let report = std::fs::read_to_string(Path::new(report_dir).join("report.md"))
        .expect("report writes report.md");
    let blocks = [
        ("demo", demo_block(&demo)),
        ("report", report_block(&report)),
    ];

    let committed = std::fs::read_to_string(README).expect("README.md");
    if std::env::var_os("DEALGYM_BLESS").is_some() {
        std::fs::write(README, with_blocks(&committed, &blocks)).expect("README.md written");
        return;
    }
    for (name, generated) in &blocks {
        let shown = &committed[block(&committed, name)];
        let first_difference = shown
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| shown.lines().count().min(generated.lines().count()));
        assert!(
            shown == generated,
            "README.md's generated block `{name}` is not what the command prints (from its \
             line {}):\n  README: {:?}\n  now:    {:?}\nrewrite it with `{BLESS}`",
            first_difference + 1,
            shown.lines().nth(first_difference).unwrap_or("(end)"),
            generated.lines().nth(first_difference).unwrap_or("(end)"),
        );
    }
    // Every family the demo plays is in both blocks.
    for family in crate::common::FAMILIES {
        for (name, generated) in &blocks {
            assert!(
                generated.contains(&format!("| {family} | 8 |")),
                "{name}: {family}"
            );
        }
    }
}

#[test]
fn a_block_edited_by_hand_is_told_apart_and_rewritten_in_place() {
    let readme =
        "intro\n<!-- BEGIN GENERATED demo: x -->\nold\n<!-- END GENERATED demo -->\ntail\n";
    let range = block(readme, "demo");
    assert_eq!(&readme[range], "old\n");
    let rewritten = with_blocks(readme, &[("demo", "new\nlines\n".to_string())]);
    assert_eq!(
        rewritten,
        "intro\n<!-- BEGIN GENERATED demo: x -->\nnew\nlines\n<!-- END GENERATED demo -->\ntail\n"
    );
}
