//! What a deal is worth to a role (the book's `design/scenarios.md`, "Utilities"). One home for
//! every utility rule.

use crate::protocol::{IssueRange, IssueValue, Terms};

use super::{BundleSpace, DealSpace, Domain, IssuePreferences, Role, Scenario, Valuation};

/// Tolerance for a ρ scale of zero.
const EPS: f64 = 1e-9;

/// The bargained ratio ρ of a utility for `role` (the book's `design/scenarios.md`):
/// price — u / |B − C| (with |B − C| < 1 taken as 1); items — u / Σ count·value;
/// issues — u / max u; bundle — u / the best bundle's joint surplus (`BundleSpace::scale`). A side that can get nothing has ρ = 0.
pub fn bargained_ratio(scenario: &Scenario, role: Role, utility: f64) -> f64 {
    let scale = match scenario.domain() {
        Domain::Price | Domain::Bundle | Domain::Tickets => scenario.max_utility(role).max(1.0),
        Domain::Items | Domain::Issues => scenario.max_utility(role),
    };
    if scale <= EPS {
        0.0
    } else {
        utility / scale
    }
}

impl Scenario {
    /// The utility of `terms` for `role`, with the terms seen from that role's side (its own item
    /// share; the price; the contract).
    ///
    /// - price: buyer `B − P`, seller `P − C`;
    /// - items: `Σ share_i · value_i`;
    /// - issues: `100 · Σ w_issue · v(option)`.
    ///
    /// Terms of another domain, or a role that does not play this scenario, are worth nothing.
    pub fn utility(&self, role: Role, terms: &Terms) -> f64 {
        match (&self.game, terms) {
            (DealSpace::Price { buyer, seller, .. }, Terms::Price(_)) => {
                let price = terms.price().unwrap_or_default();
                match role {
                    Role::Buyer => buyer.budget - price,
                    Role::Seller => price - seller.cost,
                    _ => 0.0,
                }
            }
            (DealSpace::Bundle { .. }, Terms::Bundle { price, parts }) => {
                match BundleSpace::of(self) {
                    Some(game) => game.utility(role, *price as f64 / 100.0, parts),
                    None => 0.0,
                }
            }
            (DealSpace::Items { .. }, Terms::Items(shares)) => match self.item_values(role) {
                Some(own) => shares
                    .iter()
                    .zip(&own.values)
                    .map(|(x, v)| f64::from(*x) * f64::from(*v))
                    .sum(),
                None => 0.0,
            },
            (DealSpace::Issues { issues, .. }, Terms::Issues(values)) => {
                match self.issue_preferences(role) {
                    Some(prefs) => 100.0 * issue_score(issues, prefs, values),
                    None => 0.0,
                }
            }
            (DealSpace::Tickets { .. }, Terms::Tickets(prices)) => {
                self.ticket_utility(role, prices)
            }
            _ => 0.0,
        }
    }

    /// The most `role` can get from any deal. For price tasks there is no such bound (a price can
    /// be anything), so this is the spread |B − C| that ρ is normalised by instead.
    pub fn max_utility(&self, role: Role) -> f64 {
        match &self.game {
            DealSpace::Price { buyer, seller, .. } => (buyer.budget - seller.cost).abs(),
            DealSpace::Bundle { .. } => BundleSpace::of(self).map_or(1.0, |g| g.scale()),
            // Like a price game: the summed spread between the agent's acceptable prices and
            // the hotel's floors (`hotel.rs`).
            DealSpace::Tickets { .. } => self.ticket_spread(),
            DealSpace::Items { items, .. } => match self.item_values(role) {
                Some(own) => items
                    .iter()
                    .zip(&own.values)
                    .map(|(it, v)| f64::from(it.count) * f64::from(*v))
                    .sum(),
                None => 0.0,
            },
            DealSpace::Issues { issues, .. } => {
                let best = self
                    .issue_preferences(role)
                    .and_then(|prefs| best_issue_score(issues, prefs));
                match best {
                    Some(best) => 100.0 * best,
                    None => self
                        .all_deals()
                        .map(|t| self.utility(role, &t))
                        .fold(0.0, f64::max),
                }
            }
        }
    }

    /// Every possible deal (the outcome space, for Pareto checks and utility bounds): item
    /// shares from `agent_1`'s side, or contracts. Price tasks have no finite outcome space and
    /// yield nothing.
    pub fn all_deals(&self) -> Box<dyn Iterator<Item = Terms> + 'static> {
        self.term_space().all_terms()
    }
}

/// Σ w_issue · v(option) for one side, in [0, 1] for well-formed preferences.
fn issue_score(
    issues: &[crate::protocol::IssueSpec],
    prefs: &IssuePreferences,
    values: &[IssueValue],
) -> f64 {
    let mut total = 0.0;
    for ((issue, pref), value) in issues.iter().zip(&prefs.issues).zip(values) {
        let v = match (&pref.valuation, &issue.range, value) {
            (Valuation::Rising, IssueRange::Integer { min, max }, IssueValue::Number(x)) => {
                linear(*x, *min, *max)
            }
            (Valuation::Falling, IssueRange::Integer { min, max }, IssueValue::Number(x)) => {
                1.0 - linear(*x, *min, *max)
            }
            (Valuation::Options { weights }, _, IssueValue::Option(i)) => {
                weights.get(*i).copied().unwrap_or(0.0)
            }
            (Valuation::Joint { with, weights }, _, IssueValue::Option(i)) => {
                let other = issues
                    .iter()
                    .position(|is| &is.key == with)
                    .and_then(|j| values.get(j));
                match other {
                    Some(IssueValue::Option(j)) => weights
                        .get(*i)
                        .and_then(|row| row.get(*j))
                        .copied()
                        .unwrap_or(0.0),
                    _ => 0.0,
                }
            }
            _ => 0.0,
        };
        total += pref.weight * v;
    }
    total
}

