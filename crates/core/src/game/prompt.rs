//! System prompts and the engine's own messages, rendered from the minijinja templates in
//! `prompts/` (compiled in as defaults; a directory of the same names can replace them).
//!
//! A seat's prompt is rendered from the public scenario and *its own* private block only: the
//! context built here is the one place that decides what a seat is told.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock, Weak};

use minijinja::{context, Environment, Value};
use serde::Serialize;

use crate::cache::BoundedCache;
use crate::digest::{digest_bytes, Digest, Fnv1a64};
use crate::observation::EndingRules;
use crate::protocol::{
    money, to_cents, Action, Instructions, IssueRange, IssueValue, TermSpace, Terms, TurnFormat,
};
use crate::scenario::{DealSpace, IssuePreferences, ItemValues, Role, Scenario, Valuation};

use super::campaign_prompt::campaign_view;
use super::setup::SeatSetup;

const BUILTIN: &[(&str, &str)] = &[
    ("_format.j2", include_str!("../../../../prompts/_format.j2")),
    ("_acts.j2", include_str!("../../../../prompts/_acts.j2")),
    ("_price.j2", include_str!("../../../../prompts/_price.j2")),
    ("_items.j2", include_str!("../../../../prompts/_items.j2")),
    ("_issues.j2", include_str!("../../../../prompts/_issues.j2")),
    (
        "_campaign.j2",
        include_str!("../../../../prompts/_campaign.j2"),
    ),
    (
        "ahp_buyer.j2",
        include_str!("../../../../prompts/ahp_buyer.j2"),
    ),
    (
        "ahp_seller.j2",
        include_str!("../../../../prompts/ahp_seller.j2"),
    ),
    (
        "craigslist_buyer.j2",
        include_str!("../../../../prompts/craigslist_buyer.j2"),
    ),
    (
        "craigslist_seller.j2",
        include_str!("../../../../prompts/craigslist_seller.j2"),
    ),
    (
        "casino_agent.j2",
        include_str!("../../../../prompts/casino_agent.j2"),
    ),
    (
        "dnd_agent.j2",
        include_str!("../../../../prompts/dnd_agent.j2"),
    ),
    (
        "job_interview_worker.j2",
        include_str!("../../../../prompts/job_interview_worker.j2"),
    ),
    (
        "job_interview_recruiter.j2",
        include_str!("../../../../prompts/job_interview_recruiter.j2"),
    ),
    ("_bundle.j2", include_str!("../../../../prompts/_bundle.j2")),
    (
        "bundle_buyer.j2",
        include_str!("../../../../prompts/bundle_buyer.j2"),
    ),
    (
        "bundle_seller.j2",
        include_str!("../../../../prompts/bundle_seller.j2"),
    ),
    (
        "_tickets.j2",
        include_str!("../../../../prompts/_tickets.j2"),
    ),
    (
        "hotel_bd.j2",
        include_str!("../../../../prompts/hotel_bd.j2"),
    ),
    (
        "hotel_hotel.j2",
        include_str!("../../../../prompts/hotel_hotel.j2"),
    ),
    ("opening.j2", include_str!("../../../../prompts/opening.j2")),
    (
        "correction.j2",
        include_str!("../../../../prompts/correction.j2"),
    ),
    (
        "regulated.j2",
        include_str!("../../../../prompts/regulated.j2"),
    ),
];

/// The templates of an n-party table, compiled in beside [`BUILTIN`] but outside its
/// fingerprint: a two-party record's `prompts_digest` covers the two-party templates alone, as
/// it always has, and a table record's covers [`TABLE_TEMPLATES`] ([`Prompts::table_digest`]).
const TABLE_BUILTIN: &[(&str, &str)] = &[
    (
        "deliberation.j2",
        include_str!("../../../../prompts/deliberation.j2"),
    ),
    (
        "deliberation_turn.j2",
        include_str!("../../../../prompts/deliberation_turn.j2"),
    ),
    // The market's (issue 45): outside both fingerprints, as the table's are outside the
    // two-party one; no record holds a market yet.
    ("market.j2", include_str!("../../../../prompts/market.j2")),
    // A narrated seat's brief (issue 47): recorded whole on each narrated turn, so no
    // fingerprint needs to cover it.
    ("narrate.j2", include_str!("../../../../prompts/narrate.j2")),
    (
        "market_turn.j2",
        include_str!("../../../../prompts/market_turn.j2"),
    ),
];

