//! Throughput of `dealgym run` against the mock endpoint over real HTTP, on a grid of
//! concurrency × mock latency, both seats on the mock (every turn is one model call).
//!
//! Each process does one job so CPU and memory are attributed cleanly:
//! - the mock runs as a child process (this example re-run with `--mock-child`), so its CPU is
//!   not the engine's;
//! - each cell runs in its own child (`--cell`), which measures its own CPU time (getrusage:
//!   client + engine + record writing, no server), its RSS before the run and its peak RSS;
//! - this parent tails the cell's record file as it grows, timestamps each finished episode,
//!   and rebuilds when each call ended from the record's per-turn latencies, for turn latency
//!   percentiles and the steady-state rate.
//!
//! Steady state (at latency > 0): calls ended per second between the first finished episode
//! (ramp-up over) and the moment fewer than `concurrency` episodes remain (the last wave),
//! against the ideal concurrency / latency.
//!
//! `cargo run --release --example throughput [-- --concurrency 1,64,256,1024,4096
//!  --latency-ms 0,200 --waves 4 --min-episodes 1000 --threads N]`
//!
//! Each cell runs on the runtime `dealgym run` uses: one thread (a current-thread tokio
//! runtime), or with `--threads N` (N > 1) a multi-thread runtime of N workers, as
//! `dealgym run --threads N`.

mod common;

use common::{scenario_files, status_kib};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

/// The allocator `dealgym` itself runs on (src/main.rs: mimalloc with `--features mimalloc`,
/// else the system's), so the cells measure what the binary spends.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Let the process hold as many sockets as the hard limit allows (4096 in flight needs more
/// than the usual 1024 descriptors, in the client and in the mock).
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// User + system CPU time of this process, in µs.
fn cpu_us() -> u64 {
    // SAFETY: getrusage writes into the struct passed.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn list(args: &[String], name: &str, default: &[u64]) -> Vec<u64> {
    arg(args, name).map_or_else(
        || default.to_vec(),
        |v| {
            v.split(',')
                .map(|n| n.trim().parse().expect("a number"))
                .collect()
        },
    )
}

/// `--mock-child --latency-ms L`: serve the mock on a free port, printing its address.
fn mock_child(args: &[String]) {
    raise_fd_limit();
    let latency_ms: u64 = arg(args, "--latency-ms").map_or(0, |v| v.parse().unwrap());
    let config = dealgym_mock::MockConfig {
        latency_ms,
        ..Default::default()
    };
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        // `serve` prints "mock endpoint on http://ADDR/v1" on stderr.
        dealgym_mock::serve("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
    });
}

/// `--cell`: one run; prints a JSON line of what this process measured.
fn cell_child(args: &[String]) {
    raise_fd_limit();
    let base_url = arg(args, "--mock").unwrap().to_string();
    let concurrency: usize = arg(args, "--concurrency").unwrap().parse().unwrap();
    let limit: usize = arg(args, "--limit").unwrap().parse().unwrap();
    let group: u32 = arg(args, "--group").unwrap().parse().unwrap();
    let out = PathBuf::from(arg(args, "--out").unwrap());
    // As `dealgym run --threads N`: one thread by default (no cross-thread wake-ups).
    let threads: usize = arg(args, "--threads").map_or(1, |v| v.parse().unwrap());
    let runtime = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .unwrap()
    };
    let spec = format!("openai:mock@{base_url}");
    let mut options = dealgym::run::RunOptions::new(scenario_files(), &spec, &spec, out);
    options.limit = Some(limit);
    options.group_size = group;
    options.concurrency = concurrency;
    options.progress = false;
    // Warm the allocator with what every run loads anyway, so the baseline holds it.
    let _ = dealgym::run::load_all(&options.scenarios, &options.selection()).unwrap();
    let (rss_before, cpu_before) = (status_kib("VmRSS"), cpu_us());
    let started = Instant::now();
    let summary = runtime
        .block_on(dealgym::run::run(&options, std::future::pending()))
        .unwrap();
    let (cpu, wall) = (cpu_us() - cpu_before, started.elapsed().as_secs_f64());
    println!(
        "{}",
        json!({
            "cpu_us": cpu,
            "wall_s": wall,
            "rss_before_kb": rss_before,
            "hwm_kb": status_kib("VmHWM"),
            "calls": summary.stats.calls(),
            "written": summary.written,
            "errors": summary.stats.count(dealgym::game::OutcomeKind::Error),
        })
    );
}

