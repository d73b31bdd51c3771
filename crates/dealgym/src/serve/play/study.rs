//! A study (`dealgym play --study FILE`): a run file of games — each a family or a scenario, an
//! opponent and optionally a role — assigned in turn to participants as they arrive; a
//! consent page from a template; a participant code per person, which is the name their seats
//! are recorded under (`human:CODE`). Each participant plays `games_per_participant` games:
//! participant k's j-th game is entry `(k · games_per_participant + j) mod entries`, its
//! scenario drawn with that number as its seed, so an assignment is reproducible from the
//! arrival order. The games are ordinary records in the server's log.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::super::session::ResetFamily;

/// The built-in consent page (a minijinja template of `title` and `games`).
const CONSENT: &str = include_str!("page/consent.html.j2");

/// A study's run file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StudyFile {
    title: String,
    /// A consent and instructions page: a minijinja template of HTML (`title`, `games`),
    /// relative to the run file; default: the built-in one.
    #[serde(default)]
    consent: Option<PathBuf>,
    #[serde(default = "one")]
    games_per_participant: usize,
    #[serde(rename = "game")]
    games: Vec<StudyGame>,
}

fn one() -> usize {
    1
}

/// One entry of a study's run file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyGame {
    #[serde(default)]
    pub family: Option<ResetFamily>,
    #[serde(default)]
    pub scenario_id: Option<String>,
    /// A player spec the server may play, or `person` for two participants at one game.
    pub opponent: String,
    #[serde(default)]
    pub role: Option<String>,
}

/// A study, read and its consent page rendered.
#[derive(Debug, Clone)]
pub struct Study {
    pub title: String,
    pub consent_html: String,
    pub games_per_participant: usize,
    pub games: Vec<StudyGame>,
    pub file: PathBuf,
}

/// Why a study's run file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    #[error("{file}: {error}")]
    Read { file: PathBuf, error: String },
}

impl Study {
    /// Read a study's run file and render its consent page.
    pub fn load(file: &Path) -> Result<Study, StudyError> {
        let fail = |error: String| StudyError::Read {
            file: file.to_path_buf(),
            error,
        };
        let text = std::fs::read_to_string(file).map_err(|e| fail(e.to_string()))?;
        let read: StudyFile = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
        if read.games.is_empty() {
            return Err(fail(
                "no [[game]]: a study assigns at least one game".into(),
            ));
        }
        if read.games_per_participant == 0 || read.games_per_participant > 100 {
            return Err(fail(format!(
                "games_per_participant = {}: 1 to 100",
                read.games_per_participant
            )));
        }
        for (i, game) in read.games.iter().enumerate() {
            if game.family.is_none() && game.scenario_id.is_none() {
                return Err(fail(format!(
                    "[[game]] {}: name a `family` or a `scenario_id`",
                    i + 1
                )));
            }
            // A second person would join by a link, without consent or a code of their own.
            if game.opponent == super::games::PERSON {
                return Err(fail(format!(
                    "[[game]] {}: opponent = \"person\": a study seats each participant against a player the server plays",
                    i + 1
                )));
            }
        }
        let template = match &read.consent {
            None => CONSENT.to_string(),
            Some(path) => {
                let path = file.parent().unwrap_or(Path::new(".")).join(path);
                std::fs::read_to_string(&path)
                    .map_err(|e| fail(format!("consent {}: {e}", path.display())))?
            }
        };
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        // The template is HTML: what it is given (the title) is escaped into it.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
        let consent_html = env
            .render_str(
                &template,
                minijinja::context! {
                    title => read.title,
                    games => read.games_per_participant,
                },
            )
            .map_err(|e| fail(format!("the consent page: {e}")))?;
        Ok(Study {
            title: read.title,
            consent_html,
            games_per_participant: read.games_per_participant,
            games: read.games,
            file: file.to_path_buf(),
        })
    }

    /// Participant `arrival`'s game `game`: its entry and the seed its scenario is drawn with.
    pub fn assigned(&self, arrival: usize, game: usize) -> (&StudyGame, u64) {
        let turn = arrival * self.games_per_participant + game;
        (&self.games[turn % self.games.len()], turn as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn participants_are_assigned_the_entries_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("study.toml");
        std::fs::write(
            &file,
            r#"title = "Campsite"
games_per_participant = 2
[[game]]
family = "casino"
opponent = "rule:linear"
[[game]]
family = "craigslist"
opponent = "rule:boulware"
role = "buyer"
[[game]]
scenario_id = "x"
opponent = "rule:conceder"
"#,
        )
        .unwrap();
        let study = Study::load(&file).unwrap();
        assert!(study.consent_html.contains("Campsite"));
        assert!(study.consent_html.contains("2 short negotiations"));
        let seq: Vec<String> = (0..2)
            .flat_map(|k| (0..2).map(move |j| (k, j)))
            .map(|(k, j)| study.assigned(k, j).0.opponent.clone())
            .collect();
        assert_eq!(
            seq,
            [
                "rule:linear",
                "rule:boulware",
                "rule:conceder",
                "rule:linear"
            ]
        );
        assert_eq!(study.assigned(1, 1).1, 3);
    }

    #[test]
    fn the_books_study_example_is_a_valid_study() {
        let page = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/src/guide/people.md"
        );
        let text = std::fs::read_to_string(page).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut examples = 0;
        for block in text.split("```toml,study\n").skip(1) {
            let file = dir.path().join(format!("study-{examples}.toml"));
            std::fs::write(&file, block.split("```").next().unwrap()).unwrap();
            let study = Study::load(&file).unwrap_or_else(|e| panic!("{page}: {e}"));
            assert!(!study.games.is_empty());
            examples += 1;
        }
        assert_eq!(examples, 1, "{page}: its study example");
    }

    #[test]
    fn a_broken_run_file_is_refused_naming_the_file_and_what() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("study.toml");
        std::fs::write(
            &file,
            "title = \"x\"\n[[game]]\nopponent = \"rule:linear\"\n",
        )
        .unwrap();
        let e = Study::load(&file).unwrap_err().to_string();
        assert!(e.contains("study.toml") && e.contains("family"), "{e}");
        std::fs::write(&file, "title = \"x\"\nconsent = \"missing.j2\"\n[[game]]\nfamily = \"casino\"\nopponent = \"rule:linear\"\n").unwrap();
        let e = Study::load(&file).unwrap_err().to_string();
        assert!(e.contains("missing.j2"), "{e}");
        std::fs::write(
            &file,
            "title = \"x\"\n[[game]]\nfamily = \"casino\"\nopponent = \"person\"\n",
        )
        .unwrap();
        let e = Study::load(&file).unwrap_err().to_string();
        assert!(e.contains("[[game]] 1") && e.contains("person"), "{e}");
        std::fs::write(
            &file,
            "title = \"<b>&</b>\"\n[[game]]\nfamily = \"casino\"\nopponent = \"rule:linear\"\n",
        )
        .unwrap();
        let html = Study::load(&file).unwrap().consent_html;
        assert!(
            html.contains("&lt;b&gt;&amp;") && !html.contains("<b>&"),
            "{html}"
        );
    }
}
