//! Reference pages generated from the types: the config file ([`FileConfig`]) and the episode
//! record ([`EpisodeRecord`]), each rendered as Markdown from the JSON schema derived from its
//! type (`schemars`), so a page cannot drift from what is read and written. One section per
//! type: where it sits in the file, its doc comment, and a table of its fields (type, whether it
//! is required, its default, its doc comment) or of its values.
//!
//! This module renders text only, for `dealgym docs config|record` and the book's reference
//! pages (`docs/src/reference/`).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

use crate::record::{EpisodeRecord, TableRecord};
use crate::run::FileConfig;

/// The config file's schema, as it is read: a key with a default may be left out.
pub(crate) fn config_schema() -> Schema {
    schema_of::<FileConfig>(Contract::Deserialize)
}

/// The record's schema, as it is written: a key that is skipped when empty is not required.
pub(crate) fn record_schema() -> Schema {
    schema_of::<EpisodeRecord>(Contract::Serialize)
}

/// The n-party table record's schema, as it is written.
pub(crate) fn table_record_schema() -> Schema {
    schema_of::<TableRecord>(Contract::Serialize)
}

fn schema_of<T: JsonSchema>(contract: Contract) -> Schema {
    SchemaSettings::draft2020_12()
        .with(|s| s.contract = contract)
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The reference page of the `--config FILE.toml` file.
pub fn config_reference() -> String {
    let intro =
        "The `--config FILE.toml` file of `dealgym run`, `eval` and `serve`, generated from \
        the types that read it (`dealgym docs config`). Every table and every key is optional \
        unless marked required; a key left out takes its default. Unknown keys are refused. A \
        preset (`--preset`, or `preset =` in the file) sets some keys first; the file's go over \
        them, and command-line flags over both.";
    Page::new(config_schema(), Style::Toml).render("Config reference", intro)
}

/// The reference page of the episode record (one JSON object per line of a record file).
pub fn record_reference() -> String {
    let intro = "One episode, as one JSON line of a record file (the book's `design/record.md`), generated from the \
        types that write it (`dealgym docs record`). A required field is always written; the \
        others are left out when they are empty, as their descriptions say, so records written \
        before a field existed read the same. `timing` is the only part that differs between \
        two runs with the same seed and the same model outputs.";
    Page::new(record_schema(), Style::Json).render("Record reference", intro)
}

/// The reference page of the n-party table record (`"kind": "table"`).
pub fn table_record_reference() -> String {
    let intro = "One n-party episode (a table: the `deliberation` family), as one JSON line of a \
        record file, generated from the types that write it (`dealgym docs table-record`). It \
        is told from a two-party record by `kind`, which two-party records do not have. Seats \
        are listed by role in the game's order; turns, offers and the outcome name a seat by \
        its index in that list. `latency_ms` is the only part that differs between two runs \
        with the same seed and the same model outputs.";
    Page::new(table_record_schema(), Style::Json).render("Table record reference", intro)
}

/// How a page names the place a type sits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// TOML tables: `[rewards.judge]`, `[players.NAME]`, `[[rewards.rules]]`.
    Toml,
    /// JSON paths: `outcome.metrics`, `turns[].action`.
    Json,
}

/// One step from the root to a value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    /// An element of an array.
    Item,
    /// A value of a map, under a name the user picks.
    Entry,
}

/// Paths shown per type, at most.
const MAX_PATHS: usize = 6;

struct Page {
    root: Value,
    defs: Map<String, Value>,
    style: Style,
}

impl Page {
    fn new(schema: Schema, style: Style) -> Page {
        let mut root = schema.to_value();
        let defs = match root.as_object_mut().and_then(|o| o.remove("$defs")) {
            Some(Value::Object(defs)) => defs,
            _ => Map::new(),
        };
        Page { root, defs, style }
    }

    fn render(&self, title: &str, intro: &str) -> String {
        let (order, paths) = self.sections();
        let mut out = format!("# {title}\n\n{intro}\n");
        let root_name = self.root["title"].as_str().unwrap_or("root").to_string();
        self.section(&mut out, &root_name, &self.root, &[]);
        for name in &order {
            let here = paths.get(name).map(Vec::as_slice).unwrap_or_default();
            self.section(&mut out, name, &self.defs[name], here);
        }
        out
    }

