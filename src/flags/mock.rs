//! `dealgym mock`: where the mock listens and how it behaves ([`MockConfig`], whose defaults
//! are the flags' defaults).

use std::net::IpAddr;

use clap::Args;

use super::values::one_of;
use dealgym::agents::Tactic;
use dealgym::limits::number_flag;
use dealgym_mock::{MockConfig, MockTemplate, ThinkMode};

/// The flags of `dealgym mock`.
#[derive(Debug, Clone, Args)]
pub struct MockFlags {
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to bind (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    #[command(flatten)]
    pub behaviour: MockBehaviour,
}

/// The mock's behaviour, one flag per [`MockConfig`] field.
#[derive(Debug, Clone, Args)]
pub struct MockBehaviour {
    /// Seed of the mock's own randomness (faults, latency jitter, sampling).
    #[arg(long, default_value_t = defaults().seed)]
    pub seed: u64,
    /// Fixed latency per request, in ms.
    #[arg(long, default_value_t = defaults().latency_ms)]
    pub latency_ms: u64,
    /// Extra random latency, drawn uniformly up to this many ms.
    #[arg(long, default_value_t = defaults().jitter_ms)]
    pub jitter_ms: u64,
    /// Share of requests answered with HTTP 500.
    #[arg(long, default_value_t = defaults().error_rate, value_parser = number_flag(0.0, 1.0))]
    pub error_rate: f64,
    /// Share of requests answered with HTTP 429.
    #[arg(long, default_value_t = defaults().rate_limit_rate, value_parser = number_flag(0.0, 1.0))]
    pub rate_limit_rate: f64,
    /// Share of requests that hang (to exercise timeouts).
    #[arg(long, default_value_t = defaults().hang_rate, value_parser = number_flag(0.0, 1.0))]
    pub hang_rate: f64,
    /// How long a hang lasts before the mock answers anyway, in ms.
    #[arg(long, default_value_t = defaults().hang_ms)]
    pub hang_ms: u64,
    /// Share of requests answered with a body that is not JSON.
    #[arg(long, default_value_t = defaults().malformed_rate, value_parser = number_flag(0.0, 1.0))]
    pub malformed_rate: f64,
    /// Share of completions that are chat without any action.
    #[arg(long, default_value_t = defaults().garbage_rate, value_parser = number_flag(0.0, 1.0))]
    pub garbage_rate: f64,
    /// Return reasoning inline (`<think>`) or as `reasoning_content`.
    #[arg(
        long,
        default_value_t = defaults().think,
        value_parser = one_of(&ThinkMode::ALL, ThinkMode::name, think_about)
    )]
    pub think: ThinkMode,
    /// Return fake token ids and logprobs with every completion.
    #[arg(long)]
    pub logprobs: bool,
    /// The chat template of the token routes: chatml (append-only) or drops-earlier-thoughts.
    #[arg(
        long,
        default_value_t = defaults().template,
        value_parser = one_of(&MockTemplate::ALL, MockTemplate::name, template_about)
    )]
    pub template: MockTemplate,
    /// How the mock negotiator concedes: boulware, linear or conceder.
    #[arg(long, default_value = defaults().tactic.name(), value_parser = parse_tactic)]
    pub tactic: Tactic,
    /// Share of judge requests answered with prose that is not a verdict.
    #[arg(long, default_value_t = defaults().judge_unreadable_rate, value_parser = number_flag(0.0, 1.0))]
    pub judge_unreadable_rate: f64,
    /// Share of annotation requests answered with a move that is not the person's.
    #[arg(long, default_value_t = defaults().annotate_unusable_rate, value_parser = number_flag(0.0, 1.0))]
    pub annotate_unusable_rate: f64,
    /// Share of narrated turns (a narrated seat's brief) whose Talk names another price than the
    /// decided one, or accepts while the move does not: an unfaithful narrator.
    #[arg(long, default_value_t = defaults().narrate_unfaithful_rate, value_parser = number_flag(0.0, 1.0))]
    pub narrate_unfaithful_rate: f64,
    /// Share of reward-model requests (/pooling, /score, /reward) answered with HTTP 500.
    #[arg(long, default_value_t = defaults().reward_model_error_rate, value_parser = number_flag(0.0, 1.0))]
    pub reward_model_error_rate: f64,
    /// Model a prefix cache of this many tokens (0: none): chat answers report
    /// usage.prompt_tokens_details.cached_tokens, prompts counted in the mock's tokenization.
    #[arg(long, default_value_t = defaults().prefix_cache_tokens)]
    pub prefix_cache_tokens: u64,
    /// Prefill cost per prompt token not served from the prefix cache, in microseconds (added
    /// to the latency), so a warm cache answers faster, as a real server does.
    #[arg(long, default_value_t = defaults().prefill_us_per_token)]
    pub prefill_us_per_token: u64,
    /// After this many chat requests, answer 503 on every route, /health included (0: never):
    /// a replica that goes down.
    #[arg(long, default_value_t = defaults().fail_after)]
    pub fail_after: u64,
}