/// The templates a table renders, in the order [`Prompts::table_digest`] hashes them.
const TABLE_TEMPLATES: [&str; 3] = ["deliberation.j2", "deliberation_turn.j2", "correction.j2"];

/// The digests of earlier built-in table templates that render every table played as text
/// (`tagged`, `xml`) exactly as today's built-in ones do — the templates before they learnt the
/// tools format (`tests/fixtures/prompts/tables-before-tools/`; a test in `table/tests.rs`
/// plays a table under both and holds every seat's view equal). A table record made under one
/// replays under today's built-in templates.
const EARLIER_TABLE_DIGESTS: &[&str] = &["bf9c6b6d2a0a3a42"];

/// The fingerprints of earlier built-in template sets that render every two-party prompt with
/// talk on exactly as today's built-in ones do — the templates before the talk ablation's
/// sentence (`tests/fixtures/prompts/before-talk/`; a test in `game/tests.rs` renders every
/// family's seats under both and holds them equal). A record made under one replays under
/// today's built-in templates.
pub(super) const EARLIER_DIGESTS: &[Digest] = &[Digest(0xc62b_1916_99a7_ecc7)];

/// A template could not be loaded or rendered.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("prompt template {name}: {message}")]
    Template { name: String, message: String },
    #[error("prompt directory {dir}: {source}")]
    Io { dir: String, source: std::io::Error },
}

/// The set of templates an episode renders its messages with.
pub struct Prompts {
    env: Environment<'static>,
    fingerprint: Digest,
    /// The digest of each template's source, by name.
    digests: BTreeMap<String, Digest>,
    overrides: BTreeMap<String, Digest>,
    /// The fingerprint of the table templates in effect ([`Prompts::table_digest`]).
    table_digest: String,
    /// The system prompts rendered with these templates: a GRPO group, a Python trainer's
    /// resets and a run's repeats of a scenario start many episodes from the same inputs, and
    /// rendering and reducing a prompt is most of what starting one costs.
    rendered: BoundedCache<SystemKey, (Weak<Scenario>, Arc<SystemPrompt>)>,
}

/// How many rendered system prompts a template set keeps (a few KB each, twice): every seat
/// of a family's scenarios that a process plays again and again, without growing past tens of MB.
const RENDERED_CAPACITY: usize = 4096;

/// A seat's rendered system prompt, with the reduced form the copy check reads.
#[derive(Debug, PartialEq, Eq)]
pub struct SystemPrompt {
    pub(crate) text: String,
    /// `text` as [`crate::protocol::copies_instructions`] reads it.
    pub(crate) instructions: Instructions,
}

/// Everything a seat's system prompt is rendered from besides the templates: the arguments of
/// [`Prompts::system_prompt`], every one of them (a field of the seat's context that is not
/// here would hand one seat's prompt to another).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SystemKey {
    /// The address of the scenario's allocation. The entry holds a `Weak` to it, which keeps
    /// the allocation (so no other scenario can be placed there while the entry lives), and a
    /// scenario behind an `Arc` is never changed in place (`Arc::get_mut` refuses while a
    /// `Weak` exists; `make_mut` moves the value to a new allocation).
    scenario: usize,
    role: Role,
    format: TurnFormat,
    persona: Option<String>,
    rules: EndingRules,
    no_deal_value: u64,
    acts: bool,
    /// The seat's campaign standing, as its JSON text (`None` outside campaigns).
    campaign: Option<String>,
}

impl std::fmt::Debug for Prompts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompts")
            .field("fingerprint", &self.fingerprint)
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

impl Prompts {
    /// The templates compiled into the binary.
    pub fn builtin() -> Arc<Prompts> {
        static BUILT: OnceLock<Arc<Prompts>> = OnceLock::new();
        BUILT
            .get_or_init(|| {
                let mut env = Environment::new();
                for (name, source) in BUILTIN.iter().chain(TABLE_BUILTIN) {
                    env.add_template(name, source)
                        .expect("built-in prompt templates parse");
                }
                Arc::new(Prompts {
                    table_digest: table_digest(&env),
                    env,
                    fingerprint: fingerprint(BUILTIN.iter().map(|(n, s)| (*n, *s))),
                    digests: BUILTIN
                        .iter()
                        .map(|(n, s)| (n.to_string(), digest_bytes(s.as_bytes())))
                        .collect(),
                    overrides: BTreeMap::new(),
                    rendered: BoundedCache::new(RENDERED_CAPACITY),
                })
            })
            .clone()
    }

