//! CaSiNo: one scenario per dialogue (Chawla et al. 2021).
//!
//! Three packages each of food, water and firewood; each participant's priorities High/Medium/Low
//! are worth 5/4/3 points per package. The participants' own reasons for their priorities are kept
//! (privately) as persona text; the recorded deal and points are kept as the human outcome.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{file_name, read_json, split_from_name, ImportError, ImportReport};
use crate::protocol::{ItemSpec, TermSpace, Terms};
use crate::scenario::{
    DealSpace, Family, HumanEnding, HumanOutcome, ItemValues, PublicInfo, RecordedPoints, Role,
    Scenario, SCENARIO_SCHEMA,
};

const ITEMS: [&str; 3] = ["food", "water", "firewood"];
const UNITS: u32 = 3;

/// The chat-log texts that are deal moves, not messages.
pub const SUBMIT: &str = "Submit-Deal";
pub const ACCEPT: &str = "Accept-Deal";
pub const REJECT: &str = "Reject-Deal";
pub const WALK_AWAY: &str = "Walk-Away";

/// One dialogue as the dataset writes it (read by the scenario importer and by
/// `crate::dialogues`, which replays its chat log).
#[derive(Deserialize)]
pub struct Dialogue {
    dialogue_id: serde_json::Value,
    pub chat_logs: Vec<Message>,
    participant_info: BTreeMap<String, Participant>,
    /// Strategy labels of the messages of the annotated dialogues: `[text, "label,label"]`,
    /// one per chat message that is not a deal move, in order.
    #[serde(default)]
    pub annotations: Vec<(String, String)>,
}

