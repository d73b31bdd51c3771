//! Reading scenario files (JSONL) and checking every scenario before it is played.
//!
//! A bad line is reported with the file, the line number and the field; nothing panics on bad
//! input, and with [`LoadOptions::skip_bad`] the rest of the file still loads.

use std::io::BufRead;
use std::path::Path;

use crate::limits::{
    check_count, check_integer, check_number, read_line, LineRead, MAX_AMOUNT, MAX_INPUT_LINE,
    MAX_ISSUES, MAX_ISSUE_VALUES, MAX_ITEMS, MAX_ITEM_COUNT, MAX_ITEM_VALUE, MAX_OUTCOME_SPACE,
};
use crate::protocol::IssueRange;

use super::{DealSpace, IssuePreferences, Scenario, Valuation, SCENARIO_SCHEMA};

/// An error reading scenarios, naming where it happened.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{file}:{line}: field `{field}`: {message}")]
    Line {
        file: String,
        line: usize,
        field: String,
        message: String,
    },
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: no scenarios in the file")]
    Empty { file: String },
    /// A line longer than [`MAX_INPUT_LINE`]: the file is read no further.
    #[error("{file}:{line}: the line is longer than {limit} bytes, the most a scenario line may hold (is this a scenario file?)")]
    LineTooLong {
        file: String,
        line: usize,
        limit: usize,
    },
}

/// How to treat bad lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Report bad lines and load the rest, instead of stopping at the first.
    pub skip_bad: bool,
}

/// The scenarios read from a file, and the lines skipped (only with `skip_bad`): two-party
/// [`Scenario`]s, or the n-party [`TableScenario`](super::TableScenario)s.
#[derive(Debug)]
pub struct LoadReport<S = Scenario> {
    pub scenarios: Vec<S>,
    pub skipped: Vec<ScenarioError>,
}