    /// The types the root uses, in the order a reader meets them (breadth first, fields in
    /// the schema's order), each with the paths it is found at.
    fn sections(&self) -> (Vec<String>, BTreeMap<String, Vec<Vec<Step>>>) {
        let mut order = Vec::new();
        let mut paths: BTreeMap<String, Vec<Vec<Step>>> = BTreeMap::new();
        let mut queue = vec![(self.root.clone(), Vec::new())];
        let mut seen = HashSet::new();
        while !queue.is_empty() {
            let mut next = Vec::new();
            for (schema, path) in queue {
                let mut found = Vec::new();
                refs_in(&schema, &path, &mut found);
                for (name, at) in found {
                    let known = paths.entry(name.clone()).or_default();
                    if known.len() < MAX_PATHS + 1 {
                        known.push(at.clone());
                    }
                    if seen.insert(name.clone()) {
                        order.push(name.clone());
                        if let Some(def) = self.defs.get(&name) {
                            next.push((def.clone(), at));
                        }
                    }
                }
            }
            queue = next;
        }
        // A type never reached from the root is still documented (last).
        for name in self.defs.keys() {
            if seen.insert(name.clone()) {
                order.push(name.clone());
            }
        }
        (order, paths)
    }

    fn section(&self, out: &mut String, name: &str, schema: &Value, paths: &[Vec<Step>]) {
        let _ = write!(out, "\n## {name}\n\n");
        if !paths.is_empty() {
            let shown: Vec<String> = paths
                .iter()
                .take(MAX_PATHS)
                .map(|p| format!("`{}`", self.place(p, schema)))
                .collect();
            let more = if paths.len() > MAX_PATHS { ", …" } else { "" };
            let _ = write!(out, "At {}{more}.\n\n", shown.join(", "));
        }
        if let Some(text) = schema.get("description").and_then(Value::as_str) {
            let _ = write!(out, "{}\n\n", plain_links(text));
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            self.fields(out, schema, properties);
            // A flattened enum beside the fields: its shapes too.
            if let Some(variants) = variants_of(schema) {
                out.push_str("\nWith one of:\n\n");
                self.variants(out, variants);
            }
        } else if let Some(variants) = variants_of(schema) {
            self.variants(out, variants);
        } else {
            let _ = writeln!(out, "A {}.", self.type_name(schema));
        }
    }

    fn fields(&self, out: &mut String, schema: &Value, properties: &Map<String, Value>) {
        let required: HashSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str("| Field | Type | Required | Default | Description |\n");
        out.push_str("|---|---|---|---|---|\n");
        for (key, field) in properties {
            let _ = writeln!(
                out,
                "| `{key}` | {} | {} | {} | {} |",
                self.type_name(field),
                if required.contains(key.as_str()) {
                    "yes"
                } else {
                    ""
                },
                self.default_of(field),
                cell(field.get("description").and_then(Value::as_str)),
            );
        }
    }

    /// An enum: one row per value (a name, or an object of one shape).
    fn variants(&self, out: &mut String, variants: &[Value]) {
        out.push_str("| Value | Description |\n|---|---|\n");
        for variant in variants {
            if !variant.is_object() {
                // A value of `enum`.
                let _ = writeln!(out, "| `{variant}` |  |");
                continue;
            }
            let shape = match variant.get("properties").and_then(Value::as_object) {
                Some(properties) => {
                    let fields: Vec<String> = properties
                        .iter()
                        .map(|(k, v)| format!("`{k}`: {}", self.type_name(v)))
                        .collect();
                    format!("{{{}}}", fields.join(", "))
                }
                None => self.type_name(variant),
            };
            let _ = writeln!(
                out,
                "| {shape} | {} |",
                cell(variant.get("description").and_then(Value::as_str))
            );
        }
    }