    /// The built-in templates, with any `*.j2` file in `dir` replacing the one of the same name.
    pub fn with_overrides(dir: &Path) -> Result<Prompts, PromptError> {
        let io = |source| PromptError::Io {
            dir: dir.display().to_string(),
            source,
        };
        let mut env = Environment::new();
        let mut sources: Vec<(String, String)> = BUILTIN
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|e| e == "j2") {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let source = crate::limits::read_file(&path, crate::limits::MAX_TEXT_FILE)
                    .map_err(|e| PromptError::Template {
                        name: path.display().to_string(),
                        message: e.to_string(),
                    })?;
                sources.retain(|(n, _)| *n != name);
                sources.push((name, source));
            }
        }
        let fingerprint = fingerprint(sources.iter().map(|(n, s)| (n.as_str(), s.as_str())));
        let digests: BTreeMap<String, Digest> = sources
            .iter()
            .map(|(name, source)| (name.clone(), digest_bytes(source.as_bytes())))
            .collect();
        let overrides = sources
            .iter()
            .filter(|(name, source)| builtin_source(name) != Some(source.as_str()))
            .map(|(name, _)| (name.clone(), digests[name]))
            .collect();
        for (name, source) in TABLE_BUILTIN {
            if !sources.iter().any(|(n, _)| n == name) {
                env.add_template(name, source)
                    .expect("built-in prompt templates parse");
            }
        }
        for (name, source) in sources {
            env.add_template_owned(name.clone(), source)
                .map_err(|e| PromptError::Template {
                    name,
                    message: e.to_string(),
                })?;
        }
        Ok(Prompts {
            table_digest: table_digest(&env),
            env,
            fingerprint,
            digests,
            overrides,
            rendered: BoundedCache::new(RENDERED_CAPACITY),
        })
    }

    /// The fingerprint of every template in effect (built-ins and overrides, by name and
    /// source), computed once when the set is made. Two sets with the same fingerprint render
    /// the same messages; a record keeps it so replay can insist on the same templates.
    pub fn fingerprint(&self) -> Digest {
        self.fingerprint
    }

    /// Whether a record whose templates had fingerprint `recorded`, played with talk on or off,
    /// renders as these templates do: the same fingerprint, or an earlier built-in one
    /// ([`EARLIER_DIGESTS`]) for a record played with talk on while these are the built-in ones.
    pub(crate) fn renders_as(&self, recorded: Digest, talk_on: bool) -> bool {
        recorded == self.fingerprint
            || (talk_on
                && self.fingerprint == Prompts::builtin().fingerprint
                && EARLIER_DIGESTS.contains(&recorded))
    }

    /// The templates in effect that are not this build's built-ins (a changed or an extra file
    /// in the prompts directory), each with the digest of its source: what lets a replay that
    /// refuses say which templates differ.
    pub(crate) fn overrides(&self) -> &BTreeMap<String, Digest> {
        &self.overrides
    }

    /// The digest of the source of template `name` in effect, if there is one by that name.
    pub(crate) fn template_digest(&self, name: &str) -> Option<Digest> {
        self.digests.get(name).copied()
    }

    /// The fingerprint of the table templates in effect (the table's system prompt, its turn
    /// message and the correction, by source, in that order): what a table record keeps, so
    /// replay can insist on the same templates.
    pub(crate) fn table_digest(&self) -> &str {
        &self.table_digest
    }

    /// Whether a table record whose templates had digest `recorded`, played in `format`,
    /// renders as these templates do: the same digest, or an earlier built-in one
    /// ([`EARLIER_TABLE_DIGESTS`]) for a text-format table while these are the built-in ones.
    pub(crate) fn renders_table_as(
        &self,
        recorded: &str,
        format: crate::protocol::TurnFormat,
    ) -> bool {
        recorded == self.table_digest
            || (format != crate::protocol::TurnFormat::Tools
                && self.table_digest == Prompts::builtin().table_digest
                && EARLIER_TABLE_DIGESTS.contains(&recorded))
    }

    /// Template `name` rendered over `input`: the table's prompts, whose inputs the table
    /// builds itself.
    pub(crate) fn render_input(
        &self,
        name: &str,
        input: &impl Serialize,
    ) -> Result<String, PromptError> {
        self.render(name, Value::from_serialize(input))
    }

    fn render(&self, name: &str, ctx: Value) -> Result<String, PromptError> {
        let fail = |e: minijinja::Error| PromptError::Template {
            name: name.to_string(),
            message: format!("{e:#}"),
        };
        let template = self.env.get_template(name).map_err(fail)?;
        Ok(template.render(ctx).map_err(fail)?.trim().to_string())
    }

    /// The system prompt of a seat: the public scenario, the seat's own private block, the
    /// grammar with one example turn, and every rule that can end the episode as the engine
    /// applies it (`rules`: a rule that is off is not told). Rendered once per set of inputs
    /// and kept (the same inputs render the same text).
    pub(crate) fn system_prompt(
        &self,
        scenario: &Arc<Scenario>,
        seat: &SeatSetup,
        rules: &EndingRules,
        no_deal_value: f64,
    ) -> Result<Arc<SystemPrompt>, PromptError> {
        let key = SystemKey {
            scenario: Arc::as_ptr(scenario) as usize,
            role: seat.role,
            format: seat.format,
            persona: seat.persona.as_ref().map(|p| p.text.clone()),
            rules: *rules,
            no_deal_value: no_deal_value.to_bits(),
            acts: seat.acts,
            campaign: seat
                .campaign
                .as_ref()
                .map(|c| serde_json::to_string(c).unwrap_or_default()),
        };
        if let Some((_, found)) = self.rendered.get(&key) {
            return Ok(found);
        }
        let text = self.render(
            &template_name(scenario, seat.role),
            seat_context(scenario, seat, rules, no_deal_value),
        )?;
        let prompt = Arc::new(SystemPrompt {
            instructions: Instructions::new(&text),
            text,
        });
        self.rendered
            .insert(key, (Arc::downgrade(scenario), prompt.clone()));
        Ok(prompt)
    }

    /// The first user message of the seat that moves first.
    pub(crate) fn opening(&self, format: TurnFormat) -> Result<String, PromptError> {
        self.render("opening.j2", context! { format => format_name(format) })
    }

    /// The correction sent back after a turn that could not be used.
    pub(crate) fn correction(
        &self,
        error: &str,
        format: TurnFormat,
    ) -> Result<String, PromptError> {
        self.render(
            "correction.j2",
            context! { error => error, format => format_name(format) },
        )
    }

    /// Whether a seat's user message is one the engine wrote itself, not the other side's: the
    /// opening or a correction (the play page shows them as the table's).
    pub fn is_engine_message(&self, message: &str, format: TurnFormat) -> bool {
        if self.opening(format).is_ok_and(|o| o == message) {
            return true;
        }
        const MARK: &str = "\u{1}";
        match self.correction(MARK, format) {
            Ok(text) => match text.split_once(MARK) {
                Some((before, after)) => message.starts_with(before) && message.ends_with(after),
                None => false,
            },
            Err(_) => false,
        }
    }

    /// The brief a narrated seat's narrator is sent before its turn ([`crate::narration`]):
    /// the decided move, as the action line it must end with.
    pub fn narration_brief(&self, action: &str, format: TurnFormat) -> Result<String, PromptError> {
        self.render(
            "narrate.j2",
            context! { action => action, format => format_name(format) },
        )
    }

    /// The note a regulated seat gets with its next message when its move was replaced.
    pub(crate) fn regulated(
        &self,
        original: &str,
        replacement: &str,
    ) -> Result<String, PromptError> {
        self.render(
            "regulated.j2",
            context! { original => original, replacement => replacement },
        )
    }
}

