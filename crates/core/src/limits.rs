//! Every bound on a size or a duration a user or a client can set: a flag, a config key, a
//! request body, a scenario line, a record line. One home, so a limit is stated once and
//! every place a value enters checks it against the same number, with an error that names
//! the value, the limit and what was given. A value past these is no useful setting and would
//! otherwise exhaust memory, overflow an arithmetic type or panic far from where it entered.

use std::io::{BufRead, ErrorKind};
use std::time::Duration;

/// The longest duration a config or a flag may give, in seconds: one day. Longer is no
/// useful timeout, backoff or grace period, and far longer overflows `Duration` (a panic).
pub const MAX_SECONDS: f64 = 86_400.0;

/// The most members of one GRPO group (`--group-size`, `group_size`, a rollout request's
/// `group_size`). Published recipes use 4 to 64.
pub const MAX_GROUP_SIZE: u64 = 4096;

/// The most episodes one run, eval cell set or merge may plan.
pub const MAX_EPISODES: u64 = 10_000_000;

/// The most episodes one `POST /v1/rollouts` request may plan (scenarios × group size).
pub const MAX_REQUEST_EPISODES: u64 = 100_000;

/// The most episodes (or model calls) in flight at once: `--concurrency`, `concurrency`,
/// `max_in_flight_per_replica`.
pub const MAX_CONCURRENCY: u64 = 65_536;

/// The most live sessions a server may hold (`--max-sessions`).
pub const MAX_SESSIONS: u64 = 1_000_000;

/// The most HTTP connections (and WebSockets) a server may hold at once
/// (`--max-connections`).
pub const MAX_CONNECTIONS: u64 = 65_536;

/// The most requests one HTTP connection to a server may be allowed
/// (`--max-requests-per-connection`).
pub const MAX_CONNECTION_REQUESTS: u64 = 1_000_000;

/// `dealgym serve`'s defaults for what holds a connection or a client's calls (its flags
/// `--write-timeout-s`, `--max-requests-per-connection`, `--max-client-timeout-s` and
/// `--max-client-backoff-s`; a library-made server has the same).
pub const DEFAULT_WRITE_TIMEOUT_S: u64 = 60;
/// See [`DEFAULT_WRITE_TIMEOUT_S`].
pub const DEFAULT_CONNECTION_REQUESTS: u64 = 1000;
/// See [`DEFAULT_WRITE_TIMEOUT_S`].
pub const DEFAULT_CLIENT_TIMEOUT_S: u64 = 120;
/// See [`DEFAULT_WRITE_TIMEOUT_S`].
pub const DEFAULT_CLIENT_BACKOFF_S: u64 = 30;
/// `--max-client-retries`: the most retries a client may give a call the server makes for it
/// (the client's own default, 4, is within it).
pub const DEFAULT_CLIENT_RETRIES: u64 = 4;

/// The largest request body a server may be told to accept (`--body-limit`), in bytes.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// The most retries of one call to an endpoint (a player's, the judge's or the reward model's
/// `retries`) and the most corrections of one turn (`format_retries`): past this a failing
/// endpoint or player holds its episode for hours instead of ending it as an error.
pub const MAX_RETRIES: u64 = 100;

/// The most rounds per seat of an episode (`max_rounds`, `--max-rounds`): far past any
/// negotiation's length, and the move cap (two moves a round) stays well inside a `u32`.
pub const MAX_ROUNDS: u64 = 10_000;

/// The most replicas one player may list (`endpoints`, `openai:MODEL@URL1,URL2,…`).
pub const MAX_REPLICAS: u64 = 1024;

/// The most tokens one completion may ask for (`max_tokens`): longer than any served model's
/// context.
pub(crate) const MAX_COMPLETION_TOKENS: u64 = 1 << 24;

/// The highest sampling temperature (`temperature`): the OpenAI API's own bound.
pub(crate) const MAX_TEMPERATURE: f64 = 2.0;

/// The longest line a record reader accepts, in bytes: a whole episode with its token ids and
/// logprobs is well under this.
pub const MAX_RECORD_LINE: usize = 64 << 20;

/// What a server lets one completion hold by default (`--max-completion-bytes`): its text,
/// reasoning, tool calls and token ids as a record writes them (JSON, escapes included). A
/// long reasoning model's turn is a few hundred KB; the record line stays far below
/// [`MAX_RECORD_LINE`] even when every turn of an episode is this long.
pub const DEFAULT_MAX_COMPLETION_BYTES: u64 = 1 << 20;

