//! Both renderings of one episode that has a bit of everything: an illegal accept that is
//! corrected, a regulated accept, a talk with markup in it, and a format forfeit.

use super::*;
use crate::fixtures::{learner_first_as, play, price_task, turn};
use crate::game::{EpisodeSeed, PerSeat};
use crate::record::{PlayerInfo, RecordMeta, Timing};
use crate::reward::RewardConfig;
use crate::scenario::Role;

const SECRET: &str = "my budget is really 100";

/// Craigslist L = 125, B = 100, C = 60; the learner buys and moves first.
/// 1. learner: [ACCEPT_DEAL] with nothing on the table → illegal, asked again;
/// 2. learner: offers 1 (Thought: SECRET);
/// 3. opponent (regulated seller): accepts 1 → utility 1 − 60 = −59 < 0 → [REJECT_DEAL];
/// 4. learner: no action → format error, asked again;
/// 5. learner: no action again → format forfeit.
fn episode() -> EpisodeRecord {
    let s = price_task(125.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            turn("Deal!", "[ACCEPT_DEAL]"),
            format!("Thought: {SECRET}\nTalk: One dollar & not a cent more.\nAction: [SUBMIT_DEAL] price:1"),
            turn("<script>alert('x')</script> fine", "[ACCEPT_DEAL]"),
            "I don't know".to_string(),
            "still nothing".to_string(),
        ],
    );
    let meta = RecordMeta {
        run_id: "run-1".into(),
        seeds: EpisodeSeed {
            run: 0,
            group: 2,
            member: 1,
        },
        scenario_digest: s.digest(),
        players: PerSeat::new(
            PlayerInfo {
                spec: "script:l.json".into(),
                model: None,
            },
            PlayerInfo {
                spec: "script:o.json".into(),
                model: None,
            },
        ),
    };
    EpisodeRecord::from_episode(e, meta, &RewardConfig::default(), Timing::default(), []).unwrap()
}

#[test]
fn the_episode_has_what_the_transcripts_must_show() {
    let r = episode();
    assert_eq!(r.kind(), OutcomeKind::FormatForfeit);
    assert_eq!(r.turns.len(), 5);
    assert!(r.turns[2].regulation.is_some());
    assert_eq!(r.rewards, PerSeat::new(-1.0, 0.0));
}

#[test]
fn markdown_shows_turns_forwarded_text_regulation_errors_and_the_outcome() {
    let r = episode();
    let md = markdown(&r);
    assert!(md.starts_with("# Episode `g2-m1`"), "{md}");
    assert!(md.contains("### Turn 1 · learner (buyer)"), "{md}");
    assert!(
        md.contains("### Turn 2 · learner (buyer) · attempt 2"),
        "{md}"
    );
    assert!(md.contains("### Turn 3 · opponent (seller)"), "{md}");
    assert!(md.contains("**Action** `[SUBMIT_DEAL] price:1`"), "{md}");
    assert!(
        md.contains(
            "**Regulated** `[ACCEPT_DEAL]` → `[REJECT_DEAL]`: its utility -59 is below its floor 0"
        ),
        "{md}"
    );
    assert!(
        md.contains("**Illegal move** — [ACCEPT_DEAL] needs an offer"),
        "{md}"
    );
    assert!(md.contains("corrected and asked again"), "{md}");
    assert!(md.contains("no retry left: the seat forfeits"), "{md}");
    // The forwarded text, line by line, under its own mark.
    let forwarded = r.turns[1].forwarded.as_deref().unwrap();
    let block = md.split("**Forwarded to the opponent**").nth(1).unwrap();
    for line in forwarded.lines() {
        assert!(
            block.contains(&format!("> {}", line.replace('&', "&amp;"))),
            "{line}"
        );
    }
    // Markup from the model is shown, not interpreted.
    assert!(!md.contains("<script>"), "{md}");
    assert!(md.contains("&lt;script&gt;"), "{md}");
    // The outcome: kind, utilities, ρ and rewards of both seats.
    assert!(
        md.contains("**format forfeit (by the learner)** · `format_forfeit`"),
        "{md}"
    );
    assert!(md.contains("| utility | 0 | 0 |"), "{md}");
    assert!(md.contains("| reward | -1 | 0 |"), "{md}");
    // The Thought is only ever inside a collapsed block.
    for (at, _) in md.match_indices(SECRET) {
        let open = md[..at]
            .rfind("<details>")
            .expect("a fold before the thought");
        let close = md[..at].rfind("</details>");
        assert!(close.is_none_or(|c| c < open), "thought outside its fold");
    }
}

#[test]
fn html_is_one_escaped_self_contained_page() {
    let r = episode();
    let page = html(&r);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.trim_end().ends_with("</html>"));
    assert!(!page.contains("<script"), "the model's markup is escaped");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; fine"));
    assert!(page.contains("One dollar &amp; not a cent more."));
    assert!(
        !page.contains("src=") && !page.contains("href="),
        "no external assets"
    );
    assert!(page.contains(&format!(
        "<details><summary>Thought</summary><div class=\"text\">{SECRET}</div></details>"
    )));
    assert!(page.contains("<span class=\"label\">Forwarded to the opponent</span>"));
    assert!(page.contains("<code>[ACCEPT_DEAL]</code> → <code>[REJECT_DEAL]</code>"));
    // Every element opened is closed, in order.
    let mut open: Vec<String> = Vec::new();
    for tag in page.split('<').skip(1) {
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if tag.starts_with('!') || ["meta", "br"].contains(&name.as_str()) {
            continue;
        }
        if tag.starts_with('/') {
            assert_eq!(open.pop().as_deref(), Some(name.as_str()), "</{name}>");
        } else {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

#[test]
fn numbers_read_plainly() {
    assert_eq!(number(36.0), "36");
    assert_eq!(number(23.0 / 36.0), "0.639");
    assert_eq!(number(-0.5), "-0.5");
    assert_eq!(number(-0.0001), "0");
    assert_eq!(number(12.5), "12.5");
}
