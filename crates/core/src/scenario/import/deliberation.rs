//! LLM-Deliberation's stakeholder games as table scenarios (Abdelnabi et al., NeurIPS 2024
//! D&B; github.com/S-Abdelnabi/LLM-Deliberation, MIT).
//!
//! A game folder holds `global_instructions.txt` (what every party reads), `config.txt` (one
//! line per party: `NAME, FILE, ROLE, INCENTIVE, MODEL`, ROLE one of `p1`, `p2`, `target`,
//! `player`), `scores_files/FILE.txt` (one comma-separated line of scores per issue, issue A
//! first, then one line with the party's minimum), `individual_instructions/INCENTIVE/FILE.txt`
//! (the party's confidential instructions, its scores as placeholders `#D_MAX_NUM` — the best
//! score of issue D — and `#D1_NUM` — the score of option D1) and `initial_deal.txt` (the deal
//! `p1` opens with, `A1,B1,C4,D1,E5`).
//!
//! The issues and their options are read from the global instructions (every `A1`, `B3`, …
//! they name; the count of issues from the initial deal) and every score line must have one
//! score per option. The party names, files and seats (`p1`, `p2`) come from the game's
//! `config.txt`; which incentive sits where comes from the experiments of the paper
//! (`seatings`), since the game folders ship one config only. Every scenario gets the paper's
//! rules: a deal needs `n − 1` parties at or above their minimum, `p1` and `p2` among them, `p1`
//! with a bonus of 10 points; `4` cycles of every party once in a fresh order between `p1`'s
//! opening deal and its final proposal (the paper's `rounds_num = 4 × agents`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::limits::{read_file, MAX_INPUT_FILE};
use crate::protocol::{IssueRange, IssueSpec};
use crate::scenario::{
    validate_table, AgreementRule, Incentive, Party, PartyPosition, PartyPrivate, ScheduleSpec,
    TableFamily, TablePublic, TableRules, TableScenario, SCENARIO_SCHEMA,
};

/// The bonus the lead party adds to its own score when a deal passes (the paper's `+10` rule).
pub(crate) const LEAD_BONUS: i64 = 10;
/// Cycles per game: every party speaks this many times between the opening and the final
/// proposal (the paper ran `rounds_num = 4 × agents`).
pub(crate) const CYCLES: u32 = 4;

/// The games, in the order the scenario file lists them.
pub(crate) const GAMES: [&str; 6] = [
    "base",
    "base_7players",
    "base_rewritten",
    "game1",
    "game2",
    "game3",
];

/// One incentive setting the paper ran: its variant name, the parties (by score-file name) whose
/// incentive is not cooperative, and the target of a targeted adversary.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seating {
    pub variant: &'static str,
    pub incentives: &'static [(&'static str, Incentive)],
    pub target: Option<&'static str>,
}

/// The settings per game. The base game's are the paper's experiments (the logs' configs and
/// `initial_prompts.txt`): all cooperative; one greedy party (the Environmental League, or the
/// lead SportCo); two greedy (the Mayor and the Union); all greedy; the Environmental League as
/// a targeted adversary against the Union, and as an untargeted one. The other games were run
/// cooperative only.
pub(crate) fn seatings(game: &str) -> &'static [Seating] {
    const COOPERATIVE: &[Seating] = &[Seating {
        variant: "cooperative",
        incentives: &[],
        target: None,
    }];
    const BASE: &[Seating] = &[
        Seating {
            variant: "cooperative",
            incentives: &[],
            target: None,
        },
        Seating {
            variant: "greedy_environmental_league",
            incentives: &[("enviroment", Incentive::Greedy)],
            target: None,
        },
        Seating {
            variant: "greedy_sportco",
            incentives: &[("SportCo", Incentive::Greedy)],
            target: None,
        },
        Seating {
            variant: "greedy_mayor_union",
            incentives: &[("mayor", Incentive::Greedy), ("union", Incentive::Greedy)],
            target: None,
        },
        Seating {
            variant: "greedy_all",
            incentives: &[
                ("mayor", Incentive::Greedy),
                ("other_cities", Incentive::Greedy),
                ("union", Incentive::Greedy),
                ("SportCo", Incentive::Greedy),
                ("DoT", Incentive::Greedy),
                ("enviroment", Incentive::Greedy),
            ],
            target: None,
        },
        Seating {
            variant: "targeted_adv",
            incentives: &[("enviroment", Incentive::TargetedAdv)],
            target: Some("union"),
        },
        Seating {
            variant: "untargeted_adv",
            incentives: &[("enviroment", Incentive::UntargetedAdv)],
            target: None,
        },
    ];
    if game == "base" {
        BASE
    } else {
        COOPERATIVE
    }
}

