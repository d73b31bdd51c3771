//! Job Interview: one scenario per dialogue record (Yamaguchi et al. 2021).
//!
//! Five issues — salary, position, company, workplace, weekly days off — each side with its own
//! issue weights and option weights. Integer issues rise for the worker and fall for the recruiter;
//! position is valued jointly with company where the data says so (`relatedTo`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{file_name, read_json, split_from_name, ImportError, ImportReport};
use crate::protocol::{parse_terms, IssueRange, IssueSpec, TermSpace, Terms};
use crate::scenario::{
    DealSpace, Family, HumanEnding, HumanOutcome, IssuePreference, IssuePreferences, PublicInfo,
    Role, Scenario, Valuation, SCENARIO_SCHEMA,
};

/// The issues in the order of the action grammar: (key, the dataset's name).
const ISSUES: [(&str, &str); 5] = [
    ("salary", "Salary"),
    ("position", "Position"),
    ("company", "Company"),
    ("workplace", "Workplace"),
    ("holiday", "Weekly holiday"),
];

/// One dialogue record as the dataset writes it (read by the scenario importer and by
/// `crate::dialogues`, which replays its comments and solutions).
#[derive(Deserialize)]
pub struct Record {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
    pub users: Vec<User>,
    #[serde(default)]
    pub solutions: Vec<Solution>,
    /// The chat messages.
    #[serde(default)]
    pub comments: Vec<Comment>,
}

#[derive(Deserialize)]
pub struct User {
    #[serde(default)]
    pub id: String,
    /// `worker` or `recruiter`.
    pub role: String,
    utilities: Vec<Utility>,
}

/// One chat message.
#[derive(Deserialize)]
pub struct Comment {
    pub body: String,
    pub user_id: String,
    pub created_at: String,
}

#[derive(Deserialize)]
struct Utility {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    min: Option<i64>,
    #[serde(default)]
    max: Option<i64>,
    weight: f64,
    #[serde(default, rename = "relatedTo")]
    related_to: Option<String>,
    #[serde(default)]
    options: Vec<OptionWeight>,
}

#[derive(Deserialize)]
struct OptionWeight {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    names: Option<std::collections::BTreeMap<String, String>>,
    weight: f64,
}

/// A proposed contract: by `user_id`, at `created_at`; `accepted` once the other side took it.
#[derive(Deserialize)]
pub struct Solution {
    #[serde(default)]
    pub accepted: Option<bool>,
    body: std::collections::BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub created_at: String,
}

/// Every record of one raw file.
pub fn read(path: &Path) -> Result<Vec<Record>, ImportError> {
    read_json(path)
}

/// Whether a record is left out (an aborted negotiation).
pub fn is_aborted(r: &Record) -> bool {
    r.status.as_deref() == Some("aborted")
}

pub(super) fn import(files: &[PathBuf]) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    let mut skipped = 0;
    for path in files {
        let split = split_from_name(path);
        let file = file_name(path);
        for r in read(path)? {
            if is_aborted(&r) {
                skipped += 1;
                continue;
            }
            report
                .scenarios
                .push(scenario(path, &file, split.clone(), r)?);
        }
    }
    report.notes.push(format!(
        "job_interview: {} dialogues ({skipped} aborted records skipped)",
        report.scenarios.len()
    ));
    Ok(report)
}

fn scenario(
    path: &Path,
    file: &str,
    split: Option<String>,
    r: Record,
) -> Result<Scenario, ImportError> {
    let fail = |message: String| ImportError::record(path, &r.id, message);
    let user = |role: &str| {
        r.users
            .iter()
            .find(|u| u.role == role)
            .ok_or_else(|| fail(format!("no {role} among the users")))
    };
    let (worker, recruiter) = (user("worker")?, user("recruiter")?);
    let issues = issue_specs(worker).map_err(fail)?;
    let prefs = |u: &User, role: Role| preferences(u, role, &issues).map_err(fail);
    let game = DealSpace::Issues {
        worker: prefs(worker, Role::Worker)?,
        recruiter: prefs(recruiter, Role::Recruiter)?,
        issues,
    };
    let DealSpace::Issues { issues, .. } = &game else {
        unreachable!("built just above")
    };
    let human = human_outcome(&r, issues).map_err(fail)?;
    Ok(Scenario {
        schema: SCENARIO_SCHEMA,
        id: format!("job_interview:{}", r.id),
        family: Family::JobInterview,
        split,
        source: format!("job_interview/{file} id={}", r.id),
        public: PublicInfo {
            title: "Job offer".into(),
            category: Some("job interview".into()),
            description: "A recruiter and an applicant (the worker) agree on the terms of a job offer: \
                          salary (in thousands of dollars a year), position, company, workplace and \
                          weekly days off. One contract binds both of them."
                .into(),
        },
        game,
        no_deal_value: 0.0,
        flags: vec![],
        human,
    })
}

fn find<'u>(u: &'u User, name: &str) -> Result<&'u Utility, String> {
    u.utilities
        .iter()
        .find(|x| x.name == name)
        .ok_or_else(|| format!("{}: no `{name}` issue", u.role))
}

