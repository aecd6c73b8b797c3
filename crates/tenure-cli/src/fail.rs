//! Why a command did not succeed, and how that is reported: a tenure error
//! exits `10 + N` (`exit.rs`), anything else with the status it names.

use crate::exit;
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::io::Write;
use tenure::executor::ExecError;
use tenure::Error;

/// Why a command did not succeed.
pub enum Fail {
    /// A tenure error: exit 10 + its code.
    Tenure(Error),
    /// Exit with this status and message (none when the message is empty:
    /// the command has already reported).
    Exit(i32, String),
}

/// A command's result.
pub type R<T> = std::result::Result<T, Fail>;

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Tenure(e)
    }
}

impl From<ExecError> for Fail {
    fn from(e: ExecError) -> Fail {
        match e {
            ExecError::Tenure(e) => Fail::Tenure(e),
            e => Fail::Exit(exit::FAILURE, e.to_string()),
        }
    }
}

/// A local I/O failure (exit 1), described as `what: error`.
pub fn local(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Fail {
    let what = what.to_string();
    move |e| Fail::Exit(exit::FAILURE, format!("{what}: {e}"))
}

/// A usage error (exit 2) with this message.
pub fn usage(msg: impl Into<String>) -> Fail {
    Fail::Exit(exit::USAGE, msg.into())
}

impl Fail {
    /// The process exit status.
    pub fn code(&self) -> i32 {
        match self {
            Fail::Tenure(e) => exit::for_code(e.code()),
            Fail::Exit(code, _) => *code,
        }
    }

    /// Print the message (if any) on stderr; return the exit status.
    pub fn report(self, json: bool) -> i32 {
        if !matches!(&self, Fail::Exit(_, m) if m.is_empty()) {
            let _ = out::write(json, &self, &mut std::io::stderr().lock());
        }
        self.code()
    }
}

impl Render for Fail {
    fn text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Fail::Tenure(e) => writeln!(o, "tenure: {e} [{}]", e.code().name()),
            Fail::Exit(_, msg) => writeln!(o, "tenure: {msg}"),
        }
    }

    fn json(&self) -> Value {
        match self {
            Fail::Tenure(e) => json!({"error": {
                "code": e.code().name(),
                "number": e.code().as_u32(),
                "exit": self.code(),
                "message": e.to_string(),
            }}),
            Fail::Exit(code, msg) => json!({"error": {"exit": code, "message": msg}}),
        }
    }
}