/// A bad or missing game file.
#[derive(Debug, thiserror::Error)]
pub enum GameError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: line {line}: {message}")]
    Line {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    File { file: String, message: String },
    #[error("{id}: produced an invalid scenario: field `{field}`: {message}")]
    Invalid {
        id: String,
        field: String,
        message: String,
    },
}

fn line_error(file: &Path, line: usize, message: impl Into<String>) -> GameError {
    GameError::Line {
        file: file.display().to_string(),
        line,
        message: message.into(),
    }
}

fn file_error(file: &Path, message: impl Into<String>) -> GameError {
    GameError::File {
        file: file.display().to_string(),
        message: message.into(),
    }
}

fn read(path: &Path) -> Result<String, GameError> {
    read_file(path, MAX_INPUT_FILE).map_err(|source| GameError::Io {
        file: path.display().to_string(),
        source,
    })
}

/// The non-blank lines of a file with their 1-based numbers.
fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty())
}

/// One line of a game's `config.txt`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigLine {
    /// The party's name as the global instructions write it.
    pub(crate) name: String,
    /// The file name (no extension) under `scores_files/` and `individual_instructions/*/`.
    pub(crate) file: String,
    pub(crate) position: PartyPosition,
    pub(crate) incentive: Incentive,
    pub(crate) model: String,
}

/// Read a `config.txt`: five comma-separated fields per non-blank line.
pub(crate) fn parse_config(path: &Path, text: &str) -> Result<Vec<ConfigLine>, GameError> {
    let mut lines = Vec::new();
    for (n, line) in numbered_lines(text) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 5 {
            return Err(line_error(
                path,
                n,
                format!(
                    "{} fields; a party is `NAME, FILE, ROLE, INCENTIVE, MODEL`",
                    fields.len()
                ),
            ));
        }
        if fields[0].is_empty() || fields[1].is_empty() {
            return Err(line_error(path, n, "an empty party name or file name"));
        }
        let position = match fields[2] {
            "p1" => PartyPosition::Lead,
            "p2" => PartyPosition::Veto,
            "target" => PartyPosition::Target,
            "player" => PartyPosition::Player,
            other => {
                return Err(line_error(
                    path,
                    n,
                    format!("role `{other}` is not p1, p2, target or player"),
                ))
            }
        };
        let incentive = Incentive::from_name(fields[3]).ok_or_else(|| {
            line_error(
                path,
                n,
                format!(
                    "incentive `{}` is not cooperative, greedy, targeted_adv or untargeted_adv",
                    fields[3]
                ),
            )
        })?;
        lines.push(ConfigLine {
            name: fields[0].to_string(),
            file: fields[1].to_string(),
            position,
            incentive,
            model: fields[4].to_string(),
        });
    }
    if lines.is_empty() {
        return Err(file_error(path, "no parties"));
    }
    Ok(lines)
}

