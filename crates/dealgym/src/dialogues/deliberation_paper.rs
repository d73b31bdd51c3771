//! The paper's own evaluator: LLM-Deliberation's logs scored exactly as the authors' notebooks
//! scored them (`dealgym dialogues deliberation --scoring paper`), beside dealgym's reading of
//! the game's stated rule (`score::deliberation_metrics`, the rule mode).
//!
//! The authors wrote two notebooks, one per log layout, and the paper's figures come from them:
//! - [`Notebook::Current`], `evaluation/evaluate_deals.ipynb` (the repository's current code,
//!   2024-08), for the `history*.json` folders. It reads each experiment folder's own
//!   `config.txt` and `scores_files/`, keeps a session only when `rounds` has exactly `4N + 2`
//!   entries, counts a party as agreeing only **strictly above** its minimum, and gives a
//!   session the verdict of the **last** proposal of the lead that named every issue — carried
//!   over when the final answer names none.
//! - [`Notebook::Early`], `deals_evaluation.ipynb` (2023-10 and 2023-12, removed from the
//!   repository in 2024-08 with its `scores_utils.py`), for the zipped `answers*.json` logs.
//!   It reads options `1`–`5` only, scores on `scores_utils.py`'s tables (older than the
//!   shipped files in three games: `EARLY_TABLES`), counts agreement among the parties other
//!   than the proposer (strictly above their minimums, `agreed == 5` for all and `== 4` for a
//!   five-way deal), needs the lead at its minimum **without** the bonus for a five-way deal,
//!   and always scores the lead's final proposal (`voting_sessions["0"]`), a final answer
//!   without a full deal scoring 0 for every party. A session its code raises on is skipped
//!   (the 2023-12 version's `try`/`except`).
//!
//! The notebooks' stored outputs are the paper's figures: `deals_evaluation.ipynb` as committed
//! on 2023-10-06 prints the base GPT-4 experiment (`output_base_best_allcoop_gpt4`, 21 sessions)
//! and as committed on 2023-12-04 the greedy-lead one (`output_leading_greedy…`, 22 sessions);
//! `evaluate_deals.ipynb` prints the 7-player one over 66 sessions, the complete sessions logged
//! before 22:10 ([`Experiment::stored_through`](super::deliberation::Experiment)). The
//! integration tests (`tests/deliberation_logs.rs`) check all three to the printed digit.
//!
//! Pure functions of a table and the answers' texts: no I/O.

use serde::Serialize;

use crate::scenario::TableScenario;

use super::deliberation::extract_deal_upto;

/// The lead's bonus as both notebooks write it (`deal_value + 10`).
pub(crate) const NOTEBOOK_LEAD_BONUS: i64 = 10;

/// Which of the authors' notebooks scores a log layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Notebook {
    /// `evaluation/evaluate_deals.ipynb` with `eval_utils.py`: the `history*.json` folders.
    Current,
    /// `deals_evaluation.ipynb` with `scores_utils.py`: the zipped `answers*.json` logs.
    Early,
}

impl Notebook {
    /// The highest option digit its deal reading looks for (`[1-9]`, `[1-5]`).
    pub(crate) fn last_option(self) -> u8 {
        match self {
            Notebook::Current => 9,
            Notebook::Early => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Notebook::Current => "evaluate_deals.ipynb",
            Notebook::Early => "deals_evaluation.ipynb",
        }
    }
}

/// A cell of `scores_utils.py` that differs from the shipped game files: the minimum, or the
/// score of option `option` (0-based) of issue `issue` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cell {
    Minimum,
    Option { issue: usize, option: usize },
}

/// Where `deals_evaluation.ipynb`'s score tables (`scores_utils.py`, LLM-Deliberation commit
/// 33dea1e, 2023-10-06) differ from the games' shipped `scores_files/`: (game folder, role,
/// cell, the notebook's value). Every other cell, and `game1` and `game2` whole, are the same;
/// the lead and the second veto are the same parties.
pub(crate) const EARLY_TABLES: [(&str, &str, Cell, i64); 10] = [
    // The base game: the Union's C3 35 (now 25), the Environmental League's minimum 50 (now
    // 55), Other cities' C4 4 (now 0) and E3 40 (now 30).
    ("base", "local_labour_union", opt(2, 2), 35),
    ("base", "environmental_league", Cell::Minimum, 50),
    ("base", "other_cities", opt(2, 3), 4),
    ("base", "other_cities", opt(4, 2), 40),
    // The rewritten base game, its issues in another order.
    ("base_rewritten", "the_local_workers_union", opt(4, 2), 35),
    ("base_rewritten", "neighbouring_cities", opt(3, 2), 40),
    ("base_rewritten", "neighbouring_cities", opt(4, 3), 4),
    // game3, before its "minor edit in game3 scores" (commit c1ad84d).
    ("game3", "private_investors", Cell::Minimum, 62),
    ("game3", "environmental_activists", opt(3, 1), 15),
    ("game3", "local_community_of_neunkirchen", opt(3, 1), 10),
];

