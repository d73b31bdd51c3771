//! Deal terms per domain: their space (what may be offered), their canonical text, and flipping.
//!
//! Terms are always held *from one seat's point of view*: a price, a share of items that seat gets,
//! or one shared contract. Only item shares change when seen from the other side (`count − x`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;

use super::bundle::{self, BundleChoice, BundleSpec};

/// One kind of item in a split game, with how many units are on the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemSpec {
    pub name: String,
    pub count: u32,
}

/// One negotiable issue of a multi-issue game (Job Interview).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueSpec {
    /// The key used in the action grammar (`salary`, `holiday`, …).
    pub key: String,
    /// The dataset's own name (`Weekly holiday`), also accepted when parsing.
    pub label: String,
    #[serde(flatten)]
    pub range: IssueRange,
}

/// What values an issue may take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum IssueRange {
    /// Any whole number from `min` to `max` inclusive.
    Integer { min: i64, max: i64 },
    /// One of the named options.
    Discrete { options: Vec<String> },
}

impl IssueRange {
    /// How many values the issue can take (used to enumerate the outcome space): 0 for an
    /// integer range with `max < min`, and at most `usize::MAX` (computed without overflow
    /// for any bounds; scenario validation keeps it far smaller).
    pub fn len(&self) -> usize {
        match self {
            IssueRange::Integer { min, max } => {
                let span = i128::from(*max) - i128::from(*min) + 1;
                usize::try_from(span.max(0)).unwrap_or(usize::MAX)
            }
            IssueRange::Discrete { options } => options.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th value of the issue, in enumeration order.
    pub(crate) fn nth(&self, i: usize) -> IssueValue {
        match self {
            IssueRange::Integer { min, .. } => IssueValue::Number(min + i as i64),
            IssueRange::Discrete { .. } => IssueValue::Option(i),
        }
    }
}

/// The value chosen for one issue: a number, or the index of a discrete option. Written
/// `{"number": 40}` / `{"option": 2}` so the two never read back as each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IssueValue {
    Number(i64),
    Option(usize),
}

/// The space of possible deals of a scenario, borrowed from it; enough to read and write terms.
#[derive(Debug, Clone, Copy)]
pub enum TermSpace<'a> {
    Price,
    Items(&'a [ItemSpec]),
    Issues(&'a [IssueSpec]),
    /// A price and which parts of a bundle are in (the INA setting).
    Bundle(&'a BundleSpec),
    /// Chase tickets (`hotel`): a price or `unchanged` per ticket.
    Tickets(&'a [super::tickets::TicketSpec]),
}

impl TermSpace<'_> {
    /// How many deals the space holds (its outcome space): the product of each item's
    /// `count + 1`, or of each issue's number of values. `None` for a price space (not
    /// finite), an empty one, or one whose size overflows `u64`: no caller may take such a
    /// space for an enumerable one (an overflowed size that wrapped to 0 once made every deal
    /// read as Pareto-optimal). Scenario validation keeps it at most
    /// [`MAX_OUTCOME_SPACE`](crate::limits::MAX_OUTCOME_SPACE).
    pub fn size(self) -> Option<u64> {
        let sizes: Vec<u64> = match self {
            TermSpace::Price | TermSpace::Bundle(_) | TermSpace::Tickets(_) => return None,
            TermSpace::Items(items) => items.iter().map(|it| u64::from(it.count) + 1).collect(),
            TermSpace::Issues(issues) => issues.iter().map(|is| is.range.len() as u64).collect(),
        };
        if sizes.is_empty() {
            return None;
        }
        sizes
            .into_iter()
            .try_fold(1u64, |n, size| n.checked_mul(size))
            .filter(|&n| n > 0)
    }

    /// Every possible deal of a finite space, in a fixed order (last item or issue varying
    /// fastest): item shares from one side, or contracts. A price space is not finite and
    /// yields nothing. The outcome space behind Pareto checks, utility bounds and negotiators.
    pub fn all_terms(self) -> Box<dyn Iterator<Item = Terms> + 'static> {
        match self {
            TermSpace::Price | TermSpace::Bundle(_) | TermSpace::Tickets(_) => {
                Box::new(std::iter::empty())
            }
            TermSpace::Items(items) => {
                let sizes: Vec<usize> = items
                    .iter()
                    .map(|it| (it.count as usize).saturating_add(1))
                    .collect();
                Box::new(
                    mixed_radix(sizes)
                        .map(|digits| Terms::Items(digits.into_iter().map(|d| d as u32).collect())),
                )
            }
            TermSpace::Issues(issues) => {
                let ranges: Vec<IssueRange> = issues.iter().map(|is| is.range.clone()).collect();
                let sizes: Vec<usize> = ranges.iter().map(IssueRange::len).collect();
                Box::new(mixed_radix(sizes).map(move |digits| {
                    Terms::Issues(
                        digits
                            .into_iter()
                            .zip(&ranges)
                            .map(|(d, r)| r.nth(d))
                            .collect(),
                    )
                }))
            }
        }
    }
}

/// All digit vectors with `digits[i] < sizes[i]`, last digit fastest. A count past
/// `usize::MAX` saturates (the first `usize::MAX` are yielded) instead of wrapping to a short
/// or empty enumeration.
fn mixed_radix(sizes: Vec<usize>) -> impl Iterator<Item = Vec<usize>> {
    let total: usize = if sizes.is_empty() {
        0
    } else {
        sizes.iter().fold(1usize, |n, &size| n.saturating_mul(size))
    };
    (0..total).map(move |mut n| {
        let mut digits = vec![0; sizes.len()];
        for i in (0..sizes.len()).rev() {
            digits[i] = n % sizes[i];
            n /= sizes[i];
        }
        digits
    })
}

/// Terms as a map: `{"price": 1250.0}`, `{"food": 2, "water": 1, "firewood": 0}`,
/// `{"salary": 35, "position": "Engineer", …}` ([`Terms::named`]).
pub(crate) type TermsView = std::collections::BTreeMap<String, TermValue>;

/// One term's value: a price in currency units, a count of items, an issue's number or the
/// name of its option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TermValue {
    Count(u32),
    Number(i64),
    Price(f64),
    Option(String),
}

/// Deal terms as one seat sees them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Terms {
    /// A price in cents (exact, so repeated offers compare equal).
    Price(i64),
    /// Units of each item the seat itself gets, in the scenario's item order.
    Items(Vec<u32>),
    /// One value per issue, in the scenario's issue order.
    Issues(Vec<IssueValue>),
    /// A price in cents for the parts of a bundle that are in the deal (one shared deal).
    Bundle { price: i64, parts: BundleChoice },
    /// One selling price in cents per chase ticket, in the call's ticket order; `None` keeps
    /// the ticket's price unchanged.
    Tickets(Vec<Option<i64>>),
}

