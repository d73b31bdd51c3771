//! The Markdown transcript. Model text is quoted (`> `) with `&`, `<` and `>` written as
//! entities, so nothing a model wrote becomes markup; the Thought and any reasoning sit in a
//! collapsed `<details>` block.

use std::fmt::Write as _;

use super::{ending, number, problem_text, regulation_text, turn_heading, turn_views, TurnView};
use crate::game::Seat;
use crate::record::EpisodeRecord;

/// One episode as a Markdown transcript.
pub fn markdown(record: &EpisodeRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Episode {}\n", code(&record.episode_id));
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(
        out,
        "| scenario | {} ({}) |",
        code(&record.scenario_id),
        record.family
    );
    let _ = writeln!(out, "| run | {} |", code(&record.run_id));
    let _ = writeln!(out, "| group | {} |", code(&record.group_id));
    let _ = writeln!(out, "| first mover | {} |", record.first_mover);
    if let Some(p) = &record.parent {
        let _ = writeln!(
            out,
            "| branched from | episode {} of run {} after {} turns |",
            code(&p.episode_id),
            code(&p.run_id),
            p.prefix_turns
        );
    }
    let _ = writeln!(
        out,
        "\n| seat | role | player | persona | regulated |\n|---|---|---|---|---|"
    );
    for seat in Seat::BOTH {
        let s = &record.seats[seat];
        let player = match &s.model {
            Some(model) => format!("{} ({})", code(s.player.as_str()), escape(model)),
            None => code(s.player.as_str()),
        };
        let _ = writeln!(
            out,
            "| {seat} | {} | {player} | {} | {} |",
            s.role,
            s.persona.as_deref().map(escape).unwrap_or("—".into()),
            if s.regulated { "yes" } else { "no" }
        );
    }
    let _ = writeln!(out, "\n## Turns\n");
    for t in turn_views(record) {
        write_turn(&mut out, &t);
    }
    write_outcome(&mut out, record);
    out
}

fn write_turn(out: &mut String, t: &TurnView<'_>) {
    let _ = writeln!(out, "### {}\n", turn_heading(t));
    for (title, text) in [("Thought", t.thought), ("Reasoning", t.reasoning)] {
        if let Some(text) = text {
            let _ = writeln!(
                out,
                "<details><summary>{title}</summary>\n\n{}\n</details>\n",
                quote(text)
            );
        }
    }
    if let Some(talk) = t.talk {
        let _ = writeln!(out, "**Talk**\n\n{}", quote(talk));
    }
    if let Some(action) = &t.action {
        let _ = writeln!(out, "**Action** {}\n", code(action));
    }
    if let Some(r) = &t.regulation {
        let _ = writeln!(
            out,
            "**Regulated** {} → {}: {}\n",
            code(&r.original),
            code(&r.replacement),
            regulation_text(r)
        );
    }
    if let Some(p) = &t.problem {
        let (title, next) = problem_text(p);
        let _ = writeln!(out, "**{title}** — {}; {next}\n", escape(p.message));
    }
    if let Some(note) = t.not_format_ok {
        let why = if note.is_empty() {
            String::new()
        } else {
            format!(": {}", escape(note))
        };
        let _ = writeln!(out, "**Not format-ok**{why}\n");
    }
    if let Some(forwarded) = t.forwarded {
        let _ = writeln!(
            out,
            "**Forwarded to the {}**\n\n{}",
            t.seat.other(),
            quote(forwarded)
        );
    }
}

fn write_outcome(out: &mut String, record: &EpisodeRecord) {
    let o = &record.outcome.outcome;
    let _ = writeln!(
        out,
        "## Outcome\n\n**{}** · {}\n",
        ending(record),
        code(o.kind.name())
    );
    if let Some(terms) = &o.terms_text {
        let _ = writeln!(out, "Deal terms (the learner's side): {}\n", code(terms));
    }
    if let Some(detail) = &o.detail {
        let _ = writeln!(out, "Detail: {}\n", escape(detail));
    }
    let _ = writeln!(out, "| | learner | opponent |\n|---|---:|---:|");
    let rows = [
        ("utility", &o.utility),
        ("ρ", &o.rho),
        ("reward", &record.rewards),
    ];
    for (name, values) in rows {
        let _ = writeln!(
            out,
            "| {name} | {} | {} |",
            number(values.learner),
            number(values.opponent)
        );
    }
}

/// Text with `&`, `<` and `>` as entities.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Text as a block quote, every line quoted.
fn quote(text: &str) -> String {
    let mut out = String::new();
    for line in text.trim_end().lines() {
        if line.trim().is_empty() {
            out.push_str(">\n");
        } else {
            let _ = writeln!(out, "> {}", escape(line));
        }
    }
    if out.is_empty() {
        out.push_str(">\n");
    }
    out
}

/// Text as an inline code span (a backtick inside becomes a quote).
fn code(text: &str) -> String {
    format!("`{}`", text.replace('`', "'"))
}
