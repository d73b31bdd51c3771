//! A family's tools as Python reads them before any scenario is drawn: the core's tool schemas
//! ([`tool_specs`], [`term_schemas`]) of every scenario of the family, merged into one.
//! `dealgym.trl` builds its tool classes from them (TRL reads a class's methods once, for
//! every episode it will play), so a family the core gains gets its TRL tools with no Python
//! written for it, and a change to a family's terms reaches them by itself.

use std::collections::HashMap;

use dealgym_core::protocol::{term_schemas, tool_specs as core_tool_specs, TermSpace, ToolSet};
use dealgym_core::scenario::Scenario;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pythonize::pythonize;
use serde_json::{json, Map, Value};

use crate::catalog::{catalog, family as family_named};
use crate::errors::ScenarioError;

/// One term of a family: its schema merged over the scenarios it appears in.
struct FamilyTerm {
    key: String,
    schema: Value,
    /// How many of the family's scenarios have it.
    seen: usize,
    /// Whether its description differs between scenarios (a count, a room): then it is
    /// described from its merged schema.
    varies: bool,
}

/// The five tools of `family` (the core's `tool_specs`), each `{"name", "description",
/// "parameters"}`, with `make_offer`'s `terms` merged over every scenario of the family (or
/// those of the one scenario `scenario_id` names). `make_offer` also carries `terms`: each term
/// in the grammar's order, `{"key", "schema", "required"}` (`required`: every scenario has
/// it), and `terms_description`, what the terms are as a whole.
#[pyfunction]
#[pyo3(signature = (family, scenario_id=None))]
pub fn tool_specs<'py>(
    py: Python<'py>,
    family: &str,
    scenario_id: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let family = family_named(family)?;
    let catalog = catalog(family)?;
    let scenarios: Vec<&Scenario> = match scenario_id {
        Some(id) => {
            let found = catalog
                .scenarios
                .iter()
                .find(|s| s.id == id)
                .ok_or_else(|| {
                    ScenarioError::new_err(format!(
                        "no scenario `{id}` in the built-in {} scenarios",
                        family.name()
                    ))
                })?;
            vec![found]
        }
        None => catalog.scenarios.iter().map(|s| &**s).collect(),
    };
    let first = scenarios.first().ok_or_else(|| {
        ScenarioError::new_err(format!(
            "the built-in {} scenarios are empty",
            family.name()
        ))
    })?;
    let (terms, terms_description) = family_terms(scenarios.iter().map(|s| s.term_space()));
    let out = PyList::empty(py);
    for spec in core_tool_specs(first.term_space()) {
        let tool = PyDict::new(py);
        tool.set_item("name", spec.name)?;
        tool.set_item("description", spec.description)?;
        let mut parameters = spec.parameters;
        if spec.name == "make_offer" {
            let listed = PyList::empty(py);
            let mut properties = Map::new();
            let mut required = Vec::new();
            for term in &terms {
                let every = term.seen == scenarios.len();
                let entry = PyDict::new(py);
                entry.set_item("key", &term.key)?;
                entry.set_item("schema", pythonize(py, &term.schema)?)?;
                entry.set_item("required", every)?;
                listed.append(entry)?;
                properties.insert(term.key.clone(), term.schema.clone());
                if every {
                    required.push(Value::String(term.key.clone()));
                }
            }
            parameters["properties"]["terms"] = json!({
                "type": "object",
                "description": terms_description,
                "properties": properties,
                "required": required,
                "additionalProperties": false
            });
            tool.set_item("terms", listed)?;
            tool.set_item("terms_description", terms_description)?;
        }
        tool.set_item("parameters", pythonize(py, &parameters)?)?;
        out.append(tool)?;
    }
    Ok(out)
}

/// The terms of every space, in the order they first appear (each space's in the grammar's
/// order), each schema merged over the spaces that have it, and the first space's description
/// of the terms as a whole (a family's spaces are of one kind).
fn family_terms<'a>(
    spaces: impl Iterator<Item = TermSpace<'a>>,
) -> (Vec<FamilyTerm>, &'static str) {
    let mut terms: Vec<FamilyTerm> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut whole = "";
    for space in spaces {
        let (schemas, description) = term_schemas(space, ToolSet::Bilateral);
        if whole.is_empty() {
            whole = description;
        }
        for (key, schema) in schemas {
            match at.get(&key) {
                Some(&i) => {
                    let term = &mut terms[i];
                    term.seen += 1;
                    merge(&mut term.schema, &schema, &mut term.varies);
                }
                None => {
                    at.insert(key.clone(), terms.len());
                    terms.push(FamilyTerm {
                        key,
                        schema,
                        seen: 1,
                        varies: false,
                    });
                }
            }
        }
    }
    for term in terms.iter_mut().filter(|t| t.varies) {
        let described = format!(
            "{}; each scenario's own bounds are in its setup.",
            describe(&term.schema)
        );
        term.schema["description"] = Value::String(capitalized(&described));
    }
    (terms, whole)
}

/// Widen `into` to hold `other` too: the lower bound the least, the upper the greatest, the
/// options joined; a description that differs sets `varies`. A type that differs keeps the
/// first (the engine judges each scenario's terms by its own schema anyway).
fn merge(into: &mut Value, other: &Value, varies: &mut bool) {
    if into == other {
        return;
    }
    match (into, other) {
        (Value::Object(mine), Value::Object(theirs)) => {
            for (key, value) in theirs {
                let Some(held) = mine.get_mut(key) else {
                    mine.insert(key.clone(), value.clone());
                    continue;
                };
                match key.as_str() {
                    "description" => *varies |= held != value,
                    "minimum" | "exclusiveMinimum" => {
                        if value.as_f64() < held.as_f64() {
                            *held = value.clone();
                        }
                    }
                    "maximum" => {
                        if value.as_f64() > held.as_f64() {
                            *held = value.clone();
                        }
                    }
                    "enum" => {
                        if let (Value::Array(options), Some(more)) = (held, value.as_array()) {
                            for option in more {
                                if !options.contains(option) {
                                    options.push(option.clone());
                                }
                            }
                        }
                    }
                    _ => merge(held, value, varies),
                }
            }
        }
        (Value::Array(mine), Value::Array(theirs)) if mine.len() == theirs.len() => {
            for (held, value) in mine.iter_mut().zip(theirs) {
                merge(held, value, varies);
            }
        }
        _ => {}
    }
}

/// A schema in words: its type, its bounds, its options.
fn describe(schema: &Value) -> String {
    if let Some(any) = schema["anyOf"].as_array() {
        return any.iter().map(describe).collect::<Vec<_>>().join(", or ");
    }
    if let Some(options) = schema["enum"].as_array() {
        let options: Vec<String> = options.iter().map(Value::to_string).collect();
        return format!("one of {}", options.join(", "));
    }
    let kind = match schema["type"].as_str() {
        Some("integer") => "a whole number",
        Some("number") => "a number",
        Some("string") => "text",
        _ => "a value",
    };
    let low = schema["minimum"]
        .as_f64()
        .map(|v| format!("from {v}"))
        .or_else(|| {
            schema["exclusiveMinimum"]
                .as_f64()
                .map(|v| format!("above {v}"))
        });
    let high = schema["maximum"].as_f64().map(|v| format!("up to {v}"));
    [Some(kind.to_string()), low, high]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