impl<S> Default for LoadReport<S> {
    fn default() -> Self {
        LoadReport {
            scenarios: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// Load every scenario of a JSONL file (or of the built-in text standing in for a missing
/// `scenarios/FAMILY.jsonl`: [`scenario_file_exists`](super::scenario_file_exists)). Blank
/// lines are ignored.
pub fn load_scenarios(path: &Path, options: LoadOptions) -> Result<LoadReport, ScenarioError> {
    let file_name = path.display().to_string();
    let file = super::open_scenario_file(path).map_err(|source| ScenarioError::Io {
        file: file_name.clone(),
        source,
    })?;
    load_scenarios_from_reader(&file_name, file, options)
}

/// Load every scenario of JSONL text read from `reader`, naming it `file_name` in errors: the
/// file loader's body, for bytes that come from elsewhere (a test's, a fuzzer's). A line that
/// is not UTF-8 is a bad line (field `(line)`); a line longer than [`MAX_INPUT_LINE`] ends the
/// load ([`ScenarioError::LineTooLong`]), `skip_bad` or not, as its end cannot be found
/// without reading it all.
pub fn load_scenarios_from_reader(
    file_name: &str,
    reader: impl BufRead,
    options: LoadOptions,
) -> Result<LoadReport, ScenarioError> {
    load_lines(file_name, reader, options, parse_scenario_line)
}

/// The one line loop of every scenario file: each non-blank line through `parse_line` (which
/// names the file, the line and the field of a bad one), under the line-length limit.
pub(crate) fn load_lines<S>(
    file_name: &str,
    mut reader: impl BufRead,
    options: LoadOptions,
    parse_line: impl Fn(&str, usize, &str) -> Result<S, ScenarioError>,
) -> Result<LoadReport<S>, ScenarioError> {
    let mut report = LoadReport::default();
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        number += 1;
        let read = read_line(&mut reader, &mut buf, MAX_INPUT_LINE).map_err(|source| {
            ScenarioError::Io {
                file: file_name.to_string(),
                source,
            }
        })?;
        match read {
            LineRead::End => break,
            LineRead::TooLong => {
                return Err(ScenarioError::LineTooLong {
                    file: file_name.to_string(),
                    line: number,
                    limit: MAX_INPUT_LINE,
                })
            }
            LineRead::Line(_) => {}
        }
        let parsed = match std::str::from_utf8(&buf) {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => parse_line(file_name, number, line),
            Err(e) => Err(ScenarioError::Line {
                file: file_name.to_string(),
                line: number,
                field: "(line)".into(),
                message: format!("not UTF-8 text: {e}"),
            }),
        };
        match parsed {
            Ok(s) => report.scenarios.push(s),
            Err(e) if options.skip_bad => report.skipped.push(e),
            Err(e) => return Err(e),
        }
    }
    if report.scenarios.is_empty() && report.skipped.is_empty() {
        return Err(ScenarioError::Empty {
            file: file_name.to_string(),
        });
    }
    Ok(report)
}

/// Parse and check one line of a scenario file.
pub fn parse_scenario_line(file: &str, line: usize, text: &str) -> Result<Scenario, ScenarioError> {
    let at = |field: String, message: String| ScenarioError::Line {
        file: file.to_string(),
        line,
        field,
        message,
    };
    let scenario: Scenario = crate::jsonl::from_line(text.as_bytes()).map_err(|fault| {
        let (field, message) = super::market::unread_line(text, fault);
        at(field, message)
    })?;
    validate(&scenario).map_err(|e| at(e.field, e.message))?;
    Ok(scenario)
}

/// A scenario that parses but breaks a rule JSON types cannot express: the field and what is
/// wrong with it (the caller adds the file and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct InvalidScenario {
    pub(crate) field: String,
    pub(crate) message: String,
}

impl InvalidScenario {
    fn at(field: String, message: String) -> InvalidScenario {
        InvalidScenario { field, message }
    }
}

/// Check what JSON types cannot: versions, the family's domain, sizes that must agree, values in
/// range — and every number a line can carry against its bound in [`crate::limits`] (item
/// counts, the number of items and issues, values per issue, the outcome space, amounts), so a
/// line that would exhaust memory or overflow the arithmetic later is refused here, where it is
/// loaded, naming the field, the limit and the value.
pub fn validate(s: &Scenario) -> Result<(), InvalidScenario> {
    let bad = |field: &str, message: String| {
        Err(InvalidScenario {
            field: field.to_string(),
            message,
        })
    };
    if s.schema != SCENARIO_SCHEMA {
        return bad(
            "schema",
            format!(
                "version {} is not supported (this build reads {SCENARIO_SCHEMA})",
                s.schema
            ),
        );
    }
    if s.id.trim().is_empty() {
        return bad("id", "must not be empty".into());
    }
    if s.family.domain() != s.domain() {
        return bad(
            "game",
            format!(
                "family {} plays the {:?} domain",
                s.family,
                s.family.domain()
            ),
        );
    }
    within(
        "no_deal_value",
        check_number("no_deal_value", s.no_deal_value, -MAX_AMOUNT, MAX_AMOUNT),
    )?;
    match &s.game {
        DealSpace::Price {
            listing_price,
            buyer,
            seller,
        } => {
            for (field, key, v) in [
                ("game.price.listing_price", "listing_price", *listing_price),
                ("game.price.buyer.budget", "budget", buyer.budget),
                ("game.price.seller.cost", "cost", seller.cost),
            ] {
                within(field, check_number(key, v, 0.0, MAX_AMOUNT))?;
            }
            if *listing_price <= 0.0 {
                return bad("game.price.listing_price", "must be positive".into());
            }
        }
        DealSpace::Items {
            items,
            agent_1,
            agent_2,
        } => {
            within(
                "game.items.items",
                check_count("the number of items", items.len() as u64, 1, MAX_ITEMS),
            )?;
            for (i, item) in items.iter().enumerate() {
                if item.name.trim().is_empty() {
                    return bad(
                        &format!("game.items.items[{i}].name"),
                        "must not be empty".into(),
                    );
                }
                within(
                    &format!("game.items.items[{i}].count"),
                    check_count("count", u64::from(item.count), 1, MAX_ITEM_COUNT),
                )?;
                if items[..i]
                    .iter()
                    .any(|o| o.name.eq_ignore_ascii_case(&item.name))
                {
                    return bad(
                        &format!("game.items.items[{i}].name"),
                        format!("`{}` appears twice", item.name),
                    );
                }
            }
            for (field, side) in [
                ("game.items.agent_1.values", agent_1),
                ("game.items.agent_2.values", agent_2),
            ] {
                if side.values.len() != items.len() {
                    return bad(
                        field,
                        format!("has {} values for {} items", side.values.len(), items.len()),
                    );
                }
                for (i, v) in side.values.iter().enumerate() {
                    within(
                        &format!("{field}[{i}]"),
                        check_count("a value", u64::from(*v), 0, MAX_ITEM_VALUE),
                    )?;
                }
            }
            within(
                "game.items.items",
                check_space(s, "every split of the items"),
            )?;
        }
        DealSpace::Issues {
            issues,
            worker,
            recruiter,
        } => {
            within(
                "game.issues.issues",
                check_count("the number of issues", issues.len() as u64, 1, MAX_ISSUES),
            )?;
            for (i, issue) in issues.iter().enumerate() {
                let field = format!("game.issues.issues[{i}]");
                let ok = match &issue.range {
                    IssueRange::Integer { min, max } => {
                        let bound = MAX_AMOUNT as i64;
                        within(
                            &format!("{field}.min"),
                            check_integer("min", *min, -bound, bound),
                        )?;
                        within(
                            &format!("{field}.max"),
                            check_integer("max", *max, -bound, bound),
                        )?;
                        min < max
                    }
                    IssueRange::Discrete { options } => !options.is_empty(),
                };
                if !ok || issue.key.trim().is_empty() {
                    return bad(
                        &field,
                        "needs a key and min < max or at least one option".into(),
                    );
                }
                within(
                    &field,
                    check_count(
                        "the number of values of an issue",
                        issue.range.len() as u64,
                        1,
                        MAX_ISSUE_VALUES,
                    ),
                )?;
            }
            within("game.issues.issues", check_space(s, "every contract"))?;
            for (side, prefs) in [("worker", worker), ("recruiter", recruiter)] {
                check_preferences(side, prefs, issues)?;
            }
        }
        DealSpace::Bundle {
            bundle,
            buyer,
            seller,
        } => check_bundle(bundle, buyer, seller)?,
        DealSpace::Tickets { tickets, bd, hotel } => {
            within(
                "game.tickets.tickets",
                check_count("the number of tickets", tickets.len() as u64, 1, MAX_ISSUES),
            )?;
            super::hotel::check_tickets(tickets, bd, hotel)
                .map_err(|(field, message)| InvalidScenario::at(field, message))?;
        }
    }
    Ok(())
}

fn bad(field: &str, message: String) -> Result<(), InvalidScenario> {
    Err(InvalidScenario::at(field.to_string(), message))
}

/// The most accessories a bundle may have: INA's bundles hold one to three.
pub(crate) const MAX_ACCESSORIES: u64 = 3;

fn check_bundle(
    bundle: &crate::protocol::BundleSpec,
    buyer: &super::BundleValues,
    seller: &super::BundleValues,
) -> Result<(), InvalidScenario> {
    within(
        "game.bundle.bundle.accessories",
        check_count(
            "the number of accessories",
            bundle.accessories.len() as u64,
            1,
            MAX_ACCESSORIES,
        ),
    )?;
    let parts = std::iter::once(("main".to_string(), &bundle.main)).chain(
        bundle
            .accessories
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("accessories[{i}]"), p)),
    );
    let mut keys: Vec<String> = vec![crate::protocol::DELIVERY.to_string(), "price".to_string()];
    for (at, part) in parts {
        let field = format!("game.bundle.bundle.{at}");
        let key_ok = part
            .key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase())
            && part
                .key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !key_ok {
            return bad(
                &format!("{field}.key"),
                format!(
                    "`{}` must be lower-case letters, digits and `_`, starting with a letter",
                    part.key
                ),
            );
        }
        let normal: String = part.key.chars().filter(|c| *c != '_').collect();
        if keys.iter().any(|k| k.replace('_', "") == normal) {
            return bad(
                &format!("{field}.key"),
                format!(
                    "`{}` is taken (by another part, `price` or `delivery`)",
                    part.key
                ),
            );
        }
        keys.push(part.key.clone());
        within(
            &format!("{field}.list_price"),
            check_number("list_price", part.list_price, 0.0, MAX_AMOUNT),
        )?;
    }
    within(
        "game.bundle.bundle.delivery_fee",
        check_number("delivery_fee", bundle.delivery_fee, 0.0, MAX_AMOUNT),
    )?;
    for (side, values) in [("buyer", buyer), ("seller", seller)] {
        let field = format!("game.bundle.{side}");
        if values.accessories.len() != bundle.accessories.len() {
            return bad(
                &format!("{field}.accessories"),
                format!(
                    "has {} numbers for {} accessories",
                    values.accessories.len(),
                    bundle.accessories.len()
                ),
            );
        }
        within(
            &format!("{field}.main"),
            check_number("main", values.main, 0.0, MAX_AMOUNT),
        )?;
        within(
            &format!("{field}.delivery"),
            check_number("delivery", values.delivery, 0.0, MAX_AMOUNT),
        )?;
        for (i, v) in values.accessories.iter().enumerate() {
            within(
                &format!("{field}.accessories[{i}]"),
                check_number("a part's number", *v, 0.0, MAX_AMOUNT),
            )?;
        }
    }
    Ok(())
}

