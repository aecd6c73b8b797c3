//! `tenure migrate`: bring an existing store to this version's schema.

use super::{Ctx, Done};
use crate::fail::R;
use crate::out::Render;
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::{Authority, Error, Options};

struct Migrated {
    path: String,
    from: u32,
    to: u32,
}

impl Render for Migrated {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        if self.from == self.to {
            writeln!(o, "schema version {}: already current", self.to)
        } else {
            writeln!(o, "schema version {} -> {}: migrated", self.from, self.to)
        }
    }

    fn json(&self) -> Value {
        json!({
            "path": self.path,
            "from": self.from,
            "to": self.to,
            "migrated": self.from != self.to,
        })
    }
}

pub fn run(ctx: &Ctx) -> R<Done> {
    let path = ctx.db()?;
    if !path.exists() {
        return Err(Error::NotFound(format!(
            "no store at {} (use `tenure init` to create one)",
            path.display()
        ))
        .into());
    }
    let auth = Authority::open(&path, &Options::new())?;
    Done::show(Migrated {
        path: path.display().to_string(),
        from: auth.migrated_from(),
        to: tenure::SCHEMA_VERSION,
    })
}
