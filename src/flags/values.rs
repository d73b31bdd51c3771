//! Flags whose value is one of a library enum's names. The library gives the names (`ALL`,
//! `name`, and `FromStr` to read one back); the help line of each possible value is the
//! command line's, here, so `--help` lists them as clap's own value enums would.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A value parser over `all`, each value named by `name` and described by `about` (`None`:
/// listed without a description), read back by its `FromStr`.
pub fn one_of<T>(
    all: &[T],
    name: fn(T) -> &'static str,
    about: fn(T) -> Option<&'static str>,
) -> impl TypedValueParser<Value = T>
where
    T: Copy + std::str::FromStr + Send + Sync + 'static,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let values: Vec<PossibleValue> = all
        .iter()
        .map(|&value| match about(value) {
            Some(text) => PossibleValue::new(name(value)).help(text),
            None => PossibleValue::new(name(value)),
        })
        .collect();
    PossibleValuesParser::new(values).try_map(|given| given.parse::<T>())
}

/// For enums whose values `--help` lists without a description.
pub fn undescribed<T>(_: T) -> Option<&'static str> {
    None
}
