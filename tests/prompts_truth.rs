//! Every scenario's system prompts say only what is true of that scenario (issue 40, point 11:
//! the item prompts told every seat that "the other side values the items differently", false in
//! 257 CaSiNo and 191 Deal or No Deal scenarios, where both seats hold the same values).
//!
//! The test renders both seats' prompts for every scenario of every two-party family, as the
//! importer wrote them to `scenarios/`, and reads them line by line. Each line must be one the
//! catalogue below knows: either a statement of the protocol or the rules (true of every
//! scenario because the engine enforces it), or a claim about the scenario, which is checked
//! against the scenario's own JSON line (read here with serde_json, not through the library's
//! types, so the check does not reuse the code it checks). A line no entry knows fails the test:
//! a new sentence in a template must be catalogued with what makes it true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use dealgym::game::{Episode, EpisodeConfig, FirstMover, Seat};
use dealgym::protocol::TurnFormat;
use dealgym::scenario::{load_scenarios, LoadOptions, Role};
use regex::{Captures, Regex};
use serde_json::Value;

/// The default rules (the book's `design/episode.md`), as a seat must be told them.
const MAX_ROUNDS: u64 = 6;
const REJECT_LOOP: u64 = 3;
const REJECT_STREAK: u64 = 3;

/// One seat's prompt and what it is checked against.
struct Told<'a> {
    /// The scenario's own line, as the importer wrote it.
    json: &'a Value,
    /// The seat's role, as the scenario names it (`buyer`, `agent_1`, …).
    role: &'static str,
    /// The other seat's role.
    other: &'static str,
}

impl Told<'_> {
    fn game(&self) -> (&str, &Value) {
        let game = self.json["game"].as_object().expect("a game");
        let (kind, body) = game.iter().next().expect("one kind of game");
        (kind.as_str(), body)
    }

    fn family(&self) -> &str {
        self.json["family"].as_str().expect("a family")
    }

    /// The words the prompts use for a role.
    fn word(role: &str) -> &str {
        match role {
            "worker" => "applicant",
            "agent_1" | "agent_2" => "other side",
            other => other,
        }
    }

    fn items(&self) -> Vec<(String, u64)> {
        self.game().1["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| {
                (
                    i["name"].as_str().expect("name").to_string(),
                    i["count"].as_u64().expect("count"),
                )
            })
            .collect()
    }

    fn own_values(&self) -> Vec<u64> {
        self.game().1[self.role]["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| v.as_u64().expect("a value"))
            .collect()
    }

    fn issue(&self, key: &str) -> Result<(usize, &Value), String> {
        self.game().1["issues"]
            .as_array()
            .expect("issues")
            .iter()
            .enumerate()
            .find(|(_, i)| i["key"] == key)
            .ok_or_else(|| format!("no issue {key:?} in the scenario"))
    }

    fn own_issue(&self, index: usize) -> &Value {
        &self.game().1[self.role]["issues"][index]
    }

    /// The bundle's parts as (name, list price, this seat's number): main, accessories, delivery.
    fn bundle_parts(&self) -> Vec<(String, f64, f64)> {
        let body = self.game().1;
        let own = &body[self.role];
        let bundle = &body["bundle"];
        let mut parts = vec![(
            bundle["main"]["name"].as_str().expect("name").to_string(),
            num(&bundle["main"]["list_price"]),
            num(&own["main"]),
        )];
        for (i, a) in bundle["accessories"]
            .as_array()
            .expect("accessories")
            .iter()
            .enumerate()
        {
            parts.push((
                a["name"].as_str().expect("name").to_string(),
                num(&a["list_price"]),
                num(&own["accessories"][i]),
            ));
        }
        parts.push((
            "delivery".into(),
            num(&bundle["delivery_fee"]),
            num(&own["delivery"]),
        ));
        parts
    }

    fn ticket(&self, key: &str) -> Result<(usize, &Value), String> {
        self.game().1["tickets"]
            .as_array()
            .expect("tickets")
            .iter()
            .enumerate()
            .find(|(_, t)| t["key"] == key)
            .ok_or_else(|| format!("no room {key:?} on the call"))
    }

    fn title_line(&self) -> String {
        let public = &self.json["public"];
        match public["category"].as_str() {
            Some(c) => format!("{} ({c})", public["title"].as_str().unwrap_or("")),
            None => public["title"].as_str().unwrap_or("").to_string(),
        }
    }
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number, not {v}"))
}

fn cap<'c>(c: &'c Captures, i: usize) -> &'c str {
    c.get(i).map_or("", |m| m.as_str())
}

fn capnum(c: &Captures, i: usize) -> f64 {
    cap(c, i).replace(',', "").parse().expect("a number")
}

fn same(what: &str, told: f64, truth: f64) -> Result<(), String> {
    if (told - truth).abs() < 0.005 {
        Ok(())
    } else {
        Err(format!("{what}: told {told}, the scenario has {truth}"))
    }
}

