//! `tenure init`: create the store (or open an existing one).

use super::{Ctx, Done};
use crate::fail::R;
use crate::out::Render;
use serde_json::{json, Value};
use std::io::{self, Write};

struct Initialized {
    path: String,
    migrated_from: u32,
}

impl Initialized {
    fn created(&self) -> bool {
        self.migrated_from == 0
    }
}

impl Render for Initialized {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let v = tenure::SCHEMA_VERSION;
        if self.created() {
            writeln!(o, "created store {} (schema version {v})", self.path)
        } else {
            writeln!(o, "store {} ready (schema version {v})", self.path)
        }
    }

    fn json(&self) -> Value {
        json!({
            "path": self.path,
            "schema_version": tenure::SCHEMA_VERSION,
            "created": self.created(),
            "migrated_from": self.migrated_from,
        })
    }
}

pub fn run(ctx: &Ctx) -> R<Done> {
    let auth = ctx.open()?;
    Done::show(Initialized {
        path: auth.path().display().to_string(),
        migrated_from: auth.migrated_from(),
    })
}