impl Terms {
    /// The same deal seen by the other seat: item shares become `count − x`; prices and contracts
    /// are shared, so they do not change.
    pub fn flipped(&self, space: TermSpace<'_>) -> Terms {
        self.seen_by_other(space).into_owned()
    }

    /// [`flipped`](Self::flipped), borrowed where the other seat reads the same terms (prices,
    /// contracts): what a hot path reads, with no copy of terms that do not change.
    pub(crate) fn seen_by_other(&self, space: TermSpace<'_>) -> std::borrow::Cow<'_, Terms> {
        match (self, space) {
            (Terms::Items(shares), TermSpace::Items(items)) => {
                std::borrow::Cow::Owned(Terms::Items(
                    shares
                        .iter()
                        .zip(items)
                        .map(|(x, item)| item.count.saturating_sub(*x))
                        .collect(),
                ))
            }
            _ => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The price in currency units, for price terms.
    pub fn price(&self) -> Option<f64> {
        match self {
            Terms::Price(cents) | Terms::Bundle { price: cents, .. } => Some(*cents as f64 / 100.0),
            _ => None,
        }
    }

    /// The terms as a map keyed by price, item or issue (prices in currency units, options by
    /// name): what an observation shows and a `make_offer` call writes (`{"price": 12.5}`,
    /// `{"food": 2, …}`, `{"salary": 35, "position": "Engineer", …}`); [`terms_from_json`]
    /// reads it back.
    pub(crate) fn named(&self, space: TermSpace<'_>) -> TermsView {
        match (self, space) {
            (Terms::Price(_), _) => TermsView::from([(
                "price".to_string(),
                TermValue::Price(self.price().unwrap_or(0.0)),
            )]),
            (Terms::Items(shares), TermSpace::Items(items)) => items
                .iter()
                .zip(shares)
                .map(|(item, n)| (item.name.clone(), TermValue::Count(*n)))
                .collect(),
            (Terms::Issues(values), TermSpace::Issues(issues)) => issues
                .iter()
                .zip(values)
                .map(|(issue, value)| {
                    let v = match (value, &issue.range) {
                        (IssueValue::Option(i), IssueRange::Discrete { options }) => options
                            .get(*i)
                            .map(|o| TermValue::Option(o.clone()))
                            .unwrap_or(TermValue::Count(*i as u32)),
                        (IssueValue::Option(i), _) => TermValue::Count(*i as u32),
                        (IssueValue::Number(x), _) => TermValue::Number(*x),
                    };
                    (issue.key.clone(), v)
                })
                .collect(),
            (Terms::Bundle { price, parts }, TermSpace::Bundle(spec)) => {
                bundle::named(*price, parts, spec)
            }
            (Terms::Tickets(prices), TermSpace::Tickets(tickets)) => {
                super::tickets::named_ticket_terms(prices, tickets)
            }
            // Terms of another space than the scenario's never reach an episode (the parser
            // reads them in the scenario's space).
            _ => TermsView::new(),
        }
    }

    /// The canonical text of the terms: `price:12.50`, `food:2 water:1 firewood:3`,
    /// `salary:35 position:Engineer …`. Parsing it gives the same terms back.
    pub fn render(&self, space: TermSpace<'_>) -> String {
        let mut out = String::new();
        match (self, space) {
            (Terms::Price(cents), _) => {
                let _ = write!(out, "price:{}", format_cents(*cents));
            }
            (Terms::Items(shares), TermSpace::Items(items)) => {
                for (i, (x, item)) in shares.iter().zip(items).enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{}:{}", item.name, x);
                }
            }
            (Terms::Issues(values), TermSpace::Issues(issues)) => {
                for (i, (v, issue)) in values.iter().zip(issues).enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(&issue.key);
                    out.push(':');
                    push_issue_value(&mut out, issue, *v);
                }
            }
            (Terms::Bundle { price, parts }, TermSpace::Bundle(spec)) => {
                out = bundle::render(*price, parts, spec);
            }
            (Terms::Tickets(prices), TermSpace::Tickets(tickets)) => {
                out.push_str(&super::tickets::render_ticket_terms(prices, tickets));
            }
            // Terms of one domain rendered against another domain's space: say so plainly.
            (terms, _) => {
                let _ = write!(out, "{terms:?}");
            }
        }
        out
    }
}

/// An amount in currency units as the grammar writes a price: `12`, `12.50` (rounded to the
/// cent).
pub fn money(amount: f64) -> String {
    format_cents(to_cents(amount))
}

/// A price in cents as the shortest exact text: `12`, `12.50`.
pub fn format_cents(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    if abs.is_multiple_of(100) {
        format!("{sign}{}", abs / 100)
    } else {
        format!("{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

/// Dollars to cents, rounded to the nearest cent.
pub fn to_cents(amount: f64) -> i64 {
    (amount * 100.0).round() as i64
}

/// Write an issue's value as the terms text spells it (a number, an option's name, `#i` for
/// an option the issue does not have) onto `out`.
fn push_issue_value(out: &mut String, issue: &IssueSpec, value: IssueValue) {
    match (value, &issue.range) {
        (IssueValue::Number(n), _) => {
            let _ = write!(out, "{n}");
        }
        (IssueValue::Option(i), IssueRange::Discrete { options }) => match options.get(i) {
            Some(option) => out.push_str(option),
            None => {
                let _ = write!(out, "#{i}");
            }
        },
        (IssueValue::Option(i), IssueRange::Integer { .. }) => {
            let _ = write!(out, "#{i}");
        }
    }
}

/// Why a terms text could not become terms. `Incomplete`/`Unreadable` are format errors,
/// `OutOfRange` is an illegal move (readable, but not allowed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermsError {
    #[error("cannot read the terms: {0}")]
    Unreadable(String),
    #[error("incomplete terms: {0}")]
    Incomplete(String),
    #[error("terms out of range: {0}")]
    OutOfRange(String),
}

/// A `key: value` pair of a terms text, as [`pairs`] finds it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pair<'t> {
    /// The key as written, up to its separator (any spaces before the separator included).
    key: &'t str,
    /// What follows the separator, up to the pair's end (the spaces after the separator
    /// included): a number (`$1,234.50`, `-3`, `35k`) or a word (`Engineer`, `full-time`).
    value: &'t str,
    /// Where the pair ends in the text (an exponent may follow it: `price:1e3`).
    end: usize,
}

/// The `key: value` pairs of a terms text, left to right, each starting where the one before
/// ended: a key (a letter, then letters, spaces, `_` and `-`), spaces, `:` or `=`, spaces, and
/// a number or a word. What the pattern
/// `(?i)([a-z][a-z _-]*?)\s*[:=]\s*(\$?\s*-?[0-9][0-9,]*(?:\.[0-9]+)?k?|[a-z][a-z0-9_-]*)` finds
/// (the property test `pairs_are_what_the_pair_pattern_finds` holds the two equal), read by
/// hand: it runs at every offer, and the regex's search cost a fifth of a Job Interview step.
///
/// A separator's key is the run of key characters just before it (past its spaces) from its
/// first letter; a key never holds a separator, so each separator has at most one key, and
/// the first separator with a key and a value after it is where the leftmost match is.
fn pairs(text: &str) -> Vec<Pair<'_>> {
    let mut found = Vec::new();
    // Where the last pair ended: the next key starts at or after it.
    let mut from = 0;
    // Where to look for the next separator.
    let mut at = 0;
    while let Some(sep) = text[at..].find([':', '=']).map(|i| at + i) {
        at = sep + 1;
        let spaced = text[from..sep].trim_end_matches(char::is_whitespace);
        let run = &spaced[spaced.trim_end_matches(in_key).len()..];
        let Some(first_letter) = run.find(is_letter) else {
            continue;
        };
        let key_start = from + spaced.len() - run.len() + first_letter;
        let Some(value_len) = value_len(&text[at..]) else {
            continue;
        };
        let end = at + value_len;
        found.push(Pair {
            key: &text[key_start..sep],
            value: &text[at..end],
            end,
        });
        (from, at) = (end, end);
    }
    found
}

/// A letter as the pair pattern's `(?i)[a-z]` reads it: Unicode's simple case folding, which
/// also folds KELVIN SIGN to `k` and LATIN SMALL LETTER LONG S to `s`.
fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '\u{212a}' || c == '\u{17f}'
}