/// Read a score file for issues with these option counts: one line per issue, then the minimum.
pub(crate) fn parse_scores(
    path: &Path,
    text: &str,
    options: &[usize],
) -> Result<(Vec<Vec<i64>>, i64), GameError> {
    let lines: Vec<(usize, &str)> = numbered_lines(text).collect();
    let number = |n: usize, field: &str| {
        field
            .trim()
            .parse::<i64>()
            .map_err(|_| line_error(path, n, format!("`{}` is not a whole number", field.trim())))
    };
    if lines.len() < options.len() + 1 {
        let at = lines.last().map_or(1, |(n, _)| n + 1);
        return Err(line_error(
            path,
            at,
            format!(
                "a line is missing: {} lines, but a score file has one line per issue ({}) and \
                 then the minimum",
                lines.len(),
                options.len()
            ),
        ));
    }
    let mut scores = Vec::with_capacity(options.len());
    for (issue, &count) in options.iter().enumerate() {
        let key = issue_key(issue);
        let (n, line) = lines[issue];
        let row = line
            .split(',')
            .map(|f| number(n, f))
            .collect::<Result<Vec<i64>, _>>()?;
        if row.len() != count {
            return Err(line_error(
                path,
                n,
                format!(
                    "{} scores for the {count} options of issue {key}",
                    row.len()
                ),
            ));
        }
        scores.push(row);
    }
    let (n, line) = lines[options.len()];
    let minimum = number(n, line)?;
    if let Some(&(extra, _)) = lines.get(options.len() + 1) {
        return Err(line_error(
            path,
            extra,
            format!(
                "a line after the minimum; the game has {} issues",
                options.len()
            ),
        ));
    }
    Ok((scores, minimum))
}

/// The key of the issue at an index: `A`, `B`, …
pub(crate) fn issue_key(index: usize) -> char {
    (b'A' + index as u8) as char
}

/// Read `initial_deal.txt` (`A1,B1,C4,D1,E5`): one option per issue, in order.
fn parse_initial_deal(path: &Path, text: &str) -> Result<Vec<usize>, GameError> {
    let (n, line) = numbered_lines(text)
        .next()
        .ok_or_else(|| file_error(path, "no deal"))?;
    line.split(',')
        .map(str::trim)
        .enumerate()
        .map(|(issue, label)| {
            let mut chars = label.chars();
            let (Some(key), Ok(option)) = (chars.next(), chars.as_str().parse::<usize>()) else {
                return Err(line_error(path, n, format!("`{label}` is not an option")));
            };
            if key != issue_key(issue) || option == 0 {
                return Err(line_error(
                    path,
                    n,
                    format!("`{label}` is not an option of issue {}", issue_key(issue)),
                ));
            }
            Ok(option - 1)
        })
        .collect()
}

/// The options per issue the global instructions name (`A1` … `A3` → 3), for `issues` issues.
fn options_named(path: &Path, text: &str, issues: usize) -> Result<Vec<usize>, GameError> {
    let label = regex::Regex::new(r"\b([A-Z])([1-9])\b").expect("a valid pattern");
    let mut most = vec![0usize; issues];
    for c in label.captures_iter(text) {
        let key = c[1].as_bytes()[0];
        let index = usize::from(key - b'A');
        if index < issues {
            let option: usize = c[2].parse().unwrap_or(0);
            most[index] = most[index].max(option);
        }
    }
    if let Some(i) = most.iter().position(|&n| n == 0) {
        return Err(file_error(
            path,
            format!("names no option of issue {}", issue_key(i)),
        ));
    }
    Ok(most)
}

/// The issues' names from `Issue A: "Infrastructure Mix"` lines (`Issue A` where there is none).
fn issue_labels(text: &str, issues: usize) -> Vec<String> {
    let pattern = regex::Regex::new(r"(?m)Issue ([A-Z])\s*:\s*(.*)$").expect("a valid pattern");
    let mut labels: Vec<String> = (0..issues)
        .map(|i| format!("Issue {}", issue_key(i)))
        .collect();
    let mut seen = vec![false; issues];
    for c in pattern.captures_iter(text) {
        let index = usize::from(c[1].as_bytes()[0] - b'A');
        if index >= issues || seen[index] {
            continue;
        }
        let rest = c[2].trim();
        let sentence = rest.split(". ").next().unwrap_or(rest);
        let sentence = sentence.trim().trim_end_matches(['.', ':']).trim();
        let name = sentence
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(sentence.trim_start_matches('"'));
        if !name.is_empty() {
            labels[index] = name.to_string();
            seen[index] = true;
        }
    }
    labels
}