/// The highest `--max-completion-bytes`.
pub const MAX_COMPLETION_BYTES: u64 = 4 << 20;

/// The largest request body `dealgym serve` reads by default (`--body-limit`): twice
/// [`DEFAULT_MAX_COMPLETION_BYTES`], so a step's body, one completion within its limit and
/// what comes with it (the keys, a reasoning's and tool calls' framing), always fits, and a
/// completion past its limit is refused by that limit, naming it, as a step in process and
/// the Python action space refuse it.
pub const DEFAULT_BODY_BYTES: u64 = 2 * DEFAULT_MAX_COMPLETION_BYTES;

/// What a server lets one episode store by default (`--max-episode-bytes`): the JSON of its
/// turns (every copy a turn keeps: the raw completion, its reasoning, Thought and Talk, what was
/// forwarded) and the endpoint's account of each call. A turn that could take it past this ends
/// the episode as an `error` ([`TextLimitError::Episode`]).
pub const DEFAULT_MAX_EPISODE_BYTES: u64 = 16 << 20;

/// The highest `--max-episode-bytes`: half a record line, so the rest of the record (the
/// setup, the system prompts, the outcome, the metrics) always fits beside the turns.
pub const MAX_EPISODE_BYTES: u64 = (MAX_RECORD_LINE / 2) as u64;

/// The memory a server's sessions may hold by default (`--session-memory-bytes`): live and
/// ended, two-party and tables, as each session counts what it keeps (its turns, each seat's
/// view). Past it, ended sessions are evicted, oldest first; then new sessions are refused.
pub const DEFAULT_SESSION_MEMORY_BYTES: u64 = 1 << 30;

/// The highest `--session-memory-bytes`.
pub const MAX_SESSION_MEMORY_BYTES: u64 = 1 << 40;

/// How many times at most one turn stores its completion's bytes: the raw text (and the
/// reasoning, kept as received and merged into `reasoning`), the Thought and Talk cut from it,
/// and the Talk again in what was forwarded — at most four copies of any byte. The bound an
/// episode's next turn is checked against before it is played ([`EpisodeText::admit`]).
pub(crate) const TURN_COPIES: u64 = 4;

/// What a turn stores beside its completion's copies, at most: its keys, the parse, the
/// canonical action and a regulation note forwarded with the Talk.
const TURN_OVERHEAD: u64 = 16 << 10;

/// A server's caps on the text of its episodes (`--max-completion-bytes`,
/// `--max-episode-bytes`): what keeps every record it writes readable, and every session's
/// memory bounded, whatever a client (or a model it calls) sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLimits {
    /// The most one completion may hold, in bytes as a record writes it.
    pub completion: u64,
    /// The most one episode's turns may store, in bytes as a record writes them.
    pub episode: u64,
}

impl Default for TextLimits {
    fn default() -> TextLimits {
        TextLimits {
            completion: DEFAULT_MAX_COMPLETION_BYTES,
            episode: DEFAULT_MAX_EPISODE_BYTES,
        }
    }
}

/// A completion or an episode past a [`TextLimits`] cap: the message names the cap, its value
/// and the flag that sets it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextLimitError {
    #[error("the completion is {bytes} bytes (its text, reasoning and tool calls as the record writes them), over the limit of {limit} bytes one completion may hold (--max-completion-bytes)")]
    Completion { bytes: u64, limit: u64 },
    #[error("the episode's turns hold {stored} bytes and its next turn could store {turn} more, past the limit of {limit} bytes one episode may store (--max-episode-bytes): the episode ends here")]
    Episode { stored: u64, turn: u64, limit: u64 },
}

impl TextLimits {
    /// The rule for one completion of `bytes` (as [`crate::jsonl::encoded_len`] counts it).
    pub fn check_completion(&self, bytes: u64) -> Result<(), TextLimitError> {
        if bytes > self.completion {
            return Err(TextLimitError::Completion {
                bytes,
                limit: self.completion,
            });
        }
        Ok(())
    }
}

/// What an episode's turns store so far, against [`TextLimits`]: the one count a server keeps
/// per episode (two-party or table), so no record it writes is longer than its readers read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EpisodeText {
    stored: u64,
}

