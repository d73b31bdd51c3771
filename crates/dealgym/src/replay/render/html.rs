//! The HTML transcript: one self-contained page (styles inline, no scripts, no external
//! assets), or the same transcript as a fragment ([`html_fragment`]) that a report embeds,
//! styled by [`TRANSCRIPT_STYLE`]. Every piece of record text is escaped (`&`, `<`, `>`, `"`,
//! `'`), so a model's `<script>` is shown, never run. The Thought and any reasoning are
//! `<details>` blocks.

use std::fmt::Write as _;

use super::{ending, number, problem_text, regulation_text, turn_heading, turn_views, TurnView};
use crate::game::Seat;
use crate::record::EpisodeRecord;

const PAGE_STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#222}\n";

/// The styles of a transcript's parts (tables, turns, folded thoughts, forwarded text,
/// regulation, problems): what a page holding [`html_fragment`]s needs.
pub(crate) const TRANSCRIPT_STYLE: &str = "table{border-collapse:collapse;margin:.5rem 0 1rem}
td,th{border:1px solid #ccc;padding:.2rem .6rem;text-align:left}
td.num{text-align:right}
section.turn{border-left:4px solid #888;padding:.2rem 1rem;margin:1rem 0}
section.learner{border-color:#2b6cb0}
section.opponent{border-color:#c05621}
h3{margin:.3rem 0;font-size:1rem}
.text,pre{white-space:pre-wrap;margin:.2rem 0}
.talk .text{background:#f6f6f6;padding:.3rem .6rem}
details{color:#555;margin:.3rem 0}
.forwarded{border:1px dashed #999;padding:.3rem .6rem;margin:.4rem 0}
.label{font-weight:600;margin-right:.4rem}
.regulation{color:#9c4221}
.problem{color:#c53030}
.note{color:#975a16}";

/// One episode as a self-contained HTML page.
pub fn html(record: &EpisodeRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Episode {} · {}</title>\n<style>\n{PAGE_STYLE}{TRANSCRIPT_STYLE}\n</style>\n</head>\n<body>",
        escape(&record.episode_id),
        escape(&record.scenario_id)
    );
    let _ = writeln!(
        out,
        "<h1>Episode <code>{}</code></h1>",
        escape(&record.episode_id)
    );
    out.push_str(&html_fragment(record));
    out.push_str("</body>\n</html>\n");
    out
}

/// One episode's transcript as an HTML fragment, headed by nothing: the facts, the seats, every
/// turn and the outcome (the final deal, each side's utility, ρ and reward). [`html`] puts it in
/// a page; a report puts many in one.
pub(crate) fn html_fragment(record: &EpisodeRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "<table class=\"facts\">");
    let mut fact = |name: &str, value: String| {
        let _ = writeln!(out, "<tr><th>{name}</th><td>{value}</td></tr>");
    };
    fact(
        "scenario",
        format!(
            "<code>{}</code> ({})",
            escape(&record.scenario_id),
            record.family
        ),
    );
    fact("run", format!("<code>{}</code>", escape(&record.run_id)));
    fact(
        "group",
        format!("<code>{}</code>", escape(&record.group_id)),
    );
    fact("first mover", record.first_mover.to_string());
    if let Some(p) = &record.parent {
        fact(
            "branched from",
            format!(
                "episode <code>{}</code> of run <code>{}</code> after {} turns",
                escape(&p.episode_id),
                escape(&p.run_id),
                p.prefix_turns
            ),
        );
    }
    let _ = writeln!(out, "</table>");
    let _ = writeln!(
        out,
        "<table class=\"seats\">\n<tr><th>seat</th><th>role</th><th>player</th><th>persona</th><th>regulated</th></tr>"
    );
    for seat in Seat::BOTH {
        let s = &record.seats[seat];
        let model = s
            .model
            .as_deref()
            .map(|m| format!(" ({})", escape(m)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "<tr><td>{seat}</td><td>{}</td><td><code>{}</code>{model}</td><td>{}</td><td>{}</td></tr>",
            s.role,
            escape(s.player.as_str()),
            s.persona.as_deref().map(escape).unwrap_or("—".into()),
            if s.regulated { "yes" } else { "no" }
        );
    }
    let _ = writeln!(out, "</table>\n<h2>Turns</h2>");
    for t in turn_views(record) {
        write_turn(&mut out, &t);
    }
    write_outcome(&mut out, record);
    out
}

fn write_turn(out: &mut String, t: &TurnView<'_>) {
    let _ = writeln!(
        out,
        "<section class=\"turn {}\">\n<h3>{}</h3>",
        t.seat,
        escape(&turn_heading(t))
    );
    for (title, text) in [("Thought", t.thought), ("Reasoning", t.reasoning)] {
        if let Some(text) = text {
            let _ = writeln!(
                out,
                "<details><summary>{title}</summary><div class=\"text\">{}</div></details>",
                escape(text)
            );
        }
    }
    if let Some(talk) = t.talk {
        let _ = writeln!(
            out,
            "<div class=\"talk\"><span class=\"label\">Talk</span><div class=\"text\">{}</div></div>",
            escape(talk)
        );
    }
    if let Some(action) = &t.action {
        let _ = writeln!(
            out,
            "<p class=\"action\"><span class=\"label\">Action</span><code>{}</code></p>",
            escape(action)
        );
    }
    if let Some(r) = &t.regulation {
        let _ = writeln!(
            out,
            "<p class=\"regulation\"><span class=\"label\">Regulated</span><code>{}</code> → <code>{}</code>: {}</p>",
            escape(&r.original),
            escape(&r.replacement),
            escape(&regulation_text(r))
        );
    }
    if let Some(p) = &t.problem {
        let (title, next) = problem_text(p);
        let _ = writeln!(
            out,
            "<p class=\"problem\"><span class=\"label\">{title}</span>{}; {next}</p>",
            escape(p.message)
        );
    }
    if let Some(note) = t.not_format_ok {
        let why = if note.is_empty() {
            String::new()
        } else {
            format!(": {}", escape(note))
        };
        let _ = writeln!(
            out,
            "<p class=\"note\"><span class=\"label\">Not format-ok</span>{why}</p>"
        );
    }
    if let Some(forwarded) = t.forwarded {
        let _ = writeln!(
            out,
            "<div class=\"forwarded\"><span class=\"label\">Forwarded to the {}</span><pre>{}</pre></div>",
            t.seat.other(),
            escape(forwarded)
        );
    }
    let _ = writeln!(out, "</section>");
}

fn write_outcome(out: &mut String, record: &EpisodeRecord) {
    let o = &record.outcome.outcome;
    let _ = writeln!(
        out,
        "<h2>Outcome</h2>\n<p><strong>{}</strong> <code>{}</code></p>",
        escape(&ending(record)),
        o.kind.name()
    );
    if let Some(terms) = &o.terms_text {
        let _ = writeln!(
            out,
            "<p>Deal terms (the learner's side): <code>{}</code></p>",
            escape(terms)
        );
    }
    if let Some(detail) = &o.detail {
        let _ = writeln!(out, "<p>Detail: {}</p>", escape(detail));
    }
    let _ = writeln!(
        out,
        "<table class=\"outcome\">\n<tr><th></th><th>learner</th><th>opponent</th></tr>"
    );
    for (name, values) in [
        ("utility", &o.utility),
        ("ρ", &o.rho),
        ("reward", &record.rewards),
    ] {
        let _ = writeln!(
            out,
            "<tr><th>{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            number(values.learner),
            number(values.opponent)
        );
    }
    let _ = writeln!(out, "</table>");
}

/// Text safe in HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
