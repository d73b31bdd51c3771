//! Playing a people's dialogue through run's one driver, and checking what the engine makes of
//! it against what the dataset recorded.

use std::sync::Arc;

use super::{HumanDialogue, MAX_TURNS_PER_PERSON};
use crate::agents::{PersonaConfig, Played};
use crate::game::{
    CraigslistBudget, EpisodeConfig, EpisodeSeed, FirstMover, OutcomeKind, PerSeat, Prompts, Seat,
    Seatings, Talk,
};
use crate::protocol::{parse_terms, render_action, render_turn, TurnFormat};
use crate::record::{EpisodeRecord, PlayerSpec};
use crate::reward::RewardConfig;
use crate::run::{Driver, EpisodeError, EpisodeKit, PlannedEpisode, SeatPlayer, Seating};
use crate::scenario::{Family, HumanEnding, Role};

/// The name both seats of a people's episode have (`seats.*.name`).
pub const HUMAN_NAME: &str = "human";

/// How a people's record says who played: a person of the dataset's dialogue
/// ([`PlayerSpec::person`], written `human:<dataset dialogue id>`).
pub(crate) fn human_spec(dialogue: &str) -> String {
    PlayerSpec::person(dialogue).to_string()
}

/// CaSiNo's own rule: a walk-away scores 5 points for each side (the dataset's points say so).
const CASINO_WALK_AWAY_POINTS: f64 = 5.0;

/// A played dialogue: its record, and what differs from the dataset's outcome, if anything.
pub(crate) struct PlayedDialogue {
    pub record: EpisodeRecord,
    pub mismatch: Option<String>,
}

/// The role the learner seat takes: the family's default learner role, or on the symmetric
/// item games the dataset's first side (`agent_1`).
pub(crate) fn learner_role(family: Family) -> Role {
    family.default_learner_role().unwrap_or(family.roles()[0])
}

/// The rules the people played under: no regulation, no reject loop, no format corrections,
/// one cap of [`MAX_TURNS_PER_PERSON`] turns per person, the XML spelling (so a message with
/// no move is `[TALK]`), and CaSiNo's walk-away points.
fn people_rules(family: Family, learner: Role, first: Role) -> EpisodeConfig {
    EpisodeConfig {
        learner_role: Some(learner),
        first_mover: if first == learner {
            FirstMover::Learner
        } else {
            FirstMover::Opponent
        },
        regulate_learner: false,
        regulate_opponent: false,
        floor_fraction: None,
        no_deal_value: (family == Family::Casino).then_some(CASINO_WALK_AWAY_POINTS),
        max_rounds: MAX_TURNS_PER_PERSON,
        reject_loop: 0,
        reject_streak: Some(0),
        format_retries: 0,
        learner_format: TurnFormat::Xml,
        opponent_format: TurnFormat::Xml,
        learner_acts: false,
        opponent_acts: false,
        // The people were told the data's target.
        craigslist_budget: CraigslistBudget::Target,
        seatings: Seatings::One,
        // The people read each other's messages.
        talk: Talk::On,
    }
}

