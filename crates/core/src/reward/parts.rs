//! A seat's reward components with their values: what a record keeps as `reward_parts`, keyed
//! by [`Component`] in code and by the component's name on disk.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::Component;

/// Each component's episode value for one seat, unweighted. Written as a JSON object from
/// component name to value, the names in name order (as records have always had them); a name
/// that is no component is refused on read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parts(BTreeMap<Component, f64>);

impl Parts {
    pub fn get(&self, c: Component) -> Option<f64> {
        self.0.get(&c).copied()
    }

    pub fn insert(&mut self, c: Component, value: f64) -> Option<f64> {
        self.0.insert(c, value)
    }

    pub(crate) fn remove(&mut self, c: Component) -> Option<f64> {
        self.0.remove(&c)
    }

    pub fn contains(&self, c: Component) -> bool {
        self.0.contains_key(&c)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The components and their values, in the order records write them (by name).
    pub fn iter(&self) -> impl Iterator<Item = (Component, f64)> + '_ {
        let mut all: Vec<(Component, f64)> = self.0.iter().map(|(c, v)| (*c, *v)).collect();
        all.sort_by_key(|(c, _)| c.name());
        all.into_iter()
    }
}

impl FromIterator<(Component, f64)> for Parts {
    fn from_iter<I: IntoIterator<Item = (Component, f64)>>(iter: I) -> Parts {
        Parts(iter.into_iter().collect())
    }
}

impl std::ops::Index<Component> for Parts {
    type Output = f64;

    /// The value of a component the seat has; panics on one it has not (as a map does).
    fn index(&self, c: Component) -> &f64 {
        self.0
            .get(&c)
            .unwrap_or_else(|| panic!("no `{}` part", c.name()))
    }
}

impl Serialize for Parts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let by_name: BTreeMap<&str, f64> = self.0.iter().map(|(c, v)| (c.name(), *v)).collect();
        by_name.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::<Component, f64>::deserialize(deserializer).map(Parts)
    }
}

impl JsonSchema for Parts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Parts".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        BTreeMap::<Component, f64>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_written_by_name_in_name_order_and_read_back() {
        let parts: Parts = [
            (Component::Terminal, 0.5),
            (Component::Format, 1.0),
            (Component::RewardModel, -0.25),
            (Component::Judge, 0.75),
        ]
        .into_iter()
        .collect();
        let json = serde_json::to_string(&parts).unwrap();
        // Name order, not the enum's declaration order (terminal first).
        assert_eq!(
            json,
            r#"{"format":1.0,"judge":0.75,"reward_model":-0.25,"terminal":0.5}"#
        );
        assert_eq!(serde_json::from_str::<Parts>(&json).unwrap(), parts);
        assert_eq!(parts[Component::Judge], 0.75);
        let names: Vec<&str> = parts.iter().map(|(c, _)| c.name()).collect();
        assert_eq!(names, ["format", "judge", "reward_model", "terminal"]);
        let unknown = serde_json::from_str::<Parts>(r#"{"charm":1.0}"#).unwrap_err();
        assert!(unknown.to_string().contains("charm"), "{unknown}");
    }
}
