//! Job Interview's comments and solutions as utterances, in the order of their `created_at`
//! (one timestamp format throughout the file, so the text orders them). A comment is said by
//! its user's role; a solution is a submit of its contract by the user who proposed it.
//!
//! The dataset marks the solution that was accepted, but not when: the accept is played as the
//! other side's move right after the solution, joined with whatever that side said after it. The
//! proposer may have talked on first (its words join the solution's turn). Where that cannot
//! be placed — a later solution follows the accepted one, or the proposer talks again after
//! the other side did — the accept's time is unknown and the dialogue is skipped, counted.

use std::path::PathBuf;

use super::{form_turns, DialogueError, Found, HumanDialogue, ScenarioIndex, Skip, Utterance};
use crate::protocol::Action;
use crate::scenario::import::job_interview::{is_aborted, read, solution_terms, Record};
use crate::scenario::{DealSpace, Role};

pub(super) fn dialogues(
    files: &[PathBuf],
    index: &ScenarioIndex,
) -> Result<Vec<Result<HumanDialogue, Skip>>, DialogueError> {
    let mut out = Vec::new();
    for path in files {
        for r in read(path)? {
            if is_aborted(&r) {
                out.push(Err(Skip::new(&r.id, "an aborted negotiation")));
                continue;
            }
            out.push(index.find(&r.id, &r.id).and_then(|found| {
                let utterances = utterances(&r, &found)?;
                form_turns(&r.id, found, utterances)
            }));
        }
    }
    Ok(out)
}

/// One comment or solution, with the time it was made.
struct Timed<'r> {
    at: &'r str,
    role: Role,
    utterance: Utterance,
    accepted: bool,
}

fn utterances(r: &Record, found: &Found) -> Result<Vec<Utterance>, Skip> {
    let skip = |reason: String| Skip::new(&r.id, reason);
    let DealSpace::Issues { issues, .. } = &found.scenario.game else {
        return Err(skip("its scenario is not a job interview".into()));
    };
    let role_of = |user: &str| {
        r.users
            .iter()
            .find(|u| u.id == user)
            .and_then(|u| u.role.parse::<Role>().ok())
            .filter(|role| matches!(role, Role::Worker | Role::Recruiter))
            .ok_or_else(|| skip(format!("a message by unknown user `{user}`")))
    };
    let mut timed = Vec::new();
    for c in &r.comments {
        let role = role_of(&c.user_id)?;
        timed.push(Timed {
            at: &c.created_at,
            role,
            utterance: Utterance::says(role, &c.body),
            accepted: false,
        });
    }
    for s in &r.solutions {
        let role = role_of(&s.user_id)?;
        let terms = solution_terms(s, issues).map_err(skip)?;
        timed.push(Timed {
            at: &s.created_at,
            role,
            utterance: Utterance::moves(role, Action::Submit(terms)),
            accepted: s.accepted == Some(true),
        });
    }
    timed.sort_by(|a, b| a.at.cmp(b.at));
    if let Some(i) = timed.iter().rposition(|t| t.accepted) {
        let proposer = timed[i].role;
        let after = &timed[i + 1..];
        if after.iter().any(|t| t.utterance.action.is_some()) {
            return Err(skip(
                "accept time unknown: a later solution follows the accepted one".into(),
            ));
        }
        let others_from = after
            .iter()
            .position(|t| t.role != proposer)
            .unwrap_or(after.len());
        if after[others_from..].iter().any(|t| t.role == proposer) {
            return Err(skip(
                "accept time unknown: the proposer talks on after the other side did".into(),
            ));
        }
        let acceptor = proposer.counterpart();
        timed.push(Timed {
            at: "",
            role: acceptor,
            utterance: Utterance::moves(acceptor, Action::Accept),
            accepted: false,
        });
    }
    Ok(timed.into_iter().map(|t| t.utterance).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{parse_terms, TermSpace};
    use crate::scenario::HumanOutcome;

    fn found() -> Found {
        let scenario = crate::fixtures::job();
        Found {
            digest: scenario.digest(),
            scenario,
            recorded: HumanOutcome {
                dialogue: "r".into(),
                ending: crate::scenario::HumanEnding::Deal,
                terms: None,
                view: None,
                points: vec![],
            },
        }
    }

    fn record(comments: serde_json::Value, solutions: serde_json::Value) -> Record {
        serde_json::from_value(serde_json::json!({
            "id": "r",
            "status": "completed",
            "users": [
                {"id": "w", "role": "worker", "utilities": []},
                {"id": "c", "role": "recruiter", "utilities": []}
            ],
            "comments": comments,
            "solutions": solutions
        }))
        .unwrap()
    }

    /// A solution body that fits the fixture's issues.
    fn body(found: &Found) -> serde_json::Value {
        let DealSpace::Issues { issues, .. } = &found.scenario.game else {
            unreachable!()
        };
        let space = TermSpace::Issues(issues);
        let any = space.all_terms().next().unwrap();
        let text = any.render(space);
        assert!(parse_terms(&text, space).is_ok());
        let mut body = serde_json::Map::new();
        for (spec, pair) in issues.iter().zip(text.split_whitespace()) {
            let value = pair.split_once(':').unwrap().1;
            body.insert(
                spec.label.clone(),
                value
                    .parse::<i64>()
                    .map_or(serde_json::json!(value), |n| serde_json::json!(n)),
            );
        }
        serde_json::Value::Object(body)
    }

    #[test]
    fn the_accept_is_the_other_sides_move_after_the_accepted_solution() {
        let f = found();
        let r = record(
            serde_json::json!([
                {"body": "Hi", "user_id": "c", "created_at": "2018-11-07 02:27:03.123000+09:00"},
                {"body": "Deal?", "user_id": "w", "created_at": "2018-11-07 02:29:00.000000+09:00"}
            ]),
            serde_json::json!([
                {"accepted": true, "body": body(&f), "user_id": "c", "created_at": "2018-11-07 02:28:00.000000+09:00"}
            ]),
        );
        let u = utterances(&r, &f).unwrap();
        let kinds: Vec<(Role, bool)> = u.iter().map(|u| (u.role, u.action.is_some())).collect();
        assert_eq!(
            kinds,
            vec![
                (Role::Recruiter, false),
                (Role::Recruiter, true),
                (Role::Worker, false),
                (Role::Worker, true)
            ]
        );
        assert_eq!(u[3].action, Some(Action::Accept));
    }

    #[test]
    fn an_accept_whose_time_is_unknown_is_skipped() {
        let f = found();
        let at = |s: u32| format!("2018-11-07 02:2{s}:00.000000+09:00");
        let r = record(
            serde_json::json!([
                {"body": "Hmm", "user_id": "w", "created_at": at(2)},
                {"body": "Well?", "user_id": "c", "created_at": at(3)}
            ]),
            serde_json::json!([
                {"accepted": true, "body": body(&f), "user_id": "c", "created_at": at(1)}
            ]),
        );
        let skip = utterances(&r, &f).unwrap_err();
        assert!(
            skip.reason.starts_with("accept time unknown"),
            "{}",
            skip.reason
        );
    }
}