/// Fill a party's instructions with its scores: `#X_MAX_NUM` is the best score of issue X,
/// `#Xk_NUM` the score of option Xk (as the original code's initial prompt does). A placeholder
/// left over (an option the score file does not have) is an error naming its line.
pub(crate) fn fill_instructions(
    path: &Path,
    text: &str,
    scores: &[Vec<i64>],
) -> Result<String, GameError> {
    let mut filled = text.to_string();
    for (i, row) in scores.iter().enumerate() {
        let key = issue_key(i);
        let best = row.iter().copied().max().unwrap_or(0);
        filled = filled.replace(&format!("#{key}_MAX_NUM"), &best.to_string());
        for (o, score) in row.iter().enumerate() {
            filled = filled.replace(&format!("#{key}{}_NUM", o + 1), &score.to_string());
        }
    }
    let left = regex::Regex::new(r"#[A-Z][0-9]*_(MAX_)?NUM").expect("a valid pattern");
    if let Some(m) = left.find(&filled) {
        let placeholder = m.as_str().to_string();
        let line = text
            .lines()
            .position(|l| l.contains(&placeholder))
            .map_or(1, |i| i + 1);
        return Err(line_error(
            path,
            line,
            format!("placeholder `{placeholder}` names no score of the score file"),
        ));
    }
    Ok(filled)
}

/// A party's role: its name in lowercase, every run of other characters one `_`
/// (`Department of Tourism` → `department_of_tourism`).
pub fn role_slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('_') {
            slug.push('_');
        }
    }
    slug.trim_matches('_').to_string()
}

/// One game folder read once: what every variant shares.
#[derive(Debug, Clone)]
pub struct GameFolder {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    pub(crate) instructions: String,
    pub(crate) config: Vec<ConfigLine>,
    pub(crate) issues: Vec<IssueSpec>,
    pub(crate) initial_deal: Vec<usize>,
    /// Per config line: the score rows and the minimum.
    pub(crate) scores: Vec<(Vec<Vec<i64>>, i64)>,
}

/// Read a game folder's shared files (not the incentive instructions).
pub fn read_game(dir: &Path) -> Result<GameFolder, GameError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let config_path = dir.join("config.txt");
    let config = parse_config(&config_path, &read(&config_path)?)?;
    let deal_path = dir.join("initial_deal.txt");
    let initial_deal = parse_initial_deal(&deal_path, &read(&deal_path)?)?;
    let global_path = dir.join("global_instructions.txt");
    let instructions = read(&global_path)?;
    let options = options_named(&global_path, &instructions, initial_deal.len())?;
    if let Some(i) = initial_deal.iter().zip(&options).position(|(d, n)| d >= n) {
        return Err(line_error(
            &deal_path,
            1,
            format!(
                "option {}{} is not one of the {} options of issue {}",
                issue_key(i),
                initial_deal[i] + 1,
                options[i],
                issue_key(i)
            ),
        ));
    }
    let labels = issue_labels(&instructions, options.len());
    let issues = options
        .iter()
        .zip(labels)
        .enumerate()
        .map(|(i, (&count, label))| IssueSpec {
            key: issue_key(i).to_string(),
            label,
            range: IssueRange::Discrete {
                options: (1..=count)
                    .map(|o| format!("{}{o}", issue_key(i)))
                    .collect(),
            },
        })
        .collect();
    let scores = config
        .iter()
        .map(|party| {
            let path = dir.join("scores_files").join(format!("{}.txt", party.file));
            parse_scores(&path, &read(&path)?, &options)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GameFolder {
        name,
        dir: dir.to_path_buf(),
        instructions,
        config,
        issues,
        initial_deal,
        scores,
    })
}