/// A character a key may hold after its first letter.
fn in_key(c: char) -> bool {
    is_letter(c) || matches!(c, ' ' | '_' | '-')
}

/// The length in bytes of the value at the start of `text` (after a separator), its leading
/// spaces included: a number (`$`, spaces, `-`, digits and commas, a decimal part, `k`) or
/// else a word (a letter, then letters, digits, `_` and `-`). `None` where neither starts.
fn value_len(text: &str) -> Option<usize> {
    let rest = text.trim_start_matches(char::is_whitespace);
    let lead = text.len() - rest.len();
    let digits = |from: usize, commas: bool| {
        rest[from..]
            .find(|c: char| !(c.is_ascii_digit() || (commas && c == ',')))
            .map_or(rest.len(), |i| from + i)
    };
    let number = || {
        let after_dollar = rest.strip_prefix('$').unwrap_or(rest);
        let signed = after_dollar.trim_start_matches(char::is_whitespace);
        let unsigned = signed.strip_prefix('-').unwrap_or(signed);
        let start = rest.len() - unsigned.len();
        if !unsigned.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let mut end = digits(start, true);
        if rest[end..].starts_with('.') && rest[end + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            end = digits(end + 1, false);
        }
        if let Some(k) = rest[end..]
            .chars()
            .next()
            .filter(|c| matches!(c, 'k' | 'K' | '\u{212a}'))
        {
            end += k.len_utf8();
        }
        Some(end)
    };
    let word = || {
        rest.starts_with(is_letter).then(|| {
            rest.find(|c: char| !(is_letter(c) || c.is_ascii_digit() || c == '_' || c == '-'))
                .unwrap_or(rest.len())
        })
    };
    number().or_else(word).map(|len| lead + len)
}

