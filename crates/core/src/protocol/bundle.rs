//! Bundle terms (the INA setting): a price and which parts of the seller's bundle are in the deal.
//!
//! A bundle is a main product that is always sold, one to three accessories that can be added
//! or removed, and delivery that can be dropped. Terms are written as the price and one
//! `key:in|out` pair per removable part, every part once:
//! `price:61000 tv_stand:out extension_cord:in delivery:out`. The terms are one shared deal,
//! so they are never flipped.

use serde::{Deserialize, Serialize};

use super::terms::{
    brief, read_number, to_cents, TermPair, TermValue, TermsError, TermsView, MAX_PRICE,
};

/// The key of the delivery part in the grammar.
/// The key of a bundle's delivery part.
pub const DELIVERY: &str = "delivery";

/// The public bundle of a scenario: the main product, the accessories that can be removed, and
/// the delivery fee, each at the seller's list price (its opening ask for the part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleSpec {
    pub main: BundlePart,
    pub accessories: Vec<BundlePart>,
    /// What the seller asks for delivery; delivery can be dropped.
    pub delivery_fee: f64,
}

/// One part of a bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundlePart {
    /// The key used in the action grammar (`tv_stand`).
    pub key: String,
    /// What the part is called (`WALI Universal TV Stand`).
    pub name: String,
    /// The seller's list price of the part.
    pub list_price: f64,
}

/// Which removable parts a bundle deal includes.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema, Default,
)]
pub struct BundleChoice {
    /// One flag per accessory, in the scenario's order: whether it is in the deal.
    pub accessories: Vec<bool>,
    pub delivery: bool,
}

impl BundleChoice {
    /// Everything in: the seller's opening bundle.
    pub fn full(spec: &BundleSpec) -> BundleChoice {
        BundleChoice {
            accessories: vec![true; spec.accessories.len()],
            delivery: true,
        }
    }

    /// Every choice of parts: `2^(accessories + 1)` of them, the full bundle first.
    pub(crate) fn all(spec: &BundleSpec) -> Vec<BundleChoice> {
        let n = spec.accessories.len();
        (0..1u32 << (n + 1))
            .map(|mask| BundleChoice {
                accessories: (0..n).map(|i| mask & (1 << i) == 0).collect(),
                delivery: mask & (1 << n) == 0,
            })
            .collect()
    }

    /// The seller's list price of the chosen parts: its opening ask for this bundle.
    pub fn list_price(&self, spec: &BundleSpec) -> f64 {
        spec.main.list_price
            + spec
                .accessories
                .iter()
                .zip(&self.accessories)
                .filter(|(_, kept)| **kept)
                .map(|(part, _)| part.list_price)
                .sum::<f64>()
            + if self.delivery {
                spec.delivery_fee
            } else {
                0.0
            }
    }

    /// How many parts are in the deal, the main product included.
    pub fn size(&self) -> usize {
        1 + self.accessories.iter().filter(|k| **k).count() + usize::from(self.delivery)
    }

    /// The names of the parts left out, for prose.
    #[cfg(test)]
    pub(crate) fn left_out<'a>(&self, spec: &'a BundleSpec) -> Vec<&'a str> {
        let mut out: Vec<&str> = spec
            .accessories
            .iter()
            .zip(&self.accessories)
            .filter(|(_, kept)| !**kept)
            .map(|(part, _)| part.key.as_str())
            .collect();
        if !self.delivery {
            out.push(DELIVERY);
        }
        out
    }
}

/// What a proposal changed against an earlier one of the same seat: parts dropped, parts
/// added (bundle terms), and which way the price moved (`None` without a price on both). The
/// one reading of a move's INA intent: the built-in players' labels (`scenario::acts`) and the
/// intent-consistency reward (`reward::ina`) both take it from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OfferChange {
    pub dropped: bool,
    pub added: bool,
    pub price: Option<std::cmp::Ordering>,
}

impl OfferChange {
    pub fn between(now: &super::Terms, before: &super::Terms) -> OfferChange {
        let flags = |t: &super::Terms| match t {
            super::Terms::Bundle { parts, .. } => parts
                .accessories
                .iter()
                .chain([&parts.delivery])
                .copied()
                .collect(),
            _ => Vec::new(),
        };
        let (n, b): (Vec<bool>, Vec<bool>) = (flags(now), flags(before));
        OfferChange {
            dropped: n.iter().zip(&b).any(|(n, b)| !*n && *b),
            added: n.iter().zip(&b).any(|(n, b)| *n && !*b),
            price: match (now.price(), before.price()) {
                (Some(a), Some(b)) => a.partial_cmp(&b),
                _ => None,
            },
        }
    }
}

