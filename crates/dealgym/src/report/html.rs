//! report.html: one self-contained page (inline styles, charts inlined as SVG, one small inline
//! script; nothing fetched at view time) with the sections of [`super::page`] in their order — the
//! answer, the families, every table folded — then the transcripts.
//!
//! The script filters the transcripts by text (the search box: every word of the episode,
//! folded thoughts included), family and ending. It also records any script error or
//! `console.error` into the hidden `#console-errors` element, and, when the page is opened with
//! the `#selftest` fragment, checks itself — the answer comes before any folded table, nothing
//! is wider than the window (no sideways scrolling), the tables, the charts and a transcript are
//! there and laid out, the search box narrows and restores the list, the family filter agrees with
//! the transcripts' families — and writes `PASS …` or `FAIL: …` into `#selftest-result`, so a
//! headless browser's dumped DOM tells whether the page works.

use std::fmt::Write as _;

use crate::replay::render::{escape, TRANSCRIPT_STYLE};

use super::page::{Block, Section};
use super::sample::Transcript;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:80rem;padding:0 1rem;line-height:1.4;color:#222;overflow-wrap:anywhere}
h1{margin-bottom:.2rem}
.meta,.how,.intro{color:#555}
.how{font-size:.85rem;margin:.2rem 0 1rem}
nav.toc{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #ddd;padding:.4rem 0;display:flex;flex-wrap:wrap;gap:.3rem 1rem;height:1.6rem;overflow:hidden}
section,h2{scroll-margin-top:3rem}
table.figures{font-size:.8rem;border-collapse:collapse;margin:.4rem 0 .8rem;max-width:100%}
table.figures td,table.figures th{padding:.2rem .45rem;border-bottom:1px solid #eee;vertical-align:top}
table.figures th{text-align:left;font-weight:600;overflow-wrap:normal}
table.figures td.num{text-align:right}
table.figures .ci{color:#777;font-size:.72rem;white-space:nowrap}
details.table{margin:.4rem 0}
details.table>summary{cursor:pointer}
.csv{font-size:.8rem;margin-left:.6rem}
figure{margin:1rem 0;max-width:52rem}
figure svg{width:100%;max-width:100%;height:auto;border:1px solid #eee}
.panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,30rem),1fr));gap:.8rem}
.panels figure{margin:0}
.controls{display:flex;gap:.8rem;align-items:center;flex-wrap:wrap;margin:.6rem 0;position:sticky;top:2.5rem;z-index:1;background:#fff;padding:.4rem 0}
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
    // The answer comes first: the first section's figures before any folded detail table.
    var answer = document.getElementById('answer');
    var firstDetail = document.querySelector('details.table');
    if (!answer) { problems.push('no answer section'); }
    else if (firstDetail && !(answer.compareDocumentPosition(firstDetail) & Node.DOCUMENT_POSITION_FOLLOWING)) {
      problems.push('a detail table comes before the answer');
    }
    // Nothing is wider than the window: no sideways scrolling, at any width.
    var width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > width + 1) {
      problems.push('the page scrolls sideways (' + document.documentElement.scrollWidth + ' > ' + width + ')');
    }
    Array.prototype.forEach.call(document.querySelectorAll('details.table'), function (d) { d.open = true; });
    Array.prototype.forEach.call(document.querySelectorAll('table, figure, svg, .transcript, pre'), function (el) {
      var box = el.getBoundingClientRect();
      if (box.right > width + 1) {
        problems.push((el.id || el.tagName.toLowerCase()) + ' overflows (' + Math.round(box.right) + ' > ' + width + ')');
      }
    });
    Array.prototype.forEach.call(document.querySelectorAll('details.table'), function (d) { d.open = false; });
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
      ? 'PASS tables=' + tables.length + ' charts=' + charts.length + ' transcripts=' + episodes.length + ' width=' + width
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
    /// The sections in reading order ([`super::page::sections`]).
    pub sections: &'a [Section<'a>],
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
    let shown: Vec<&Section<'_>> = p.sections.iter().filter(|s| !s.blocks.is_empty()).collect();
    out.push_str("<nav class=\"toc\">");
    for section in &shown {
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            section.id,
            escape(section.short)
        );
    }
    out.push_str("<a href=\"#transcripts\">Transcripts</a></nav>\n");
    for section in &shown {
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"intro\">{}</p>",
            section.id,
            escape(&section.heading),
            escape(&section.intro)
        );
        for block in &section.blocks {
            write_block(&mut out, block);
        }
        out.push_str("</section>\n");
    }
    write_transcripts(&mut out, p);
    let _ = writeln!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>");
    out
}

fn write_block(out: &mut String, block: &Block<'_>) {
    let csv = |name: &str| {
        format!(
            "<a class=\"csv\" href=\"tables/{0}.csv\">tables/{0}.csv</a>",
            escape(name)
        )
    };
    match block {
        Block::Chart(c) => {
            let _ = writeln!(
                out,
                "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n<p class=\"how\">{}</p>",
                c.svg,
                escape(&c.caption),
                escape(&c.how)
            );
        }
        Block::Panels {
            caption,
            how,
            charts,
        } => {
            let _ = writeln!(out, "<h3>{}</h3>\n<div class=\"panels\">", escape(caption));
            for c in charts {
                let _ = writeln!(
                    out,
                    "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
                    c.svg,
                    escape(&c.caption)
                );
            }
            let _ = writeln!(out, "</div>\n<p class=\"how\">{}</p>", escape(how));
        }
        Block::Sheet {
            table,
            open: true,
            csv: name,
        } => {
            let _ = writeln!(
                out,
                "<h3>{}{}</h3>\n{}",
                escape(&table.title),
                csv(name),
                table.html()
            );
        }
        Block::Sheet {
            table,
            open: false,
            csv: name,
        } => {
            let _ = writeln!(
                out,
                "<details class=\"table\"><summary>{} ({} rows){}</summary>\n{}</details>",
                escape(&table.title),
                table.rows.len(),
                csv(name),
                table.html()
            );
        }
        Block::Note(text) => {
            let _ = writeln!(out, "<p class=\"how\">{}</p>", escape(text));
        }
        Block::CsvOnly(table) => {
            let _ = writeln!(
                out,
                "<p class=\"how\">{}: drawn above; the numbers are in {}</p>",
                escape(&table.title),
                csv(&table.name)
            );
        }
    }
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