/// The exponent at the start of `text` (`e3`, `E+4`, `e-2`), or `""`: what follows a number
/// written in exponent notation (`1e3`, `2.5E+4`).
fn exponent(text: &str) -> &str {
    let Some(signed) = text.strip_prefix(['e', 'E']) else {
        return "";
    };
    let unsigned = signed.strip_prefix(['+', '-']).unwrap_or(signed);
    let digits = unsigned
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(unsigned.len());
    if digits == 0 {
        return "";
    }
    &text[..text.len() - unsigned.len() + digits]
}

/// The highest price an offer may name, in currency units: far above any listing, and low
/// enough that its cents are exact (below 2^53) and never saturate `i64`.
pub const MAX_PRICE: f64 = 1e12;

static BARE_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$?\s*-?[0-9][0-9,]*(?:\.[0-9]+)?").expect("static regex"));

/// Lower-case a key and drop everything but letters and digits: `Weekly holiday` → `weeklyholiday`.
fn normalize_key(key: &str) -> Cow<'_, str> {
    // A key already in its normal form (the grammar's own spelling) is its own normal form.
    if key
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Cow::Borrowed(key)
    } else {
        Cow::Owned(key_chars(key).collect())
    }
}

/// A term as written: its key in normal form ([`normalize_key`]) and its value's text,
/// borrowed from the text read where they are spelled as the grammar asks.
pub(crate) type TermPair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// The characters of a key's normal form ([`normalize_key`]), for comparing without building it.
fn key_chars(key: &str) -> impl Iterator<Item = char> + '_ {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
}

/// Whether a written key (already [`normalize_key`]d) names `canonical`, allowing
/// plural/singular spellings. Compares without building the canonical key's normal form: it
/// runs for every pair and every key a space has, at every offer.
fn key_matches(written: &str, canonical: &str) -> bool {
    // Byte by byte: a key's normal form keeps ASCII letters and digits alone, and no byte of a
    // character past ASCII is one, so the bytes give the characters' normal form.
    let canonical_key = || {
        canonical
            .bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|b| b.to_ascii_lowercase())
    };
    // Every spelling starts as the written key does (a plural's stem, or the key itself): a
    // first letter that differs answers for all of them, the common case.
    if let (Some(w), Some(c)) = (written.bytes().next(), canonical_key().next()) {
        if w != c {
            return false;
        }
    }
    let written_is = |text: &str| text.bytes().eq(canonical_key());
    written_is(written)
        || written.strip_suffix("es").is_some_and(written_is)
        || written.strip_suffix('s').is_some_and(written_is)
        || canonical_key().eq(written.bytes().chain([b's']))
}