/// A bound's verdict on the value at `field`, as a scenario error.
fn within<T>(field: &str, checked: Result<T, String>) -> Result<T, InvalidScenario> {
    checked.map_err(|message| InvalidScenario::at(field.to_string(), message))
}

/// The scenario's outcome space (`what` it is made of, for the message) holds at most
/// [`MAX_OUTCOME_SPACE`] deals.
fn check_space(s: &Scenario, what: &str) -> Result<u64, String> {
    match s.term_space().size() {
        Some(n) if n <= MAX_OUTCOME_SPACE => Ok(n),
        size => Err(format!(
            "the outcome space ({what}) must hold at most {MAX_OUTCOME_SPACE} deals; it holds {}",
            size.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string())
        )),
    }
}

fn check_preferences(
    side: &str,
    prefs: &IssuePreferences,
    issues: &[crate::protocol::IssueSpec],
) -> Result<(), InvalidScenario> {
    if prefs.issues.len() != issues.len() {
        return Err(InvalidScenario::at(
            format!("game.issues.{side}.issues"),
            format!(
                "has {} preferences for {} issues",
                prefs.issues.len(),
                issues.len()
            ),
        ));
    }
    for (i, (pref, issue)) in prefs.issues.iter().zip(issues).enumerate() {
        let field = format!("game.issues.{side}.issues[{i}]");
        within(
            &format!("{field}.weight"),
            check_number("weight", pref.weight, 0.0, MAX_AMOUNT),
        )?;
        let n = issue.range.len();
        let ok = match (&pref.valuation, &issue.range) {
            (Valuation::Rising | Valuation::Falling, IssueRange::Integer { .. }) => true,
            (Valuation::Options { weights }, IssueRange::Discrete { .. }) => weights.len() == n,
            (Valuation::Joint { with, weights }, IssueRange::Discrete { .. }) => {
                let partner = issues.iter().find(|is| &is.key == with).map(|is| &is.range);
                match partner {
                    Some(IssueRange::Discrete { options }) => {
                        weights.len() == n && weights.iter().all(|row| row.len() == options.len())
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        if !ok {
            return Err(InvalidScenario::at(
                format!("{field}.valuation"),
                format!("does not fit issue `{}` ({} options)", issue.key, n),
            ));
        }
        // A side's value of an option is v ∈ [0, 1] (`Valuation`); a NaN would compare false
        // with every other deal's and make every deal Pareto-optimal.
        let values: Vec<(String, f64)> = match &pref.valuation {
            Valuation::Options { weights } => weights
                .iter()
                .enumerate()
                .map(|(k, w)| (format!("[{k}]"), *w))
                .collect(),
            Valuation::Joint { weights, .. } => weights
                .iter()
                .enumerate()
                .flat_map(|(k, row)| {
                    row.iter()
                        .enumerate()
                        .map(move |(j, w)| (format!("[{k}][{j}]"), *w))
                })
                .collect(),
            Valuation::Rising | Valuation::Falling => Vec::new(),
        };
        for (at, w) in values {
            within(
                &format!("{field}.valuation.weights{at}"),
                check_number("an option's value", w, 0.0, 1.0),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"schema":1,"id":"ahp:x:0","family":"ahp","source":"t","public":{"title":"Lamp"},"game":{"price":{"listing_price":100,"buyer":{"budget":80},"seller":{"cost":50}}}}"#;

    #[test]
    fn good_line_loads() {
        let s = parse_scenario_line("f.jsonl", 1, GOOD).unwrap();
        assert_eq!(s.id, "ahp:x:0");
    }

    #[test]
    fn bad_field_is_named_with_file_and_line() {
        let bad = GOOD.replace(r#""budget":80"#, r#""budget":"eighty""#);
        let err = parse_scenario_line("f.jsonl", 7, &bad)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("f.jsonl:7: field `game.price.buyer.budget`"),
            "{err}"
        );
        let wrong_domain = GOOD.replace(r#""family":"ahp""#, r#""family":"casino""#);
        let err = parse_scenario_line("f.jsonl", 2, &wrong_domain)
            .unwrap_err()
            .to_string();
        assert!(err.contains("field `game`"), "{err}");
        let negative = GOOD.replace(r#""cost":50"#, r#""cost":-5"#);
        let err = parse_scenario_line("f.jsonl", 3, &negative)
            .unwrap_err()
            .to_string();
        assert!(err.contains("game.price.seller.cost"), "{err}");
        // Found by the fuzz soak: an empty key was reported as field ``.
        let empty_key = GOOD.replacen(r#""schema""#, r#""":1,"schema""#, 1);
        let err = parse_scenario_line("f.jsonl", 4, &empty_key)
            .unwrap_err()
            .to_string();
        assert!(err.contains(r#"field `(a key named "")`"#), "{err}");
    }

    /// The first line of `scenarios/FAMILY.jsonl`, as JSON to change.
    fn first_line(family: &str) -> serde_json::Value {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("scenarios")
            .join(format!("{family}.jsonl"));
        let text = std::fs::read_to_string(path).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    }

    /// The error of `line` once `change` is applied, or `None` if it still loads.
    fn refused(
        mut line: serde_json::Value,
        change: impl FnOnce(&mut serde_json::Value),
    ) -> Option<String> {
        change(&mut line);
        parse_scenario_line("s.jsonl", 3, &line.to_string())
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn every_number_a_line_carries_is_bounded_where_it_is_loaded() {
        let casino = first_line("casino");
        assert_eq!(refused(casino.clone(), |_| {}), None);
        // Found by issue 20: u32::MAX units passed validation, then a rule player asked for a
        // 3.3 TB outcome space.
        let e = refused(casino.clone(), |s| {
            s["game"]["items"]["items"][0]["count"] = 4_294_967_295u64.into()
        });
        assert_eq!(
            e.as_deref(),
            Some(
                "s.jsonl:3: field `game.items.items[0].count`: count must be from 1 to 1000; \
                 it is 4294967295"
            )
        );
        // Each count in bounds, the space they make too large: 1001³ deals.
        let e = refused(casino.clone(), |s| {
            for item in s["game"]["items"]["items"].as_array_mut().unwrap() {
                item["count"] = 1000.into();
            }
        })
        .unwrap();
        assert!(
            e.contains(
                "field `game.items.items`: the outcome space (every split of the items) \
                 must hold at most 100000 deals; it holds 1003003001"
            ),
            "{e}"
        );
        let e = refused(casino.clone(), |s| {
            s["game"]["items"]["agent_2"]["values"][1] = 4_294_967_295u64.into()
        })
        .unwrap();
        assert!(
            e.contains("field `game.items.agent_2.values[1]`: a value must be from 0 to 1000000"),
            "{e}"
        );
        let e = refused(casino.clone(), |s| s["no_deal_value"] = 1e300.into()).unwrap();
        assert!(
            e.contains("no_deal_value must be a finite number from -1e9 to 1e9; it is 1e300"),
            "{e}"
        );
        let e = refused(casino, |s| {
            let many: Vec<serde_json::Value> = (0..17)
                .map(|i| serde_json::json!({"name": format!("item{i}"), "count": 1}))
                .collect();
            s["game"]["items"]["items"] = many.into();
        })
        .unwrap();
        assert!(
            e.contains("the number of items must be from 1 to 16; it is 17"),
            "{e}"
        );

        let price = first_line("ahp");
        let e = refused(price, |s| {
            s["game"]["price"]["buyer"]["budget"] = 1e300.into()
        })
        .unwrap();
        assert!(
            e.contains("field `game.price.buyer.budget`: budget must be a finite number from 0 to 1e9; it is 1e300"),
            "{e}"
        );

        let job = first_line("job_interview");
        assert_eq!(refused(job.clone(), |_| {}), None);
        let e = refused(job.clone(), |s| {
            s["game"]["issues"]["issues"][0]["min"] = i64::MIN.into()
        })
        .unwrap();
        assert!(
            e.contains("field `game.issues.issues[0].min`: min must be from"),
            "{e}"
        );
        let e = refused(job.clone(), |s| {
            s["game"]["issues"]["issues"][0]["min"] = 0.into();
            s["game"]["issues"]["issues"][0]["max"] = 5000.into();
        })
        .unwrap();
        assert!(
            e.contains("the number of values of an issue must be from 1 to 1000; it is 5001"),
            "{e}"
        );
        // 31 salaries × 4 × 4 × 4 × 5 = 9,920 contracts; 1000 salaries make 320,000.
        let e = refused(job.clone(), |s| {
            s["game"]["issues"]["issues"][0]["max"] = 1019.into();
        })
        .unwrap();
        assert!(
            e.contains("(every contract) must hold at most 100000 deals; it holds 320000"),
            "{e}"
        );
        let e = refused(job, |s| {
            s["game"]["issues"]["worker"]["issues"][2]["valuation"]["weights"][1] = 2.0.into()
        })
        .unwrap();
        assert!(
            e.contains("field `game.issues.worker.issues[2].valuation.weights[1]`: an option's value must be a finite number from 0 to 1; it is 2"),
            "{e}"
        );
    }

    #[test]
    fn a_line_past_the_limit_ends_the_load_naming_it() {
        let good = first_line("ahp").to_string();
        let long = format!("{good}\n{}\n{good}\n", " ".repeat(MAX_INPUT_LINE + 1));
        let e =
            load_scenarios_from_reader("s.jsonl", long.as_bytes(), LoadOptions { skip_bad: true })
                .unwrap_err()
                .to_string();
        assert_eq!(
            e,
            format!("s.jsonl:2: the line is longer than {MAX_INPUT_LINE} bytes, the most a scenario line may hold (is this a scenario file?)")
        );
        let zeros = std::io::BufReader::new(std::io::repeat(0));
        let e = load_scenarios_from_reader("/dev/zero", zeros, LoadOptions::default()).unwrap_err();
        assert!(
            matches!(e, ScenarioError::LineTooLong { line: 1, .. }),
            "{e}"
        );
        let bytes = format!("{good}\n")
            .into_bytes()
            .into_iter()
            .chain([0xff, b'\n'])
            .collect::<Vec<u8>>();
        let report =
            load_scenarios_from_reader("s.jsonl", &bytes[..], LoadOptions { skip_bad: true })
                .unwrap();
        assert_eq!(report.scenarios.len(), 1);
        assert!(report.skipped[0]
            .to_string()
            .starts_with("s.jsonl:2: field `(line)`: not UTF-8"));
    }

    #[test]
    fn skip_bad_lines_loads_the_rest() {
        let dir = std::env::temp_dir().join(format!("dealgym-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.jsonl");
        std::fs::write(&path, format!("{GOOD}\n{{not json\n\n{GOOD}\n")).unwrap();
        assert!(load_scenarios(&path, LoadOptions::default()).is_err());
        let report = load_scenarios(&path, LoadOptions { skip_bad: true }).unwrap();
        assert_eq!(report.scenarios.len(), 2);
        assert_eq!(report.skipped.len(), 1);
        assert!(report.skipped[0].to_string().contains(":2:"));
    }
}
