//! Engine hot paths without any network: parsing a completion, one whole rule-vs-rule episode
//! per family through the library, a scenario's digest, encoding and reading records, and one
//! episode into a streaming aggregate.
//! `cargo bench --bench engine`.

use std::path::Path;
use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use dealgym::agents::{Position, RulePlayer, Tactic};
use dealgym::game::{Episode, EpisodeConfig, EpisodeSeed, PerSeat, Seat, Setup};
use dealgym::protocol::{parse, TermSpace};
use dealgym::record::{EpisodeRecord, PlayerInfo, RecordMeta, RecordReader, Timing};
use dealgym::reward::RewardConfig;
use dealgym::scenario::{load_scenarios, Family, LoadOptions, Scenario};
use dealgym::score::{Aggregate, Weights};
use dealgym_core::fixtures::casino_items;

fn first_scenario(family: Family) -> Arc<Scenario> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{}.jsonl", family.name()));
    Arc::new(
        load_scenarios(&path, LoadOptions::default())
            .unwrap()
            .scenarios
            .remove(0),
    )
}

fn play(scenario: &Arc<Scenario>, players: &PerSeat<RulePlayer>) -> Episode {
    let seed = EpisodeSeed {
        run: 1,
        group: 0,
        member: 0,
    };
    let setup = Setup::draw(
        scenario,
        &EpisodeConfig::default(),
        PerSeat::default(),
        &mut seed.setup_rng(),
    )
    .unwrap();
    let mut episode = Episode::new(scenario.clone(), setup).unwrap();
    while let Some(seat) = episode.to_move() {
        let text = players[seat].complete(&Position::of(&episode, seat, 0));
        episode.step(text).unwrap();
    }
    episode
}

fn bench(c: &mut Criterion) {
    let items = casino_items();
    let tagged = "<think>They want water.</think>\n**Thought:** I need firewood most.\n**Talk:** I can give you \
                  all the water if I get the firewood.\n**Action:** [SUBMIT_DEAL] food:1, water:0, firewood:3";
    c.bench_function("parse/tagged_items", |b| {
        b.iter(|| parse(black_box(tagged), TermSpace::Items(&items), None))
    });
    let xml = "<thought>ok</thought><talk>Deal at that price.</talk><action>[SUBMIT_DEAL] price: $1,250.00</action>";
    c.bench_function("parse/xml_price", |b| {
        b.iter(|| parse(black_box(xml), TermSpace::Price, None))
    });

    let players = PerSeat::new(
        RulePlayer::new(Tactic::Boulware),
        RulePlayer::new(Tactic::Conceder),
    );
    for family in Family::ALL {
        let scenario = first_scenario(family);
        c.bench_function(&format!("episode/{family}"), |b| {
            b.iter(|| play(&scenario, &players))
        });
    }
    let meta_of = |scenario: &Scenario| RecordMeta {
        run_id: "bench".into(),
        seeds: EpisodeSeed {
            run: 1,
            group: 0,
            member: 0,
        },
        scenario_digest: scenario.digest(),
        players: PerSeat::new(PlayerInfo::default(), PlayerInfo::default()),
    };
    // Scoring an ended episode (metrics with the Pareto check, rewards) and encoding it.
    for family in [Family::Casino, Family::JobInterview] {
        let scenario = first_scenario(family);
        let meta = meta_of(&scenario);
        c.bench_function(&format!("record/score_{family}"), |b| {
            b.iter_batched(
                || play(&scenario, &players),
                |episode| {
                    EpisodeRecord::from_episode(
                        episode,
                        meta.clone(),
                        &RewardConfig::default(),
                        Timing::default(),
                        [],
                    )
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    // The digest a run computes once per scenario (and replay once per record).
    let scenario = first_scenario(Family::Casino);
    c.bench_function("scenario/digest_casino", |b| {
        b.iter(|| black_box(&scenario).digest())
    });
    let record = EpisodeRecord::from_episode(
        play(&scenario, &players),
        meta_of(&scenario),
        &RewardConfig::default(),
        Timing::default(),
        [],
    )
    .unwrap();
    c.bench_function("record/to_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&record)).unwrap())
    });
    // Reading records back through the one reader, 100 lines at a time.
    let mut file = Vec::new();
    for _ in 0..100 {
        serde_json::to_writer(&mut file, &record).unwrap();
        file.push(b'\n');
    }
    c.bench_function("record/read_100_lines", |b| {
        b.iter(|| RecordReader::new(black_box(file.as_slice()), "bench").count())
    });

    // One episode into an aggregate (a run summary's or a report group's): drawing its
    // bootstrap weights from its key, then the per-resample sums; and the sums alone, as a
    // report adds an episode to each further group with the weights already drawn.
    let values = record.values_from_side_of(Seat::Learner);
    let mut aggregate = Aggregate::default();
    let mut key = 0u64;
    c.bench_function("aggregate/add", |b| {
        b.iter(|| {
            key += 1;
            aggregate.add(key, black_box(&values))
        })
    });
    let weights = Weights::of(record.key());
    c.bench_function("aggregate/add_weighted", |b| {
        b.iter(|| aggregate.add_weighted(black_box(&weights), &values))
    });
    c.bench_function("aggregate/weights", |b| {
        b.iter(|| Weights::of(black_box(record.key())))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