/// The best Σ w · v over all contracts without enumerating them: issues are independent except
/// a joint issue and its partner, which are maximised together. `None` when the structure is
/// more tangled than that (a partner shared or itself joint); the caller then enumerates.
fn best_issue_score(
    issues: &[crate::protocol::IssueSpec],
    prefs: &IssuePreferences,
) -> Option<f64> {
    let index_of = |key: &str| issues.iter().position(|is| is.key == key);
    let mut partner_of = vec![None; issues.len()];
    for (i, pref) in prefs.issues.iter().enumerate() {
        if let Valuation::Joint { with, .. } = &pref.valuation {
            let p = index_of(with)?;
            if partner_of[p].is_some()
                || matches!(prefs.issues.get(p)?.valuation, Valuation::Joint { .. })
            {
                return None;
            }
            partner_of[p] = Some(i);
        }
    }
    let mut total = 0.0;
    for (i, (issue, pref)) in issues.iter().zip(&prefs.issues).enumerate() {
        let best = match &pref.valuation {
            // Scenario validation makes these integer issues with min < max: v reaches 1.
            Valuation::Rising | Valuation::Falling => match issue.range {
                IssueRange::Integer { .. } => pref.weight,
                IssueRange::Discrete { .. } => 0.0,
            },
            // Counted with its partner below.
            Valuation::Joint { .. } => continue,
            Valuation::Options { weights } => match partner_of[i] {
                None => pref.weight * weights.iter().copied().fold(0.0, f64::max),
                Some(j) => {
                    let Valuation::Joint { weights: joint, .. } = &prefs.issues[j].valuation else {
                        return None;
                    };
                    let wj = prefs.issues[j].weight;
                    (0..weights.len())
                        .map(|o| {
                            let own_best = joint
                                .iter()
                                .filter_map(|row| row.get(o))
                                .copied()
                                .fold(0.0, f64::max);
                            pref.weight * weights[o] + wj * own_best
                        })
                        .fold(0.0, f64::max)
                }
            },
        };
        total += best;
    }
    Some(total)
}

fn linear(x: i64, min: i64, max: i64) -> f64 {
    if max == min {
        return 1.0;
    }
    (x - min) as f64 / (max - min) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{dnd_items, issues_scenario, items_scenario, price_task};
    use crate::scenario::{IssuePreference, ItemValues};

    #[test]
    fn price_utilities() {
        let s = price_task(100.0, 80.0, 50.0);
        let p = Terms::Price(6000);
        assert_eq!(s.utility(Role::Buyer, &p), 20.0);
        assert_eq!(s.utility(Role::Seller, &p), 10.0);
        assert_eq!(s.max_utility(Role::Buyer), 30.0);
    }

    #[test]
    fn items_utilities_and_space() {
        let values = |values: Vec<u32>| ItemValues {
            values,
            reasons: vec![],
        };
        // One book and two hats.
        let s = items_scenario(dnd_items(&[1, 2]), values(vec![4, 3]), values(vec![0, 5]));
        assert_eq!(s.utility(Role::Agent1, &Terms::Items(vec![1, 1])), 7.0);
        assert_eq!(s.max_utility(Role::Agent2), 10.0);
        assert_eq!(s.all_deals().count(), 6);
    }

    #[test]
    fn joint_issue_valued_with_its_partner() {
        // Salary, company (Google, Apple, Amazon), position (Engineer, Sales) valued with the
        // company, holiday (weight 0).
        let prefs = |rising: bool| IssuePreferences {
            issues: vec![
                IssuePreference {
                    weight: 0.3,
                    valuation: if rising {
                        Valuation::Rising
                    } else {
                        Valuation::Falling
                    },
                },
                IssuePreference {
                    weight: 0.2,
                    valuation: Valuation::Options {
                        weights: vec![1.0, 0.0, 0.0],
                    },
                },
                IssuePreference {
                    weight: 0.5,
                    valuation: Valuation::Joint {
                        with: "company".into(),
                        weights: vec![vec![0.0, 1.0, 0.0], vec![0.5, 0.0, 0.0]],
                    },
                },
                IssuePreference {
                    weight: 0.0,
                    valuation: Valuation::Rising,
                },
            ],
        };
        let s = issues_scenario(prefs(true), prefs(false));
        // salary 35, Google, Sales, holiday 2.
        let deal = Terms::Issues(vec![
            IssueValue::Number(35),
            IssueValue::Option(0),
            IssueValue::Option(1),
            IssueValue::Number(2),
        ]);
        // 100 · (0.3·0.5 + 0.2·1 + 0.5·0.5) = 60; the recruiter's salary term is 1 − 0.5.
        assert!((s.utility(Role::Worker, &deal) - 60.0).abs() < 1e-9);
        assert!((s.utility(Role::Recruiter, &deal) - 60.0).abs() < 1e-9);
        assert!(
            (s.max_utility(Role::Worker) - 80.0).abs() < 1e-9,
            "Google/Sales at best is 0.3 + 0.2 + 0.5·0.5 = 0.75; Apple/Engineer 0.3 + 0.5 = 0.8"
        );
    }
}