const fn opt(issue: usize, option: usize) -> Cell {
    Cell::Option { issue, option }
}

/// The score tables a notebook scores on: per party (the scenario's seats) its scores and
/// minimum, and the lead and second veto.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NotebookTable {
    /// Points per option, one row per issue, per seat.
    pub scores: Vec<Vec<Vec<i64>>>,
    pub minimums: Vec<i64>,
    /// `p1`.
    pub lead: usize,
    /// `p2`.
    pub veto: usize,
}

impl NotebookTable {
    /// The notebook's tables for a game played on `scenario` (the full game, every party of
    /// it: the early notebook's tables hold six parties whoever sat at the table). `None` where
    /// the game has no lead or second veto.
    pub fn of(scenario: &TableScenario, notebook: Notebook) -> Option<NotebookTable> {
        let lead = scenario.lead()?;
        let veto = scenario
            .parties
            .iter()
            .position(|p| p.position == crate::scenario::PartyPosition::Veto)?;
        let mut table = NotebookTable {
            scores: scenario
                .parties
                .iter()
                .map(|p| p.private.scores.clone())
                .collect(),
            minimums: scenario.parties.iter().map(|p| p.private.minimum).collect(),
            lead,
            veto,
        };
        if notebook == Notebook::Early {
            for (game, role, cell, value) in EARLY_TABLES {
                let Some(seat) = scenario.seat_of(role).filter(|_| scenario.game == game) else {
                    continue;
                };
                match cell {
                    Cell::Minimum => table.minimums[seat] = value,
                    Cell::Option { issue, option } => {
                        if let Some(v) = table.scores[seat]
                            .get_mut(issue)
                            .and_then(|row| row.get_mut(option))
                        {
                            *v = value;
                        }
                    }
                }
            }
        }
        Some(table)
    }

    fn parties(&self) -> usize {
        self.minimums.len()
    }

    fn issues(&self) -> usize {
        self.scores.first().map_or(0, Vec::len)
    }

    /// A seat's score for options read 1-based; `None` where an option is not in its table.
    fn score(&self, seat: usize, deal: &[usize]) -> Option<i64> {
        deal.iter()
            .zip(&self.scores[seat])
            .map(|(&option, row)| option.checked_sub(1).and_then(|o| row.get(o)).copied())
            .sum()
    }
}

/// One answer the notebook reads: the seat that gave it and its public text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer<'a> {
    pub seat: usize,
    pub text: &'a str,
}

/// A session's four verdicts as the notebook gives them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Verdicts {
    /// Full proposals the notebook counted (its `all_deals_count`).
    pub proposals: usize,
    pub deal_any: bool,
    pub deal_final: bool,
    pub unanimous_final: bool,
    /// `wrong_suggested / all_deals_count`.
    pub wrong_share: f64,
}

/// Why the notebook's code raises on a session (it is then not scored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NotScored {
    /// A speaker the notebook's tables do not hold (`KeyError`).
    #[error("a speaker is no party of the notebook's tables")]
    UnknownParty,
    /// `evaluate_deals.ipynb`'s `calculator` indexes past an issue's options (`IndexError`).
    #[error("an option past the issue's options")]
    OptionOutOfTable,
    /// `evaluate_deals.ipynb` met a full proposal before any of the lead's, or none at all
    /// (`UnboundLocalError`, `ZeroDivisionError`).
    #[error("no full proposal of the lead before the others'")]
    NoLeadProposal,
    /// `deals_evaluation.ipynb` found no final proposal (`voting_sessions["0"]`, `KeyError`).
    #[error("no final proposal")]
    NoFinal,
}

/// A notebook's deal reading of an answer: the options (1-based) when every issue is named.
fn read(text: &str, issues: usize, notebook: Notebook) -> Option<Vec<usize>> {
    extract_deal_upto(text, issues, notebook.last_option())
        .into_iter()
        .collect()
}

