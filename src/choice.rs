//! Settings whose value is one of a list of names ([`Fallback`],
//! [`PayloadKind`], [`PayloadRead`], and a file's store): `choices!`
//! writes each such enum, its names, its reading from a name and its
//! `Display`, from one line per name.
//!
//! [`Fallback`]: crate::config::Fallback
//! [`PayloadKind`]: crate::config::PayloadKind
//! [`PayloadRead`]: crate::config::PayloadRead

/// An enum that is a list of names, as `choices!` writes it.
pub(crate) trait Choice: Copy + PartialEq + 'static {
    /// The setting that names it (`payload`, `FUSE_PAYLOAD`).
    #[cfg_attr(not(feature = "config-file"), allow(dead_code))] // settings' errors
    const SETTING: &'static str;
    /// Every choice, the default first.
    const ALL: &'static [Self];

    /// The choice's name.
    fn name(self) -> &'static str;

    /// The choice called `name` (exactly), if there is one.
    fn named(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|choice| choice.name() == name)
    }

    /// What an error says the choices are: "`a`, `b` and `c`".
    #[cfg_attr(not(any(feature = "config-file", feature = "redis")), allow(dead_code))]
    fn choices() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|c| format!("`{}`", c.name()))
            .collect();
        match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// Writes an enum whose variants are names (the first the default), with
/// `as_str`, `parse`, `Display` and [`Choice`]; `$path` is its public path,
/// for the examples of the methods it writes.
macro_rules! choices {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($setting:literal, $path:literal) {
            $(#[$first_doc:meta])*
            $first:ident = $first_text:literal,
            $(
                $(#[$doc:meta])*
                $variant:ident = $text:literal,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $(#[$first_doc])*
            #[default]
            $first,
            $(
                $(#[$doc])*
                $variant,
            )*
        }

        impl $name {
            /// The name settings, files and logs give it.
            ///
            #[doc = concat!("```\nuse ", $path, ";\nassert_eq!(", stringify!($name), "::", stringify!($first), ".as_str(), \"", $first_text, "\");\n```")]
            pub fn as_str(self) -> &'static str {
                match self {
                    $name::$first => $first_text,
                    $($name::$variant => $text,)*
                }
            }

            /// The one `name` names (exactly as [`as_str`](Self::as_str)
            /// spells it), if any.
            ///
            #[doc = concat!("```\nuse ", $path, ";\nassert_eq!(", stringify!($name), "::parse(\"", $first_text, "\"), Some(", stringify!($name), "::", stringify!($first), "));\nassert_eq!(", stringify!($name), "::parse(\"?\"), None);\n```")]
            pub fn parse(name: &str) -> Option<Self> {
                <Self as $crate::choice::Choice>::named(name)
            }
        }

        impl $crate::choice::Choice for $name {
            const SETTING: &'static str = $setting;
            const ALL: &'static [Self] = &[$name::$first, $($name::$variant),*];

            fn name(self) -> &'static str {
                self.as_str()
            }
        }

        impl std::fmt::Display for $name {
            /// Its name.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use choices;