/// The issue space, with option lists in the order the data gives them.
fn issue_specs(u: &User) -> Result<Vec<IssueSpec>, String> {
    let mut specs = Vec::new();
    for (key, label) in ISSUES {
        let x = find(u, label)?;
        let range = match x.kind.as_str() {
            "INTEGER" => IssueRange::Integer {
                min: x.min.ok_or_else(|| format!("{label}: no min"))?,
                max: x.max.ok_or_else(|| format!("{label}: no max"))?,
            },
            "DISCRETE" => {
                let mut options: Vec<String> = Vec::new();
                for o in &x.options {
                    let name = match (&o.name, &o.names) {
                        (Some(n), _) => n.clone(),
                        (None, Some(names)) => names
                            .get(label)
                            .cloned()
                            .ok_or_else(|| format!("{label}: option without its name"))?,
                        _ => return Err(format!("{label}: option without a name")),
                    };
                    if !options.contains(&name) {
                        options.push(name);
                    }
                }
                IssueRange::Discrete { options }
            }
            other => return Err(format!("{label}: unknown issue type `{other}`")),
        };
        specs.push(IssueSpec {
            key: key.into(),
            label: label.into(),
            range,
        });
    }
    Ok(specs)
}

fn preferences(u: &User, role: Role, issues: &[IssueSpec]) -> Result<IssuePreferences, String> {
    let mut out = Vec::new();
    for spec in issues {
        let x = find(u, &spec.label)?;
        let valuation = match &spec.range {
            IssueRange::Integer { .. } if role == Role::Worker => Valuation::Rising,
            IssueRange::Integer { .. } => Valuation::Falling,
            IssueRange::Discrete { options } => match &x.related_to {
                Some(partner_label) => {
                    let partner = issues
                        .iter()
                        .find(|is| &is.label == partner_label)
                        .ok_or_else(|| {
                            format!("{}: related to unknown `{partner_label}`", spec.label)
                        })?;
                    let IssueRange::Discrete {
                        options: partner_options,
                    } = &partner.range
                    else {
                        return Err(format!("{}: related to a non-discrete issue", spec.label));
                    };
                    let mut weights = vec![vec![0.0; partner_options.len()]; options.len()];
                    for o in &x.options {
                        let names = o
                            .names
                            .as_ref()
                            .ok_or_else(|| format!("{}: joint option without names", spec.label))?;
                        let own = names
                            .get(&spec.label)
                            .and_then(|n| options.iter().position(|o| o == n));
                        let other = names
                            .get(partner_label)
                            .and_then(|n| partner_options.iter().position(|o| o == n));
                        let (Some(i), Some(j)) = (own, other) else {
                            return Err(format!(
                                "{}: joint option {names:?} not in the option lists",
                                spec.label
                            ));
                        };
                        weights[i][j] = o.weight;
                    }
                    Valuation::Joint {
                        with: partner.key.clone(),
                        weights,
                    }
                }
                None => {
                    let mut weights = vec![0.0; options.len()];
                    for o in &x.options {
                        let name = o.name.as_deref().unwrap_or_default();
                        let i = options.iter().position(|opt| opt == name).ok_or_else(|| {
                            format!("{}: option `{name}` not in the list", spec.label)
                        })?;
                        weights[i] = o.weight;
                    }
                    Valuation::Options { weights }
                }
            },
        };
        out.push(IssuePreference {
            weight: x.weight,
            valuation,
        });
    }
    Ok(IssuePreferences { issues: out })
}

/// A solution's contract, written in the grammar and read back to check it fits the space.
pub fn solution_terms(solution: &Solution, issues: &[IssueSpec]) -> Result<Terms, String> {
    let mut text = Vec::new();
    for spec in issues {
        let v = solution
            .body
            .get(&spec.label)
            .ok_or_else(|| format!("solution lacks {}", spec.label))?;
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        text.push(format!("{}:{}", spec.key, v));
    }
    let (terms, _) = parse_terms(&text.join(" "), TermSpace::Issues(issues))
        .map_err(|e| format!("solution does not fit the issues: {e}"))?;
    Ok(terms)
}

/// The accepted solution, written in the grammar and read back to check it fits the space.
fn human_outcome(r: &Record, issues: &[IssueSpec]) -> Result<Vec<HumanOutcome>, String> {
    let accepted: Vec<&Solution> = r
        .solutions
        .iter()
        .filter(|s| s.accepted == Some(true))
        .collect();
    let Some(solution) = accepted.last() else {
        return Ok(vec![HumanOutcome {
            dialogue: r.id.clone(),
            ending: HumanEnding::NoDeal,
            terms: None,
            view: None,
            points: vec![],
        }]);
    };
    let terms = solution_terms(solution, issues).map_err(|e| format!("accepted {e}"))?;
    Ok(vec![HumanOutcome {
        dialogue: r.id.clone(),
        ending: HumanEnding::Deal,
        terms: Some(terms.render(TermSpace::Issues(issues))),
        view: Some(Role::Worker),
        points: vec![],
    }])
}
