//! The error of a command's step: what it was doing — naming the file, host or process — and, when a
//! lower-level error stopped it, that error, kept as its source and printed after the message.

use std::error::Error;
use std::fmt;
use std::path::Path;

use hearth_exec::error::Cause;

/// A step of a command that failed, and why. It may cross threads (a fleet's processes are stopped from
/// threads of their own).
#[derive(Debug)]
pub struct Failed {
    /// What failed, naming the file, host or process.
    message: String,
    /// The error that made it fail, when there is one.
    cause: Option<Cause>,
}

impl Failed {
    /// A step that failed for the reason `message` gives.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cause: None,
        }
    }

    /// A step that failed doing what `message` says, stopped by `cause`.
    pub fn because(message: impl Into<String>, cause: impl Into<Cause>) -> Self {
        Self {
            message: message.into(),
            cause: Some(cause.into()),
        }
    }

    /// The file or directory `path` could not be read, written or understood, for the reason `cause` gives.
    pub fn file(path: &Path, cause: impl Into<Cause>) -> Self {
        Self::because(path.display().to_string(), cause)
    }
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match &self.cause {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

impl Error for Failed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_deref().map(|cause| cause as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_follows_the_message_and_is_kept() {
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let failed = Failed::file(Path::new("workers"), missing);
        assert_eq!(failed.to_string(), "workers: no such file");
        assert_eq!(failed.source().unwrap().to_string(), "no such file");
        let refused = Failed::new("--executors must be at least 1");
        assert_eq!(refused.to_string(), "--executors must be at least 1");
        assert!(refused.source().is_none());
    }
}