/// One scenario of a game: the seating's incentives, the rest from the game's config.
pub(crate) fn scenario(game: &GameFolder, seating: &Seating) -> Result<TableScenario, GameError> {
    let id = format!("deliberation:{}:{}", game.name, seating.variant);
    let mut parties = Vec::with_capacity(game.config.len());
    for (line, (scores, minimum)) in game.config.iter().zip(&game.scores) {
        let incentive = seating
            .incentives
            .iter()
            .find(|(file, _)| *file == line.file)
            .map_or(Incentive::Cooperative, |(_, i)| *i);
        let position = match line.position {
            PartyPosition::Lead | PartyPosition::Veto => line.position,
            _ if seating.target == Some(line.file.as_str()) => PartyPosition::Target,
            _ => PartyPosition::Player,
        };
        let path = game
            .dir
            .join("individual_instructions")
            .join(incentive.name())
            .join(format!("{}.txt", line.file));
        let instructions = fill_instructions(&path, &read(&path)?, scores)?;
        parties.push(Party {
            role: role_slug(&line.name),
            name: line.name.clone(),
            position,
            incentive,
            private: PartyPrivate {
                scores: scores.clone(),
                minimum: *minimum,
                instructions,
            },
        });
    }
    let role_at = |position: PartyPosition| {
        parties
            .iter()
            .find(|p| p.position == position)
            .map(|p| p.role.clone())
            .ok_or_else(|| {
                file_error(
                    &game.dir.join("config.txt"),
                    format!(
                        "no party is {}",
                        if position == PartyPosition::Lead {
                            "p1"
                        } else {
                            "p2"
                        }
                    ),
                )
            })
    };
    let lead = role_at(PartyPosition::Lead)?;
    let veto = role_at(PartyPosition::Veto)?;
    let n = parties.len();
    let scenario = TableScenario {
        schema: SCENARIO_SCHEMA,
        id: id.clone(),
        family: TableFamily::Deliberation,
        source: format!("llm-deliberation/games_descriptions/{}", game.name),
        game: game.name.clone(),
        variant: seating.variant.to_string(),
        public: TablePublic {
            title: format!(
                "LLM-Deliberation {}: {} parties, {} issues",
                game.name,
                n,
                game.issues.len()
            ),
            instructions: game.instructions.clone(),
        },
        issues: game.issues.clone(),
        parties,
        initial_deal: game.initial_deal.clone(),
        rules: TableRules {
            agreement: AgreementRule::Quorum {
                at_least: n.saturating_sub(1).max(1),
                veto: vec![lead.clone(), veto],
                lead_bonus: LEAD_BONUS,
            },
            schedule: ScheduleSpec::Cycles {
                rounds: CYCLES,
                lead,
            },
        },
    };
    validate_table(&scenario).map_err(|e| GameError::Invalid {
        id,
        field: e.field,
        message: e.message,
    })?;
    Ok(scenario)
}

/// The folder holding the games: `DIR/games_descriptions` when the dataset's root is given.
pub(crate) fn games_dir(dir: &Path) -> PathBuf {
    let nested = dir.join("games_descriptions");
    if nested.is_dir() {
        nested
    } else {
        dir.to_path_buf()
    }
}

