//! Reading docs/PROTOCOL.md's sections and tables, for the tests that hold it to the code (here
//! and in the daemon's crate, which has the statuses' exit codes).

use std::collections::BTreeSet;

pub(crate) const DOC: &str = include_str!("../../../../docs/PROTOCOL.md");

/// The text under `heading` (a whole line, `### ask`), up to the next heading of its level or
/// above.
pub(crate) fn section(heading: &str) -> &'static str {
    let level = heading.split(' ').next().unwrap_or_default();
    let start = DOC
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/PROTOCOL.md has no heading {heading:?}"))
        + heading.len()
        + 2;
    let rest = &DOC[start..];
    let end = (1..=level.len())
        .filter_map(|n| rest.find(&format!("\n{} ", "#".repeat(n))))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The table rows of a section whose first cell is one code span: that span and the other cells.
pub(crate) fn rows(section: &str) -> Vec<(String, Vec<String>)> {
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.strip_prefix('|')?.split('|').map(str::trim).collect();
            let first = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
            (!first.contains('`')).then(|| {
                let rest = cells[1..].iter().map(|c| (*c).to_owned()).collect();
                (first.to_owned(), rest)
            })
        })
        .collect()
}

pub(crate) fn first_cells(heading: &str) -> BTreeSet<String> {
    rows(section(heading))
        .into_iter()
        .map(|(first, _)| first)
        .collect()
}

pub(crate) fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|key| (*key).to_owned()).collect()
}