/// The library's defaults, which are the flags'.
fn defaults() -> MockConfig {
    MockConfig::default()
}

fn parse_tactic(s: &str) -> Result<Tactic, String> {
    Tactic::from_name(s)
        .ok_or_else(|| format!("unknown tactic `{s}` (boulware, linear, conceder, ina, ina-code)"))
}

/// How each `--think` mode returns reasoning, as `--help` lists it.
fn think_about(mode: ThinkMode) -> Option<&'static str> {
    match mode {
        ThinkMode::None => None,
        ThinkMode::Inline => Some("`<think>…</think>` at the start of the content"),
        ThinkMode::Field => {
            Some("A separate `reasoning_content` field, as vLLM's reasoning parsers return it")
        }
    }
}

/// How each `--template` renders a conversation, as `--help` lists it.
fn template_about(template: MockTemplate) -> Option<&'static str> {
    Some(match template {
        MockTemplate::Chatml => {
            "`<|im_start|>ROLE\\nCONTENT<|im_end|>\\n` per message: append-only"
        }
        MockTemplate::DropsEarlierThoughts => {
            "As `chatml`, but every assistant turn before the last one loses its `Thought:` line"
        }
    })
}

impl From<MockBehaviour> for MockConfig {
    fn from(flags: MockBehaviour) -> MockConfig {
        MockConfig {
            seed: flags.seed,
            latency_ms: flags.latency_ms,
            jitter_ms: flags.jitter_ms,
            error_rate: flags.error_rate,
            rate_limit_rate: flags.rate_limit_rate,
            hang_rate: flags.hang_rate,
            hang_ms: flags.hang_ms,
            malformed_rate: flags.malformed_rate,
            garbage_rate: flags.garbage_rate,
            think: flags.think,
            logprobs: flags.logprobs,
            template: flags.template,
            tactic: flags.tactic,
            judge_unreadable_rate: flags.judge_unreadable_rate,
            annotate_unusable_rate: flags.annotate_unusable_rate,
            narrate_unfaithful_rate: flags.narrate_unfaithful_rate,
            reward_model_error_rate: flags.reward_model_error_rate,
            prefix_cache_tokens: flags.prefix_cache_tokens,
            prefill_us_per_token: flags.prefill_us_per_token,
            fail_after: flags.fail_after,
            record_requests: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::flags::{Cli, Command};
    use dealgym_mock::MockConfig;

    #[test]
    fn the_mock_without_flags_is_the_librarys_default_mock() {
        let Command::Mock(flags) = Cli::try_parse_from(["dealgym", "mock"]).unwrap().command else {
            panic!("mock's flags");
        };
        assert_eq!(MockConfig::from(flags.behaviour), MockConfig::default());
    }

    #[test]
    fn each_value_name_reads_back() {
        let cli = Cli::try_parse_from([
            "dealgym",
            "mock",
            "--think",
            "field",
            "--template",
            "drops-earlier-thoughts",
            "--tactic",
            "tough",
        ])
        .unwrap();
        let Command::Mock(flags) = cli.command else {
            panic!("mock's flags");
        };
        let config = MockConfig::from(flags.behaviour);
        assert_eq!(config.think, dealgym_mock::ThinkMode::Field);
        assert_eq!(
            config.template,
            dealgym_mock::MockTemplate::DropsEarlierThoughts
        );
        assert_eq!(config.tactic, dealgym::agents::Tactic::Boulware);
        assert!(Cli::try_parse_from(["dealgym", "mock", "--think", "Field"]).is_err());
    }
}