/// Every scenario of every game of the dataset (its root or its `games_descriptions`), in
/// `GAMES` order, each game's seatings in `seatings` order.
pub fn import(dir: &Path) -> Result<Vec<TableScenario>, GameError> {
    let root = games_dir(dir);
    let mut scenarios = Vec::new();
    let mut ids = BTreeMap::new();
    for name in GAMES {
        let game = read_game(&root.join(name))?;
        for seating in seatings(name) {
            let s = scenario(&game, seating)?;
            if ids.insert(s.id.clone(), ()).is_some() {
                return Err(GameError::Invalid {
                    id: s.id,
                    field: "id".into(),
                    message: "two scenarios with the same id".into(),
                });
            }
            scenarios.push(s);
        }
    }
    Ok(scenarios)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("g/x.txt")
    }

    #[test]
    fn config_line_with_four_fields_names_file_and_line() {
        let text = "Mayor,mayor,player,cooperative,gpt-4\nSportCo,SportCo,p1,cooperative\n";
        let err = parse_config(Path::new("base/config.txt"), text).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("base/config.txt: line 2: 4 fields"),
            "{msg}"
        );
    }

    #[test]
    fn config_with_unknown_role_or_incentive() {
        let err = parse_config(p(), "A,a,chair,cooperative,m").unwrap_err();
        assert!(err.to_string().contains("line 1: role `chair`"), "{err}");
        let err = parse_config(p(), "A,a,p1,cooperative,m\nB,b,p2,selfish,m").unwrap_err();
        assert!(
            err.to_string().contains("line 2: incentive `selfish`"),
            "{err}"
        );
    }

    #[test]
    fn scores_read_rows_and_minimum() {
        let (rows, min) = parse_scores(p(), "0, 11, 5\n0, 20 , 25\n 65", &[3, 3]).unwrap();
        assert_eq!(rows, vec![vec![0, 11, 5], vec![0, 20, 25]]);
        assert_eq!(min, 65);
    }

    #[test]
    fn missing_score_line_names_file_and_line() {
        let err = parse_scores(Path::new("s/mayor.txt"), "0, 11, 5\n65\n", &[3, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "s/mayor.txt: line 3: a line is missing: 2 lines, but a score file has one line per \
             issue (2) and then the minimum"
        );
        let err = parse_scores(Path::new("s/mayor.txt"), "", &[3]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("s/mayor.txt: line 1: a line is missing: 0 lines"),
            "{err}"
        );
    }

    #[test]
    fn wrong_option_count_and_bad_numbers() {
        let err = parse_scores(p(), "0, 11\n0, 1, 2\n5", &[3, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "g/x.txt: line 1: 2 scores for the 3 options of issue A"
        );
        let err = parse_scores(p(), "0, 11, x\n0, 1, 2\n5", &[3, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "g/x.txt: line 1: `x` is not a whole number"
        );
        let err = parse_scores(p(), "0, 1, 2\n0, 1, 2\n5\n7", &[3, 3]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("g/x.txt: line 4: a line after the minimum"),
            "{err}"
        );
    }

    #[test]
    fn placeholders_filled_from_the_scores() {
        let scores = vec![vec![0, 11, 5], vec![3, 9]];
        let text = "Issue A (max score #A_MAX_NUM): A1 (#A1_NUM), A2(#A2_NUM), A3 (#A3_NUM)\nB (#B_MAX_NUM) #B2_NUM";
        let filled = fill_instructions(p(), text, &scores).unwrap();
        assert_eq!(
            filled,
            "Issue A (max score 11): A1 (0), A2(11), A3 (5)\nB (9) 9"
        );
        let err = fill_instructions(p(), "ok\nA4 (#A4_NUM)", &scores).unwrap_err();
        assert_eq!(
            err.to_string(),
            "g/x.txt: line 2: placeholder `#A4_NUM` names no score of the score file"
        );
    }

    #[test]
    fn initial_deal_and_labels() {
        assert_eq!(
            parse_initial_deal(p(), "A1,B1,C4,D1,E5").unwrap(),
            vec![0, 0, 3, 0, 4]
        );
        let err = parse_initial_deal(p(), "A1,C1").unwrap_err();
        assert!(
            err.to_string().contains("`C1` is not an option of issue B"),
            "{err}"
        );
        let text = "Issue A: \"Infrastructure Mix\"\n- Issue B: \"Budget\". Four levels.\n\
                    - Issue C: The location of the airport. There are 4 options:\n\
                    Issue D: \"Compensation to \"neighbouring cities\"\"";
        assert_eq!(
            issue_labels(text, 5),
            vec![
                "Infrastructure Mix",
                "Budget",
                "The location of the airport",
                "Compensation to \"neighbouring cities\"",
                "Issue E"
            ]
        );
    }

    #[test]
    fn role_slugs() {
        assert_eq!(role_slug("Department of Tourism"), "department_of_tourism");
        assert_eq!(
            role_slug("The Local Workers' Union"),
            "the_local_workers_union"
        );
        assert_eq!(role_slug("SportCo"), "sportco");
    }
}
