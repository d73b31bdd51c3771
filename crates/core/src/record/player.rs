//! Who sat in a seat, as a record names them: a player (a model endpoint, a built-in rule, a
//! script, an external client) by its spec, or a person of a dataset's dialogue.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The spec prefix of a person: of a dataset's dialogue, `human:<dialogue id>`
/// (`dealgym dialogues import`), or at the play page, `human:<name>` (`dealgym play`).
/// [`PlayerSpec`] reads it; nothing else does.
const PERSON_PREFIX: &str = "human:";

/// What kind of party played a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeatKind {
    /// A player dealgym ran: an endpoint, a rule, a script, or a client of `dealgym serve`.
    Player,
    /// A person: of a dataset's own dialogue (imported), or who took a seat at the play page.
    Person,
}

/// A seat's player spec with any secret removed (`openai:MODEL@URL`, `rule:NAME`, `external`,
/// `human:<dialogue id>`), and the kind of party it names. Written as the spec string alone;
/// the kind is read from it once, here, so every reader asks `kind` rather than
/// looking at the text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlayerSpec {
    spec: String,
}

impl PlayerSpec {
    /// The person who played a seat: of a dataset's dialogue (its id), or at the play page
    /// (their name or participant code).
    pub fn person(dialogue: &str) -> PlayerSpec {
        PlayerSpec {
            spec: format!("{PERSON_PREFIX}{dialogue}"),
        }
    }

    pub(crate) fn kind(&self) -> SeatKind {
        if self.spec.starts_with(PERSON_PREFIX) {
            SeatKind::Person
        } else {
            SeatKind::Player
        }
    }

    pub fn is_person(&self) -> bool {
        self.kind() == SeatKind::Person
    }

    /// Whether a spec string names a person (`human:…`).
    pub fn is_person_spec(spec: &str) -> bool {
        spec.starts_with(PERSON_PREFIX)
    }

    /// The dialogue a person's seat comes from.
    #[cfg(test)]
    pub(crate) fn dialogue(&self) -> Option<&str> {
        self.spec.strip_prefix(PERSON_PREFIX)
    }

    /// The concession tactic of the built-in rule a `rule:NAME` spec names (`None` for any
    /// other player, and for a name no rule has): `rule:fixed-concession` is the linear
    /// tactic, its empty Talk changing none of its moves.
    pub(crate) fn rule(&self) -> Option<crate::negotiator::Tactic> {
        self.spec
            .strip_prefix("rule:")
            .and_then(crate::negotiator::RulePlayer::from_name)
            .map(|player| player.tactic)
    }

    pub fn as_str(&self) -> &str {
        &self.spec
    }
}

impl From<String> for PlayerSpec {
    fn from(spec: String) -> PlayerSpec {
        PlayerSpec { spec }
    }
}

impl From<&str> for PlayerSpec {
    fn from(spec: &str) -> PlayerSpec {
        PlayerSpec::from(spec.to_string())
    }
}

impl AsRef<str> for PlayerSpec {
    fn as_ref(&self) -> &str {
        &self.spec
    }
}

impl fmt::Display for PlayerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

impl PartialEq<str> for PlayerSpec {
    fn eq(&self, other: &str) -> bool {
        self.spec == other
    }
}

impl PartialEq<&str> for PlayerSpec {
    fn eq(&self, other: &&str) -> bool {
        self.spec == *other
    }
}

impl Serialize for PlayerSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.spec)
    }
}

impl<'de> Deserialize<'de> for PlayerSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(PlayerSpec::from)
    }
}

impl JsonSchema for PlayerSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PlayerSpec".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_and_a_player_are_told_apart_and_written_as_their_spec() {
        let person = PlayerSpec::person("C_12");
        assert_eq!(person.kind(), SeatKind::Person);
        assert_eq!(person.dialogue(), Some("C_12"));
        assert_eq!(serde_json::to_string(&person).unwrap(), r#""human:C_12""#);
        let read: PlayerSpec = serde_json::from_str(r#""human:C_12""#).unwrap();
        assert_eq!(read, person);
        assert!(read.is_person());
        for spec in ["openai:m@http://127.0.0.1:1/v1", "rule:linear", "external"] {
            let p = PlayerSpec::from(spec);
            assert_eq!(p.kind(), SeatKind::Player, "{spec}");
            assert_eq!(p.dialogue(), None);
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{spec}\""));
        }
    }
}