fn in_out(kept: bool) -> &'static str {
    if kept {
        "in"
    } else {
        "out"
    }
}

/// The canonical text: `price:P key:in|out … delivery:in|out`.
pub(super) fn render(cents: i64, choice: &BundleChoice, spec: &BundleSpec) -> String {
    let mut out = format!("price:{}", super::terms::format_cents(cents));
    for (part, kept) in spec.accessories.iter().zip(&choice.accessories) {
        out.push_str(&format!(" {}:{}", part.key, in_out(*kept)));
    }
    out.push_str(&format!(" {DELIVERY}:{}", in_out(choice.delivery)));
    out
}

/// The terms as a map: the price and `in`/`out` per removable part.
pub(super) fn named(cents: i64, choice: &BundleChoice, spec: &BundleSpec) -> TermsView {
    let mut view = TermsView::new();
    view.insert("price".into(), TermValue::Price(cents as f64 / 100.0));
    for (part, kept) in spec.accessories.iter().zip(&choice.accessories) {
        view.insert(part.key.clone(), TermValue::Option(in_out(*kept).into()));
    }
    view.insert(
        DELIVERY.into(),
        TermValue::Option(in_out(choice.delivery).into()),
    );
    view
}

/// Whether a written part value means in or out: `in`/`out`, `yes`/`no`, `1`/`0`, `keep`/`drop`,
/// `add`/`remove`, `with`/`without`, `included`/`excluded`, `true`/`false`.
fn read_in_out(value: &str) -> Option<bool> {
    let v: String = value
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    match v.as_str() {
        "in" | "yes" | "1" | "keep" | "add" | "with" | "included" | "include" | "true" => {
            Some(true)
        }
        "out" | "no" | "0" | "drop" | "remove" | "without" | "excluded" | "exclude" | "false" => {
            Some(false)
        }
        _ => None,
    }
}

