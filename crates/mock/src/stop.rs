//! A request's stop strings, honoured as servers honour them: the answer ends where the first
//! one begins (kept only where the request asks, vLLM's `include_stop_str_in_output`). Every
//! route that answers with text reads them.

/// `text` cut where the first of `stop` begins (kept with `keep`), and whether it was cut:
/// what a server sends for a request with stop strings.
pub(crate) fn cut_at_stop(text: &str, stop: &[String], keep: bool) -> (String, bool) {
    let first = stop
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()).map(|at| (at, s.len())))
        .min();
    match first {
        Some((at, len)) => {
            let end = if keep { at + len } else { at };
            (text[..end].to_string(), true)
        }
        None => (text.to_string(), false),
    }
}

/// A request's `stop`: one string or a list.
#[derive(serde::Deserialize, Default, Debug)]
#[serde(untagged)]
pub(crate) enum Stop {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl Stop {
    pub(crate) fn strings(&self) -> Vec<String> {
        match self {
            Stop::None => Vec::new(),
            Stop::One(s) => vec![s.clone()],
            Stop::Many(v) => v.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_ends_where_its_first_stop_string_begins() {
        let text = "Thought: a\nTalk: b\nAction: [TALK]";
        let stop = ["Action:".to_string(), "Talk:".to_string()];
        assert_eq!(
            cut_at_stop(text, &stop, false),
            ("Thought: a\n".to_string(), true)
        );
        assert_eq!(
            cut_at_stop(text, &stop, true),
            ("Thought: a\nTalk:".to_string(), true)
        );
        assert_eq!(cut_at_stop(text, &[], false), (text.to_string(), false));
    }
}
