//! A configuration error with its place, the list of them, and the collector that places them.

use serde_saphyr::Location;
use std::fmt;
use std::path::{Path, PathBuf};

/// One problem in the configuration, located.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if !self.hint.is_empty() {
            write!(f, "\n    fix: {}", self.hint)?;
        }
        Ok(())
    }
}

/// All the problems found, in file order.
#[derive(Debug, Clone, Default)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Collects located errors for one file.
pub struct Reporter<'a> {
    file: &'a Path,
    errors: &'a mut Vec<ConfigError>,
}

impl<'a> Reporter<'a> {
    pub fn new(file: &'a Path, errors: &'a mut Vec<ConfigError>) -> Self {
        Reporter { file, errors }
    }
    pub fn at(&mut self, loc: Location, message: impl Into<String>, hint: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.to_path_buf(),
            line: loc.line().max(1),
            column: loc.column().max(1),
            message: message.into(),
            hint: hint.into(),
        });
    }
    /// An error about a setting that has no line of its own (a default, a combination, an
    /// environment variable): it is reported at the top of the file.
    pub fn unplaced(&mut self, message: impl Into<String>, hint: impl Into<String>) {
        self.at(Location::UNKNOWN, message, hint);
    }
}

/// Runs `f` with a reporter on a scratch file and returns its result and the messages reported,
/// in order: the section validators' unit tests look at nothing else.
#[cfg(test)]
pub(crate) fn reported<T>(f: impl FnOnce(&mut Reporter<'_>) -> T) -> (T, Vec<String>) {
    let mut errors = Vec::new();
    let path = Path::new("routes.yaml");
    let out = f(&mut Reporter::new(path, &mut errors));
    (out, errors.into_iter().map(|e| e.message).collect())
}