/// FNV-1a 64 over the sources of [`TABLE_TEMPLATES`] in `env`, in that order, as decimal text.
fn table_digest(env: &Environment<'static>) -> String {
    let mut hash = Fnv1a64::new();
    for name in TABLE_TEMPLATES {
        let source = env
            .get_template(name)
            .map(|t| t.source().to_string())
            .unwrap_or_default();
        hash.field(source.as_bytes());
    }
    hash.finish().to_string()
}

/// FNV-1a 64 over the templates sorted by name: for each, its name and its source as
/// length-prefixed fields. Stable across builds and platforms for the same sources.
fn fingerprint<'a>(templates: impl Iterator<Item = (&'a str, &'a str)>) -> Digest {
    let mut sorted: Vec<(&str, &str)> = templates.collect();
    sorted.sort_unstable();
    let mut h = Fnv1a64::new();
    for (name, source) in sorted {
        h.field(name.as_bytes());
        h.field(source.as_bytes());
    }
    h.finish()
}

fn builtin_source(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

fn template_name(scenario: &Scenario, role: Role) -> String {
    match role {
        Role::Agent1 | Role::Agent2 => format!("{}_agent.j2", scenario.family.name()),
        _ => format!("{}_{}.j2", scenario.family.name(), role.name()),
    }
}

fn format_name(format: TurnFormat) -> &'static str {
    match format {
        TurnFormat::Tagged => "tagged",
        TurnFormat::Xml => "xml",
        TurnFormat::Tools => "tools",
    }
}