#[derive(Deserialize)]
struct CellReport {
    cpu_us: u64,
    wall_s: f64,
    rss_before_kb: u64,
    hwm_kb: u64,
    calls: usize,
    written: usize,
    errors: usize,
}

#[derive(Deserialize)]
struct TimingOnly {
    timing: Timing,
}

#[derive(Deserialize)]
struct Timing {
    turn_ms: Vec<u64>,
    call_retries: Vec<u32>,
}

/// A finished episode as the parent saw it: when it was seen, and its turn latencies.
struct Seen {
    at_s: f64,
    turn_ms: Vec<u64>,
    retries: u32,
}

/// Read the lines appended to `file` since `offset` (complete lines only).
fn read_new(path: &Path, offset: &mut u64, partial: &mut Vec<u8>, at_s: f64, seen: &mut Vec<Seen>) {
    let Ok(mut file) = std::fs::File::open(path) else {
        return;
    };
    use std::io::Seek;
    if file.seek(std::io::SeekFrom::Start(*offset)).is_err() {
        return;
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return;
    }
    *offset += bytes.len() as u64;
    partial.extend_from_slice(&bytes);
    while let Some(end) = partial.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = partial.drain(..=end).collect();
        let t: TimingOnly = serde_json::from_slice(&line).expect("a record");
        seen.push(Seen {
            at_s,
            retries: t.timing.call_retries.iter().sum(),
            turn_ms: t.timing.turn_ms,
        });
    }
}

