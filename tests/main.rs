//! The integration tests, as one test binary: whole episodes through the CLI and the library,
//! against the built-in mock on 127.0.0.1, the datasets' own outcomes and the people's dialogues.
//! One binary links the crate once instead of once per file (each file is a module below; run
//! one with `cargo test --test integration <module>::`).

mod common;
mod fuzz_support;

mod annotate;
mod anywhere;
mod architecture_page;
mod bundle_family;
mod campaigns;
mod cli_run;
mod cli_scenarios;
mod craigslist_splits;
mod crash;
mod dataset_outcomes;
mod deliberation_logs;
mod dialogues;
mod dialogxpert;
mod docs_reference;
mod episodes;
mod eval;
mod export;
mod extreme_values;
mod faults;
mod fuzz;
mod hotel;
mod human_data;
mod limits_input;
mod llm_client;
mod merge;
mod mixed_records;
mod planner;
mod prefixes;
mod preset_ina;
mod presets;
mod prompt_cost;
mod prompts_truth;
mod properties;
mod public_api;
mod real_outputs;
mod replay;
mod replay_cli;
mod replicas;
mod report;
mod rewards;
mod rule_players;
mod run_http;
mod scenario_selection;
mod serve;
mod serve_hardening;
mod serve_mcp;
mod serve_network;
mod serve_soak;
mod serve_store;
mod serve_tables;
mod serve_tokens;
mod settings_checked;
mod table_prefixes;
mod table_rewards;
mod table_surfaces;
mod table_tools;
mod tables;
mod token_exact;
mod tools_cli;
mod writers;
