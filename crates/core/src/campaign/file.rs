//! Campaign files: JSON lines, one campaign a line, read and checked against the scenarios its
//! deals name. A bad line — a missing deal, an empty campaign, a bad ledger parameter, a
//! repeated id — is an error naming the file, the line and the field.
//!
//! ```json
//! {"id": "ji-best-0", "seat": "learner", "ledger": {"kind": "best_offer"}, "deals": ["job_interview:…", "job_interview:…"]}
//! ```

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ledger::LedgerKind;
use super::standing::has_budget;
use crate::jsonl::from_line;
use crate::limits::{read_line, LineRead, MAX_INPUT_LINE};
use crate::scenario::Scenario;
use crate::vocab::Seat;

/// The most deals one campaign may hold.
pub(crate) const MAX_DEALS: usize = 1000;

/// One line of a campaigns file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignLine {
    /// The campaign's id, unique in its file.
    pub id: String,
    /// The seat that carries the ledger (default `learner`).
    #[serde(default = "learner")]
    pub seat: Seat,
    /// The ledger kind and its parameters.
    pub ledger: LedgerKind,
    /// The deals, in the order they are played: scenario ids.
    pub deals: Vec<String>,
    /// What the campaign stands for (free text).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

fn learner() -> Seat {
    Seat::Learner
}

/// A line as read, its ledger still JSON: [`read_ledger`] reads it naming the exact key that
/// is wrong (serde cannot, inside an internally tagged enum).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine {
    id: String,
    #[serde(default = "learner")]
    seat: Seat,
    ledger: serde_json::Value,
    deals: Vec<String>,
    #[serde(default)]
    description: String,
}

/// Read a `ledger` object: its `kind`, then that kind's parameters; an error names the key
/// (`ledger.kind`, `ledger.money`, …).
fn read_ledger(value: serde_json::Value) -> Result<LedgerKind, (String, String)> {
    use serde::de::DeserializeOwned;
    fn params<T: DeserializeOwned>(
        map: serde_json::Map<String, serde_json::Value>,
    ) -> Result<T, (String, String)> {
        serde_path_to_error::deserialize(serde_json::Value::Object(map)).map_err(|e| {
            let at = e.path().to_string();
            let field = if at == "." {
                "ledger".to_string()
            } else {
                format!("ledger.{at}")
            };
            (field, e.into_inner().to_string())
        })
    }
    let kinds = "best_offer, quantity or budget";
    let serde_json::Value::Object(mut map) = value else {
        return Err((
            "ledger".into(),
            format!("expected an object with a `kind` ({kinds})"),
        ));
    };
    let kind = match map.remove("kind") {
        Some(serde_json::Value::String(kind)) => kind,
        Some(other) => {
            return Err((
                "ledger.kind".into(),
                format!("expected {kinds}, not {other}"),
            ))
        }
        None => return Err(("ledger.kind".into(), format!("missing: {kinds}"))),
    };
    match kind.as_str() {
        "best_offer" => params(map).map(LedgerKind::BestOffer),
        "quantity" => params(map).map(LedgerKind::Quantity),
        "budget" => params(map).map(LedgerKind::Budget),
        other => Err((
            "ledger.kind".into(),
            format!("unknown ledger kind `{other}`: {kinds}"),
        )),
    }
}

/// A campaign read from a file, its deals found.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub id: String,
    pub seat: Seat,
    pub ledger: LedgerKind,
    pub deals: Vec<Arc<Scenario>>,
    /// The file and line it was read from, for messages.
    pub file: String,
    pub line: usize,
}

/// An error reading a campaigns file, naming where it happened.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
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
    #[error("{file}: no campaigns in the file")]
    Empty { file: String },
    #[error("{file}:{line}: the line is longer than {limit} bytes (is this a campaigns file?)")]
    LineTooLong {
        file: String,
        line: usize,
        limit: usize,
    },
}

