//! Reading scenario files (JSONL) and checking every scenario before it is played.
//!
//! A bad line is reported with the file, the line number and the field; nothing panics on bad
//! input, and with [`LoadOptions::skip_bad`] the rest of the file still loads.

use std::io::BufRead;
use std::path::Path;

use crate::protocol::IssueRange;

use super::{Game, IssuePreferences, Scenario, Valuation, SCENARIO_SCHEMA};

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
}

/// How to treat bad lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Report bad lines and load the rest, instead of stopping at the first.
    pub skip_bad: bool,
}

/// The scenarios read from a file, and the lines skipped (only with `skip_bad`).
#[derive(Debug, Default)]
pub struct LoadReport {
    pub scenarios: Vec<Scenario>,
    pub skipped: Vec<ScenarioError>,
}

/// Load every scenario of a JSONL file. Blank lines are ignored.
pub fn load_scenarios(path: &Path, options: LoadOptions) -> Result<LoadReport, ScenarioError> {
    let file_name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| ScenarioError::Io {
        file: file_name.clone(),
        source,
    })?;
    load_scenarios_from_reader(&file_name, std::io::BufReader::new(file), options)
}

/// Load every scenario of JSONL text read from `reader`, naming it `file_name` in errors: the
/// file loader's body, for bytes that come from elsewhere (a test's, a fuzzer's). Bytes that
/// are not UTF-8 are an [`ScenarioError::Io`] naming the file.
pub fn load_scenarios_from_reader(
    file_name: &str,
    reader: impl BufRead,
    options: LoadOptions,
) -> Result<LoadReport, ScenarioError> {
    let mut report = LoadReport::default();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|source| ScenarioError::Io {
            file: file_name.to_string(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_scenario_line(file_name, i + 1, &line) {
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
    let de = &mut serde_json::Deserializer::from_str(text);
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let message = e.inner().to_string();
        // "." is the line itself; "" an unknown key with an empty name, at the top level.
        let field = match field.as_str() {
            "." => "(line)".to_string(),
            "" => "(a key named \"\")".to_string(),
            _ => field,
        };
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
    pub field: String,
    pub message: String,
}

impl InvalidScenario {
    fn at(field: String, message: String) -> InvalidScenario {
        InvalidScenario { field, message }
    }
}

/// Check what JSON types cannot: versions, the family's domain, sizes that must agree, values in
/// range.
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
    if !s.no_deal_value.is_finite() {
        return bad("no_deal_value", "must be a finite number".into());
    }
    match &s.game {
        Game::Price {
            listing_price,
            buyer,
            seller,
        } => {
            for (field, v) in [
                ("game.price.listing_price", *listing_price),
                ("game.price.buyer.budget", buyer.budget),
                ("game.price.seller.cost", seller.cost),
            ] {
                if !v.is_finite() || v < 0.0 {
                    return bad(field, format!("must be a non-negative number, got {v}"));
                }
            }
            if *listing_price <= 0.0 {
                return bad("game.price.listing_price", "must be positive".into());
            }
        }
        Game::Items {
            items,
            agent_1,
            agent_2,
        } => {
            if items.is_empty() {
                return bad("game.items.items", "needs at least one item".into());
            }
            for (i, item) in items.iter().enumerate() {
                if item.count == 0 || item.name.trim().is_empty() {
                    return bad(
                        &format!("game.items.items[{i}]"),
                        "needs a name and a count of at least 1".into(),
                    );
                }
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
            }
        }
        Game::Issues {
            issues,
            worker,
            recruiter,
        } => {
            if issues.is_empty() {
                return bad("game.issues.issues", "needs at least one issue".into());
            }
            for (i, issue) in issues.iter().enumerate() {
                let ok = match &issue.range {
                    IssueRange::Integer { min, max } => min < max,
                    IssueRange::Discrete { options } => !options.is_empty(),
                };
                if !ok || issue.key.trim().is_empty() {
                    return bad(
                        &format!("game.issues.issues[{i}]"),
                        "needs a key and min < max or at least one option".into(),
                    );
                }
            }
            for (side, prefs) in [("worker", worker), ("recruiter", recruiter)] {
                check_preferences(side, prefs, issues)?;
            }
        }
    }
    Ok(())
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
        if !pref.weight.is_finite() || pref.weight < 0.0 {
            return Err(InvalidScenario::at(
                format!("{field}.weight"),
                format!("must be a non-negative number, got {}", pref.weight),
            ));
        }
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
