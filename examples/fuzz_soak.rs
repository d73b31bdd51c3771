//! The long fuzzing soak: millions of generated inputs — arbitrary bytes and mutated valid
//! completions, scenario lines and configs — through the turn parser, the scenario loader and
//! the config loader, on every core, each input under `catch_unwind`. The generator is
//! deterministic (ChaCha8 seeded by `--seed` and the thread), so a crash is reproducible; one is
//! printed with its input and the process exits non-zero.
//!
//! `cargo run --release --example fuzz_soak [-- --inputs 10000000] [--seconds S] [--seed N]
//!  [--threads T]` — stops at whichever of `--inputs` and `--seconds` comes first.
//!
//! The inputs and checks are `tests/fuzz_support/mod.rs`, shared with the proptest suite
//! `tests/fuzz.rs`.

#[path = "../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use fuzz_support::{check_config, check_parse, check_scenarios, config_path, Corpus, Target};

fn arg(args: &[String], name: &str) -> Option<u64> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
}

/// The target of the n-th input: the parser half the time (it is the hottest reader), the
/// scenario loader a third, the config loader the rest (each config goes through a file).
fn target_of(rng: &mut impl Rng) -> Target {
    match rng.random_range(0..6) {
        0..=2 => Target::Parse,
        3 | 4 => Target::Scenario,
        _ => Target::Config,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let total = arg(&args, "--inputs").unwrap_or(10_000_000);
    let seconds = arg(&args, "--seconds");
    let seed = arg(&args, "--seed").unwrap_or(0);
    let threads = arg(&args, "--threads").map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |t| t as usize,
    );
    let corpus = Arc::new(Corpus::load(Path::new(env!("CARGO_MANIFEST_DIR"))));
    let next = Arc::new(AtomicU64::new(0));
    let counts: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let crashes = Arc::new(Mutex::new(Vec::<(Target, Vec<u8>, String)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    // Panics are caught and reported with their input; keep the default hook quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let deadline = seconds.map(|s| started + Duration::from_secs(s));

    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (corpus, next, counts, crashes, stop) = (
                corpus.clone(),
                next.clone(),
                counts.clone(),
                crashes.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003) + t as u64);
                let path = config_path(&format!("soak-{t}"));
                loop {
                    // Claim inputs in batches to keep the counter off the hot path.
                    let first = next.fetch_add(1024, Ordering::Relaxed);
                    if first >= total || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    for _ in first..(first + 1024).min(total) {
                        let target = target_of(&mut rng);
                        let input = corpus.input(target, &mut rng);
                        let result = std::panic::catch_unwind(AssertUnwindSafe(|| match target {
                            Target::Parse => check_parse(&corpus, &input),
                            Target::Scenario => check_scenarios(&input),
                            Target::Config => check_config(&path, &input),
                        }));
                        counts[target as usize].fetch_add(1, Ordering::Relaxed);
                        if let Err(panic) = result {
                            let message = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            let mut crashes = crashes.lock().unwrap();
                            if crashes.len() < 20 {
                                crashes.push((target, input, message));
                            }
                        }
                    }
                }
                let _ = std::fs::remove_file(path);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let per_target: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let run: u64 = per_target.iter().sum();
    println!(
        "fuzz soak: {run} inputs in {elapsed:.1} s ({:.0}/s) on {threads} threads, seed {seed}",
        run as f64 / elapsed
    );
    for target in Target::ALL {
        println!(
            "  {:<16} {:>12}",
            target.name(),
            per_target[target as usize]
        );
    }
    let crashes = crashes.lock().unwrap();
    println!("  crashes          {:>12}", crashes.len());
    for (target, input, message) in crashes.iter() {
        println!(
            "CRASH in the {}: {message}\n  input ({} bytes): {:?}",
            target.name(),
            input.len(),
            String::from_utf8_lossy(input)
        );
    }
    if !crashes.is_empty() {
        std::process::exit(1);
    }
}
