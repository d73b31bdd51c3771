//! report.html: one self-contained page (inline styles, charts inlined as SVG, one small inline
//! script; nothing fetched at view time) with the tables, the charts and the transcripts.
//!
//! The script filters the transcripts by text (the search box: every word of the episode,
//! folded thoughts included), family and ending. It also records any script error or
//! `console.error` into the hidden `#console-errors` element, and, when the page is opened with
//! the `#selftest` fragment, checks itself — the tables, the charts and a transcript are there
//! and laid out, the search box narrows and restores the list, the family filter agrees with
//! the transcripts' families — and writes `PASS …` or `FAIL: …` into `#selftest-result`, so a
//! headless browser's dumped DOM tells whether the page works.

use std::fmt::Write as _;

use crate::replay::render::{escape, TRANSCRIPT_STYLE};

use super::sample::Transcript;
use super::tables::Table;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:90rem;padding:0 1rem;line-height:1.4;color:#222}
h1{margin-bottom:.2rem}
.meta{color:#555}
nav a{margin-right:1rem}
.scroll{overflow-x:auto}
table.figures{font-size:.85rem}
table.figures td,table.figures th{white-space:nowrap}
figure{margin:1rem 0}
figure svg{max-width:100%;height:auto;border:1px solid #eee}
.controls{display:flex;gap:.8rem;align-items:center;flex-wrap:wrap;margin:.6rem 0;position:sticky;top:0;background:#fff;padding:.4rem 0}
.controls input{min-width:20rem;padding:.3rem}
details.episode{border:1px solid #ccc;border-radius:4px;margin:.4rem 0;padding:.2rem .6rem}
details.episode>summary{cursor:pointer;color:#222}
.transcript{max-width:60rem}
";

const SCRIPT: &str = r#"(function () {
  var errors = document.getElementById('console-errors');
  function note(text) {
    errors.textContent += text + '\n';
    errors.setAttribute('data-count', String(Number(errors.getAttribute('data-count')) + 1));
  }
  window.addEventListener('error', function (e) { note('error: ' + e.message); });
  var original = console.error;
  console.error = function () {
    note('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
  var search = document.getElementById('search');
  var family = document.getElementById('family');
  var outcome = document.getElementById('outcome');
  var shown = document.getElementById('shown');
  var episodes = Array.prototype.slice.call(document.querySelectorAll('details.episode'));
  var texts = episodes.map(function (e) { return e.textContent.toLowerCase(); });
  function filter() {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var count = 0;
    episodes.forEach(function (e, i) {
      var ok = words.every(function (w) { return texts[i].indexOf(w) >= 0; }) &&
        (!family.value || e.getAttribute('data-family') === family.value) &&
        (!outcome.value || e.getAttribute('data-outcome') === outcome.value);
      e.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = count + ' of ' + episodes.length + ' transcripts shown';
    return count;
  }
  [search, family, outcome].forEach(function (c) { c.addEventListener('input', filter); });
  filter();
  function selftest() {
    var problems = [];
    var tables = document.querySelectorAll('table.figures');
    if (tables.length === 0) { problems.push('no table'); }
    var charts = document.querySelectorAll('figure svg');
    if (charts.length === 0) { problems.push('no chart'); }
    Array.prototype.forEach.call(charts, function (svg) {
      var box = svg.getBoundingClientRect();
      if (box.width < 10 || box.height < 10) { problems.push('a chart is not laid out'); }
    });
    if (episodes.length === 0) { problems.push('no transcript'); }
    else {
      var first = episodes[0];
      first.open = true;
      if (first.querySelectorAll('section.turn, h2').length === 0) { problems.push('the first transcript is empty'); }
      var id = first.querySelector('summary code').textContent;
      search.value = id;
      var found = filter();
      if (found < 1 || first.hidden) { problems.push('searching ' + id + ' hides its episode'); }
      search.value = 'no-such-text-' + Math.random().toString(36).slice(2);
      if (filter() !== 0) { problems.push('a search for nothing shows episodes'); }
      search.value = '';
      if (filter() !== episodes.length) { problems.push('clearing the search does not restore every episode'); }
      var fam = first.getAttribute('data-family');
      family.value = fam;
      var same = episodes.filter(function (e) { return e.getAttribute('data-family') === fam; }).length;
      if (filter() !== same) { problems.push('the family filter disagrees'); }
      family.value = '';
      filter();
    }
    var result = document.getElementById('selftest-result');
    result.textContent = problems.length === 0
      ? 'PASS tables=' + tables.length + ' charts=' + charts.length + ' transcripts=' + episodes.length
      : 'FAIL: ' + problems.join('; ');
  }
  if (location.hash === '#selftest') { selftest(); }
})();
"#;

/// What the page holds.
pub(crate) struct Page<'a> {
    pub title: String,
    /// Lines under the title (files, episodes, sample).
    pub meta: Vec<String>,
    /// Sections of tables: heading and tables.
    pub tables: Vec<(&'a str, Vec<&'a Table>)>,
    /// Charts: caption and SVG text.
    pub charts: Vec<(String, String)>,
    pub transcripts: &'a [Transcript],
    /// Episodes the transcripts were sampled from.
    pub episodes: usize,
}

/// The page as HTML text.
pub fn page(p: &Page<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{STYLE}{TRANSCRIPT_STYLE}\n</style>\n</head>\n<body>",
        escape(&p.title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", escape(&p.title));
    for line in &p.meta {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", escape(line));
    }
    out.push_str("<div id=\"console-errors\" hidden data-count=\"0\"></div>\n<div id=\"selftest-result\" hidden></div>\n");
    out.push_str("<nav><a href=\"#tables\">Tables</a><a href=\"#charts\">Charts</a><a href=\"#transcripts\">Transcripts</a></nav>\n");
    out.push_str("<h2 id=\"tables\">Tables</h2>\n");
    for (heading, tables) in &p.tables {
        let _ = writeln!(out, "<h3>{}</h3>", escape(heading));
        for t in tables {
            let _ = writeln!(
                out,
                "<h4>{}</h4>\n<div class=\"scroll\">\n{}</div>",
                escape(&t.title),
                t.html()
            );
        }
    }
    out.push_str("<h2 id=\"charts\">Charts</h2>\n");
    for (caption, svg) in &p.charts {
        let _ = writeln!(
            out,
            "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>",
            escape(caption)
        );
    }
    write_transcripts(&mut out, p);
    let _ = writeln!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>");
    out
}

fn write_transcripts(out: &mut String, p: &Page<'_>) {
    let _ = writeln!(
        out,
        "<h2 id=\"transcripts\">Transcripts</h2>\n<p class=\"meta\">{} of {} episodes{}. Thoughts and reasoning are folded; text forwarded to the counterpart is framed; regulation is marked.</p>",
        p.transcripts.len(),
        p.episodes,
        if p.transcripts.len() < p.episodes {
            " (a deterministic sample; --transcripts N to change)"
        } else {
            ""
        }
    );
    let options = |values: Vec<&str>| {
        let mut values = values;
        values.sort_unstable();
        values.dedup();
        values
            .iter()
            .map(|v| format!("<option value=\"{0}\">{0}</option>", escape(v)))
            .collect::<String>()
    };
    let families = options(p.transcripts.iter().map(|t| t.family.as_str()).collect());
    let outcomes = options(p.transcripts.iter().map(|t| t.outcome.as_str()).collect());
    let _ = writeln!(
        out,
        "<div class=\"controls\"><input id=\"search\" type=\"search\" placeholder=\"Search the transcripts (episode id, words said, player…)\" aria-label=\"search\">\
         <select id=\"family\" aria-label=\"family\"><option value=\"\">every family</option>{families}</select>\
         <select id=\"outcome\" aria-label=\"ending\"><option value=\"\">every ending</option>{outcomes}</select>\
         <span id=\"shown\"></span></div>"
    );
    for t in p.transcripts {
        out.push_str(&t.html);
    }
}
