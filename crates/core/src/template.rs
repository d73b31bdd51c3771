//! One minijinja template compiled from its source and rendered over any serializable input:
//! what the judge's rubric and `annotate`'s thought prompt are. (The episode's own prompts are a
//! named set with overrides and a fingerprint: `game::Prompts`.) A leaf: it knows nothing of
//! what it renders.

use minijinja::Environment;
use serde::Serialize;

/// A compiled template.
pub struct SingleTemplate {
    env: Environment<'static>,
}

impl std::fmt::Debug for SingleTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SingleTemplate")
    }
}

impl SingleTemplate {
    /// Compile a template's source; the error says what is wrong with it.
    pub fn new(source: String) -> Result<SingleTemplate, String> {
        let mut env = Environment::new();
        env.add_template_owned("template", source)
            .map_err(|e| format!("{e:#}"))?;
        Ok(SingleTemplate { env })
    }

    /// The template rendered over `input`, trimmed.
    pub fn render(&self, input: &impl Serialize) -> Result<String, String> {
        let template = self
            .env
            .get_template("template")
            .map_err(|e| format!("{e:#}"))?;
        template
            .render(minijinja::Value::from_serialize(input))
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("{e:#}"))
    }
}