impl Dialogue {
    /// The dataset's `dialogue_id`, as text.
    pub fn id(&self) -> String {
        match &self.dialogue_id {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

#[derive(Deserialize)]
pub struct Message {
    pub text: String,
    #[serde(default)]
    task_data: serde_json::Value,
    /// The participant: `mturk_agent_1` or `mturk_agent_2`.
    pub id: String,
}

#[derive(Deserialize)]
struct Participant {
    value2issue: BTreeMap<String, String>,
    #[serde(default)]
    value2reason: BTreeMap<String, String>,
    outcomes: Outcomes,
}

#[derive(Deserialize)]
struct Outcomes {
    points_scored: f64,
}

/// Every dialogue of one raw file.
pub fn read(path: &Path) -> Result<Vec<Dialogue>, ImportError> {
    read_json(path)
}

pub(super) fn import(files: &[PathBuf]) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    for path in files {
        let split = split_from_name(path);
        let dialogues = read(path)?;
        let file = file_name(path);
        for d in dialogues {
            report
                .scenarios
                .push(scenario(path, &file, split.clone(), d)?);
        }
    }
    report
        .notes
        .push(format!("casino: {} dialogues", report.scenarios.len()));
    Ok(report)
}

/// The role of a participant id (`mturk_agent_1` → `agent_1`).
pub fn role_of(agent: &str) -> Option<Role> {
    match agent {
        "mturk_agent_1" => Some(Role::Agent1),
        "mturk_agent_2" => Some(Role::Agent2),
        _ => None,
    }
}

fn scenario(
    path: &Path,
    file: &str,
    split: Option<String>,
    d: Dialogue,
) -> Result<Scenario, ImportError> {
    let id = d.id();
    let fail = |message: String| ImportError::record(path, format!("dialogue_id {id}"), message);
    let items: Vec<ItemSpec> = ITEMS
        .iter()
        .map(|n| ItemSpec {
            name: n.to_string(),
            count: UNITS,
        })
        .collect();
    let mut sides = BTreeMap::new();
    let mut points = Vec::new();
    for (agent, p) in &d.participant_info {
        let role = role_of(agent).ok_or_else(|| fail(format!("unknown participant `{agent}`")))?;
        let mut values = vec![0; ITEMS.len()];
        let mut reasons = vec![String::new(); ITEMS.len()];
        for (priority, issue) in &p.value2issue {
            let points_per_unit = match priority.as_str() {
                "High" => 5,
                "Medium" => 4,
                "Low" => 3,
                other => return Err(fail(format!("{agent}: unknown priority `{other}`"))),
            };
            let i = item_index(issue)
                .ok_or_else(|| fail(format!("{agent}: unknown item `{issue}`")))?;
            values[i] = points_per_unit;
            if let Some(reason) = p.value2reason.get(priority) {
                reasons[i] = reason.trim().to_string();
            }
        }
        if values.contains(&0) {
            return Err(fail(format!(
                "{agent}: priorities do not cover food, water and firewood"
            )));
        }
        reasons.retain(|r| !r.is_empty());
        sides.insert(role, ItemValues { values, reasons });
        points.push(RecordedPoints {
            role,
            points: p.outcomes.points_scored,
        });
    }
    let (Some(agent_1), Some(agent_2)) = (sides.remove(&Role::Agent1), sides.remove(&Role::Agent2))
    else {
        return Err(fail("needs both mturk_agent_1 and mturk_agent_2".into()));
    };
    let human = human_outcome(&items, &d.chat_logs, &id).map_err(fail)?;
    Ok(Scenario {
        schema: SCENARIO_SCHEMA,
        id: format!("casino:{id}"),
        family: Family::Casino,
        split,
        source: format!("casino/{file} dialogue_id={id}"),
        public: PublicInfo {
            title: "Campsite supplies".into(),
            category: Some("camping".into()),
            description: "You and a fellow camper at the neighbouring campsite are about to go on a camping trip. \
                          There are 3 packages each of food, water and firewood to share between the two of you; \
                          every package goes to one of you."
                .into(),
        },
        game: DealSpace::Items { items, agent_1, agent_2 },
        no_deal_value: 0.0,
        flags: vec![],
        human: vec![HumanOutcome { points, ..human }],
    })
}

fn item_index(name: &str) -> Option<usize> {
    ITEMS
        .iter()
        .position(|i| i.eq_ignore_ascii_case(name.trim()))
}

/// The last deal action decides the outcome: an accepted submission, a walk-away, or nothing.
fn human_outcome(items: &[ItemSpec], logs: &[Message], id: &str) -> Result<HumanOutcome, String> {
    let mut last_submit: Option<(Role, Vec<u32>)> = None;
    let mut ending = HumanEnding::NoDeal;
    let mut agreed: Option<(Role, Vec<u32>)> = None;
    for m in logs {
        match m.text.as_str() {
            SUBMIT => {
                let role =
                    role_of(&m.id).ok_or_else(|| format!("Submit-Deal by unknown `{}`", m.id))?;
                let shares = submitted_shares(m)?;
                last_submit = Some((role, shares));
            }
            ACCEPT => {
                agreed = last_submit.clone();
                ending = HumanEnding::Deal;
            }
            REJECT => ending = HumanEnding::NoDeal,
            WALK_AWAY => ending = HumanEnding::WalkAway,
            _ => {}
        }
    }
    let (terms, view) = match (ending, agreed) {
        (HumanEnding::Deal, Some((role, shares))) => (
            Some(Terms::Items(shares).render(TermSpace::Items(items))),
            Some(role),
        ),
        (HumanEnding::Deal, None) => {
            return Err("Accept-Deal with no submitted deal before it".into())
        }
        _ => (None, None),
    };
    Ok(HumanOutcome {
        dialogue: id.to_string(),
        ending,
        terms,
        view,
        points: vec![],
    })
}

/// The shares a Submit-Deal gives its submitter (`issue2youget`), in item order.
pub fn submitted_shares(m: &Message) -> Result<Vec<u32>, String> {
    let gets = m
        .task_data
        .get("issue2youget")
        .ok_or("Submit-Deal without issue2youget")?;
    let mut shares = vec![0u32; ITEMS.len()];
    for (i, name) in ITEMS.iter().enumerate() {
        let key = capitalized(name);
        let v = gets
            .get(&key)
            .ok_or_else(|| format!("Submit-Deal without {key}"))?;
        shares[i] = match v {
            serde_json::Value::String(s) => s.trim().parse().map_err(|_| format!("{key} `{s}`"))?,
            serde_json::Value::Number(n) => n.as_u64().ok_or_else(|| format!("{key} {n}"))? as u32,
            other => return Err(format!("{key} {other}")),
        };
    }
    Ok(shares)
}

fn capitalized(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}