fn counterpart_name(role: Role) -> &'static str {
    match role.counterpart() {
        Role::Buyer => "buyer",
        Role::Seller => "seller",
        Role::Worker => "applicant",
        Role::Recruiter => "recruiter",
        Role::Agent1 | Role::Agent2 => "other side",
        Role::Bd => "platform's agent",
        Role::Hotel => "hotel manager",
    }
}

/// A part of a bundle as a seat's prompt shows it: the public list price and the seat's own
/// number (the buyer's worth or the seller's cost).
#[derive(Serialize)]
struct PartView {
    key: String,
    name: String,
    list_price: String,
    value: String,
}

#[derive(Serialize)]
struct ItemView {
    name: String,
    count: u32,
    value: u32,
}

#[derive(Serialize)]
struct OptionView {
    name: String,
    value: String,
}

#[derive(Serialize)]
struct IssueView {
    key: String,
    kind: &'static str,
    weight: String,
    min: i64,
    max: i64,
    rising: bool,
    with: String,
    /// The issue's own options (public).
    choices: Vec<String>,
    /// The seat's value of each option (private).
    options: Vec<OptionView>,
}

/// The template context for one seat. Only `seat.role`'s private block is read here. `rules`
/// is the whole of [`EndingRules`] (a rule at 0 is off); `max_rounds` stays beside it for
/// templates written before it.
fn seat_context(
    scenario: &Scenario,
    seat: &SeatSetup,
    rules: &EndingRules,
    no_deal_value: f64,
) -> Value {
    let role = seat.role;
    let base = context! {
        family => scenario.family.name(),
        role => match role { Role::Worker => "applicant", r => r.name() },
        counterpart => counterpart_name(role),
        title => scenario.public.title,
        category => scenario.public.category,
        description => scenario.public.description,
        max_rounds => rules.max_rounds,
        rules => rules,
        no_deal_value => (no_deal_value != 0.0).then(|| trim_number(no_deal_value)),
        format => format_name(seat.format),
        persona => seat.persona.as_ref().map(|p| p.text.clone()),
        campaign => seat.campaign.as_ref().map(campaign_view),
        terms_keys => terms_keys(scenario),
        example => example_turn(scenario, role, seat.format, seat.acts),
        acts => seat.acts.then(|| act_views(scenario.family)),
    };
    let private = match &scenario.game {
        DealSpace::Price {
            listing_price,
            buyer,
            seller,
        } => context! {
            domain => "price",
            listing_price => money(*listing_price),
            budget => (role == Role::Buyer).then(|| money(buyer.budget)),
            cost => (role == Role::Seller).then(|| money(seller.cost)),
        },
        DealSpace::Items { items, .. } => {
            let empty = ItemValues {
                values: vec![0; items.len()],
                reasons: vec![],
            };
            let own = scenario.item_values(role).unwrap_or(&empty);
            let views: Vec<ItemView> = items
                .iter()
                .zip(&own.values)
                .map(|(it, v)| ItemView {
                    name: it.name.clone(),
                    count: it.count,
                    value: *v,
                })
                .collect();
            context! {
                domain => "items",
                items => views,
                max_points => trim_number(scenario.max_utility(role)),
                reasons => own.reasons,
            }
        }
        DealSpace::Issues { issues, .. } => {
            let empty = IssuePreferences { issues: vec![] };
            let prefs = scenario.issue_preferences(role).unwrap_or(&empty);
            let views: Vec<IssueView> = issues
                .iter()
                .zip(&prefs.issues)
                .map(|(issue, pref)| issue_view(issues, issue, pref))
                .collect();
            context! { domain => "issues", issues => views }
        }
        DealSpace::Bundle {
            bundle,
            buyer,
            seller,
        } => {
            // Each side sees its own number per part only: the buyer's worth, the seller's cost.
            let own = if role == Role::Buyer { buyer } else { seller };
            let part = |key: &str, name: &str, list: f64, value: f64| PartView {
                key: key.into(),
                name: name.into(),
                list_price: money(list),
                value: money(value),
            };
            let parts: Vec<PartView> = bundle
                .accessories
                .iter()
                .zip(&own.accessories)
                .map(|(p, v)| part(&p.key, &p.name, p.list_price, *v))
                .collect();
            context! {
                domain => "bundle",
                main => part(&bundle.main.key, &bundle.main.name, bundle.main.list_price, own.main),
                parts => parts,
                delivery => part(crate::protocol::DELIVERY, "delivery", bundle.delivery_fee, own.delivery),
                opening => money(crate::protocol::BundleChoice::full(bundle).list_price(bundle)),
                full_value => money(own.total(&crate::protocol::BundleChoice::full(bundle))),
            }
        }
        DealSpace::Tickets {
            tickets, bd, hotel, ..
        } => super::hotel_prompt::ticket_context(role, tickets, bd, hotel),
    };
    context! { ..base, ..private }
}

