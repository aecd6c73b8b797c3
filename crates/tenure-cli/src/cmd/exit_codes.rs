//! `tenure exit-codes`: the exit-code table of `exit.rs`, with one row per
//! tenure error code.

use super::Done;
use crate::exit;
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::io::{self, Write};

/// (exit, name, meaning) rows.
struct Table(Vec<(i32, String, String)>);

impl Render for Table {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .0
            .iter()
            .map(|(c, n, m)| vec![c.to_string(), n.clone(), m.clone()])
            .collect();
        out::table(o, &["EXIT", "NAME", "MEANING"], &rows)
    }

    fn json(&self) -> Value {
        json!({
            "exit_codes": self
                .0
                .iter()
                .map(|(c, n, m)| json!({"exit": c, "name": n, "meaning": m}))
                .collect::<Vec<_>>()
        })
    }
}

pub fn run() -> R<Done> {
    let fixed = exit::FIXED
        .iter()
        .map(|(c, n, m)| (*c, n.to_string(), m.to_string()));
    let errors = tenure::ErrorCode::ALL.iter().map(|&c| {
        (
            exit::for_code(c),
            c.name().to_string(),
            format!("tenure error {} ({})", c.as_u32(), c.name()),
        )
    });
    Done::show(Table(fixed.chain(errors).collect()))
}
