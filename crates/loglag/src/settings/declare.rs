//! `declare_settings!`: each pipeline setting written once, ripgrep-style (its
//! `flags/defs.rs` gives a flag's name, doc, parser and update in one place). One entry
//! gives the key (also the field), its type and default, its parser, its check, and its
//! row of [`SETTINGS`](super::SETTINGS) (builder method, valid values, default as the
//! docs say it). From the entries the macro writes the `Settings` struct, its
//! `Default`, the table, the one parser (`assign`, behind [`Settings::set`]), the one
//! check (`problems`, behind [`Settings::validate`]) and the one repair (`reset`).
//! The builder's methods stay hand-written (each has its own type and doc);
//! `tests/it/settings_table.rs` checks them, TOML, the variables and URLs against the
//! table.
//!
//! [`Settings::set`]: super::Settings::set
//! [`Settings::validate`]: super::Settings::validate

/// See the module. An entry:
///
/// ```text
/// /// The field's doc.
/// key: Type = default_expression,
///     parse: fn(&str) -> Option<Type>,
///     [check: fn(&Settings) -> Result<(), String>,]   // Err: the value as shown
///     row: ("Builder::method", "what is valid", "the default, in words");
/// ```
///
/// After the entries, `@sink_rows:` lists the table's rows that describe the sink
/// (`Config`, `SinkSpec`), which have no field here.
macro_rules! declare_settings {
    (
        $(
            $(#[doc = $doc:literal])*
            $key:ident: $ty:ty = $default:expr,
                parse: $parse:expr,
                $(check: $check:expr,)?
                row: ($builder:expr, $expected:expr, $default_text:expr $(,)?);
        )*
        @sink_rows: $(($skey:literal, $sbuilder:expr, $sexpected:expr, $sdefault:expr $(,)?);)*
    ) => {
        /// One settings model: every option of a pipeline, whether it comes from a
        /// [`NonBlockingBuilder`](crate::NonBlockingBuilder) method, a TOML key, a
        /// `LOGLAG_*` variable or a sink URL's query
        /// (`file:///var/log/app.log?rotate=daily&capacity_bytes=16MiB`), is read by one
        /// parser ([`Settings::set`]) and checked by one rule ([`Settings::validate`]),
        /// so a bad value is the same error, naming the same key, whichever way it was
        /// said. [`SETTINGS`] is the table of them all; the docs' table is drawn from it
        /// (`docs/settings.md`, tested). Each is declared once, in `settings/mod.rs`.
        ///
        /// ```
        /// let mut settings = loglag::Settings::default();
        /// settings.set("capacity_bytes", "16MiB")?;
        /// settings.set("flush_interval", "1h")?;
        /// let e = settings.set("reserve_fraction", "0.9").unwrap_err();
        /// assert_eq!(e.key, "reserve_fraction");
        /// let (writer, guard) = loglag::NonBlockingBuilder::from(settings)
        ///     .build(loglag::sink::WriterSink::new(std::io::sink()))?;
        /// # drop((writer, guard));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        ///
        /// What the pipeline starts from is these once [`validate`](Self::validate)
        /// accepts them, and what the start found (the mode `LOGLAG_MODE` gave, a
        /// refused spool) kept apart, in `Validated`. The pipeline never adjusts a
        /// value it was given: one that cannot work is an error naming it.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $( $(#[doc = $doc])* pub(crate) $key: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Settings {
                Settings { $( $key: $default, )* }
            }
        }

        /// Every option, in the order the docs list them. The first rows are the
        /// pipeline's ([`Settings`]); `sink` and the rows after it describe the sink
        /// ([`Config`](crate::Config), [`SinkSpec`](crate::sink::SinkSpec)).
        pub const SETTINGS: &[Setting] = &[
            $( Setting {
                key: stringify!($key),
                builder: $builder,
                expected: $expected,
                default: $default_text,
            }, )*
            $( Setting {
                key: $skey,
                builder: $sbuilder,
                expected: $sexpected,
                default: $sdefault,
            }, )*
        ];

        impl Settings {
            /// Parses `text` (trimmed) into `key`'s field: `None` when `key` is not a
            /// pipeline key, `Some(false)` when the text does not parse.
            fn assign(&mut self, key: &str, text: &str) -> Option<bool> {
                match key {
                    $( stringify!($key) => Some(match ($parse)(text) {
                        Some(value) => {
                            self.$key = value;
                            true
                        }
                        None => false,
                    }), )*
                    _ => None,
                }
            }

            /// Every setting that cannot work, in the table's order.
            pub(crate) fn problems(&self) -> Vec<SettingError> {
                let mut out = Vec::new();
                $( $(
                    let check: fn(&Settings) -> Result<(), String> = $check;
                    if let Err(shown) = check(self) {
                        out.push(SettingError::new(stringify!($key), shown));
                    }
                )? )*
                out
            }

            /// Puts back `key`'s default.
            fn reset(&mut self, key: &str) {
                match key {
                    $( stringify!($key) => self.$key = $default, )*
                    _ => {}
                }
            }
        }
    };
}