struct Row {
    concurrency: u64,
    latency_ms: u64,
    episodes: usize,
    calls: usize,
    retries: u32,
    errors: usize,
    wall_s: f64,
    p50_ms: u64,
    p99_ms: u64,
    mean_ms: f64,
    cpu_us_per_call: f64,
    peak_mb: f64,
    kb_per_episode: f64,
    steady: Option<(f64, f64)>,
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// One cell: spawn the run, tail its records, collect the figures.
fn run_cell(
    base_url: &str,
    concurrency: u64,
    latency_ms: u64,
    episodes: u64,
    threads: usize,
) -> Row {
    // Episodes = 5 families × limit × group (Job Interview has 109 scenarios).
    let limit = episodes.div_ceil(5).clamp(1, 100);
    let group = episodes.div_ceil(5 * limit).max(1);
    let out = std::env::temp_dir().join(format!(
        "dealgym-throughput-{}-{concurrency}-{latency_ms}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&out);
    let started = Instant::now();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--cell", "--mock", base_url])
        .args(["--concurrency", &concurrency.to_string()])
        .args(["--limit", &limit.to_string(), "--group", &group.to_string()])
        .args(["--out", &out.display().to_string()])
        .args(["--threads", &threads.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the cell");
    let (mut offset, mut partial, mut seen) = (0u64, Vec::new(), Vec::new());
    loop {
        let done = child.try_wait().unwrap().is_some();
        read_new(
            &out,
            &mut offset,
            &mut partial,
            started.elapsed().as_secs_f64(),
            &mut seen,
        );
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let report: CellReport = serde_json::from_str(stdout.trim()).expect("the cell's report");
    let _ = std::fs::remove_file(&out);
    assert_eq!(seen.len(), report.written);

    let mut latencies: Vec<u64> = seen
        .iter()
        .flat_map(|s| s.turn_ms.iter().copied())
        .collect();
    latencies.sort_unstable();
    let steady = (latency_ms > 0 && seen.len() > concurrency as usize).then(|| {
        // When each call ended: back from the episode's end by the later calls' latencies.
        let mut ends: Vec<f64> = Vec::new();
        for s in &seen {
            let mut t = s.at_s;
            for ms in s.turn_ms.iter().rev() {
                ends.push(t);
                t -= *ms as f64 / 1000.0;
            }
        }
        let from = seen[0].at_s;
        let to = seen[seen.len() - concurrency as usize].at_s;
        let calls = ends.iter().filter(|t| **t > from && **t <= to).count();
        let rate = calls as f64 / (to - from).max(1e-9);
        let ideal = concurrency as f64 / (latency_ms as f64 / 1000.0);
        (rate, ideal)
    });
    Row {
        concurrency,
        latency_ms,
        episodes: report.written,
        calls: report.calls,
        retries: seen.iter().map(|s| s.retries).sum(),
        errors: report.errors,
        wall_s: report.wall_s,
        p50_ms: percentile(&latencies, 0.5),
        mean_ms: latencies.iter().sum::<u64>() as f64 / latencies.len().max(1) as f64,
        p99_ms: percentile(&latencies, 0.99),
        cpu_us_per_call: report.cpu_us as f64 / report.calls.max(1) as f64,
        peak_mb: report.hwm_kb as f64 / 1024.0,
        kb_per_episode: report.hwm_kb.saturating_sub(report.rss_before_kb) as f64
            / concurrency as f64,
        steady,
    }
}

/// Start the mock child at `latency_ms`; returns it and its base URL.
fn start_mock(latency_ms: u64) -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--mock-child", "--latency-ms", &latency_ms.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the mock");
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    // Keep draining what else the mock says, so it never writes into a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let url = line
        .trim()
        .strip_prefix("mock endpoint on ")
        .unwrap_or_else(|| panic!("unexpected mock output: {line}"))
        .to_string();
    (child, url)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--mock-child") {
        return mock_child(&args);
    }
    if args.first().map(String::as_str) == Some("--cell") {
        return cell_child(&args);
    }
    let concurrencies = list(&args, "--concurrency", &[1, 64, 256, 1024, 4096]);
    let latencies = list(&args, "--latency-ms", &[0, 200]);
    let threads: usize = arg(&args, "--threads").map_or(1, |v| v.parse().unwrap());
    let waves: u64 = arg(&args, "--waves").map_or(4, |v| v.parse().unwrap());
    let min_episodes: u64 = arg(&args, "--min-episodes").map_or(1000, |v| v.parse().unwrap());

    println!(
        "| in flight | mock latency | episodes | turns | retries | errors | wall s | turns/s | episodes/s \
         | p50 turn ms | p99 turn ms | mean turn ms | engine CPU µs/turn | peak RSS MB | RSS KB per in-flight episode \
         | steady turns/s | ideal | efficiency | engine gap ms per turn |"
    );
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for &latency_ms in &latencies {
        let (mut mock, url) = start_mock(latency_ms);
        for &concurrency in &concurrencies {
            // Enough episodes for `waves` full waves; at 0 ms at least `min_episodes`, and
            // fewer at concurrency 1 with latency (each episode takes seconds there).
            let episodes = if latency_ms > 0 && concurrency == 1 {
                5
            } else {
                (concurrency * waves).max(min_episodes)
            };
            let r = run_cell(&url, concurrency, latency_ms, episodes, threads);
            // The engine's share of each call slot's cycle: the cycle (in flight / rate) less
            // the mean call latency the server gave.
            let (steady, ideal, eff, gap) = match r.steady {
                Some((rate, ideal)) => (
                    format!("{rate:.0}"),
                    format!("{ideal:.0}"),
                    format!("{:.1} %", 100.0 * rate / ideal),
                    format!("{:.1}", 1000.0 * r.concurrency as f64 / rate - r.mean_ms),
                ),
                None => ("–".into(), "–".into(), "–".into(), "–".into()),
            };
            println!(
                "| {} | {} ms | {} | {} | {} | {} | {:.1} | {:.0} | {:.1} | {} | {} | {:.1} | {:.1} | {:.0} | {:.1} | {steady} | {ideal} | {eff} | {gap} |",
                r.concurrency,
                r.latency_ms,
                r.episodes,
                r.calls,
                r.retries,
                r.errors,
                r.wall_s,
                r.calls as f64 / r.wall_s,
                r.episodes as f64 / r.wall_s,
                r.p50_ms,
                r.p99_ms,
                r.mean_ms,
                r.cpu_us_per_call,
                r.peak_mb,
                r.kb_per_episode,
            );
        }
        let _ = mock.kill();
        let _ = mock.wait();
    }
}