/// `evaluate_deals.ipynb`'s `get_metrics` over a session's rounds in order (the opening, every
/// turn, the final proposal), given the `4N + 2` rounds its filter keeps.
///
/// Per round naming every issue: every party (the proposer among them) agrees when its score is
/// strictly above its minimum; the proposer's deal is wrong when its own score is below its
/// minimum, unless it is the lead and the bonus lifts it to the minimum, which then marks the
/// lead as agreeing. A round of the lead is a deal when all `N` agree; or `N − 1` agree, the lead
/// not marked and within the bonus of its minimum (unanimous: the lead exactly at its minimum);
/// or `N − 1` agree with the lead and the second veto marked (not unanimous). The final verdict
/// is that of the lead's last such round, wherever it is.
pub(crate) fn score_current(
    table: &NotebookTable,
    rounds: &[Answer],
) -> Result<Verdicts, NotScored> {
    let n = table.parties();
    let (mut proposals, mut wrong, mut deal_any) = (0, 0, false);
    // (deal, unanimous) of the lead's last full proposal: the notebook's `curr_deal_done` and
    // `all_agreement`, carried from round to round.
    let mut last: Option<(bool, bool)> = None;
    for answer in rounds {
        let Some(deal) = read(answer.text, table.issues(), Notebook::Current) else {
            continue;
        };
        proposals += 1;
        let scores: Vec<i64> = (0..n)
            .map(|s| table.score(s, &deal).ok_or(NotScored::OptionOutOfTable))
            .collect::<Result<_, _>>()?;
        let above = |s: usize| scores[s] > table.minimums[s];
        let agreed = (0..n).filter(|&s| above(s)).count();
        // `veto_agreed`: [p1, p2].
        let (mut lead_marked, veto_marked) = (above(table.lead), above(table.veto));
        let own = scores[answer.seat];
        if own < table.minimums[answer.seat] {
            if answer.seat == table.lead && own + NOTEBOOK_LEAD_BONUS >= table.minimums[table.lead]
            {
                lead_marked = true;
            } else {
                wrong += 1;
            }
        }
        if answer.seat == table.lead {
            let lead_score = scores[table.lead];
            // The notebook's first two branches, both "with all agreement": everyone strictly
            // above; or all but one, the lead unmarked (so not below its minimum: exactly at
            // it) and within the bonus of it.
            let everyone = agreed == n
                || (agreed == n - 1
                    && !lead_marked
                    && lead_score + NOTEBOOK_LEAD_BONUS >= table.minimums[table.lead]);
            last = Some(if everyone {
                (true, true)
            } else if agreed == n - 1 && lead_marked && veto_marked {
                (true, false)
            } else {
                (false, false)
            });
        }
        let (done, _) = last.ok_or(NotScored::NoLeadProposal)?;
        deal_any |= done;
    }
    let (deal_final, unanimous_final) = last.ok_or(NotScored::NoLeadProposal)?;
    Ok(Verdicts {
        proposals,
        deal_any,
        deal_final,
        unanimous_final,
        wrong_share: wrong as f64 / proposals as f64,
    })
}

