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

/// The longest line a record reader accepts, in bytes: a whole episode with its token ids and
/// logprobs is well under this.
pub const MAX_RECORD_LINE: usize = 64 << 20;

/// The longest line a scenario, prefix or dialogue file may hold, in bytes.
pub const MAX_INPUT_LINE: usize = 4 << 20;

/// The longest file read whole as one value: a raw dataset file `scenarios import` and
/// `dialogues import` parse (the largest published one is about 4 MB).
pub const MAX_INPUT_FILE: u64 = 1 << 30;

// What one scenario line may set (`scenario::validate` checks each where the file is loaded,
// so `run`, `serve` and `scenarios validate` refuse the same lines). Each sits far above the
// datasets' own largest (given in brackets, from `scenarios/*.jsonl`) and far below what
// would exhaust memory or overflow the arithmetic of utilities and the outcome space.

/// The most units of one item on the table, an item's `count` [4, Deal or No Deal].
pub const MAX_ITEM_COUNT: u64 = 1_000;

/// The most kinds of item in one split game [3].
pub const MAX_ITEMS: u64 = 16;

/// The most points one unit of an item is worth to a side [10]. With [`MAX_ITEM_COUNT`] a
/// side's share is worth at most 10⁹ points per item.
pub const MAX_ITEM_VALUE: u64 = 1_000_000;

/// The most issues of one contract [5, Job Interview].
pub const MAX_ISSUES: u64 = 16;

/// The most values one issue may take: the options of a discrete issue, `max − min + 1` of an
/// integer one [31, the salary of Job Interview].
pub const MAX_ISSUE_VALUES: u64 = 1_000;

/// The most deals in a scenario's outcome space: every split of the items, or every contract
/// [9,920, Job Interview]. The space is enumerated for every Pareto flag and materialised by
/// the rule players, so it bounds their time and memory per episode.
pub const MAX_OUTCOME_SPACE: u64 = 100_000;

/// The largest magnitude of a price, budget or cost, an integer issue's bounds, an issue's
/// weight and the no-deal value [30,600, a listing price]. Prices are held in cents as `i64`
/// and utilities as `f64`: this keeps both exact and finite.
pub const MAX_AMOUNT: f64 = 1e9;

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
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(format!("{key} must be from {min} to {max}; it is {value}"))
}

/// The rule for a whole number a user gives (named by `key`) that may be negative: from `min`
/// to `max`, both included.
pub fn check_integer(key: &str, value: i64, min: i64, max: i64) -> Result<i64, String> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(format!("{key} must be from {min} to {max}; it is {value}"))
}

/// The rule for a number a user gives (named by `key`): finite and from `min` to `max`, both
/// included.
pub fn check_number(key: &str, value: f64, min: f64, max: f64) -> Result<f64, String> {
    if value.is_finite() && (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(format!(
        "{key} must be a number from {} to {}; it is {}",
        shown(min),
        shown(max),
        shown(value)
    ))
}

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
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
pub fn read_line(
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

/// Read a whole file as text, refusing one of more than `max` bytes without reading more
/// than that (a device such as `/dev/zero` has no end): for files parsed as one value.
pub fn read_file(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(max + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!("the file is longer than {max} bytes, the most this build reads"),
        ));
    }
    Ok(text)
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
    fn numbers_outside_their_range_or_not_finite_are_refused_by_name() {
        assert_eq!(check_number("budget", 80.0, 0.0, MAX_AMOUNT), Ok(80.0));
        let e = check_number("budget", 1e300, 0.0, MAX_AMOUNT).unwrap_err();
        assert_eq!(e, "budget must be a number from 0 to 1e9; it is 1e300");
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
}
