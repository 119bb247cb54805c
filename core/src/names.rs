//! The one table of option names: every option enum's `as_str` and [`FromStr`](core::str::FromStr)
//! come from here, and the command line, the model files and the tests convert through them.
//!
//! ```
//! use unmix::ica::{Algorithm, WhitenMode};
//! assert_eq!("deflation".parse::<Algorithm>(), Ok(Algorithm::Deflation));
//! assert_eq!(WhitenMode::None.as_str(), "false"); // scikit-learn's `whiten=False`
//! assert!("no-such-mode".parse::<WhitenMode>().is_err());
//! ```

use core::fmt;

/// A name that none of an option's values has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownName {
    /// The option, e.g. `"algorithm"`.
    pub option: &'static str,
    /// The names it accepts.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {}; expected one of: ", self.option)?;
        for (i, name) in self.expected.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

impl core::error::Error for UnknownName {}

/// Implements `NAMES`, `as_str` and `FromStr` for an enum from one `Variant => "name"` table.
/// A variant may carry a default value for its payload (`Variant(default) => "name"`).
macro_rules! option_names {
    ($ty:ty, $option:literal, { $($variant:pat => $name:literal, $value:expr;)+ }) => {
        impl $ty {
            /// Every accepted name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];
            /// The option's name for this value, as the command line and model files spell it.
            pub const fn as_str(&self) -> &'static str {
                match self {
                    $($variant => $name,)+
                }
            }
        }
        impl core::str::FromStr for $ty {
            type Err = $crate::names::UnknownName;
            /// The value named `s` (exactly as [`Self::as_str`] spells it).
            fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
                match s {
                    $($name => Ok($value),)+
                    _ => Err($crate::names::UnknownName { option: $option, expected: Self::NAMES }),
                }
            }
        }
        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use option_names;
