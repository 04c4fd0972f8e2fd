//! docs/CONFIG.md against the walk: every table and every key the config knows has its row
//! there, and nothing else does; each default the document writes as a value is the one the
//! walk takes when the key is left out; and its complete example is a valid config that uses
//! every key.

use super::*;

const DOC: &str = include_str!("../../../../docs/CONFIG.md");

/// Each table of the config, as the document heads its section, with the keys the walk knows.
const TABLES: [(&str, &[&str]); 9] = [
    ("owner", OWNER_KEYS),
    ("telegram", TELEGRAM_KEYS),
    ("paths", PATHS_KEYS),
    ("client", CLIENT_KEYS),
    // An array of tables, headed `[[listen]]`.
    ("[listen]", LISTEN_KEYS),
    ("limits", LIMITS_KEYS),
    ("gate", GATE_KEYS),
    ("journal", JOURNAL_KEYS),
    ("categories.NAME", CATEGORY_KEYS),
];

/// What a category needs besides the key under test.
const CATEGORY_BASE: &str =
    "label = { en = \"K\" }\nclass = \"external\"\ncommand = [\"/bin/true\"]\n";

/// The text of the section headed `heading`, up to the next `## ` heading.
fn section(heading: &str) -> &'static str {
    let start = DOC
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/CONFIG.md has no heading {heading:?}"))
        + heading.len()
        + 2;
    let rest = &DOC[start..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// The key table of a table's section: each row's key and its default cell.
fn rows(table: &str) -> Vec<(&'static str, &'static str)> {
    section(&format!("## `[{table}]`"))
        .lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix('|')?.split('|').map(str::trim);
            let key = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            let default = cells.nth(1)?;
            Some((key, default))
        })
        .collect()
}

/// A default written as one code span holding a TOML value, as `"15m"` or `[]`.
fn default_value(cell: &str) -> Option<&str> {
    let inner = cell.strip_prefix('`')?.strip_suffix('`')?;
    (!inner.contains('`')).then_some(inner)
}

#[test]
fn every_table_and_key_is_documented_and_nothing_else() {
    let mut tables: Vec<&str> = TABLES
        .iter()
        .map(|(table, _)| {
            let table = table.trim_start_matches('[').trim_end_matches(']');
            table.split('.').next().unwrap_or_default()
        })
        .collect();
    let mut top = TOP_KEYS.to_vec();
    tables.sort_unstable();
    top.sort_unstable();
    assert_eq!(tables, top);
    for (table, keys) in TABLES {
        let mut documented: Vec<&str> = rows(table).into_iter().map(|(key, _)| key).collect();
        let mut known = keys.to_vec();
        documented.sort_unstable();
        known.sort_unstable();
        assert_eq!(documented, known, "the rows of [{table}] in docs/CONFIG.md");
    }
    let label = rows("categories.NAME")
        .into_iter()
        .find(|(key, _)| *key == "label")
        .map(|_| section("## `[categories.NAME]`"))
        .unwrap_or_default();
    for language in LABEL_KEYS {
        assert!(
            label.contains(&format!("`{language}`")),
            "the label's {language}"
        );
    }
}

#[test]
fn the_documented_defaults_are_the_walks() {
    let base = "[paths]\nstate_dir = \"/var/lib/consentd\"\n";
    let parsed = |text: &str| -> String {
        let config = parse(text, "docs/CONFIG.md").unwrap_or_else(|e| panic!("{text}\n{e}"));
        format!("{config:?}")
    };
    let mut checked = 0;
    for (table, _) in TABLES {
        for (key, cell) in rows(table) {
            let Some(value) = default_value(cell) else {
                continue;
            };
            let (without, with) = if table == "categories.NAME" {
                let category = format!("{base}[categories.k]\n{CATEGORY_BASE}");
                (category.clone(), format!("{category}{key} = {value}\n"))
            } else if table == "paths" {
                (base.to_owned(), format!("{base}{key} = {value}\n"))
            } else {
                (
                    base.to_owned(),
                    format!("{base}[{table}]\n{key} = {value}\n"),
                )
            };
            assert_eq!(parsed(&with), parsed(&without), "{table}.{key} = {value}");
            checked += 1;
        }
    }
    // Every limit and gate setting, and the plain defaults of the other tables.
    assert!(checked >= 25, "{checked} defaults checked");
}

#[test]
fn the_complete_example_is_valid_and_uses_every_key() {
    let example = section("## A complete example");
    let start = example.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let text = &example[start..start + example[start..].find("```").expect("its end")];
    parse(text, "docs/CONFIG.md").unwrap_or_else(|e| panic!("{e}"));
    let root: Table = text.parse().unwrap();
    let used = |table: &Table| -> BTreeSet<String> { table.keys().cloned().collect() };
    let table_at = |key: &str| root.get(key).and_then(Value::as_table).unwrap();
    assert_eq!(
        used(&root),
        TOP_KEYS.iter().map(|k| (*k).to_owned()).collect()
    );
    let mut languages = BTreeSet::new();
    for (table, keys) in TABLES {
        let tables: Vec<&Table> = match (table.split_once('.'), table.strip_prefix('[')) {
            (Some((top, _)), _) => table_at(top).values().filter_map(Value::as_table).collect(),
            (None, Some(array)) => root
                .get(array.trim_end_matches(']'))
                .and_then(Value::as_array)
                .unwrap()
                .iter()
                .filter_map(Value::as_table)
                .collect(),
            (None, None) => vec![table_at(table)],
        };
        let mut found = BTreeSet::new();
        for t in tables {
            found.extend(used(t));
            if let Some(label) = t.get("label").and_then(Value::as_table) {
                languages.extend(used(label));
            }
        }
        let missing: Vec<&&str> = keys.iter().filter(|k| !found.contains(**k)).collect();
        assert!(missing.is_empty(), "[{table}] lacks {missing:?}");
    }
    assert_eq!(
        languages,
        LABEL_KEYS.iter().map(|k| (*k).to_owned()).collect()
    );
}