/// Read every campaign of the file at `path`; `find` gives the scenario of an id (`None`: no
/// such scenario). Blank lines are skipped.
pub fn load_campaigns(
    path: &Path,
    find: impl Fn(&str) -> Option<Arc<Scenario>>,
) -> Result<Vec<Campaign>, CampaignError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| CampaignError::Io {
        file: name.clone(),
        source,
    })?;
    read_campaigns(&name, std::io::BufReader::new(file), find)
}

/// [`load_campaigns`] over text read from `reader`, naming it `file` in errors.
pub(crate) fn read_campaigns(
    file: &str,
    mut reader: impl BufRead,
    find: impl Fn(&str) -> Option<Arc<Scenario>>,
) -> Result<Vec<Campaign>, CampaignError> {
    let mut campaigns = Vec::new();
    let mut ids = HashSet::new();
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        number += 1;
        let bad = |field: &str, message: String| CampaignError::Line {
            file: file.to_string(),
            line: number,
            field: field.to_string(),
            message,
        };
        let read = read_line(&mut reader, &mut buf, MAX_INPUT_LINE).map_err(|source| {
            CampaignError::Io {
                file: file.to_string(),
                source,
            }
        })?;
        match read {
            LineRead::End => break,
            LineRead::TooLong => {
                return Err(CampaignError::LineTooLong {
                    file: file.to_string(),
                    line: number,
                    limit: MAX_INPUT_LINE,
                })
            }
            LineRead::Line(_) => {}
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let raw: RawLine = from_line(&buf).map_err(|f| bad(&f.field, f.message))?;
        let line = CampaignLine {
            id: raw.id,
            seat: raw.seat,
            ledger: read_ledger(raw.ledger).map_err(|(field, message)| bad(&field, message))?,
            deals: raw.deals,
            description: raw.description,
        };
        if line.id.trim().is_empty() {
            return Err(bad("id", "a campaign needs an id".into()));
        }
        if !ids.insert(line.id.clone()) {
            return Err(bad(
                "id",
                format!("`{}` names an earlier campaign too", line.id),
            ));
        }
        line.ledger
            .validate()
            .map_err(|e| bad(&format!("ledger.{}", e.field), e.message))?;
        if line.deals.is_empty() {
            return Err(bad(
                "deals",
                "a campaign needs at least one deal (a scenario id)".into(),
            ));
        }
        if line.deals.len() > MAX_DEALS {
            return Err(bad(
                "deals",
                format!(
                    "{} deals; a campaign may hold at most {MAX_DEALS}",
                    line.deals.len()
                ),
            ));
        }
        let mut deals = Vec::with_capacity(line.deals.len());
        for (i, id) in line.deals.iter().enumerate() {
            let field = format!("deals[{i}]");
            let scenario = find(id).ok_or_else(|| {
                bad(
                    &field,
                    format!("no scenario `{id}` in the scenario files given"),
                )
            })?;
            if matches!(line.ledger, LedgerKind::Budget(_)) && !has_budget(&scenario) {
                return Err(bad(
                    &field,
                    format!(
                        "a budget ledger needs deals with a buyer's budget; `{id}` is a {} scenario",
                        scenario.family
                    ),
                ));
            }
            deals.push(scenario);
        }
        campaigns.push(Campaign {
            id: line.id,
            seat: line.seat,
            ledger: line.ledger,
            deals,
            file: file.to_string(),
            line: number,
        });
    }
    if campaigns.is_empty() {
        return Err(CampaignError::Empty {
            file: file.to_string(),
        });
    }
    Ok(campaigns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{job, price_task};

    fn read(text: &str) -> Result<Vec<Campaign>, String> {
        let job = job();
        let price = Arc::new(Scenario {
            id: "ahp:test:1".into(),
            ..(*price_task(125.0, 100.0, 60.0)).clone()
        });
        read_campaigns("c.jsonl", text.as_bytes(), |id| {
            [&job, &price].into_iter().find(|s| s.id == id).cloned()
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_file_reads_every_campaign_in_order() {
        let id = job().id.clone();
        let text = format!(
            "{{\"id\":\"a\",\"ledger\":{{\"kind\":\"best_offer\",\"start\":5}},\"deals\":[\"{id}\",\"{id}\"]}}\n\n\
             {{\"id\":\"b\",\"seat\":\"opponent\",\"ledger\":{{\"kind\":\"budget\",\"money\":150}},\"deals\":[\"ahp:test:1\"]}}\n"
        );
        let c = read(&text).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].deals.len(), c[0].seat, c[0].line),
            (2, Seat::Learner, 1)
        );
        assert_eq!((c[1].seat, c[1].line), (Seat::Opponent, 3));
        assert_eq!(
            c[1].ledger,
            LedgerKind::Budget(super::super::ledger::Budget { money: 150.0 })
        );
    }

    #[test]
    fn bad_campaigns_name_the_file_the_line_and_the_field() {
        let id = job().id.clone();
        let ok =
            format!("{{\"id\":\"a\",\"ledger\":{{\"kind\":\"best_offer\"}},\"deals\":[\"{id}\"]}}");
        for (line, says) in [
            (
                format!("{{\"id\":\"m\",\"ledger\":{{\"kind\":\"best_offer\"}},\"deals\":[\"{id}\",\"nope:1\"]}}"),
                "c.jsonl:2: field `deals[1]`: no scenario `nope:1`",
            ),
            (
                "{\"id\":\"e\",\"ledger\":{\"kind\":\"best_offer\"},\"deals\":[]}".into(),
                "c.jsonl:2: field `deals`: a campaign needs at least one deal",
            ),
            (
                format!("{{\"id\":\"q\",\"ledger\":{{\"kind\":\"quantity\",\"target\":2,\"shortfall_penalty\":-3}},\"deals\":[\"{id}\"]}}"),
                "c.jsonl:2: field `ledger.shortfall_penalty`: must be a finite number from 0",
            ),
            (
                format!("{{\"id\":\"q\",\"ledger\":{{\"kind\":\"quantity\",\"shortfall_penalty\":3}},\"deals\":[\"{id}\"]}}"),
                "c.jsonl:2: field `ledger`: missing field `target`",
            ),
            (
                r#"{"id":"b","ledger":{"kind":"budget","money":"lots"},"deals":["ahp:test:1"]}"#.into(),
                "c.jsonl:2: field `ledger.money`: invalid type: string \"lots\"",
            ),
            (
                r#"{"id":"b","ledger":{"kind":"budget","money":5,"cash":1},"deals":["ahp:test:1"]}"#.into(),
                "c.jsonl:2: field `ledger.cash`: unknown field `cash`",
            ),
            (
                format!("{{\"id\":\"k\",\"ledger\":{{\"kind\":\"loans\"}},\"deals\":[\"{id}\"]}}"),
                "c.jsonl:2: field `ledger.kind`: unknown ledger kind `loans`",
            ),
            (
                format!("{{\"id\":\"b\",\"ledger\":{{\"kind\":\"budget\",\"money\":100}},\"deals\":[\"{id}\"]}}"),
                "c.jsonl:2: field `deals[0]`: a budget ledger needs deals with a buyer's budget",
            ),
            (
                format!("{{\"id\":\"a\",\"ledger\":{{\"kind\":\"best_offer\"}},\"deals\":[\"{id}\"]}}"),
                "c.jsonl:2: field `id`: `a` names an earlier campaign too",
            ),
            (
                format!("{{\"id\":\"s\",\"seat\":\"buyer\",\"ledger\":{{\"kind\":\"best_offer\"}},\"deals\":[\"{id}\"]}}"),
                "c.jsonl:2: field `seat`: unknown variant `buyer`",
            ),
        ] {
            let err = read(&format!("{ok}\n{line}\n")).unwrap_err();
            assert!(err.starts_with(says), "{err}\nshould start with\n{says}");
        }
        assert_eq!(
            read("\n \n").unwrap_err(),
            "c.jsonl: no campaigns in the file"
        );
    }
}