/// Bundle terms from `(normalized key, value text)` pairs: the price and every removable part
/// exactly once. The main product may be named (`tv:in`) but never left out. A part not in the
/// scenario, or one given twice (say, removed twice), cannot be read; a missing one is
/// incomplete; a negative price is out of range.
pub(super) fn from_pairs(
    pairs: &[TermPair<'_>],
    spec: &BundleSpec,
    key_matches: impl Fn(&str, &str) -> bool,
) -> Result<(i64, BundleChoice), TermsError> {
    let mut price: Option<i64> = None;
    let mut parts: Vec<Option<bool>> = vec![None; spec.accessories.len() + 1];
    let delivery = spec.accessories.len();
    for (key, value) in pairs {
        if key_matches(key, "price") {
            if price.is_some() {
                return Err(TermsError::Unreadable("price given twice".into()));
            }
            let amount = read_number(value).ok_or_else(|| {
                TermsError::Unreadable(format!("price `{}` is not a number", brief(value)))
            })?;
            if amount < 0.0 {
                return Err(TermsError::OutOfRange(format!(
                    "price {amount} is negative"
                )));
            }
            if amount > MAX_PRICE {
                return Err(TermsError::OutOfRange(format!(
                    "price {} is above {MAX_PRICE:e}",
                    brief(value)
                )));
            }
            price = Some(to_cents(amount));
            continue;
        }
        if key_matches(key, &spec.main.key) {
            match read_in_out(value) {
                Some(true) => continue,
                Some(false) => {
                    return Err(TermsError::OutOfRange(format!(
                        "{} is the main product: it is always in the deal",
                        spec.main.key
                    )))
                }
                None => {
                    return Err(TermsError::Unreadable(format!(
                        "{} `{}` is not in or out",
                        spec.main.key,
                        brief(value)
                    )))
                }
            }
        }
        let index = if key_matches(key, DELIVERY) {
            Some(delivery)
        } else {
            spec.accessories
                .iter()
                .position(|part| key_matches(key, &part.key) || key_matches(key, &part.name))
        };
        let Some(i) = index else {
            return Err(TermsError::Unreadable(format!(
                "unknown part `{}` (this bundle has {})",
                brief(key),
                part_keys(spec).join(", ")
            )));
        };
        let name = part_key(spec, i);
        if parts[i].is_some() {
            return Err(TermsError::Unreadable(format!("{name} given twice")));
        }
        parts[i] = Some(read_in_out(value).ok_or_else(|| {
            TermsError::Unreadable(format!("{name} `{}` is not in or out", brief(value)))
        })?);
    }
    let mut missing: Vec<&str> = Vec::new();
    if price.is_none() {
        missing.push("price");
    }
    for (i, part) in parts.iter().enumerate() {
        if part.is_none() {
            missing.push(part_key(spec, i));
        }
    }
    if !missing.is_empty() {
        return Err(TermsError::Incomplete(format!(
            "missing {}",
            missing.join(", ")
        )));
    }
    let flags: Vec<bool> = parts.into_iter().flatten().collect();
    let choice = BundleChoice {
        accessories: flags[..delivery].to_vec(),
        delivery: flags[delivery],
    };
    Ok((price.unwrap_or_default(), choice))
}

fn part_key(spec: &BundleSpec, i: usize) -> &str {
    spec.accessories
        .get(i)
        .map(|p| p.key.as_str())
        .unwrap_or(DELIVERY)
}

/// The removable parts' keys, delivery last.
pub(crate) fn part_keys(spec: &BundleSpec) -> Vec<&str> {
    spec.accessories
        .iter()
        .map(|p| p.key.as_str())
        .chain([DELIVERY])
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::fixtures::bundle_spec;
    use crate::protocol::{parse_terms, TermSpace, Terms, TermsError};

    use super::*;

    #[test]
    fn terms_read_in_any_order_and_spelling_and_render_canonically() {
        let spec = bundle_spec();
        let space = TermSpace::Bundle(&spec);
        let (t, ok) = parse_terms(
            "Delivery = no, price: $61,000 extension cord:yes TV_Stand: OUT",
            space,
        )
        .unwrap();
        assert!(ok);
        assert_eq!(
            t,
            Terms::Bundle {
                price: 6_100_000,
                parts: BundleChoice {
                    accessories: vec![false, true],
                    delivery: false
                }
            }
        );
        assert_eq!(
            t.render(space),
            "price:61000 tv_stand:out extension_cord:in delivery:out"
        );
        assert_eq!(parse_terms(&t.render(space), space).unwrap().0, t);
        // The main product may be named, kept in.
        let (again, _) = parse_terms(
            "tv:in price:61000 tv_stand:0 extension_cord:1 delivery:0",
            space,
        )
        .unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn bad_bundle_terms_say_what_is_wrong() {
        let spec = bundle_spec();
        let space = TermSpace::Bundle(&spec);
        let cases = [
            // A part the scenario does not have.
            (
                "price:100 tv_stand:in extension_cord:in delivery:in mouse:out",
                "unknown part",
            ),
            // Removing a part twice.
            (
                "price:100 tv_stand:out tv_stand:out extension_cord:in delivery:in",
                "given twice",
            ),
            (
                "price:100 tv_stand:in delivery:in",
                "missing extension_cord",
            ),
            ("tv_stand:in extension_cord:in delivery:in", "missing price"),
            (
                "price:100 tv_stand:maybe extension_cord:in delivery:in",
                "not in or out",
            ),
        ];
        for (text, says) in cases {
            let err = parse_terms(text, space).unwrap_err();
            assert!(
                matches!(err, TermsError::Unreadable(_) | TermsError::Incomplete(_)),
                "{text}: {err}"
            );
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
        for text in [
            "price:-5 tv_stand:in extension_cord:in delivery:in",
            "price:100 tv:out tv_stand:in extension_cord:in delivery:in",
        ] {
            assert!(
                matches!(parse_terms(text, space), Err(TermsError::OutOfRange(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn every_choice_once_full_first_with_its_list_price() {
        let spec = bundle_spec();
        let all = BundleChoice::all(&spec);
        assert_eq!(all.len(), 8);
        assert_eq!(all[0], BundleChoice::full(&spec));
        let mut seen = all.clone();
        seen.dedup();
        assert_eq!(seen.len(), 8);
        assert_eq!(all[0].list_price(&spec), 60000.0 + 1500.0 + 800.0 + 500.0);
        assert_eq!(all[0].size(), 4);
        let bare = all.last().unwrap();
        assert_eq!(bare.list_price(&spec), 60000.0);
        assert_eq!(
            bare.left_out(&spec),
            ["tv_stand", "extension_cord", "delivery"]
        );
    }
}
