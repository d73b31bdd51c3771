//! Every bound on a size or a duration a user or a client can set: a flag, a config key, a
//! request body, a scenario line, a record line. One home, so a limit is stated once and
//! every place a value enters checks it against the same number, with an error that names
//! the value, the limit and what was given. A value past these is no useful setting and would
//! otherwise exhaust memory, overflow an arithmetic type or panic far from where it entered.

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

/// The largest request body a server may be told to accept (`--body-limit`), in bytes.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// The longest line a record reader accepts, in bytes: a whole episode with its token ids and
/// logprobs is well under this.
pub const MAX_RECORD_LINE: usize = 64 << 20;

/// The longest line a scenario, prefix or dialogue file may hold, in bytes.
pub const MAX_INPUT_LINE: usize = 4 << 20;

/// The largest `script:FILE` a player reads, in bytes.
pub const MAX_SCRIPT_BYTES: u64 = 16 << 20;

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
}