fn holds(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

/// What a line may say and what makes it true.
type Check = fn(&Told, &Captures) -> Result<(), String>;

/// A statement of the protocol or the rules: the engine makes it true in every scenario (the
/// rules' own tests check the engine does what these lines say).
fn rule(_: &Told, _: &Captures) -> Result<(), String> {
    Ok(())
}

fn catalogue() -> Vec<(Regex, Check)> {
    let entries: Vec<(&str, Check)> = vec![
        // --- The protocol and the ending rules (every family).
        (r"^## .+$", rule),
        (
            r"^Each of your messages is one turn, written as three lines in this order:$",
            rule,
        ),
        (
            r"^Each of your messages is one turn, written with three tags in this order:$",
            rule,
        ),
        (
            r"^Each of your messages is one turn: call one of the move tools .+$",
            rule,
        ),
        (
            r"^Thought: your private reasoning — the other side never sees it$",
            rule,
        ),
        (r"^Talk: what you say to the other side$", rule),
        (r"^Action: exactly one action$", rule),
        (
            r"^<thought>your private reasoning — the other side never sees it</thought>$",
            rule,
        ),
        (r"^<talk>what you say to the other side</talk>$", rule),
        (r"^<action>exactly one action</action>$", rule),
        (r"^The actions:$|^The tools:$", rule),
        (
            r"^- \[SUBMIT_DEAL\] (.+?) — propose a deal(.*)$",
            |t, c| terms_keys(t, cap(c, 1)),
        ),
        (
            r"^- make_offer\(terms, message\) — propose a deal; terms: (.+?)(?: \(.*\))?$",
            |t, c| terms_keys(t, cap(c, 1)),
        ),
        (
            r"^- \[ACCEPT_DEAL\] — accept the other side's proposal; only allowed right after they made one with \[SUBMIT_DEAL\]$",
            rule,
        ),
        (
            r"^- \[REJECT_DEAL\] — (make no proposal this turn \(turns down any proposal on the table\)|turn down the other side's proposal)$",
            rule,
        ),
        (r"^- \[WALK_AWAY\] — leave without a deal$", rule),
        (
            r"^- \[TALK\] — only talk this turn, with no proposal$",
            rule,
        ),
        (
            r"^- accept\(message\) — .+$|^- reject\(message\) — .+$|^- walk_away\(message\) — .+$|^- say\(text\) — .+$",
            rule,
        ),
        (
            r"^You have at most (\d+) turns\. Without an agreement you get nothing\.$",
            |t, c| {
                same("turns", capnum(c, 1), MAX_ROUNDS as f64)?;
                let no_deal = t.json.get("no_deal_value").map_or(0.0, num);
                holds(
                    "the scenario sets a no-deal value, the seat is told nothing",
                    no_deal == 0.0,
                )
            },
        ),
        (r"^The negotiation ends with no deal as soon as:$", rule),
        (r"^- each of you has had (\d+) turns$", |_, c| {
            same("turns", capnum(c, 1), MAX_ROUNDS as f64)
        }),
        (r"^- either side plays (\[WALK_AWAY\]|walk_away)$", rule),
        (
            r"^- either side proposes the same deal (\d+) times in a row$",
            |_, c| same("reject loop", capnum(c, 1), REJECT_LOOP as f64),
        ),
        (
            r"^- (\d+) turns in a row, yours and theirs, are (\[REJECT_DEAL\]|reject)$",
            |_, c| same("reject streak", capnum(c, 1), REJECT_STREAK as f64),
        ),
        (
            r"^\((\[TALK\]|say) turns do not count toward these rules\.\)$",
            rule,
        ),
        (
            r"^A turn that cannot be used \(wrong format or a move not allowed\) is sent back with the reason once in a turn; one more forfeits: the negotiation ends with no deal\.$",
            rule,
        ),
        (r"^Example of one turn:$", rule),
        // The example turn's words are an example's; its terms are checked to be in range.
        (
            r"^(Thought: |<thought>)?(I should open with a price that leaves me room to move\.|I will ask for the items I value most and leave the rest\.|I will propose a contract and see which issues they push back on\.|I will say which parts I want and open with a price that leaves me room\.|I will raise the first room, then go through the others one by one\.)(</thought>)?$",
            rule,
        ),
        (
            r"^(Talk: |<talk>)(I am interested, and this is what I can offer\.|Here is a split that could work for both of us\.|Here is a contract I would be glad to sign\.|Here is the bundle and the price I have in mind\.|Guests are comparing nearby hotels; could this room come down a little\?)(</talk>)?$",
            rule,
        ),
        (
            r"^(?:Action: |<action>)\[SUBMIT_DEAL\] (.+?)(?:</action>)?$",
            |t, c| example_terms(t, cap(c, 1)),
        ),
        (r"^make_offer\((\{.+\})\)$", |t, c| {
            // The tools spelling of the example: its message is the example's Talk, its terms
            // the same offer as the other spellings'.
            let call: Value = serde_json::from_str(cap(c, 1)).map_err(|e| e.to_string())?;
            let terms = call["terms"].as_object().ok_or("no terms")?;
            let text: Vec<String> = terms
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{k}:{}",
                        v.as_str().map_or_else(|| v.to_string(), str::to_string)
                    )
                })
                .collect();
            example_terms(t, &text.join(" "))
        }),
        // --- Price (AHP, Craigslist).
        (
            r"^You are the (buyer|seller) in a negotiation over (a product sold online|a second-hand item listed on Craigslist)\.$",
            |t, c| {
                holds("the seat's role", cap(c, 1) == t.role)?;
                let market = if t.family() == "ahp" {
                    "a product sold online"
                } else {
                    "a second-hand item listed on Craigslist"
                };
                holds("the market", cap(c, 2) == market)
            },
        ),
        (r"^Listed price: \$([\d,.]+)$", |t, c| {
            same(
                "listing price",
                capnum(c, 1),
                num(&t.game().1["listing_price"]),
            )
        }),
        (
            r"^Your budget is \$([\d,.]+): you cannot pay more than that, and every dollar you pay below it is yours to keep\. Get the item for as little as you can\.$",
            |t, c| {
                holds(
                    "a budget told to a seat that is not the buyer",
                    t.role == "buyer",
                )?;
                same("budget", capnum(c, 1), num(&t.game().1["buyer"]["budget"]))
            },
        ),
        (
            r"^The item cost you \$([\d,.]+): selling below that loses money, and every dollar above it is your profit\. Sell for as much as you can\.$",
            |t, c| {
                holds(
                    "a cost told to a seat that is not the seller",
                    t.role == "seller",
                )?;
                same("cost", capnum(c, 1), num(&t.game().1["seller"]["cost"]))
            },
        ),
        (
            r"^Do not reveal (?:this number|these numbers|these weights) to the (\w+)\.$",
            |t, c| holds("the counterpart's name", cap(c, 1) == Told::word(t.other)),
        ),
        // --- Item splits (CaSiNo, Deal or No Deal).
        (
            r"^You are a camper negotiating with the camper at the neighbouring campsite over extra supplies for your trip\.$",
            |t, _| holds("a camper outside CaSiNo", t.family() == "casino"),
        ),
        (
            r"^You are negotiating with a partner over how to divide a set of items\.$",
            |t, _| holds("a partner outside DnD", t.family() == "dnd"),
        ),
        (
            r"^You and a fellow camper at the neighbouring campsite are about to go on a camping trip\. There are 3 packages each of food, water and firewood to share between the two of you; every package goes to one of you\.$",
            |t, _| {
                let items = t.items();
                holds(
                    "three packages each of food, water and firewood",
                    items
                        == [
                            ("food".to_string(), 3),
                            ("water".to_string(), 3),
                            ("firewood".to_string(), 3),
                        ],
                )
            },
        ),
        (
            r"^You and a partner must divide a collection of books, hats and balls between you\. Every unit goes to one of you, and each of you has values of your own for them\.$",
            |t, _| {
                let names: Vec<String> = t
                    .items()
                    .into_iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(name, _)| name)
                    .collect();
                holds(
                    "books, hats and balls on the table",
                    names == ["book", "hat", "ball"],
                )
            },
        ),
        (r"^- ([^`(]+): (\d+)$", |t, c| match t.game().0 {
            "items" => {
                let (_, count) = t
                    .items()
                    .into_iter()
                    .find(|(n, _)| n == cap(c, 1))
                    .ok_or("no such item")?;
                same("count", capnum(c, 2), count as f64)
            }
            "bundle" => bundle_number(t, cap(c, 1), capnum(c, 2)),
            other => Err(format!("an item count in a {other} game")),
        }),
        (r"^Each unit is worth this many points to you:$", rule),
        (r"^- (\w+): (\d+) per unit$", |t, c| {
            let i = t
                .items()
                .iter()
                .position(|(n, _)| n == cap(c, 1))
                .ok_or("no such item")?;
            same("own value", capnum(c, 2), t.own_values()[i] as f64)
        }),
        (
            r"^Taking everything would give you (\d+) points\. Get as many points as you can\. The other side has values of its own for the items, which it does not tell you, and does not know yours; do not state yours as numbers\.$",
            |t, c| {
                let total: u64 = t
                    .items()
                    .iter()
                    .zip(t.own_values())
                    .map(|((_, n), v)| n * v)
                    .sum();
                same("the most points", capnum(c, 1), total as f64)
            },
        ),
        (r"^Why these matter to you:$", rule),
        // --- Issues (Job Interview).
        (
            r"^You are the (applicant|recruiter) in a job interview, negotiating the terms of a job offer with the (recruiter|applicant)\.$",
            |t, c| {
                holds(
                    "the seat's role",
                    cap(c, 1) == Told::word(t.role) && cap(c, 2) == Told::word(t.other),
                )
            },
        ),
        (
            r"^A recruiter and an applicant \(the worker\) agree on the terms of a job offer: salary \(in thousands of dollars a year\), position, company, workplace and weekly days off\. One contract binds both of them\.$",
            |t, _| {
                let keys: Vec<&str> = t.game().1["issues"]
                    .as_array()
                    .expect("issues")
                    .iter()
                    .map(|i| i["key"].as_str().unwrap_or(""))
                    .collect();
                holds(
                    "the five issues",
                    keys == ["salary", "position", "company", "workplace", "holiday"],
                )
            },
        ),
        (r"^- (\w+): a whole number from (\d+) to (\d+)$", |t, c| {
            let (_, issue) = t.issue(cap(c, 1))?;
            same("minimum", capnum(c, 2), num(&issue["min"]))?;
            same("maximum", capnum(c, 3), num(&issue["max"]))
        }),
        (r"^- (\w+): one of (.+)$", |t, c| {
            let (_, issue) = t.issue(cap(c, 1))?;
            let options: Vec<&str> = issue["options"]
                .as_array()
                .ok_or("not a choice")?
                .iter()
                .map(|o| o.as_str().unwrap_or(""))
                .collect();
            holds("the options", cap(c, 2) == options.join(", "))
        }),
        (
            r"^Your score for a contract is 100 × the sum over issues of \(issue weight × how much you like the chosen option, from 0 to 1\)\. Reach a contract with a score as high as you can\.$",
            rule,
        ),
        (r"^- (\w+) \(weight ([\d.]+)\): (.+)$", |t, c| {
            let (index, issue) = t.issue(cap(c, 1))?;
            let own = t.own_issue(index);
            same(
                "weight",
                capnum(c, 2),
                (num(&own["weight"]) * 100.0).round() / 100.0,
            )?;
            issue_preference(issue, &own["valuation"], t, cap(c, 3))
        }),
        // --- Bundles (INA's setting).
        (
            r"^You are the (buyer|seller) in a negotiation over a bundle sold in an online shop: a main product, accessories that can be added or removed, and delivery that can be dropped\. You bargain over the price and over which parts are in the deal\.$",
            |t, c| holds("the seat's role", cap(c, 1) == t.role),
        ),
        (r"^(.+) with (.+); delivery (\d+)\.$", |t, c| {
            let parts = t.bundle_parts();
            let names: Vec<String> = parts[1..parts.len() - 1]
                .iter()
                .map(|(n, _, _)| n.to_lowercase())
                .collect();
            holds("the main product", parts[0].0 == cap(c, 1))?;
            holds(
                "the accessories",
                cap(c, 2) == names.join(" and ") || cap(c, 2).split(", ").count() == names.len(),
            )?;
            same("delivery fee", capnum(c, 3), parts[parts.len() - 1].1)
        }),
        (
            r"^The seller's list prices \(the whole bundle lists at (\d+)\):$",
            |t, c| {
                same(
                    "the bundle's list price",
                    capnum(c, 1),
                    t.bundle_parts().iter().map(|p| p.1).sum(),
                )
            },
        ),
        (
            r"^- (.+) \(`\w+`, (?:the main product, always in the deal|can be removed|can be dropped)\): (\d+)$",
            |t, c| {
                let (_, list, _) = t
                    .bundle_parts()
                    .into_iter()
                    .find(|(n, _, _)| n == cap(c, 1))
                    .ok_or("no such part")?;
                same("list price", capnum(c, 2), list)
            },
        ),
        (
            r"^What each part is worth to you — the most you would pay for it:$",
            |t, _| holds("worth told to a seller", t.role == "buyer"),
        ),
        (r"^What each part costs you:$", |t, _| {
            holds("costs told to a buyer", t.role == "seller")
        }),
        (
            r"^A bundle (is worth to you|costs you) the sum of its parts \(the whole bundle: (\d+)\)\. (?:Paying more than the parts in the deal are worth loses you money; every unit you pay below their worth is yours to keep\. A part worth less to you than it costs the seller is better left out of the deal, for both of you\.|Selling below the cost of the parts in the deal loses money; every unit above it is your profit\. Removing a part the buyer does not want saves you its cost\.)$",
            |t, c| {
                let buyer = cap(c, 1) == "is worth to you";
                holds("worth or cost by role", buyer == (t.role == "buyer"))?;
                same(
                    "the whole bundle",
                    capnum(c, 2),
                    t.bundle_parts().iter().map(|p| p.2).sum(),
                )
            },
        ),
        // --- Hotel price-chasing (REPO's task).
        (
            r"^You are a business-development representative of an online travel platform, calling the manager of (.+) to ask for lower prices on some of its rooms, so that the platform's users get better deals\.$",
            |t, c| {
                holds("the bd's seat", t.role == "bd")?;
                holds("the hotel's name", cap(c, 1) == t.title_line())
            },
        ),
        (
            r"^You are the manager of (.+)\. A business-development representative of an online travel platform is calling to ask you to lower the prices of some of your rooms\.$",
            |t, c| {
                holds("the hotel's seat", t.role == "hotel")?;
                holds("the hotel's name", cap(c, 1) == t.title_line())
            },
        ),
        (
            r"^Work through the call in order: .+$|^Protect your margin, but a lower price can fill rooms the competitors would otherwise take\. Decide room by room\.$",
            rule,
        ),
        (
            r"^- (t\d+): (.+), (.+) — selling price (\d+) \(what guests pay\), take-home price (\d+) \(what the hotel receives\)$",
            |t, c| {
                let (_, ticket) = t.ticket(cap(c, 1))?;
                holds(
                    "room",
                    ticket["room"] == cap(c, 2) && ticket["date"] == cap(c, 3),
                )?;
                same("selling price", capnum(c, 4), num(&ticket["selling"]))?;
                same("take-home price", capnum(c, 5), num(&ticket["take_home"]))
            },
        ),
        (
            r"^- (t\d+): you hope for a selling price of (\d+) \(take-home (\d+)\); (\d+) selling \(take-home (\d+)\) is the highest that still does the job\.$",
            |t, c| {
                holds("a bd's targets told to the hotel", t.role == "bd")?;
                let (i, ticket) = t.ticket(cap(c, 1))?;
                let own = &t.game().1["bd"][i];
                same("target", capnum(c, 2), num(&own["target"]["selling"]))?;
                same(
                    "target take-home",
                    capnum(c, 3),
                    num(&own["target"]["take_home"]),
                )?;
                same(
                    "acceptable",
                    capnum(c, 4),
                    num(&own["acceptable"]["selling"]),
                )?;
                same(
                    "acceptable take-home",
                    capnum(c, 5),
                    num(&own["acceptable"]["take_home"]),
                )?;
                holds(
                    "the hope above the highest that does",
                    capnum(c, 2) <= capnum(c, 4),
                )?;
                holds(
                    "a price cut that asks for no cut",
                    capnum(c, 4) < num(&ticket["selling"]),
                )
            },
        ),
        (
            r"^- (t\d+): you will not sell below (\d+) \(selling\); (\d+)% of these rooms are already booked; a nearby competitor sells a similar room at (\d+)\.(?: (.+))?$",
            |t, c| {
                holds("a hotel's floors told to the bd", t.role == "hotel")?;
                let (i, ticket) = t.ticket(cap(c, 1))?;
                let own = &t.game().1["hotel"][i];
                same("floor", capnum(c, 2), num(&own["floor"]))?;
                let occupancy = num(&own["occupancy"]);
                same("occupancy", capnum(c, 3), (occupancy * 100.0).round())?;
                let competitor = num(&own["competitor"]);
                same("competitor", capnum(c, 4), competitor)?;
                hotel_reason(cap(c, 5), occupancy, competitor, num(&ticket["selling"]))
            },
        ),
        (
            r"^A room is a success when the hotel agrees to a selling price at or below the second figure; .+$|^Keep the two kinds of price apart: .+$|^Never name these figures as targets or limits, .+$",
            |t, _| holds("the bd's instructions told to the hotel", t.role == "bd"),
        ),
        (
            r"^Every unit above your floor is margin you keep; a lower price may bring more bookings\. Do not reveal your floors\.$",
            |t, _| holds("the hotel's instructions told to the bd", t.role == "hotel"),
        ),
        (r"^One proposal covers every room of the call: .+$", rule),
    ];
    entries
        .into_iter()
        .map(|(pattern, check)| (Regex::new(pattern).expect(pattern), check))
        .collect()
}

