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
pub const MAX_COMPLETION_TOKENS: u64 = 1 << 24;

/// The highest sampling temperature (`temperature`): the OpenAI API's own bound.
pub const MAX_TEMPERATURE: f64 = 2.0;

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
pub fn check_number(key: &str, value: f64, low: f64, high: f64) -> Result<f64, String> {
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
/// or `""` where the reader names the table): a temperature from 0 to [`MAX_TEMPERATURE`], a
/// top_p above 0 and at most 1, and from 1 to [`MAX_COMPLETION_TOKENS`] tokens.
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

/// A command-line flag's value parser for a real number from `low` to `high` (see
/// [`check_number`]).
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
}