/// Play `dialogue` as episode `g{group}-m0` of the run `human-<family>`.
pub(crate) fn play(
    family: Family,
    dialogue: &HumanDialogue,
    group: u64,
    prompts: &Arc<Prompts>,
) -> Result<PlayedDialogue, EpisodeError> {
    let learner = learner_role(family);
    let first = dialogue.turns.first().map_or(learner, |t| t.role);
    let seat = SeatPlayer::External {
        spec: human_spec(&dialogue.id),
        takes_persona: false,
    };
    let kit = Arc::new(EpisodeKit {
        preset: None,
        run_id: format!("human-{family}"),
        players: PerSeat::new(seat.clone(), seat),
        episode: people_rules(family, learner, first),
        personas: PersonaConfig::default(),
        rewards: RewardConfig::default(),
        prompts: prompts.clone(),
        rewarding: None,
        seating: Seating {
            names: PerSeat::new(Some(HUMAN_NAME.into()), Some(HUMAN_NAME.into())),
            roles_exchanged: false,
        },
        text_limits: None,
        probes: Default::default(),
    });
    let planned = PlannedEpisode {
        scenario: dialogue.scenario.clone(),
        scenario_digest: dialogue.digest,
        seeds: EpisodeSeed {
            run: 0,
            group,
            member: 0,
        },
        prefix: None,
        tag: None,
        standing: None,
        learner_role: None,
    };
    let mut setup = kit
        .draw_setup(&planned.scenario, planned.seeds, planned.learner_role)
        .map_err(|source| EpisodeError::Setup {
            scenario: planned.scenario.id.clone(),
            source,
        })?;
    if dialogue.stopped {
        setup.rules.max_moves = Some(dialogue.turns.len() as u32);
    }
    let mut driver = Driver::with_setup(kit, planned, setup)?;
    let space = dialogue.scenario.term_space();
    let mut mismatch = None;
    for turn in &dialogue.turns {
        let Some(seat) = driver.to_move() else {
            mismatch = Some("the engine ended the episode before the people did".to_string());
            break;
        };
        if driver.episode().setup().seats[seat].role != turn.role {
            mismatch = Some("the engine asks the other person to move".to_string());
            break;
        }
        let text = render_turn(
            "",
            &turn.talk,
            &render_action(&turn.action, space, true),
            TurnFormat::Xml,
        );
        let Some(step) = driver.feed(Played::scripted(text.into(), 0))? else {
            // Only a text limit ends an episode without playing the turn; an import has none.
            mismatch = Some("the engine ended the episode before the people did".to_string());
            break;
        };
        if mismatch.is_none()
            && (step.parsed.talk.as_deref().unwrap_or("") != turn.talk
                || step.played.as_ref() != Some(&turn.action))
        {
            mismatch = Some("a turn is not read back as the person wrote it".to_string());
        }
    }
    if driver.to_move().is_some() {
        return Ok(PlayedDialogue {
            record: unfinished(driver, dialogue)?,
            mismatch: Some("the episode did not end where the people stopped".to_string()),
        });
    }
    let mut record = driver.into_record()?;
    // The people's time is not the engine's: an import is the same file every time.
    record.timing.wall_ms = 0;
    for (t, turn) in record.turns.iter_mut().zip(&dialogue.turns) {
        t.dataset_labels = turn.dataset_labels.clone();
    }
    let mismatch = mismatch.or_else(|| outcome_differs(&record, dialogue));
    Ok(PlayedDialogue { record, mismatch })
}

/// An episode the people's turns did not end (never expected: a stopped dialogue has its move
/// cap): ended as a backend failure of the seat to move, so it is still a record.
fn unfinished(mut driver: Driver, dialogue: &HumanDialogue) -> Result<EpisodeRecord, EpisodeError> {
    if let Some(seat) = driver.to_move() {
        let error = crate::agents::PlayerError::ScriptExhausted {
            file: human_spec(&dialogue.id),
            played: dialogue.turns.len(),
        };
        driver.fail(seat, &error)?;
    }
    driver.into_record()
}

