//! clap's parser for every [`Keyword`] enum of the library: the possible values, their
//! help and the error for an unknown name all come from the type, so the command line
//! never mirrors an enum.

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use mil_core::keyword::Keyword;

/// The parser of `T`'s names.
#[derive(Debug)]
pub struct KeywordParser<T>(PhantomData<fn() -> T>);

impl<T> Clone for KeywordParser<T> {
    fn clone(&self) -> Self {
        KeywordParser(PhantomData)
    }
}

/// The parser of `T`'s names, for `#[arg(value_parser = keyword::<T>())]`.
pub fn keyword<T: Keyword + Send + Sync>() -> KeywordParser<T> {
    KeywordParser(PhantomData)
}

impl<T: Keyword + Send + Sync> TypedValueParser for KeywordParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        T::from_name(&text).ok_or_else(|| {
            let mut err = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
            if let Some(arg) = arg {
                err.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.to_string()),
                );
            }
            err.insert(
                ContextKind::InvalidValue,
                ContextValue::String(text.escape_debug().to_string()),
            );
            err.insert(
                ContextKind::ValidValue,
                ContextValue::Strings(T::ALL.iter().map(|v| v.name().to_owned()).collect()),
            );
            err
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            T::ALL
                .iter()
                .map(|v| PossibleValue::new(v.name()).help(v.help())),
        ))
    }
}

/// A value of `T`, or none at all, as a flag takes it: `--projection none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrNone<T>(pub Option<T>);

impl<T: Keyword> std::fmt::Display for OrNone<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.map_or("none", |v| v.name()))
    }
}

/// The parser of `none` and `T`'s names.
#[derive(Debug)]
pub struct OrNoneParser<T>(PhantomData<fn() -> T>);

impl<T> Clone for OrNoneParser<T> {
    fn clone(&self) -> Self {
        OrNoneParser(PhantomData)
    }
}

/// The parser of `none` and `T`'s names, for `#[arg(value_parser = keyword_or_none::<T>())]`.
pub fn keyword_or_none<T: Keyword + Send + Sync>() -> OrNoneParser<T> {
    OrNoneParser(PhantomData)
}

impl<T: Keyword + Send + Sync> TypedValueParser for OrNoneParser<T> {
    type Value = OrNone<T>;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<OrNone<T>, clap::Error> {
        if value == "none" {
            return Ok(OrNone(None));
        }
        keyword::<T>()
            .parse_ref(cmd, arg, value)
            .map(|v| OrNone(Some(v)))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            std::iter::once(PossibleValue::new("none").help("none at all")).chain(
                T::ALL
                    .iter()
                    .map(|v| PossibleValue::new(v.name()).help(v.help())),
            ),
        ))
    }
}