/// Read a number written as `$1,234.50`, `1234`, `35k` (thousands). Not one in exponent
/// notation (`1e3`): the grammar has no form for it. The one reader of a written number (a
/// move's terms, a belief probe's estimate).
pub(crate) fn read_number(text: &str) -> Option<f64> {
    let skipped = |c: char| c == '$' || c == ',' || c.is_whitespace();
    let cleaned: Cow<'_, str> = if text.contains(skipped) {
        Cow::Owned(text.chars().filter(|c| !skipped(*c)).collect())
    } else {
        Cow::Borrowed(text)
    };
    if cleaned.contains(['e', 'E']) {
        return None;
    }
    let (digits, scale) = match cleaned.strip_suffix(['k', 'K']) {
        Some(digits) => (digits, 1000.0),
        None => (&*cleaned, 1.0),
    };
    digits
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v * scale)
}

/// Parse the text after `[SUBMIT_DEAL]` into terms of the given space.
///
/// Tolerant about spelling (`:`/`=`, spaces, key order, case, plurals, `$` and thousands
/// separators); strict about content: every key exactly once, values in range.
/// Returns the terms and whether they were written exactly as the grammar asks (a bare price
/// without its `price:` key is readable but not well-formed).
pub fn parse_terms(text: &str, space: TermSpace<'_>) -> Result<(Terms, bool), TermsError> {
    if let TermSpace::Tickets(tickets) = space {
        return super::tickets::parse_ticket_terms(text, tickets);
    }
    let pairs: Vec<TermPair<'_>> = pairs(text)
        .into_iter()
        .map(|pair| {
            // `price:1e3` means 1000 to a reader: read as 1 it would be a wrong move. A number
            // in exponent notation keeps its exponent, so reading it fails as any number the
            // grammar has no form for; a pair the space does not read is never read.
            let exponent = exponent(&text[pair.end..]);
            let value = match exponent {
                "" => Cow::Borrowed(pair.value.trim()),
                _ => Cow::Owned(format!("{}{exponent}", pair.value.trim())),
            };
            (normalize_key(pair.key), value)
        })
        .collect();
    terms_from_pairs(&pairs, space, Some(text))
}