impl EpisodeText {
    /// Whether a turn of a completion of `completion` bytes, with `beside` bytes more kept with
    /// it (the endpoint's account of the call), may still be played: the completion within its
    /// cap, and the most such a turn can store (`TURN_COPIES` copies) within the episode's.
    /// Checked before the turn is played, so what an episode stores never passes its cap.
    pub fn admit(
        &self,
        completion: u64,
        beside: u64,
        limits: &TextLimits,
    ) -> Result<(), TextLimitError> {
        limits.check_completion(completion)?;
        let turn = completion
            .saturating_mul(TURN_COPIES)
            .saturating_add(beside)
            .saturating_add(TURN_OVERHEAD);
        if self.stored.saturating_add(turn) > limits.episode {
            return Err(TextLimitError::Episode {
                stored: self.stored,
                turn,
                limit: limits.episode,
            });
        }
        Ok(())
    }

    /// Count a turn (or anything kept with it) as stored: `bytes` as the record writes it.
    pub fn add(&mut self, bytes: u64) {
        self.stored = self.stored.saturating_add(bytes);
    }

    /// The bytes the episode's turns store so far.
    pub fn stored(&self) -> u64 {
        self.stored
    }
}

/// The longest line a scenario, prefix or dialogue file may hold, in bytes.
pub const MAX_INPUT_LINE: usize = 4 << 20;

/// The longest episode id a client of the server may give.
pub const MAX_EPISODE_ID: usize = 128;

/// The most episode kits a server keeps built (one per distinct opponent and rules a client
/// asked for); past it the cache is emptied.
pub const MAX_SERVER_KITS: usize = 256;

/// The largest answer body read from a model endpoint, in bytes: a completion with its
/// logprobs is far smaller; an endpoint that sends more is refused, not buffered.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// The longest a rollout stream waits for its client to take a line, in seconds: a client that
/// stops reading (but keeps its connection) would otherwise keep its request's episodes alive
/// (they hold none of the shared rollout permits once ended) for ever.
pub const STREAM_STALL_SECONDS: u64 = 120;

/// The most answers a judge or reward model keeps in memory (`cache`): each a few hundred
/// bytes, so the cache stays within a few GB.
pub(crate) const MAX_CACHE_ENTRIES: u64 = 10_000_000;

/// The largest `script:FILE` a player reads, in bytes.
pub const MAX_SCRIPT_BYTES: u64 = 16 << 20;
/// The largest text file read whole: a config (`--config`), a judge's rubric, a prompt
/// template (`prompts_dir`, an annotation template). The largest of the repository's is a
/// few KB; a device such as `/dev/zero` or a huge file is refused, not read until memory runs
/// out ([`read_file`]).
pub const MAX_TEXT_FILE: u64 = 16 << 20;
/// The longest file read whole as one value: a raw dataset file `scenarios import` and
/// `dialogues import` parse (the largest published one is about 4 MB).
pub const MAX_INPUT_FILE: u64 = 1 << 30;

// What one scenario line may set (`scenario::validate` checks each where the file is loaded,
// so `run`, `serve` and `scenarios validate` refuse the same lines). Each sits far above the
// datasets' own largest (given in brackets, from `scenarios/*.jsonl`) and far below what
// would exhaust memory or overflow the arithmetic of utilities and the outcome space.

/// The most units of one item on the table, an item's `count` [4, Deal or No Deal].
pub(crate) const MAX_ITEM_COUNT: u64 = 1_000;

/// The most kinds of item in one split game [3].
pub(crate) const MAX_ITEMS: u64 = 16;

/// The most points one unit of an item is worth to a side [10]. With [`MAX_ITEM_COUNT`] a
/// side's share is worth at most 10⁹ points per item.
pub(crate) const MAX_ITEM_VALUE: u64 = 1_000_000;

/// The most issues of one contract [5, Job Interview].
pub(crate) const MAX_ISSUES: u64 = 16;

/// The most values one issue may take: the options of a discrete issue, `max − min + 1` of an
/// integer one [31, the salary of Job Interview].
pub(crate) const MAX_ISSUE_VALUES: u64 = 1_000;

/// The most deals in a scenario's outcome space: every split of the items, or every contract
/// [9,920, Job Interview]. The space is enumerated for every Pareto flag and materialised by
/// the rule players, so it bounds their time and memory per episode.
pub const MAX_OUTCOME_SPACE: u64 = 100_000;

