//! The one error for a name that is not one of a closed set: a level, a record
//! format, a mode, an overflow policy; and `named_enum!`, which declares such a set
//! once (the library's and the lab's). A leaf, so the enums below every floor can use
//! it.

use std::borrow::Cow;

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
    expected: Cow<'static, str>,
}

impl ParseError {
    /// `what` reads before the value (`unknown level`), `expected` after it.
    pub(crate) fn new(what: &'static str, value: &str, expected: &'static str) -> ParseError {
        ParseError {
            what,
            value: value.to_owned(),
            expected: Cow::Borrowed(expected),
        }
    }

    /// A text that is none of `names` (as `named_enum!` declared them; listed in lower
    /// case, as the parse ignores case): `unknown part "x": expected kill9, soak, hung
    /// or faults`. Public only for the lab's `named_enum!` (feature `unstable-lab`).
    #[cfg(feature = "unstable-lab")]
    #[doc(hidden)]
    pub fn named(what: &'static str, value: &str, names: &[&str]) -> ParseError {
        ParseError::not_one_of(what, value, names)
    }

    #[cfg(not(feature = "unstable-lab"))]
    pub(crate) fn named(what: &'static str, value: &str, names: &[&str]) -> ParseError {
        ParseError::not_one_of(what, value, names)
    }

    fn not_one_of(what: &'static str, value: &str, names: &[&str]) -> ParseError {
        let expected = match names {
            [] => String::new(),
            [one] => one.to_ascii_lowercase(),
            [rest @ .., last] => format!(
                "{} or {}",
                rest.iter()
                    .map(|n| n.to_ascii_lowercase())
                    .collect::<Vec<_>>()
                    .join(", "),
                last.to_ascii_lowercase()
            ),
        };
        ParseError {
            what,
            value: value.to_owned(),
            expected: Cow::Owned(expected),
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

/// Declares an enum of named variants once: each variant's name (and any other
/// spellings it accepts), from which it writes `ALL` (every variant, in order),
/// `as_str`, `Display` and `FromStr` (case-insensitive, blanks around ignored; the
/// error a [`ParseError`] saying `what`, the text, and every name). The library's
/// named enums (`Level`, `Format`, `Mode`) and the lab's use it.
///
/// ```text
/// named_enum! {
///     /// The enum's doc.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Part: "unknown part" {
///         /// A variant's doc.
///         Kill9 = "kill9",
///         Soak = "soak" | "long",
///     }
/// }
/// ```
///
/// Exported for the lab only (feature `unstable-lab`): not an API.
#[doc(hidden)]
#[cfg_attr(feature = "unstable-lab", macro_export)]
macro_rules! __named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every one, in the order declared.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// Its name, as displayed and parsed.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::ParseError;

            fn from_str(s: &str) -> ::std::result::Result<$name, $crate::ParseError> {
                let text = s.trim();
                $(
                    if text.eq_ignore_ascii_case($text) $(|| text.eq_ignore_ascii_case($alias))* {
                        return Ok($name::$variant);
                    }
                )+
                Err($crate::ParseError::named($what, text, &[$($text),+]))
            }
        }
    };
}
pub(crate) use __named_enum as named_enum;

#[cfg(test)]
mod tests {
    use crate::record::level::Level;
    use crate::record::Format;
    use crate::settings::mode::Mode;

    /// Every name and alias parses, in any case and with blanks around; `as_str` and
    /// `Display` give the name back; a text that is none of them is refused with every
    /// name listed, in lower case.
    #[test]
    fn a_named_enum_parses_each_name_and_alias_and_lists_them_all_when_refused() {
        for format in Format::ALL {
            assert_eq!(format.as_str().parse::<Format>(), Ok(format));
            assert_eq!(format.to_string(), format.as_str());
        }
        assert_eq!(" TEXT ".parse::<Format>(), Ok(Format::Compact));
        assert_eq!("rfc5424".parse::<Format>(), Ok(Format::Syslog));
        assert_eq!("Format_Only".parse::<Mode>(), Ok(Mode::FormatOnly));
        assert_eq!("warn".parse::<Level>(), Ok(Level::Warn));
        let e = "xml".parse::<Format>().unwrap_err();
        assert_eq!(e.value(), "xml");
        assert_eq!(
            e.to_string(),
            r#"unknown format "xml": expected json, compact, logfmt or syslog"#
        );
        assert_eq!(
            "loud".parse::<Level>().unwrap_err().to_string(),
            r#"unknown level "loud": expected trace, debug, info, warn or error"#
        );
        assert_eq!(Level::ALL.map(|l| l as usize), [0, 1, 2, 3, 4]);
    }
}