/// `text` cut to 60 characters for an error message: what a client sent goes back to it (and into
/// the seat's history and the record), so a huge value must not.
pub(crate) fn brief(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// Terms given as a JSON object (a `make_offer` tool call's `terms`): `{"price": 120}`,
/// `{"food": 2, "water": 1, "firewood": 0}`, `{"salary": 35, "position": "Engineer"}`. Read
/// with the same rules as a written action (key spellings, ranges, every key once); a key the
/// space does not have is unreadable, as in the text.
pub fn terms_from_json(
    terms: &serde_json::Map<String, serde_json::Value>,
    space: TermSpace<'_>,
) -> Result<Terms, TermsError> {
    let mut pairs = Vec::with_capacity(terms.len());
    for (key, value) in terms {
        let text = match value {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Bool(b) => b.to_string(),
            other => {
                return Err(TermsError::Unreadable(format!(
                    "`{}` must be a number or a string, got {}",
                    brief(key),
                    brief(&other.to_string())
                )))
            }
        };
        let key = normalize_key(key);
        if matches!(space, TermSpace::Price) && !key_matches(&key, "price") {
            return Err(TermsError::Unreadable(format!(
                "unknown term `{}` (a price deal has `price` only)",
                brief(&key)
            )));
        }
        pairs.push((key, Cow::Owned(text)));
    }
    terms_from_pairs(&pairs, space, None).map(|(terms, _)| terms)
}

/// Terms from `(normalized key, value text)` pairs. `text` is the whole terms text a bare price
/// may be read from (readable, not well-formed); `None` where there is no such text.
fn terms_from_pairs(
    pairs: &[TermPair<'_>],
    space: TermSpace<'_>,
    text: Option<&str>,
) -> Result<(Terms, bool), TermsError> {
    match space {
        TermSpace::Price => {
            let (value, well_formed) = match pairs.iter().find(|(k, _)| key_matches(k, "price")) {
                Some((_, v)) => (Cow::Borrowed(&**v), true),
                None => match text.and_then(|text| BARE_NUMBER.find(text).map(|m| (text, m))) {
                    Some((text, m)) => {
                        let exponent = exponent(&text[m.end()..]);
                        (Cow::Owned(format!("{}{exponent}", m.as_str())), false)
                    }
                    None => return Err(TermsError::Incomplete("no price given".into())),
                },
            };
            let amount = read_number(&value).ok_or_else(|| {
                TermsError::Unreadable(format!("price `{value}` is not a number"))
            })?;
            if amount < 0.0 {
                return Err(TermsError::OutOfRange(format!(
                    "price {amount} is negative"
                )));
            }
            if amount > MAX_PRICE {
                return Err(TermsError::OutOfRange(format!(
                    "price {value} is above {MAX_PRICE:e}: no listing comes near it"
                )));
            }
            Ok((Terms::Price(to_cents(amount)), well_formed))
        }
        TermSpace::Items(items) => {
            let mut shares: Vec<Option<u32>> = vec![None; items.len()];
            for (key, value) in pairs {
                let Some(i) = items.iter().position(|it| key_matches(key, &it.name)) else {
                    return Err(TermsError::Unreadable(format!(
                        "unknown item `{}`",
                        brief(key)
                    )));
                };
                if shares[i].is_some() {
                    return Err(TermsError::Unreadable(format!(
                        "{} given twice",
                        items[i].name
                    )));
                }
                let n = read_number(value).ok_or_else(|| {
                    TermsError::Unreadable(format!("{} `{value}` is not a number", items[i].name))
                })?;
                if n.fract() != 0.0 || n < 0.0 || n > items[i].count as f64 {
                    return Err(TermsError::OutOfRange(format!(
                        "{} must be a whole number from 0 to {}, got {value}",
                        items[i].name, items[i].count
                    )));
                }
                shares[i] = Some(n as u32);
            }
            let missing: Vec<&str> = items
                .iter()
                .zip(&shares)
                .filter(|(_, s)| s.is_none())
                .map(|(it, _)| it.name.as_str())
                .collect();
            if !missing.is_empty() {
                return Err(TermsError::Incomplete(format!(
                    "missing {}",
                    missing.join(", ")
                )));
            }
            Ok((Terms::Items(shares.into_iter().flatten().collect()), true))
        }
        TermSpace::Tickets(tickets) => {
            super::tickets::ticket_terms_from_pairs(pairs, tickets).map(|t| (t, true))
        }
        TermSpace::Issues(issues) => {
            let mut values: Vec<Option<IssueValue>> = vec![None; issues.len()];
            for (key, value) in pairs {
                let Some(i) = issues
                    .iter()
                    .position(|is| key_matches(key, &is.key) || key_matches(key, &is.label))
                else {
                    return Err(TermsError::Unreadable(format!(
                        "unknown issue `{}`",
                        brief(key)
                    )));
                };
                if values[i].is_some() {
                    return Err(TermsError::Unreadable(format!(
                        "{} given twice",
                        issues[i].key
                    )));
                }
                values[i] = Some(read_issue_value(&issues[i], value)?);
            }
            let missing: Vec<&str> = issues
                .iter()
                .zip(&values)
                .filter(|(_, v)| v.is_none())
                .map(|(is, _)| is.key.as_str())
                .collect();
            if !missing.is_empty() {
                return Err(TermsError::Incomplete(format!(
                    "missing {}",
                    missing.join(", ")
                )));
            }
            Ok((Terms::Issues(values.into_iter().flatten().collect()), true))
        }
        TermSpace::Bundle(spec) => {
            let (price, parts) = bundle::from_pairs(pairs, spec, key_matches)?;
            Ok((Terms::Bundle { price, parts }, true))
        }
    }
}

fn read_issue_value(issue: &IssueSpec, value: &str) -> Result<IssueValue, TermsError> {
    match &issue.range {
        IssueRange::Integer { min, max } => {
            let n = read_number(value).ok_or_else(|| {
                TermsError::Unreadable(format!("{} `{value}` is not a number", issue.key))
            })?;
            if n.fract() != 0.0 || n < *min as f64 || n > *max as f64 {
                return Err(TermsError::OutOfRange(format!(
                    "{} must be a whole number from {min} to {max}, got {value}",
                    issue.key
                )));
            }
            Ok(IssueValue::Number(n as i64))
        }
        IssueRange::Discrete { options } => {
            let written = normalize_key(value);
            options
                .iter()
                .position(|o| key_chars(o).eq(written.chars()))
                .map(IssueValue::Option)
                .ok_or_else(|| {
                    TermsError::OutOfRange(format!(
                        "{} must be one of {}, got {value}",
                        issue.key,
                        options.join(", ")
                    ))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino_items, job_issues};

    /// The pattern [`pairs`] reads by hand: the definition of a pair.
    static PAIR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)([a-z][a-z _-]*?)\s*[:=]\s*(\$?\s*-?[0-9][0-9,]*(?:\.[0-9]+)?k?|[a-z][a-z0-9_-]*)",
        )
        .expect("static regex")
    });

    /// The pattern [`exponent`] reads by hand.
    static EXPONENT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[eE][+-]?[0-9]+").expect("static regex"));

    /// The pairs as the pattern finds them: its whole match split at its first separator.
    fn pattern_pairs(text: &str) -> Vec<Pair<'_>> {
        PAIR.find_iter(text)
            .map(|m| {
                let sep = m
                    .as_str()
                    .find([':', '='])
                    .expect("a pair has its separator");
                Pair {
                    key: &text[m.start()..m.start() + sep],
                    value: &text[m.start() + sep + 1..m.end()],
                    end: m.end(),
                }
            })
            .collect()
    }

    proptest::proptest! {
        /// The hand-written reader finds the pattern's pairs, byte for byte, in text drawn from
        /// the characters the pattern turns on (the folding letters and odd spaces included).
        #[test]
        fn pairs_are_what_the_pair_pattern_finds(
            text in "[a-zA-Z _\\-:=$0-9,.kKeE+\\s\\]\\[\u{212a}\u{17f}\u{a0}\u{2028}\u{85}é]{0,40}"
        ) {
            proptest::prop_assert_eq!(pairs(&text), pattern_pairs(&text));
        }

        /// Splitting a pair's match at its first `:` or `=` gives the pattern's own two groups
        /// (the key, and the value past the spaces).
        #[test]
        fn a_pair_split_at_its_separator_is_the_patterns_groups(
            text in "[a-zA-Z _\\-:=$0-9,.kKeE\\s\\]\\[]{0,40}"
        ) {
            for (c, pair) in PAIR.captures_iter(&text).zip(pairs(&text)) {
                proptest::prop_assert_eq!(normalize_key(pair.key), normalize_key(&c[1]));
                proptest::prop_assert_eq!(pair.value.trim_start(), &c[2]);
            }
        }

        /// A written key matches a canonical one exactly when its normal form is the
        /// canonical's, or one of them is the other's plural (`s`, `es`).
        #[test]
        fn a_key_matches_as_its_normal_forms_compare(
            written in "[a-cseE é_]{0,6}",
            canonical in "[a-cseE é_]{0,6}",
        ) {
            let written = normalize_key(&written).into_owned();
            let normal = normalize_key(&canonical).into_owned();
            let reference = written == normal
                || written.strip_suffix("es") == Some(normal.as_str())
                || written.strip_suffix('s') == Some(normal.as_str())
                || normal.strip_suffix('s') == Some(written.as_str());
            proptest::prop_assert_eq!(key_matches(&written, &canonical), reference);
        }

        #[test]
        fn exponent_is_what_its_pattern_finds(text in "[eE+\\-0-9a.]{0,6}") {
            proptest::prop_assert_eq!(
                exponent(&text),
                EXPONENT.find(&text).map_or("", |e| e.as_str())
            );
        }
    }

    #[test]
    fn pairs_read_the_grammars_terms() {
        let text = "Salary: $35k, position=Project Manager; weekly holiday :2 extra: -1,000.5K";
        let read: Vec<(&str, &str)> = pairs(text).iter().map(|p| (p.key, p.value)).collect();
        assert_eq!(
            read,
            [
                ("Salary", " $35k"),
                ("position", "Project"),
                ("weekly holiday ", "2"),
                ("extra", " -1,000.5K"),
            ]
        );
        assert_eq!(pairs(text), pattern_pairs(text));
        // No key, no value, a key broken by a tab: the pattern's own answers.
        for text in [
            "9: 3",
            "a: :b: 5",
            "sal\tary: 3",
            "-_ x = y",
            "k: $ -",
            "\u{212a}: \u{17f}1",
        ] {
            assert_eq!(pairs(text), pattern_pairs(text), "{text:?}");
        }
    }

    #[test]
    fn a_letter_and_a_space_are_what_the_pattern_reads() {
        let letter = Regex::new("(?i)^[a-z]$").expect("regex");
        let word = Regex::new("(?i)^[a-z0-9_-]$").expect("regex");
        let space = Regex::new(r"^\s$").expect("regex");
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let text = c.to_string();
            assert_eq!(is_letter(c), letter.is_match(&text), "U+{:04X}", c as u32);
            let in_word = is_letter(c) || c.is_ascii_digit() || c == '_' || c == '-';
            assert_eq!(in_word, word.is_match(&text), "U+{:04X}", c as u32);
            assert_eq!(
                c.is_whitespace(),
                space.is_match(&text),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn a_key_matches_its_spellings_as_its_normal_form_does() {
        for (written, canonical, same) in [
            ("weeklyholiday", "Weekly holiday", true),
            ("foods", "food", true),
            ("boxes", "box", true),
            ("book", "books", true),
            ("firewood", "food", false),
            ("foo", "food", false),
            ("", "", true),
        ] {
            assert_eq!(
                key_matches(written, canonical),
                same,
                "{written} / {canonical}"
            );
            let canonical = normalize_key(canonical).into_owned();
            let reference = written == canonical
                || written.strip_suffix("es") == Some(canonical.as_str())
                || written.strip_suffix('s') == Some(canonical.as_str())
                || canonical.strip_suffix('s') == Some(written);
            assert_eq!(reference, same, "{written} / {canonical}");
        }
    }

    #[test]
    fn the_size_of_a_space_never_wraps() {
        let items = casino_items();
        assert_eq!(TermSpace::Items(&items).size(), Some(64), "4 × 4 × 4");
        assert_eq!(
            TermSpace::Issues(&job_issues()).size(),
            Some(930),
            "31 × 3 × 2 × 5"
        );
        assert_eq!(TermSpace::Price.size(), None);
        assert_eq!(TermSpace::Items(&[]).size(), None);
        // u32::MAX units of each of three items: (2^32)^3 overflows u64. A wrapping product
        // is 0 — an empty space, in which every deal is Pareto-optimal.
        let huge: Vec<ItemSpec> = items
            .iter()
            .map(|it| ItemSpec {
                count: u32::MAX,
                ..it.clone()
            })
            .collect();
        assert_eq!(TermSpace::Items(&huge).size(), None);
        assert!(TermSpace::Items(&huge).all_terms().next().is_some());
        let whole = IssueRange::Integer {
            min: i64::MIN,
            max: i64::MAX,
        };
        assert_eq!(whole.len(), usize::MAX);
        let backwards = IssueRange::Integer { min: 5, max: 1 };
        assert_eq!(backwards.len(), 0);
    }

    #[test]
    fn items_in_any_order_with_plurals_and_equals() {
        let items = casino_items();
        let (t, ok) =
            parse_terms("Firewood = 3, FOODS: 2 water:1", TermSpace::Items(&items)).unwrap();
        assert_eq!(t, Terms::Items(vec![2, 1, 3]));
        assert!(ok);
        assert_eq!(
            t.render(TermSpace::Items(&items)),
            "food:2 water:1 firewood:3"
        );
    }

    #[test]
    fn items_missing_or_out_of_range() {
        let items = casino_items();
        assert!(matches!(
            parse_terms("food:2 water:1", TermSpace::Items(&items)),
            Err(TermsError::Incomplete(_))
        ));
        assert!(matches!(
            parse_terms("food:4 water:1 firewood:0", TermSpace::Items(&items)),
            Err(TermsError::OutOfRange(_))
        ));
        assert!(matches!(
            parse_terms("food:1 food:1 water:1 firewood:0", TermSpace::Items(&items)),
            Err(TermsError::Unreadable(_))
        ));
    }

    #[test]
    fn prices_with_dollar_and_thousands() {
        let (t, ok) = parse_terms("price: $1,234.50", TermSpace::Price).unwrap();
        assert_eq!(t, Terms::Price(123450));
        assert!(ok);
        assert_eq!(t.render(TermSpace::Price), "price:1234.50");
        let (t, ok) = parse_terms("$80", TermSpace::Price).unwrap();
        assert_eq!(t, Terms::Price(8000));
        assert!(!ok, "a bare price is readable but not well-formed");
    }

    #[test]
    fn a_number_in_exponent_notation_is_unreadable_not_its_mantissa() {
        // Read up to the `e`, `price:1e3` was a $1.00 offer: a wrong move, not a format error.
        for text in ["price:1e3", "price: 2.5E+4", "1e3", "price:2e20"] {
            let read = parse_terms(text, TermSpace::Price);
            assert!(matches!(read, Err(TermsError::Unreadable(_))), "{text}");
            let message = read.unwrap_err().to_string();
            assert!(message.contains('e') || message.contains('E'), "{message}");
        }
        // A pair the space does not read is not read: its exponent does not matter.
        let (t, _) = parse_terms("price:1200 note:2e3", TermSpace::Price).unwrap();
        assert_eq!(t, Terms::Price(120000));
        let items = casino_items();
        assert!(matches!(
            parse_terms("food:1e0 water:1 firewood:1", TermSpace::Items(&items)),
            Err(TermsError::Unreadable(_))
        ));
        // An English word after a number is not an exponent.
        let (t, _) = parse_terms("price: 1200 each", TermSpace::Price).unwrap();
        assert_eq!(t, Terms::Price(120000));
    }

    #[test]
    fn a_price_beyond_any_listing_is_out_of_range_not_saturated() {
        for text in ["price:99999999999999999999", "price:1000000000000.01"] {
            assert!(
                matches!(
                    parse_terms(text, TermSpace::Price),
                    Err(TermsError::OutOfRange(_))
                ),
                "{text}"
            );
        }
        let (t, _) = parse_terms("price:1000000000000", TermSpace::Price).unwrap();
        assert_eq!(t, Terms::Price(100_000_000_000_000));
    }

    #[test]
    fn issues_by_key_or_label_any_case() {
        let issues = job_issues();
        let (t, _) = parse_terms(
            "weekly holiday: 4 company=apple POSITION: sales salary:$35",
            TermSpace::Issues(&issues),
        )
        .unwrap();
        assert_eq!(
            t,
            Terms::Issues(vec![
                IssueValue::Number(35),
                IssueValue::Option(1),
                IssueValue::Option(1),
                IssueValue::Number(4)
            ])
        );
        assert_eq!(
            t.render(TermSpace::Issues(&issues)),
            "salary:35 company:Apple position:Sales holiday:4"
        );
        assert!(matches!(
            parse_terms(
                "salary:60 company:Apple position:Sales holiday:4",
                TermSpace::Issues(&issues)
            ),
            Err(TermsError::OutOfRange(_))
        ));
        assert!(matches!(
            parse_terms(
                "salary:30 company:IBM position:Sales holiday:4",
                TermSpace::Issues(&issues)
            ),
            Err(TermsError::OutOfRange(_))
        ));
    }

    #[test]
    fn flipping_items_only() {
        let items = casino_items();
        let t = Terms::Items(vec![0, 1, 3]);
        assert_eq!(
            t.flipped(TermSpace::Items(&items)),
            Terms::Items(vec![3, 2, 0])
        );
        assert_eq!(Terms::Price(5).flipped(TermSpace::Price), Terms::Price(5));
    }
}