fn issue_view(
    issues: &[crate::protocol::IssueSpec],
    issue: &crate::protocol::IssueSpec,
    pref: &crate::scenario::IssuePreference,
) -> IssueView {
    let (min, max) = match issue.range {
        IssueRange::Integer { min, max } => (min, max),
        _ => (0, 0),
    };
    let options_of = |range: &IssueRange| match range {
        IssueRange::Discrete { options } => options.clone(),
        _ => vec![],
    };
    let own_options = options_of(&issue.range);
    let mut view = IssueView {
        key: issue.key.clone(),
        kind: "integer",
        weight: format!("{:.2}", pref.weight),
        min,
        max,
        rising: matches!(pref.valuation, Valuation::Rising),
        with: String::new(),
        choices: own_options.clone(),
        options: vec![],
    };
    match &pref.valuation {
        Valuation::Options { weights } => {
            view.kind = "discrete";
            view.options = own_options
                .iter()
                .zip(weights)
                .map(|(name, w)| OptionView {
                    name: name.clone(),
                    value: format!("{w:.2}"),
                })
                .collect();
        }
        Valuation::Joint { with, weights } => {
            view.kind = "joint";
            view.with = with.clone();
            let partner = issues
                .iter()
                .find(|i| &i.key == with)
                .map(|i| options_of(&i.range))
                .unwrap_or_default();
            for (name, row) in own_options.iter().zip(weights) {
                for (other, w) in partner.iter().zip(row) {
                    view.options.push(OptionView {
                        name: format!("{name} at {other}"),
                        value: format!("{w:.2}"),
                    });
                }
            }
        }
        Valuation::Rising | Valuation::Falling => {}
    }
    view
}

pub(super) fn trim_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// The SUBMIT terms with placeholders: `price:P`, `food:N water:N firewood:N`, ….
fn terms_keys(scenario: &Scenario) -> String {
    match scenario.term_space() {
        TermSpace::Price => "price:AMOUNT".into(),
        TermSpace::Items(items) => items
            .iter()
            .map(|i| format!("{}:N", i.name))
            .collect::<Vec<_>>()
            .join(" "),
        TermSpace::Issues(issues) => issues
            .iter()
            .map(|i| match &i.range {
                IssueRange::Integer { .. } => format!("{}:N", i.key),
                IssueRange::Discrete { .. } => format!("{}:OPTION", i.key),
            })
            .collect::<Vec<_>>()
            .join(" "),
        TermSpace::Bundle(spec) => std::iter::once("price:AMOUNT".to_string())
            .chain(
                crate::protocol::part_keys(spec)
                    .into_iter()
                    .map(|key| format!("{key}:in|out")),
            )
            .collect::<Vec<_>>()
            .join(" "),
        TermSpace::Tickets(tickets) => crate::protocol::ticket_template(tickets),
    }
}

/// One example turn in the seat's spelling. It uses only public facts (the listing price, the
/// item counts, the issue ranges), never private values.
/// A family's dialogue acts for a prompt that asks for labels (`_acts.j2`).
fn act_views(family: crate::scenario::Family) -> Vec<Value> {
    crate::scenario::act_catalog(family)
        .iter()
        .map(|a| context! { label => a.label, meaning => a.meaning })
        .collect()
}