/// The largest magnitude of a number `[rewards]` gives: a weight, a rule's or a guardrail's
/// score, γ, ψ, the length reward's `outside`, each end of the judge's range. What the
/// components score is bounded by the scenario's amounts (`MAX_AMOUNT`) and these, so no
/// total a record writes overflows to infinity (JSON's `null`), however many components,
/// rules and turns it sums. A reward model's score is held to the same bound (an answer past
/// it is a bad answer, like one that is not a number).
pub const MAX_REWARD_NUMBER: f64 = 1e6;

/// The largest magnitude of a price, budget or cost, an integer issue's bounds, an issue's
/// weight and the no-deal value [30,600, a listing price]. Prices are held in cents as `i64`
/// and utilities as `f64`: this keeps both exact and finite.
pub(crate) const MAX_AMOUNT: f64 = 1e9;

/// The rule for a number of seconds a user gives (a config key or a flag, named by `key`):
/// finite, above 0 (or 0 too, where `zero_ok`), and at most [`MAX_SECONDS`]. Checked where
/// the value enters, so a bad one is refused with its name instead of panicking in
/// `Duration::from_secs_f64` later, inside an episode.
pub fn check_seconds(key: &str, value: f64, zero_ok: bool) -> Result<Duration, String> {
    let above = value > 0.0 || (zero_ok && value == 0.0);
    if value.is_finite() && above && value <= MAX_SECONDS {
        return Ok(Duration::from_secs_f64(value));
    }
    let low = if zero_ok { "0 or more" } else { "above 0" };
    Err(format!(
        "{key} must be {low} and at most {MAX_SECONDS} seconds (one day); it is {}",
        shown(value)
    ))
}

/// The rule for a count a user gives (named by `key`): from `min` to `max`, both included.
pub fn check_count(key: &str, value: u64, min: u64, max: u64) -> Result<u64, String> {
    count_rule(value, min, max).map_err(|e| format!("{key} {e}"))
}

fn count_rule(value: u64, min: u64, max: u64) -> Result<u64, String> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(format!("must be from {min} to {max}; it is {value}"))
}

/// The rule for a real number a user gives (named by `key`): finite and from `low` to `high`,
/// both included (`high` infinite: no upper bound). NaN and the infinities are never a
/// setting: they would pass every comparison the code makes later, or fail all of them.
pub(crate) fn check_number(key: &str, value: f64, low: f64, high: f64) -> Result<f64, String> {
    number_rule(value, low, high).map_err(|e| format!("{key} {e}"))
}

fn number_rule(value: f64, low: f64, high: f64) -> Result<f64, String> {
    if value.is_finite() && value >= low && value <= high {
        return Ok(value);
    }
    Err(number_range(low, high, &shown(value)))
}

fn number_range(low: f64, high: f64, given: &str) -> String {
    let range = match (low.is_finite(), high.is_finite()) {
        (true, true) => format!(" from {} to {}", shown(low), shown(high)),
        (true, false) => format!(" of at least {}", shown(low)),
        (false, true) => format!(" of at most {}", shown(high)),
        (false, false) => String::new(),
    };
    format!("must be a finite number{range}; it is {given}")
}

/// The rule for the sampling settings of a model call (a `[players.NAME]` table, a
/// `[sampling.SEAT]` default, the judge), each key named after `table` (`"[sampling.learner] "`,
/// or `""` where the reader names the table): a temperature from 0 to 2, a
/// top_p above 0 and at most 1, and from 1 to 2²⁴ tokens.
pub fn check_sampling(
    table: &str,
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_tokens: Option<u32>,
) -> Result<(), String> {
    if let Some(t) = temperature {
        check_number(&format!("{table}temperature"), t, 0.0, MAX_TEMPERATURE)?;
    }
    if let Some(p) = top_p {
        if !(p > 0.0 && p <= 1.0) {
            return Err(format!(
                "{table}top_p must be a finite number above 0 and at most 1; it is {}",
                shown(p)
            ));
        }
    }
    if let Some(n) = max_tokens {
        check_count(
            &format!("{table}max_tokens"),
            n.into(),
            1,
            MAX_COMPLETION_TOKENS,
        )?;
    }
    Ok(())
}

/// A command-line flag's value parser for a count from `min` to `max` (clap:
/// `value_parser = limits::count_flag::<u32>(1, MAX_GROUP_SIZE)`), so a value out of range
/// is refused as the flags are parsed, clap naming the flag, before anything is built with it.
pub fn count_flag<T: TryFrom<u64>>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| {
        let value = text
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("must be a whole number from {min} to {max}; it is {text}"))?;
        let value = count_rule(value, min, max)?;
        T::try_from(value).map_err(|_| format!("must be from {min} to {max}; it is {value}"))
    }
}