    /// A type in a few words, linking to its section where it has one.
    fn type_name(&self, schema: &Value) -> String {
        let Some(object) = schema.as_object() else {
            return "any JSON".into();
        };
        if let Some(name) = ref_name(schema) {
            return format!("[{name}](#{})", name.to_lowercase());
        }
        if let Some(value) = object.get("const") {
            return format!("`{value}`");
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            let names: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            return one_of_words(&names);
        }
        if let Some(options) = object
            .get("anyOf")
            .or_else(|| object.get("oneOf"))
            .and_then(Value::as_array)
        {
            let names: Vec<String> = options.iter().map(|o| self.type_name(o)).collect();
            return one_of_words(&names);
        }
        let types: Vec<&str> = match object.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return "any JSON".into(),
        };
        let names: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "array" => match object.get("items").map(|items| self.type_name(items)) {
                    Some(item) if item.contains(" or ") => format!("array of ({item})"),
                    Some(item) => format!("array of {item}"),
                    None => "array".into(),
                },
                "object" => self.object_name(object),
                "integer" if object.get("minimum").and_then(Value::as_f64) == Some(0.0) => {
                    "integer ≥ 0".into()
                }
                "string" => match object.get("pattern").and_then(Value::as_str) {
                    Some(p) => format!("string matching `{p}`"),
                    None => "string".into(),
                },
                other => other.to_string(),
            })
            .collect();
        one_of_words(&names)
    }

    /// An object written in place: a pair per seat, a map, or (rarely) a small record.
    fn object_name(&self, object: &Map<String, Value>) -> String {
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            let keys: Vec<&str> = properties.keys().map(String::as_str).collect();
            if keys == ["learner", "opponent"] && properties["learner"] == properties["opponent"] {
                return format!(
                    "per seat (`learner`, `opponent`): {}",
                    self.type_name(&properties["learner"])
                );
            }
            let fields: Vec<String> = properties
                .iter()
                .map(|(k, v)| format!("`{k}`: {}", self.type_name(v)))
                .collect();
            return format!("{{{}}}", fields.join(", "));
        }
        match object.get("additionalProperties") {
            Some(Value::Object(_)) => format!(
                "map of name → {}",
                self.type_name(&object["additionalProperties"])
            ),
            _ => "object".into(),
        }
    }

    fn default_of(&self, field: &Value) -> String {
        let Some(value) = field.get("default") else {
            return String::new();
        };
        let text = value.to_string();
        match value {
            Value::Object(o) if !o.is_empty() && text.len() > 60 => "each field's".into(),
            _ => format!("`{}`", text.replace('|', "\\|")),
        }
    }

    /// Where a type sits, as the page's readers write it.
    fn place(&self, path: &[Step], schema: &Value) -> String {
        let dotted = |steps: &[Step]| {
            let mut text = String::new();
            for step in steps {
                match step {
                    Step::Key(k) => {
                        if !text.is_empty() {
                            text.push('.');
                        }
                        text.push_str(k);
                    }
                    Step::Item => text.push_str("[]"),
                    Step::Entry => text.push_str(".NAME"),
                }
            }
            text
        };
        let is_table = schema.get("properties").is_some();
        match (self.style, path.last()) {
            (Style::Toml, Some(Step::Item)) if is_table => {
                format!("[[{}]]", dotted(&path[..path.len() - 1]))
            }
            (Style::Toml, _) if is_table => format!("[{}]", dotted(path)),
            _ => dotted(path),
        }
    }
}

/// The named types a schema uses, with the path to each, in the schema's order.
fn refs_in(schema: &Value, path: &[Step], found: &mut Vec<(String, Vec<Step>)>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(name) = ref_name(schema) {
        found.push((name.to_string(), path.to_vec()));
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (key, field) in properties {
            let mut at = path.to_vec();
            at.push(Step::Key(key.clone()));
            refs_in(field, &at, found);
        }
    }
    if let Some(items) = object.get("items") {
        let mut at = path.to_vec();
        at.push(Step::Item);
        refs_in(items, &at, found);
    }
    if let Some(values) = object.get("additionalProperties") {
        let mut at = path.to_vec();
        at.push(Step::Entry);
        refs_in(values, &at, found);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for option in object
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            refs_in(option, path, found);
        }
    }
}