fn example_turn(scenario: &Scenario, role: Role, format: TurnFormat, acts: bool) -> String {
    let space = scenario.term_space();
    let (thought, talk, terms) = match &scenario.game {
        DealSpace::Price { listing_price, .. } => {
            let share = if role == Role::Buyer { 0.6 } else { 1.0 };
            let offer = Terms::Price(to_cents((listing_price * share).round()));
            (
                "I should open with a price that leaves me room to move.",
                "I am interested, and this is what I can offer.",
                offer,
            )
        }
        DealSpace::Items { items, .. } => (
            "I will ask for the items I value most and leave the rest.",
            "Here is a split that could work for both of us.",
            Terms::Items(items.iter().map(|i| i.count.div_ceil(2)).collect()),
        ),
        DealSpace::Issues { issues, .. } => (
            "I will propose a contract and see which issues they push back on.",
            "Here is a contract I would be glad to sign.",
            Terms::Issues(
                issues
                    .iter()
                    .map(|i| match &i.range {
                        IssueRange::Integer { min, max } => IssueValue::Number((min + max) / 2),
                        IssueRange::Discrete { .. } => IssueValue::Option(0),
                    })
                    .collect(),
            ),
        ),
        DealSpace::Bundle { bundle, .. } => {
            // Public facts only: the list prices. The buyer asks to drop delivery at 85% of
            // the rest's list price; the seller offers the whole bundle at its list price.
            let mut parts = crate::protocol::BundleChoice::full(bundle);
            let share = if role == Role::Buyer {
                parts.delivery = false;
                0.85
            } else {
                1.0
            };
            let price = to_cents((parts.list_price(bundle) * share).round());
            (
                "I will say which parts I want and open with a price that leaves me room.",
                "Here is the bundle and the price I have in mind.",
                Terms::Bundle { price, parts },
            )
        }
        DealSpace::Tickets { tickets, .. } => (
            "I will raise the first room, then go through the others one by one.",
            "Guests are comparing nearby hotels; could this room come down a little?",
            super::hotel_prompt::example_terms(tickets),
        ),
    };
    // The example opens, so a seat asked for labels sees its first price (or split) labelled,
    // as the built-in players label an opening (read against the opening ask).
    let opening = scenario.opening_terms();
    let label = acts
        .then(|| {
            crate::scenario::acts::label_for_move(
                &crate::scenario::acts::labels(scenario.family),
                &Action::Submit(terms.clone()),
                &[],
                opening.as_ref(),
            )
        })
        .flatten();
    if format == TurnFormat::Tools {
        // The thought as the reply's text, the move as its one call.
        let mut call = crate::protocol::tool_call_for(
            &Action::Submit(terms),
            None,
            talk,
            space,
            String::new(),
        );
        if let Some(label) = label {
            call.function.arguments =
                crate::protocol::with_act_argument(&call.function.arguments, label);
        }
        return format!(
            "{thought}\n{}({})",
            call.function.name, call.function.arguments
        );
    }
    let mut action = crate::protocol::render_action(&Action::Submit(terms), space, true);
    if let Some(label) = label {
        action = format!("{action} #{label}");
    }
    crate::protocol::render_turn(thought, talk, &action, format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, price, setup_with};
    use crate::game::EpisodeConfig;

    /// The default rules and one seat of `scenario`, in `format`.
    fn seat_and_rules(scenario: &Scenario, format: TurnFormat) -> (SeatSetup, EndingRules) {
        let setup = setup_with(scenario, &EpisodeConfig::default());
        let seat = SeatSetup {
            format,
            ..setup.seats.learner
        };
        (seat, EndingRules::from(&setup.rules))
    }

    fn render(scenario: &Arc<Scenario>, format: TurnFormat, rules: &EndingRules) -> String {
        let (seat, _) = seat_and_rules(scenario, format);
        Prompts::builtin()
            .system_prompt(scenario, &seat, rules, 0.0)
            .unwrap()
            .text
            .clone()
    }

    #[test]
    fn every_rule_that_ends_an_episode_is_told_with_its_own_number() {
        let s = price();
        let (_, rules) = seat_and_rules(&s, TurnFormat::Tagged);
        assert_eq!(
            (rules.max_rounds, rules.reject_loop, rules.reject_streak),
            (6, 3, 3)
        );
        let text = render(&s, TurnFormat::Tagged, &rules);
        for told in [
            "You have at most 6 turns.",
            "- each of you has had 6 turns\n",
            "- either side plays [WALK_AWAY]\n",
            "- either side proposes the same deal 3 times in a row\n",
            "- 3 turns in a row, yours and theirs, are [REJECT_DEAL]\n",
            "is sent back with the reason once in a turn; one more forfeits: the negotiation \
             ends with no deal.",
        ] {
            assert!(text.contains(told), "{told:?} not in:\n{text}");
        }
        // A people's stop point (a logged dialogue's) is no rule the seat was told: the people
        // never were, and a model seat under the same rules is prompted alike.
        let stopped = EndingRules {
            max_moves: Some(5),
            ..rules
        };
        assert_eq!(render(&s, TurnFormat::Tagged, &stopped), text);
    }

    #[test]
    fn a_change_of_any_rule_changes_the_prompt() {
        let s = casino();
        let (_, base) = seat_and_rules(&s, TurnFormat::Xml);
        let changes = [
            (
                EndingRules {
                    max_rounds: 9,
                    ..base
                },
                "each of you has had 9 turns",
            ),
            (
                EndingRules {
                    reject_loop: 5,
                    ..base
                },
                "the same deal 5 times in a row",
            ),
            (
                EndingRules {
                    reject_streak: 4,
                    ..base
                },
                "4 turns in a row, yours and theirs, are [REJECT_DEAL]",
            ),
            (
                EndingRules {
                    format_retries: 2,
                    ..base
                },
                "up to 2 times in a turn",
            ),
        ];
        let before = render(&s, TurnFormat::Xml, &base);
        for (rules, told) in changes {
            let after = render(&s, TurnFormat::Xml, &rules);
            assert_ne!(after, before, "{rules:?}");
            assert!(after.contains(told), "{told:?} not in:\n{after}");
            assert!(!before.contains(told), "{told:?} told before the change");
        }
    }

    #[test]
    fn a_rule_that_is_off_is_not_told() {
        let s = casino();
        let (_, base) = seat_and_rules(&s, TurnFormat::Xml);
        let no_offer_loop = render(
            &s,
            TurnFormat::Xml,
            &EndingRules {
                reject_loop: 0,
                ..base
            },
        );
        assert!(!no_offer_loop.contains("the same deal"), "{no_offer_loop}");
        assert!(no_offer_loop.contains("are [REJECT_DEAL]"));
        let no_streak = render(
            &s,
            TurnFormat::Xml,
            &EndingRules {
                reject_streak: 0,
                ..base
            },
        );
        assert!(!no_streak.contains("are [REJECT_DEAL]"), "{no_streak}");
        assert!(no_streak.contains("the same deal 3 times"));
        // With neither loop rule, nothing is said of how [TALK] counts toward them.
        let neither = render(
            &s,
            TurnFormat::Xml,
            &EndingRules {
                reject_loop: 0,
                reject_streak: 0,
                ..base
            },
        );
        assert!(!neither.contains("in a row"), "{neither}");
        assert!(!neither.contains("toward these rules"), "{neither}");
        assert!(render(&s, TurnFormat::Xml, &base).contains("[TALK] turns do not count"));
        // No correction at all: the first unusable turn forfeits, and no retry is promised.
        let no_retries = render(
            &s,
            TurnFormat::Xml,
            &EndingRules {
                format_retries: 0,
                ..base
            },
        );
        assert!(
            no_retries.contains("(wrong format or a move not allowed) forfeits: the negotiation"),
            "{no_retries}"
        );
        assert!(!no_retries.contains("sent back"), "{no_retries}");
    }

    #[test]
    fn talk_off_is_told_in_every_format_and_only_then() {
        let s = price();
        for format in [TurnFormat::Tagged, TurnFormat::Xml, TurnFormat::Tools] {
            let (_, on) = seat_and_rules(&s, format);
            let off = EndingRules {
                talk: crate::game::Talk::Off,
                ..on
            };
            let (told, plain) = (render(&s, format, &off), render(&s, format, &on));
            assert!(
                told.contains("is withheld, and they read only your action"),
                "{told}"
            );
            assert!(!plain.contains("withheld"), "{plain}");
            // The sentence is the only difference: the rest renders as with talk on.
            let sentence = told.lines().find(|l| l.contains("withheld")).unwrap();
            assert_eq!(told.replace(&format!("\n{sentence}"), ""), plain);
        }
    }
}