/// What in the engine's outcome differs from the dataset's record of the dialogue, if
/// anything: the ending (a deal, a walk-away, no deal), the agreed terms, and each side's
/// points where the dataset recorded them.
fn outcome_differs(record: &EpisodeRecord, dialogue: &HumanDialogue) -> Option<String> {
    let recorded = &dialogue.recorded;
    let outcome = &record.outcome.outcome;
    let space = dialogue.scenario.term_space();
    let ending_ok = match recorded.ending {
        HumanEnding::Deal => outcome.kind == OutcomeKind::Deal,
        HumanEnding::WalkAway => outcome.kind == OutcomeKind::WalkAway,
        HumanEnding::NoDeal | HumanEnding::Disagree | HumanEnding::Quit => {
            outcome.kind != OutcomeKind::Deal
        }
    };
    if !ending_ok {
        return Some(format!(
            "ending: the people's {:?}, the engine's {}",
            recorded.ending,
            outcome.kind.name()
        ));
    }
    let seat_of = |role: Role| record.setup.seat_of(role);
    if let (Some(text), Some(view)) = (&recorded.terms, recorded.view) {
        let wanted = parse_terms(text, space).ok().map(|(t, _)| t);
        let got = outcome.terms.as_ref().map(|t| match seat_of(view) {
            Some(Seat::Learner) => t.clone(),
            _ => t.flipped(space),
        });
        if wanted.is_none() || wanted != got {
            return Some("the agreed terms".to_string());
        }
    }
    for p in &recorded.points {
        let utility = seat_of(p.role).map(|seat| outcome.utility[seat]);
        if utility.is_none_or(|u| (u - p.points).abs() > 1e-6) {
            return Some("a side's points".to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialogues::{form_turns, Found, Utterance};
    use crate::protocol::{Action, Terms};
    use crate::scenario::{HumanOutcome, RecordedPoints};

    /// A price dialogue (listing 200, budget 180, cost 100 in the fixture): the seller offers
    /// `price`, the buyer says something and accepts.
    fn dialogue(price: i64, recorded: HumanOutcome) -> HumanDialogue {
        let scenario = crate::fixtures::price();
        let found = Found {
            digest: scenario.digest(),
            scenario,
            recorded,
        };
        form_turns(
            "C_1",
            found,
            vec![
                Utterance::says(Role::Seller, "It is <b>new</b>."),
                Utterance::moves(Role::Seller, Action::Submit(Terms::Price(price))),
                Utterance::says(Role::Buyer, "OK"),
                Utterance::moves(Role::Buyer, Action::Accept),
            ],
        )
        .unwrap()
    }

    fn deal_at(text: &str, points: Vec<RecordedPoints>) -> HumanOutcome {
        HumanOutcome {
            dialogue: "C_1".into(),
            ending: HumanEnding::Deal,
            terms: Some(text.into()),
            view: Some(Role::Buyer),
            points,
        }
    }

    #[test]
    fn a_played_dialogue_is_a_record_of_the_people_and_its_outcome_is_checked() {
        let d = dialogue(15_000, deal_at("price:150", vec![]));
        let played = play(Family::Craigslist, &d, 3, &Prompts::builtin()).unwrap();
        let r = &played.record;
        assert_eq!(played.mismatch, None);
        assert_eq!(r.episode_id, "g3-m0");
        assert_eq!(
            r.seats.learner.role,
            Role::Buyer,
            "the family's learner role"
        );
        assert_eq!(r.first_mover, Seat::Opponent, "the seller spoke first");
        for seat in Seat::BOTH {
            assert_eq!(r.seats[seat].player, "human:C_1");
            assert_eq!(r.seats[seat].name.as_deref(), Some(HUMAN_NAME));
        }
        assert_eq!(r.kind(), OutcomeKind::Deal);
        assert_eq!(r.setup.rules.max_moves, None, "it ended by an accept");
        assert_eq!(r.setup.rules.max_rounds, MAX_TURNS_PER_PERSON);
        assert_eq!(r.turns[0].parsed.talk.as_deref(), Some("It is <b>new</b>."));
        assert!(r.turns[0].raw.starts_with("<thought></thought>"));
        assert_eq!(r.timing.wall_ms, 0);
    }

    #[test]
    fn another_price_or_other_points_or_another_ending_is_a_mismatch() {
        let other_price = dialogue(16_000, deal_at("price:150", vec![]));
        let played = play(Family::Craigslist, &other_price, 0, &Prompts::builtin()).unwrap();
        assert_eq!(played.mismatch.as_deref(), Some("the agreed terms"));

        let points = vec![RecordedPoints {
            role: Role::Seller,
            points: 1.0,
        }];
        let other_points = dialogue(15_000, deal_at("price:150", points));
        let played = play(Family::Craigslist, &other_points, 0, &Prompts::builtin()).unwrap();
        assert_eq!(played.mismatch.as_deref(), Some("a side's points"));

        let walked = dialogue(
            15_000,
            HumanOutcome {
                ending: HumanEnding::WalkAway,
                terms: None,
                view: None,
                ..deal_at("", vec![])
            },
        );
        let played = play(Family::Craigslist, &walked, 0, &Prompts::builtin()).unwrap();
        assert!(played.mismatch.unwrap().starts_with("ending"));
    }

    #[test]
    fn a_dialogue_that_stopped_ends_as_max_turns_where_it_stopped() {
        let scenario = crate::fixtures::price();
        let found = Found {
            digest: scenario.digest(),
            scenario,
            recorded: HumanOutcome {
                ending: HumanEnding::NoDeal,
                terms: None,
                view: None,
                ..deal_at("", vec![])
            },
        };
        let d = form_turns(
            "C_2",
            found,
            vec![
                Utterance::says(Role::Buyer, "Hi"),
                Utterance::moves(Role::Seller, Action::Submit(Terms::Price(17_000))),
                Utterance::moves(Role::Buyer, Action::Reject),
            ],
        )
        .unwrap();
        let played = play(Family::Craigslist, &d, 0, &Prompts::builtin()).unwrap();
        assert_eq!(played.mismatch, None);
        assert_eq!(played.record.kind(), OutcomeKind::MaxTurns);
        assert_eq!(played.record.turns.len(), 3);
        assert_eq!(played.record.setup.rules.max_moves, Some(3));
    }
}