/// The name of the type a `$ref` points to.
fn ref_name(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

/// The variants of an enum: its values, or the shapes of `oneOf`.
fn variants_of(schema: &Value) -> Option<&[Value]> {
    schema
        .get("oneOf")
        .or_else(|| schema.get("enum"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .or_else(|| schema.get("anyOf")?.as_array().map(Vec::as_slice))
}

/// `a`, `a or b`, `a, b or c`; `null` named last as "or null".
fn one_of_words(names: &[String]) -> String {
    let (nulls, mut rest): (Vec<&String>, Vec<&String>) =
        names.iter().partition(|n| n.as_str() == "null");
    if !nulls.is_empty() {
        rest.push(nulls[0]);
    }
    match rest.as_slice() {
        [] => "any JSON".into(),
        [one] => one.to_string(),
        [init @ .., last] => format!(
            "{} or {last}",
            init.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A doc comment in a table cell: one line, its pipes escaped, its Rust links plain.
fn cell(text: Option<&str>) -> String {
    let Some(text) = text else {
        return String::new();
    };
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    plain_links(&one_line).replace('|', "\\|")
}

/// Rustdoc's links to items (`` [`Foo`] ``, `` [`Foo`](crate::x::Foo) ``) as plain code: the
/// page is read outside rustdoc, where they lead nowhere. Links to pages stay.
fn plain_links(text: &str) -> String {
    static LINK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\[(`[^`\]]+`)\](\(([^)\s]*)\))?").expect("static regex"));
    LINK.replace_all(text, |c: &Captures| match c.get(3) {
        Some(target) if is_page_link(target.as_str()) => c[0].to_string(),
        _ => c[1].to_string(),
    })
    .into_owned()
}

/// A link a reader of the book can follow (a URL, an anchor or a page), not a Rust path.
fn is_page_link(target: &str) -> bool {
    target.contains("://")
        || target.starts_with('#')
        || target.ends_with(".md")
        || target.contains(".md#")
        || target.ends_with(".html")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property name of the schema, at any depth (the root, each type, inline objects and
    /// the shapes of enums).
    fn property_names(schema: &Value, names: &mut Vec<String>) {
        match schema {
            Value::Object(o) => {
                if let Some(Value::Object(properties)) = o.get("properties") {
                    names.extend(properties.keys().cloned());
                }
                o.values().for_each(|v| property_names(v, names));
            }
            Value::Array(a) => a.iter().for_each(|v| property_names(v, names)),
            _ => {}
        }
    }

    fn every_field_appears(schema: Schema, page: &str) {
        let schema = schema.to_value();
        let mut names = Vec::new();
        property_names(&schema, &mut names);
        assert!(names.len() > 50, "{} fields", names.len());
        for name in names {
            assert!(page.contains(&format!("`{name}`")), "`{name}` is missing");
        }
        for name in schema["$defs"].as_object().unwrap().keys() {
            assert!(
                page.contains(&format!("\n## {name}\n")),
                "no section {name}"
            );
        }
    }

    #[test]
    fn every_config_field_appears_in_the_config_reference() {
        let page = config_reference();
        every_field_appears(config_schema(), &page);
        for table in [
            "`[episode]`",
            "`[rewards.judge]`",
            "`[players.NAME]`",
            "`[[rewards.rules]]`",
            "`[sampling.learner]`",
        ] {
            assert!(page.contains(table), "{table} is missing");
        }
        // Keys the file is documented with elsewhere, by their own names.
        for key in [
            "max_rounds",
            "reject_streak",
            "turn_reward",
            "endpoints",
            "constrain",
        ] {
            assert!(page.contains(&format!("| `{key}` |")), "{key}");
        }
    }

    #[test]
    fn every_table_record_field_appears_in_its_reference() {
        let page = table_record_reference();
        every_field_appears(table_record_schema(), &page);
        for place in ["`outcome.metrics`", "`turns[]`", "`offers[]`"] {
            assert!(page.contains(place), "{place} is missing");
        }
    }

    #[test]
    fn every_record_field_appears_in_the_record_reference() {
        let page = record_reference();
        every_field_appears(record_schema(), &page);
        for place in ["`outcome.metrics`", "`turns[]`", "`seats.learner`"] {
            assert!(page.contains(place), "{place} is missing");
        }
    }

    /// A hand-worked page: the table a small type gets, field by field.
    #[test]
    fn a_type_becomes_a_table_of_its_fields() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        enum Side {
            /// Buys.
            Buyer,
            Seller,
        }
        /// Settings of a table.
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Table {
            /// How many, at most | none.
            #[serde(default = "three")]
            count: u32,
            side: Option<Side>,
            scores: crate::game::PerSeat<f64>,
            names: BTreeMap<String, String>,
        }
        fn three() -> u32 {
            3
        }
        let page =
            Page::new(schema_of::<Table>(Contract::Deserialize), Style::Toml).render("T", "Intro.");
        let expected = "# T\n\nIntro.\n\n## Table\n\nSettings of a table.\n\n\
            | Field | Type | Required | Default | Description |\n\
            |---|---|---|---|---|\n\
            | `count` | integer ≥ 0 |  | `3` | How many, at most \\| none. |\n\
            | `names` | map of name → string | yes |  |  |\n\
            | `scores` | per seat (`learner`, `opponent`): number | yes |  |  |\n\
            | `side` | [Side](#side) or null |  |  |  |\n\
            \n## Side\n\nAt `side`.\n\n\
            | Value | Description |\n|---|---|\n\
            | `\"seller\"` |  |\n\
            | `\"buyer\"` | Buys. |\n";
        assert_eq!(page, expected);
    }

    #[test]
    fn rust_links_become_code_and_page_links_stay() {
        assert_eq!(
            plain_links("see [`Scenario::digest`](crate::scenario::Scenario::digest) and [`Foo`]"),
            "see `Scenario::digest` and `Foo`"
        );
        let page = "the [`guide`](guide.md#rewards) and [`site`](https://example.org/x)";
        assert_eq!(plain_links(page), page);
    }
}