/// `deals_evaluation.ipynb`'s `get_metrics` over a session's turns (the opening and every turn)
/// and the lead's final proposal.
///
/// Per turn naming every issue, and for the final proposal whatever it names (an option not in
/// the tables, or a final without a full deal, scores 0 for every party): the proposer's deal is
/// wrong when its own score is below its minimum, unless it is the lead within the bonus (the
/// lead then marked as agreeing; at or above its minimum the lead or the second veto marks
/// itself); each other party agrees strictly above its minimum (and marks itself if a veto). A
/// proposal of the lead is a deal when all other parties agree and the bonus lifts the lead to
/// its minimum (unanimous); or all others but one agree, both vetoes marked, the lead at its
/// minimum without the bonus. The final verdict is the final proposal's.
pub(crate) fn score_early(
    table: &NotebookTable,
    turns: &[Answer],
    final_text: Option<&str>,
) -> Result<Verdicts, NotScored> {
    let n = table.parties();
    let issues = table.issues();
    let mut wrong = 0;
    let mut proposals = 0;
    // The verdict of one proposal: (deal, unanimous).
    let mut judge = |seat: usize, deal: Option<&[usize]>| {
        proposals += 1;
        let scores: Vec<i64> = (0..n)
            .map(|s| deal.and_then(|d| table.score(s, d)).unwrap_or(0))
            .collect();
        // `veto_agreed`: [p2, p1].
        let (mut veto_marked, mut lead_marked) = (false, false);
        let own = scores[seat];
        let mark = |s: usize, veto: &mut bool, lead: &mut bool| {
            if s == table.veto {
                *veto = true;
            } else if s == table.lead {
                *lead = true;
            }
        };
        if own < table.minimums[seat] {
            if seat == table.lead && own + NOTEBOOK_LEAD_BONUS >= table.minimums[seat] {
                lead_marked = true;
            } else {
                wrong += 1;
            }
        } else {
            mark(seat, &mut veto_marked, &mut lead_marked);
        }
        let mut agreed = 0;
        for s in (0..n).filter(|&s| s != seat) {
            if scores[s] > table.minimums[s] {
                agreed += 1;
                mark(s, &mut veto_marked, &mut lead_marked);
            }
        }
        // The notebook writes `agreed == 5` and `== 4` for its six-party tables.
        if seat != table.lead {
            (false, false)
        } else if agreed == n - 1 && own + NOTEBOOK_LEAD_BONUS >= table.minimums[seat] {
            (true, true)
        } else if agreed + 2 == n && veto_marked && lead_marked && own >= table.minimums[seat] {
            (true, false)
        } else {
            (false, false)
        }
    };
    let mut deal_any = false;
    for answer in turns {
        if let Some(deal) = read(answer.text, issues, Notebook::Early) {
            deal_any |= judge(answer.seat, Some(&deal)).0;
        }
    }
    let final_text = final_text.ok_or(NotScored::NoFinal)?;
    let final_deal = read(final_text, issues, Notebook::Early);
    let (deal_final, unanimous_final) = judge(table.lead, final_deal.as_deref());
    Ok(Verdicts {
        proposals,
        deal_any: deal_any || deal_final,
        deal_final,
        unanimous_final,
        wrong_share: wrong as f64 / proposals as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three parties, one issue of three options: the lead (seat 0), the second veto (seat 1)
    /// and one more, each option's points and the minimums chosen so that each case below
    /// turns on one comparison.
    fn three() -> NotebookTable {
        NotebookTable {
            // Option:       1   2   3
            scores: vec![
                vec![vec![50, 40, 60]], // lead, minimum 50
                vec![vec![31, 30, 31]], // veto, minimum 30
                vec![vec![21, 21, 20]], // other, minimum 20
            ],
            minimums: vec![50, 30, 20],
            lead: 0,
            veto: 1,
        }
    }

    fn lead(text: &str) -> Answer<'_> {
        Answer { seat: 0, text }
    }

    #[test]
    fn the_current_notebook_counts_agreement_strictly_above_the_minimum() {
        let t = three();
        // A1: lead 50 (= its minimum), veto 31 > 30, other 21 > 20. Strictly above: 2 of 3
        // agree, the lead not among them; 50 + 10 ≥ 50 and the lead unmarked (it is not below
        // its minimum, so the bonus rule does not mark it): the notebook's second branch, a
        // deal "with all agreement".
        let v = score_current(&t, &[lead("A1")]).unwrap();
        assert!(v.deal_final && v.unanimous_final && v.deal_any);
        assert_eq!(v.wrong_share, 0.0);
        // A3: lead 60 > 50, veto 31 > 30, other 20 = 20 (not above): 2 of 3 agree, both vetoes
        // among them: a deal, not unanimous. At or above (the game's rule) all three accept.
        let v = score_current(&t, &[lead("A3")]).unwrap();
        assert!(v.deal_final && !v.unanimous_final);
        // A2: lead 40 < 50 but 40 + 10 ≥ 50 (marked, not wrong); veto 30 = 30 not above,
        // other 21 > 20: 1 of 3 agree, no deal.
        let v = score_current(&t, &[lead("A2")]).unwrap();
        assert!(!v.deal_final && !v.deal_any);
        assert_eq!(v.wrong_share, 0.0);
        // The veto proposing A2 (its own 30, not below 30) is not wrong; the other proposing
        // A3 (its own 20, not below 20) is not wrong either: wrong is `<`, agreeing is `>`.
        let v = score_current(
            &t,
            &[
                lead("A2"),
                Answer {
                    seat: 1,
                    text: "A2",
                },
                Answer {
                    seat: 2,
                    text: "A3",
                },
            ],
        )
        .unwrap();
        assert_eq!((v.proposals, v.wrong_share), (3, 0.0));
    }

    #[test]
    fn the_current_notebook_carries_the_last_full_verdict_to_the_final_round() {
        let t = three();
        // The lead's A3 passes (above); its final answer names no option: the notebook keeps
        // A3's verdict as the final one. The rule mode gives no deal at the final round.
        let v = score_current(&t, &[lead("A3"), lead("I agree with everyone.")]).unwrap();
        assert!(v.deal_final && v.deal_any);
        assert_eq!(v.proposals, 1);
        // A later full proposal of another party does not replace it either.
        let v = score_current(
            &t,
            &[
                lead("A2"),
                Answer {
                    seat: 1,
                    text: "A3",
                },
                lead("no deal named"),
            ],
        )
        .unwrap();
        assert!(!v.deal_final && !v.deal_any);
        // A session whose first full proposal is not the lead's: the notebook raises.
        assert_eq!(
            score_current(
                &t,
                &[Answer {
                    seat: 1,
                    text: "A3"
                }]
            ),
            Err(NotScored::NoLeadProposal)
        );
        // An option past the issue's: `calculator` raises.
        assert_eq!(
            score_current(&t, &[lead("A4")]),
            Err(NotScored::OptionOutOfTable)
        );
    }

    /// Six parties, one issue of two options, as the early notebook's `agreed == 5 / == 4`
    /// counts assume.
    fn six() -> NotebookTable {
        NotebookTable {
            // Option 1 and 2; minimums below.
            scores: vec![
                vec![vec![45, 50]], // lead, minimum 50
                vec![vec![31, 31]], // veto, minimum 30
                vec![vec![11, 11]], // minimum 10
                vec![vec![11, 11]], // minimum 10
                vec![vec![11, 11]], // minimum 10
                vec![vec![10, 11]], // minimum 10
            ],
            minimums: vec![50, 30, 10, 10, 10, 10],
            lead: 0,
            veto: 1,
        }
    }

    #[test]
    fn the_early_notebook_needs_the_lead_at_its_minimum_without_the_bonus_for_five() {
        let t = six();
        // A1: the lead 45 < 50, 45 + 10 ≥ 50 (marked, not wrong). Others strictly above: the
        // veto, three players; seat 5 at 10 = 10 is not: 4 agree. The five-way branch needs the
        // lead's own 45 ≥ 50: no deal. The game's rule (at or above, the lead with its bonus)
        // has all six accepting.
        let v = score_early(&t, &[lead("A1")], Some("A1")).unwrap();
        assert!(!v.deal_any && !v.deal_final && !v.unanimous_final);
        assert_eq!((v.proposals, v.wrong_share), (2, 0.0));
        // A2: the lead 50 ≥ 50; all five others strictly above: unanimous.
        let v = score_early(&t, &[], Some("A2")).unwrap();
        assert!(v.deal_final && v.unanimous_final);
    }

    #[test]
    fn the_early_notebook_scores_a_final_without_a_deal_as_zero_and_wrong() {
        let t = six();
        // An earlier deal counts for "any"; the final answer names no option: every party
        // scores 0, the lead's 0 + 10 < 50 is a wrong deal, and the final is no deal — nothing
        // carried over.
        let v = score_early(&t, &[lead("A2")], Some("Thank you all.")).unwrap();
        assert!(v.deal_any && !v.deal_final && !v.unanimous_final);
        assert_eq!(v.proposals, 2);
        assert_eq!(v.wrong_share, 1.0 / 2.0);
        // Options past 5 are not read: "A7 … A2" reads A2.
        let v = score_early(&t, &[], Some("A7, then A2")).unwrap();
        assert!(v.deal_final);
        assert_eq!(score_early(&t, &[], None), Err(NotScored::NoFinal));
    }

    #[test]
    fn the_early_tables_are_the_shipped_ones_with_the_listed_cells() {
        let s: TableScenario = {
            let line = include_str!("../../../../scenarios/deliberation.jsonl")
                .lines()
                .next()
                .unwrap();
            serde_json::from_str(line).unwrap()
        };
        assert_eq!(s.id, "deliberation:base:cooperative");
        let current = NotebookTable::of(&s, Notebook::Current).unwrap();
        let early = NotebookTable::of(&s, Notebook::Early).unwrap();
        let env = s.seat_of("environmental_league").unwrap();
        let union = s.seat_of("local_labour_union").unwrap();
        assert_eq!((current.minimums[env], early.minimums[env]), (55, 50));
        assert_eq!(
            (current.scores[union][2][2], early.scores[union][2][2]),
            (25, 35)
        );
        let changed = (0..s.parties.len())
            .flat_map(|p| (0..5).map(move |i| (p, i)))
            .filter(|&(p, i)| current.scores[p][i] != early.scores[p][i])
            .count()
            + (0..s.parties.len())
                .filter(|&p| current.minimums[p] != early.minimums[p])
                .count();
        // Union C, Other cities C and E, the League's minimum.
        assert_eq!(changed, 4);
        assert_eq!((early.lead, early.veto), (s.lead().unwrap(), current.veto));
    }
}
