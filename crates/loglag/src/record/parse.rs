//! The one error for a name that is not one of a closed set: a level, a record
//! format, a mode, an overflow policy. A leaf, so the enums below every floor can use it.

/// A name that is not one of the accepted ones (`"verbose".parse::<Level>()`): says
/// what was parsed, the text, and what is accepted.
///
/// ```
/// let e = "verbose".parse::<loglag::Level>().unwrap_err();
/// assert_eq!(e.value(), "verbose");
/// assert_eq!(
///     e.to_string(),
///     r#"unknown level "verbose": expected trace, debug, info, warn or error"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    what: &'static str,
    value: String,
    expected: &'static str,
}

impl ParseError {
    /// `what` reads before the value (`unknown level`), `expected` after it.
    pub(crate) fn new(what: &'static str, value: &str, expected: &'static str) -> ParseError {
        ParseError {
            what,
            value: value.to_owned(),
            expected,
        }
    }

    /// The text that is not a name.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?}: expected {}",
            self.what, self.value, self.expected
        )
    }
}

impl std::error::Error for ParseError {}