/// A command-line flag's value parser for a finite real number from `low` to `high`; a value
/// outside is refused naming the flag, the range and what was given.
pub fn number_flag(
    low: f64,
    high: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let value = text
            .trim()
            .parse::<f64>()
            .map_err(|_| number_range(low, high, text))?;
        number_rule(value, low, high)
    }
}

/// The rule for the size of a plan, checked before the plan is made: the product of
/// `factors` (each a count and what it counts, as `(2, "scenarios")`) is at most `max`
/// episodes ([`MAX_EPISODES`] for a command, [`MAX_REQUEST_EPISODES`] for one request).
pub fn check_episodes(factors: &[(u64, &str)], max: u64) -> Result<u64, String> {
    let total = factors
        .iter()
        .fold(1u128, |acc, (n, _)| acc.saturating_mul(u128::from(*n)));
    if total <= u128::from(max) {
        return Ok(total as u64);
    }
    let parts: Vec<String> = factors
        .iter()
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    Err(format!(
        "the plan holds {} = {total} episodes; at most {max} may be planned",
        parts.join(" × ")
    ))
}

/// The rule for a whole number a user gives (named by `key`) that may be negative: from `min`
/// to `max`, both included.
pub(crate) fn check_integer(key: &str, value: i64, min: i64, max: i64) -> Result<i64, String> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(format!("{key} must be from {min} to {max}; it is {value}"))
}

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// Nothing is left to read.
    End,
    /// One line is in the buffer, with its newline where it has one (the last line of a file
    /// may not): this many bytes.
    Line(usize),
    /// The line is longer than the limit. What was read of it is dropped and the input is left
    /// inside it: the reader must stop, as nothing tells where the line ends short of reading
    /// it all (`/dev/zero` never ends).
    TooLong,
}

/// Read one line of `input` into `buf` (cleared first), refusing a line of more than `max`
/// bytes (its newline not counted) without holding more than `max` bytes of it: the one way
/// every line reader (records, scenarios) reads, so a line of any length costs at most the
/// limit in memory. `BufRead::read_until` would hold the whole line first.
pub(crate) fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match buf.len() {
                0 => LineRead::End,
                n => LineRead::Line(n),
            });
        }
        let (take, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take - usize::from(ends) > max {
            return Ok(LineRead::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take);
        if ends {
            return Ok(LineRead::Line(buf.len()));
        }
    }
}

/// Read all of `input`, refusing more than `max` bytes without holding more than that (a
/// device such as `/dev/zero` has no end, an archive's entry may unpack to any size): the one
/// rule of every whole read of a file a user names. The error names the limit; the caller
/// names the file.
pub fn read_at_most(input: impl std::io::Read, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    input.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!(
                "the file is longer than {max} bytes ({}), the most dealgym reads of such a file",
                in_mib(max)
            ),
        ));
    }
    Ok(bytes)
}

/// The bytes of the file at `path`, at most `max` of them ([`read_at_most`]).
pub fn read_bytes(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_at_most(std::fs::File::open(path)?, max)
}

/// The text of the file at `path`, at most `max` bytes of it ([`read_at_most`]): for files
/// parsed as one value (a config, a template, a script).
pub fn read_file(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_bytes(path, max)?).map_err(|e| {
        std::io::Error::new(
            ErrorKind::InvalidData,
            format!("the file is not UTF-8 text: {e}"),
        )
    })
}