/// The terms' keys the grammar line names are the scenario's own.
fn terms_keys(t: &Told, keys: &str) -> Result<(), String> {
    let (kind, body) = t.game();
    let expected: Vec<String> = match kind {
        "price" => vec!["price:AMOUNT".into()],
        "items" => t.items().iter().map(|(n, _)| format!("{n}:N")).collect(),
        "issues" => body["issues"]
            .as_array()
            .expect("issues")
            .iter()
            .map(|i| i["key"].as_str().unwrap_or("").to_string())
            .collect(),
        "bundle" => return Ok(()),
        "tickets" => body["tickets"]
            .as_array()
            .expect("tickets")
            .iter()
            .map(|k| format!("{}:PRICE|unchanged", k["key"].as_str().unwrap_or("")))
            .collect(),
        other => return Err(format!("a {other} game")),
    };
    let told: Vec<&str> = keys.split_whitespace().collect();
    if kind == "issues" {
        let told_keys: Vec<&str> = told
            .iter()
            .map(|k| k.split(':').next().unwrap_or(""))
            .collect();
        return holds("the contract's issues", told_keys == expected);
    }
    holds(
        &format!("terms {keys:?}, the scenario's {expected:?}"),
        told == expected,
    )
}

/// The example's offer is one the scenario allows.
fn example_terms(t: &Told, terms: &str) -> Result<(), String> {
    let pairs: BTreeMap<&str, &str> = terms
        .split_whitespace()
        .filter_map(|p| p.split_once(':'))
        .collect();
    match t.game().0 {
        "items" => {
            for (name, count) in t.items() {
                let asked: u64 = pairs
                    .get(name.as_str())
                    .ok_or("an item left out")?
                    .parse()
                    .map_err(|_| "a count")?;
                holds(
                    &format!("the example asks {asked} of {count} {name}"),
                    asked <= count,
                )?;
            }
            Ok(())
        }
        "price" => {
            let price: f64 = pairs
                .get("price")
                .ok_or("no price")?
                .parse()
                .map_err(|_| "a price")?;
            holds("a positive example price", price > 0.0)
        }
        "issues" => {
            for (key, value) in &pairs {
                let (_, issue) = t.issue(key)?;
                let ok = match issue["type"].as_str() {
                    Some("integer") => value
                        .parse::<f64>()
                        .is_ok_and(|v| v >= num(&issue["min"]) && v <= num(&issue["max"])),
                    _ => issue["options"].as_array().is_some_and(|o| {
                        o.iter()
                            .any(|x| x.as_str().is_some_and(|x| x.eq_ignore_ascii_case(value)))
                    }),
                };
                holds(&format!("the example's {key}:{value}"), ok)?;
            }
            Ok(())
        }
        "tickets" => {
            for (key, value) in &pairs {
                let (_, ticket) = t.ticket(key)?;
                if *value != "unchanged" {
                    let price: f64 = value.parse().map_err(|_| "a price")?;
                    holds(
                        "the example asks a cut",
                        price > 0.0 && price < num(&ticket["selling"]),
                    )?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A bundle part's number in "What only you know": the seat's own worth or cost.
fn bundle_number(t: &Told, name: &str, told: f64) -> Result<(), String> {
    let (_, _, own) = t
        .bundle_parts()
        .into_iter()
        .find(|(n, _, _)| n == name)
        .ok_or_else(|| format!("no part {name:?}"))?;
    same(&format!("{name}'s number"), told, own)
}

/// An issue's preference line: the direction of a number, or each option's liking.
fn issue_preference(issue: &Value, valuation: &Value, t: &Told, told: &str) -> Result<(), String> {
    let options = |i: &Value| -> Vec<String> {
        i["options"]
            .as_array()
            .map(|o| {
                o.iter()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let two = |x: &Value| format!("{:.2}", num(x));
    match valuation["kind"].as_str() {
        Some("rising") => holds("a rising issue", told == "higher is better for you"),
        Some("falling") => holds("a falling issue", told == "lower is better for you"),
        Some("options") => {
            let names = options(issue);
            let expected: Vec<String> = names
                .iter()
                .zip(valuation["weights"].as_array().expect("weights"))
                .map(|(n, w)| format!("{n} {}", two(w)))
                .collect();
            holds(
                &format!("the options' liking: {told}"),
                told == expected.join(", "),
            )
        }
        Some("joint") => {
            let with = valuation["with"].as_str().expect("with");
            let (_, other) = t.issue(with)?;
            let mut expected = vec![];
            for (n, row) in options(issue)
                .iter()
                .zip(valuation["weights"].as_array().expect("rows"))
            {
                for (m, w) in options(other).iter().zip(row.as_array().expect("row")) {
                    expected.push(format!("{n} at {m} {}", two(w)));
                }
            }
            holds(
                &format!("the joint liking: {told}"),
                told == format!("depends on the {with}: {}", expected.join(", ")),
            )
        }
        other => Err(format!("a valuation {other:?}")),
    }
}

/// The hotel's reason for a room agrees with the room's own figures.
fn hotel_reason(reason: &str, occupancy: f64, competitor: f64, selling: f64) -> Result<(), String> {
    if reason.is_empty() {
        return Ok(());
    }
    let full = reason.contains("nearly full");
    holds(
        &format!("{reason:?} at {occupancy} booked"),
        full == (occupancy >= 0.8),
    )?;
    if full {
        return Ok(());
    }
    let slow = reason.starts_with("Bookings for this room are slow");
    let steady = reason.starts_with("Bookings for this room are steady");
    holds(
        &format!("{reason:?} at {occupancy} booked"),
        (slow && occupancy < 0.5) || (steady && (0.5..0.8).contains(&occupancy)),
    )?;
    let cheaper_next_door = reason.ends_with("guests can see the cheaper room next door.");
    let already_cheaper = reason.ends_with("you are already cheaper than the hotels nearby.");
    let as_cheap = reason.ends_with("the hotel next door sells a similar room for the same price.");
    holds(
        &format!("{reason:?} with the competitor at {competitor} and the room at {selling}"),
        (cheaper_next_door && competitor < selling)
            || (already_cheaper && competitor > selling)
            || (as_cheap && competitor == selling),
    )
}

/// The dataset's own words in a prompt (a listing's title and description, a CaSiNo
/// participant's reasons): quoted, not claimed by dealgym, so taken out before the check. Only
/// the seat's *own* reasons may appear.
fn quoted(told: &Told) -> Vec<String> {
    let mut out = vec![];
    let public = &told.json["public"];
    if matches!(told.family(), "ahp" | "craigslist") {
        if let Some(d) = public["description"].as_str() {
            out.push(d.to_string());
        }
        out.push(told.title_line());
    }
    if told.family() == "bundle" {
        out.push(told.title_line());
    }
    if let Some(reasons) = told.game().1[told.role]["reasons"].as_array() {
        out.extend(
            reasons
                .iter()
                .filter_map(|r| r.as_str())
                .map(|r| format!("- {r}")),
        );
    }
    out
}

fn check_prompt(
    catalogue: &[(Regex, Check)],
    told: &Told,
    prompt: &str,
    unknown: &mut BTreeSet<String>,
    wrong: &mut Vec<String>,
) {
    // Quotes are taken out whole line by line (a quote may be a part of another line: a
    // description that repeats words of the title, a reason that begins another).
    let quotes = quoted(told);
    let quoted_lines: BTreeSet<&str> = quotes
        .iter()
        .flat_map(|q| q.lines())
        .map(str::trim)
        .collect();
    for line in prompt
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !quoted_lines.contains(l))
    {
        let Some((re, check)) = catalogue.iter().find(|(re, _)| re.is_match(line)) else {
            unknown.insert(line.to_string());
            continue;
        };
        let caps = re.captures(line).expect("matched");
        if let Err(why) = check(told, &caps) {
            wrong.push(format!(
                "{} ({}): {line:?}: {why}",
                told.json["id"].as_str().unwrap_or("?"),
                told.role
            ));
        }
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Buyer => "buyer",
        Role::Seller => "seller",
        Role::Agent1 => "agent_1",
        Role::Agent2 => "agent_2",
        Role::Worker => "worker",
        Role::Recruiter => "recruiter",
        Role::Bd => "bd",
        Role::Hotel => "hotel",
    }
}

/// Renders every seat of every scenario of `family` (the first `formats_limit` in every turn
/// format, the rest in the tagged one) and checks each line.
fn check_family(family: &str) -> (usize, BTreeSet<String>, Vec<String>) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{family}.jsonl"));
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .expect("scenario file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a scenario line"))
        .collect();
    let scenarios = load_scenarios(&file, LoadOptions::default())
        .expect("scenario file")
        .scenarios;
    assert_eq!(lines.len(), scenarios.len(), "{family}: every line loads");
    let catalogue = catalogue();
    let (mut unknown, mut wrong, mut rendered) = (BTreeSet::new(), vec![], 0);
    for (index, (json, scenario)) in lines.iter().zip(scenarios).enumerate() {
        assert_eq!(json["id"].as_str(), Some(scenario.id.as_str()));
        let roles = scenario.family.roles();
        let scenario = Arc::new(scenario);
        let formats: &[TurnFormat] = if index < 20 {
            &[TurnFormat::Tagged, TurnFormat::Xml, TurnFormat::Tools]
        } else {
            &[TurnFormat::Tagged]
        };
        for &format in formats {
            let config = EpisodeConfig {
                learner_role: Some(roles[0]),
                first_mover: FirstMover::Learner,
                learner_format: format,
                opponent_format: format,
                ..EpisodeConfig::default()
            };
            let setup = dealgym_core::fixtures::setup_with(&scenario, &config);
            let episode = Episode::new(scenario.clone(), setup).expect("episode");
            for (seat, role, other) in [
                (Seat::Learner, roles[0], roles[1]),
                (Seat::Opponent, roles[1], roles[0]),
            ] {
                let told = Told {
                    json,
                    role: role_name(role),
                    other: role_name(other),
                };
                check_prompt(
                    &catalogue,
                    &told,
                    episode.system_prompt(seat),
                    &mut unknown,
                    &mut wrong,
                );
                rendered += 1;
            }
        }
    }
    (rendered, unknown, wrong)
}

fn assert_true_of_every_scenario(family: &str) {
    let (rendered, unknown, wrong) = check_family(family);
    assert!(rendered > 0, "{family}: no prompt rendered");
    assert!(
        unknown.is_empty(),
        "{family}: lines no entry of the catalogue knows (add each with what makes it true):\n{}",
        unknown
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        wrong.is_empty(),
        "{family}: {} lines contradict their scenario, the first:\n{}",
        wrong.len(),
        wrong
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_ahp_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("ahp");
}

#[test]
fn every_craigslist_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("craigslist");
}

#[test]
fn every_casino_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("casino");
}

#[test]
fn every_dnd_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("dnd");
}

#[test]
fn every_job_interview_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("job_interview");
}

#[test]
fn every_bundle_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("bundle");
}

#[test]
fn every_hotel_prompt_says_only_what_is_true_of_its_scenario() {
    assert_true_of_every_scenario("hotel");
}

#[test]
fn the_check_catches_the_old_false_sentence_and_a_wrong_number() {
    // The sentence every item prompt carried before: it is no entry of the catalogue, so a
    // template that says it again fails; and a number that is not the scenario's is caught.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl");
    let json: Value = serde_json::from_str(
        std::fs::read_to_string(file)
            .expect("casino")
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("json");
    let told = Told {
        json: &json,
        role: "agent_1",
        other: "agent_2",
    };
    let (mut unknown, mut wrong) = (BTreeSet::new(), vec![]);
    let old =
        "Taking everything would give you 36 points. Get as many points as you can. The other \
               side values the items differently and does not know your values; do not state them \
               as numbers.";
    check_prompt(&catalogue(), &told, old, &mut unknown, &mut wrong);
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    let values = told.own_values();
    let off = format!("- food: {} per unit", values[0] + 1);
    check_prompt(&catalogue(), &told, &off, &mut unknown, &mut wrong);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
}

/// The n-party tables (LLM-Deliberation's games): the game's own text (its public description
/// and each party's confidential instructions, the authors' words) is quoted; every line that
/// dealgym adds is checked against the scenario's JSON line.
#[test]
fn every_deliberation_prompt_says_only_what_is_true_of_its_table() {
    use dealgym::scenario::load_table_scenarios;
    use dealgym::table::{TableOptions, TableSetup};
    /// A line of the rules or the grammar (no claim about the table).
    const FIXED: &str = "a fixed line";

    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/deliberation.jsonl");
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .expect("scenario file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a scenario line"))
        .collect();
    let scenarios = load_table_scenarios(&file, Default::default())
        .expect("table scenarios")
        .scenarios;
    assert_eq!(lines.len(), scenarios.len());
    let (mut unknown, mut wrong, mut rendered, mut claims) = (BTreeSet::new(), vec![], 0, 0);
    let compiled: std::cell::RefCell<BTreeMap<&str, Regex>> = Default::default();
    let mut expected_claims = 0;
    for (json, scenario) in lines.iter().zip(&scenarios) {
        let parties = json["parties"].as_array().expect("parties");
        let names: Vec<&str> = parties
            .iter()
            .map(|p| p["name"].as_str().expect("name"))
            .collect();
        let rules = &json["rules"];
        for format in [TurnFormat::Tagged, TurnFormat::Xml] {
            let options = TableOptions {
                format,
                ..TableOptions::default()
            };
            let setup = TableSetup::new(scenario, &options, 7).expect("setup");
            for (seat, party) in parties.iter().enumerate() {
                let prompt = &setup.seats[seat].system_prompt;
                rendered += 1;
                // At least: the name twice, a line per issue, the minimum, the parties, the
                // agreement rule, the rounds, the grammar's SUBMIT and WALK_AWAY lines.
                expected_claims += json["issues"].as_array().map_or(0, Vec::len) + 7;
                let own = &party["private"];
                let mut quoted: BTreeSet<&str> = BTreeSet::new();
                for text in [
                    json["public"]["instructions"].as_str(),
                    own["instructions"].as_str(),
                ]
                .into_iter()
                .flatten()
                {
                    quoted.extend(text.lines().map(str::trim));
                }
                let name = names[seat];
                let role = party["role"].as_str().expect("role");
                let lead = parties
                    .iter()
                    .find(|p| p["position"] == "lead")
                    .and_then(|p| p["name"].as_str());
                let veto: Vec<&str> = rules["agreement"]["veto"]
                    .as_array()
                    .map(|v| v.iter().filter_map(|r| r.as_str()).collect())
                    .unwrap_or_default();
                let veto_names: Vec<&str> = veto
                    .iter()
                    .filter_map(|r| parties.iter().find(|p| p["role"] == *r))
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                let check = |line: &str| -> Option<Result<(), String>> {
                    let re = |p: &'static str| -> Regex {
                        compiled
                            .borrow_mut()
                            .entry(p)
                            .or_insert_with(|| Regex::new(p).expect(p))
                            .clone()
                    };
                    let fixed = [
                        r"^Each of your messages is one turn, written (as three lines|with three tags) in this order:$",
                        r"^(Thought: |<thought>)your private reasoning — nobody else sees it(</thought>)?$",
                        r"^(Talk: |<talk>)what you say to everyone at the table(</talk>)?$",
                        r"^(Action: |<action>)exactly one action(</action>)?$",
                        r"^The actions:$",
                        r"^- \[ACCEPT_DEAL\] #N — accept proposal number N$",
                        r"^- \[REJECT_DEAL\] — turn down the latest proposal$",
                        r"^- \[TALK\] — only talk this turn, with no proposal$",
                        r"^## (Your scores \(confidential\)|How the table works|How to reply)$",
                    ];
                    if fixed.iter().any(|p| re(p).is_match(line)) {
                        return Some(Err(FIXED.into()));
                    }
                    if let Some(c) = re(r"^# You are (.+)$").captures(line) {
                        return Some(holds("the party's name", cap(&c, 1) == name));
                    }
                    if let Some(c) = re(r"^You take part in this negotiation as (.+)\. Everything in this section is confidential: no other party sees it, and you must never reveal your scores or your minimum\.$").captures(line) {
                        return Some(holds("the party's name", cap(&c, 1) == name));
                    }
                    if let Some(c) = re(r"^- Issue (\w+): (.+)$").captures(line) {
                        let issues = json["issues"].as_array().expect("issues");
                        let Some(i) = issues.iter().position(|x| x["key"] == cap(&c, 1)) else {
                            return Some(Err("no such issue".into()));
                        };
                        let told: Vec<String> = issues[i]["options"]
                            .as_array()
                            .expect("options")
                            .iter()
                            .zip(own["scores"][i].as_array().expect("scores"))
                            .map(|(o, s)| format!("{} = {}", o.as_str().unwrap_or(""), s))
                            .collect();
                        return Some(holds(
                            &format!("the scores of issue {}", cap(&c, 1)),
                            cap(&c, 2) == told.join(", "),
                        ));
                    }
                    if let Some(c) = re(r"^A deal's score is the sum of the scores of its options\. Your minimum is (\d+): a deal that scores less for you is worse than no deal\.$").captures(line) {
                        return Some(same("minimum", capnum(&c, 1), num(&own["minimum"])));
                    }
                    if let Some(c) = re(r"^The parties are (.+)\.$").captures(line) {
                        return Some(holds("the parties", cap(&c, 1) == names.join(", ")));
                    }
                    if let Some(c) = re(r"^(.+) opens with a first proposal, and after the last round makes the final proposal, on which every other party votes once\.$").captures(line) {
                        return Some(holds("the lead", Some(cap(&c, 1)) == lead && rules["schedule"]["kind"] == "cycles"));
                    }
                    if line == "A proposal becomes the deal when every party has accepted it." {
                        return Some(holds(
                            "unanimity",
                            rules["agreement"]["kind"] == "unanimity",
                        ));
                    }
                    if let Some(c) = re(r"^A proposal becomes the deal when at least (\d+) of the (\d+) parties have accepted it \(its proposer counts\), including (.+?), and each of them scores at least its own minimum on it(?: \((.+) gets (\d+) extra points if a deal is reached\))?\.$").captures(line) {
                        let a = &rules["agreement"];
                        return Some(
                            same("quorum", capnum(&c, 1), num(&a["at_least"]))
                                .and_then(|_| same("parties", capnum(&c, 2), names.len() as f64))
                                .and_then(|_| holds("the vetoes", cap(&c, 3) == veto_names.join(" and ")))
                                .and_then(|_| match c.get(5) {
                                    Some(_) => holds("the bonus's party", Some(cap(&c, 4)) == lead)
                                        .and_then(|_| same("lead bonus", capnum(&c, 5), num(&a["lead_bonus"]))),
                                    None => holds("an untold lead bonus", a["lead_bonus"].as_f64().unwrap_or(0.0) == 0.0),
                                }),
                        );
                    }
                    if let Some(c) = re(r"^Every party speaks (\d+) times before the final proposal\. Each proposal gets a number \(#1, #2, …\) that the others use to accept it\.$").captures(line) {
                        return Some(same("rounds", capnum(&c, 1), num(&rules["schedule"]["rounds"])));
                    }
                    if let Some(c) =
                        re(r"^- \[SUBMIT_DEAL\] (.+) — propose a deal: one option of every issue$")
                            .captures(line)
                    {
                        let keys: Vec<String> = json["issues"]
                            .as_array()
                            .expect("issues")
                            .iter()
                            .map(|i| i["key"].as_str().unwrap_or("").to_string())
                            .collect();
                        let told: Vec<String> = cap(&c, 1)
                            .split_whitespace()
                            .map(|o| o.trim_end_matches(char::is_numeric).to_string())
                            .collect();
                        return Some(holds(
                            "one option of every issue in the example",
                            told == keys,
                        ));
                    }
                    if let Some(c) = re(r"^- \[WALK_AWAY\] — leave the negotiation( \(you hold a veto: the negotiation ends without a deal\))?$").captures(line) {
                        let holds_veto = veto.contains(&role) || party["position"] == "lead";
                        return Some(holds("who holds a veto", c.get(1).is_some() == holds_veto));
                    }
                    None
                };
                for line in prompt
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !quoted.contains(l))
                {
                    match check(line) {
                        None => {
                            unknown.insert(line.to_string());
                        }
                        Some(Err(why)) if why == FIXED => {}
                        Some(Err(why)) => {
                            wrong.push(format!("{} ({role}): {line:?}: {why}", json["id"]))
                        }
                        Some(Ok(())) => claims += 1,
                    }
                }
            }
        }
    }
    assert!(rendered > 0);
    assert!(
        claims >= expected_claims,
        "{claims} claims checked, at least {expected_claims} expected"
    );
    assert!(
        unknown.is_empty(),
        "lines no check knows:\n{}",
        unknown.into_iter().take(20).collect::<Vec<_>>().join("\n")
    );
    assert!(
        wrong.is_empty(),
        "lines that contradict their table:\n{}",
        wrong[..wrong.len().min(20)].join("\n")
    );
}
