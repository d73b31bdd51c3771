//! `GET /play/api/setup`: what the page offers — the families with their scenarios (the first
//! ones listed, the rest drawn) and roles, the opponents, the study. It is fixed for the
//! server's life, so it is written once, on the first request, and answered as those bytes.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{json, Value};

use super::super::{Hub, ServeError, Shared};
use super::games::Kind;
use super::PlayOptions;
use crate::scenario::Family;

/// The scenarios listed per family; the rest are reached by a draw.
const LISTED: usize = 200;

#[derive(Serialize)]
struct Listed {
    id: String,
    title: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    roles: Vec<String>,
}

#[derive(Serialize)]
struct FamilyChoice {
    family: String,
    kind: &'static str,
    label: String,
    roles: Vec<String>,
    scenarios: Vec<Listed>,
    more: usize,
    /// A table's or a market's own scripted players (the other seats' player); absent for a
    /// two-party family, which offers the server's opponents.
    #[serde(skip_serializing_if = "Option::is_none")]
    opponents: Option<Vec<Value>>,
}

/// A family's choice, its first scenarios listed; `None` for a family with none.
fn family(
    family: &str,
    kind: Kind,
    label: String,
    all: impl Iterator<Item = Listed>,
) -> Option<FamilyChoice> {
    let all: Vec<Listed> = all.collect();
    let first = all.first()?;
    let roles = first.roles.clone();
    let more = all.len().saturating_sub(LISTED);
    let scripted =
        |spec: String, label: &str| json!({"spec": spec, "label": format!("{spec} — {label}")});
    let opponents = match kind {
        Kind::Party => None,
        Kind::Table => Some(vec![scripted(
            crate::agents::SCRIPTED.to_string(),
            "each party's own scripted player",
        )]),
        Kind::Market => Some(
            crate::negotiator::market::MarketRule::ALL
                .iter()
                .map(|rule| scripted(format!("rule:{}", rule.name()), "a scripted trader"))
                .collect(),
        ),
    };
    Some(FamilyChoice {
        family: family.to_string(),
        kind: kind.name(),
        label,
        roles,
        scenarios: all.into_iter().take(LISTED).collect(),
        more,
        opponents,
    })
}

/// Every family the server serves, two-party families first, then the tables and markets.
fn families(hub: &Hub) -> Vec<FamilyChoice> {
    let mut families: Vec<FamilyChoice> = Family::ALL
        .iter()
        .filter_map(|&f| {
            let scenarios = hub.catalog.scenarios.iter().filter(move |s| s.family == f);
            family(
                f.name(),
                Kind::Party,
                f.name().into(),
                scenarios.map(|s| Listed {
                    id: s.id.clone(),
                    title: s.public.title.clone(),
                    roles: s.roles().iter().map(|r| r.name().to_string()).collect(),
                }),
            )
        })
        .collect();
    let tables = &hub.table_catalog.scenarios;
    if let Some(first) = tables.first() {
        let name = first.family.name();
        families.extend(family(
            name,
            Kind::Table,
            format!("{name} (n-party table)"),
            tables.iter().map(|s| Listed {
                id: s.id.clone(),
                title: s.public.title.clone(),
                roles: s.parties.iter().map(|p| p.role.clone()).collect(),
            }),
        ));
    }
    let markets = &hub.market_catalog.scenarios;
    if let Some(first) = markets.first() {
        let name = first.family.name();
        families.extend(family(
            name,
            Kind::Market,
            name.into(),
            markets.iter().map(|s| Listed {
                id: s.id.clone(),
                title: format!("{} ({} traders)", s.good, s.traders.len()),
                roles: s.traders.iter().map(|t| t.role.clone()).collect(),
            }),
        ));
    }
    families
}

/// The answer, as JSON.
fn written(hub: &Hub, play: &PlayOptions) -> Bytes {
    let mut offered = vec![hub.options.opponent.clone()];
    for spec in play.opponents.iter().chain(hub.options.players.keys()) {
        if !offered.contains(spec) {
            offered.push(spec.clone());
        }
    }
    let opponents: Vec<Value> = offered
        .iter()
        .map(|spec| {
            let label = if hub.options.players.contains_key(spec) {
                format!("{spec} (a configured player)")
            } else {
                spec.clone()
            };
            json!({"spec": spec, "label": label})
        })
        .collect();
    let study = play.study.as_ref().map(|s| {
        json!({"title": s.title, "consent_html": s.consent_html, "games": s.games_per_participant})
    });
    json!({
        "study": study,
        "families": families(hub),
        "opponents": opponents,
        "person_opponent": play.people && play.study.is_none(),
    })
    .to_string()
    .into()
}

pub(super) async fn setup(State(state): State<Shared>) -> Response {
    let hub = &state.hub;
    let Some(play) = &hub.options.play else {
        return ServeError::UnknownRoute("GET /play/api/setup".into()).into_response();
    };
    let body = state.play.setup.get_or_init(|| written(hub, play)).clone();
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}