/// A size in bytes as a person reads it: `16 MiB`, or the bytes when not whole MiB.
fn in_mib(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// A number as a message shows it: in full when short, in exponent form when huge (1e300,
/// not 300 digits).
pub fn shown(value: f64) -> String {
    if value.abs() < 1e9 || !value.is_finite() {
        value.to_string()
    } else {
        format!("{value:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_past_a_day_or_not_finite_are_refused_by_name() {
        assert_eq!(
            check_seconds("t", 1.5, false),
            Ok(Duration::from_millis(1500))
        );
        assert!(check_seconds("t", 0.0, false).is_err());
        assert_eq!(check_seconds("t", 0.0, true), Ok(Duration::ZERO));
        let huge = check_seconds("--grace-s", 1e300, true).unwrap_err();
        assert!(
            huge.contains("--grace-s") && huge.contains("1e300"),
            "{huge}"
        );
        assert!(check_seconds("t", f64::NAN, true)
            .unwrap_err()
            .contains("NaN"));
        assert!(check_seconds("t", -1.0, true).is_err());
        assert!(check_seconds("t", MAX_SECONDS, false).is_ok());
    }

    #[test]
    fn counts_outside_their_range_name_the_key_and_the_limit() {
        assert_eq!(check_count("group_size", 8, 1, MAX_GROUP_SIZE), Ok(8));
        let e = check_count("group_size", 4_294_967_295, 1, MAX_GROUP_SIZE).unwrap_err();
        assert_eq!(e, "group_size must be from 1 to 4096; it is 4294967295");
        assert!(check_count("group_size", 0, 1, MAX_GROUP_SIZE).is_err());
    }

    #[test]
    fn a_number_that_is_not_finite_or_out_of_range_is_refused_by_name() {
        assert_eq!(check_number("tau", 0.4, 0.0, 1.0), Ok(0.4));
        assert_eq!(check_number("tau", 1.0, 0.0, 1.0), Ok(1.0));
        assert_eq!(
            check_number("[rewards] tau", f64::NAN, 0.0, 1.0).unwrap_err(),
            "[rewards] tau must be a finite number from 0 to 1; it is NaN"
        );
        assert!(check_number("tau", 1.5, 0.0, 1.0).is_err());
        assert_eq!(
            check_number("gamma", -0.5, 0.0, f64::INFINITY).unwrap_err(),
            "gamma must be a finite number of at least 0; it is -0.5"
        );
        assert!(check_number("gamma", f64::INFINITY, 0.0, f64::INFINITY).is_err());
        assert_eq!(check_number("gamma", 1e300, 0.0, f64::INFINITY), Ok(1e300));
        let any = |v| check_number("no_deal_value", v, f64::NEG_INFINITY, f64::INFINITY);
        assert_eq!(any(-5.0), Ok(-5.0));
        assert_eq!(
            any(f64::INFINITY).unwrap_err(),
            "no_deal_value must be a finite number; it is inf"
        );
    }

    #[test]
    fn sampling_settings_outside_what_a_server_takes_are_refused_by_name() {
        assert!(check_sampling("", Some(0.0), Some(1.0), Some(1)).is_ok());
        assert!(check_sampling("", None, None, None).is_ok());
        assert_eq!(
            check_sampling("[sampling.learner] ", Some(f64::NAN), None, None).unwrap_err(),
            "[sampling.learner] temperature must be a finite number from 0 to 2; it is NaN"
        );
        assert!(check_sampling("", Some(2.5), None, None).is_err());
        for p in [0.0, 1.5, f64::NAN] {
            let e = check_sampling("", None, Some(p), None).unwrap_err();
            assert!(e.starts_with("top_p must be"), "{e}");
        }
        assert_eq!(
            check_sampling("", None, None, Some(0)).unwrap_err(),
            "max_tokens must be from 1 to 16777216; it is 0"
        );
    }

    #[test]
    fn a_flags_parser_refuses_what_the_rule_refuses_and_what_is_no_number() {
        let group = count_flag::<u32>(1, MAX_GROUP_SIZE);
        assert_eq!(group("8"), Ok(8));
        assert_eq!(
            group("4294967295").unwrap_err(),
            "must be from 1 to 4096; it is 4294967295"
        );
        assert!(group("0").is_err());
        let huge = group("18446744073709551616").unwrap_err();
        assert!(huge.contains("whole number from 1 to 4096"), "{huge}");
        // A limit past the type's own range still refuses what the type cannot hold.
        assert!(count_flag::<u8>(0, 1000)("300").is_err());
        let share = number_flag(0.0, 1.0);
        assert_eq!(share("0.25"), Ok(0.25));
        assert!(share("NaN").unwrap_err().ends_with("it is NaN"));
        assert!(share("inf").is_err());
        assert!(share("1.5").is_err());
        assert_eq!(
            share("half").unwrap_err(),
            "must be a finite number from 0 to 1; it is half"
        );
    }

    #[test]
    fn a_plan_past_the_limit_is_refused_with_its_factors() {
        assert_eq!(
            check_episodes(&[(2, "scenarios"), (8, "members per group")], MAX_EPISODES),
            Ok(16)
        );
        let e = check_episodes(
            &[(2, "scenarios"), (4_294_967_295, "members per group")],
            MAX_EPISODES,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "the plan holds 2 scenarios × 4294967295 members per group = 8589934590 episodes; \
             at most 10000000 may be planned"
        );
        // Three factors of u64::MAX do not overflow the product.
        let max = (u64::MAX, "x");
        assert!(check_episodes(&[max, max, max], MAX_EPISODES).is_err());
    }

    #[test]
    fn numbers_outside_their_range_or_not_finite_are_refused_by_name() {
        assert_eq!(check_number("budget", 80.0, 0.0, MAX_AMOUNT), Ok(80.0));
        let e = check_number("budget", 1e300, 0.0, MAX_AMOUNT).unwrap_err();
        assert_eq!(
            e,
            "budget must be a finite number from 0 to 1e9; it is 1e300"
        );
        assert!(check_number("w", f64::NAN, 0.0, 1.0).is_err());
        assert!(check_number("w", f64::INFINITY, 0.0, f64::INFINITY).is_err());
        assert!(check_number("w", -0.5, 0.0, 1.0).is_err());
    }

    #[test]
    fn a_line_longer_than_the_limit_is_refused_without_reading_it_all() {
        let mut buf = Vec::new();
        let mut input: &[u8] = b"abc\nabcd\r\nlast";
        assert_eq!(
            read_line(&mut input, &mut buf, 4).unwrap(),
            LineRead::Line(4)
        );
        assert_eq!(buf, b"abc\n");
        // 5 bytes with the `\r`, so over a limit of 4; the newline does not count.
        let mut longer = input;
        assert_eq!(
            read_line(&mut longer, &mut buf, 4).unwrap(),
            LineRead::TooLong
        );
        assert_eq!(
            read_line(&mut input, &mut buf, 5).unwrap(),
            LineRead::Line(6)
        );
        assert_eq!(
            read_line(&mut input, &mut buf, 5).unwrap(),
            LineRead::Line(4)
        );
        assert_eq!(buf, b"last", "a last line without a newline is whole");
        assert_eq!(read_line(&mut input, &mut buf, 5).unwrap(), LineRead::End);
        // An endless line, read in small pieces: refused after the limit, holding no more.
        let mut zeros = std::io::BufReader::with_capacity(64, std::io::repeat(0));
        assert_eq!(
            read_line(&mut zeros, &mut buf, 1000).unwrap(),
            LineRead::TooLong
        );
        assert!(buf.len() <= 1000, "held {} bytes", buf.len());
    }

    #[test]
    fn a_file_longer_than_the_limit_is_refused() {
        let e = read_file(std::path::Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("longer than 1048576 bytes"), "{e}");
        let path = std::env::temp_dir().join(format!("dealgym-limits-{}", std::process::id()));
        std::fs::write(&path, "four").unwrap();
        assert_eq!(read_file(&path, 4).unwrap(), "four");
        assert!(read_file(&path, 3).is_err());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_completion_and_an_episode_are_held_to_their_caps_naming_the_flags() {
        let limits = TextLimits {
            completion: 100,
            episode: 1000,
        };
        assert!(limits.check_completion(100).is_ok());
        let e = limits.check_completion(101).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the completion is 101 bytes (its text, reasoning and tool calls as the record \
             writes them), over the limit of 100 bytes one completion may hold \
             (--max-completion-bytes)"
        );
        // A turn may store its completion four times over, and its keys: checked before it
        // is played, so what is stored never passes the cap.
        let roomy = TextLimits {
            completion: 100,
            episode: TURN_OVERHEAD + 1000,
        };
        let mut text = EpisodeText::default();
        assert!(text.admit(100, 0, &roomy).is_ok());
        text.add(300);
        assert_eq!(text.stored(), 300);
        assert!(text.admit(100, 300, &roomy).is_ok());
        let e = text.admit(100, 301, &roomy).unwrap_err();
        assert!(
            matches!(e, TextLimitError::Episode { stored: 300, .. })
                && e.to_string()
                    .contains("(--max-episode-bytes): the episode ends here"),
            "{e}"
        );
        assert!(matches!(
            text.admit(101, 0, &roomy),
            Err(TextLimitError::Completion { .. })
        ));
        // JSON escapes count: a control character is six bytes on disk.
        assert_eq!(crate::jsonl::encoded_len(&"\u{1}"), 8);
        assert_eq!(crate::jsonl::encoded_len(&"ab"), 4);
    }
}
