//! `consentd check-config`, and `serve` refusing a bad config the same way.

use crate::fixture::{consentd, stderr, stdout};

#[test]
fn the_example_config_passes() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml");
    let output = consentd(&["check-config", example]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).starts_with("ok: "), "{}", stdout(&output));
    assert_eq!(stdout(&output).lines().count(), 1);
}

const BAD: &str = r#"
[owner]
tiemzone = "UTC"

[paths]
state_dir = "relative/state"

[limits]
card_ttl = "20m"

[categories.wipe]
label = { en = "Wipe" }
class = "destructive"
mandate_ok = true
command = ["wipe"]
"#;

#[test]
fn a_bad_config_names_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, BAD).unwrap();
    let output = consentd(&["check-config", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let printed = stdout(&output);
    for key in [
        "owner.tiemzone:",
        "paths.state_dir:",
        "limits.card_ttl:",
        "categories.wipe.mandate_ok:",
        "categories.wipe.command:",
    ] {
        assert!(
            printed
                .lines()
                .any(|line| line.trim_start().starts_with(key)),
            "{key} in {printed}"
        );
    }
    assert!(printed.contains("15m"), "the ceiling is named: {printed}");

    let serve = consentd(&["serve", "--config", path.to_str().unwrap()]);
    assert_eq!(serve.status.code(), Some(1));
    let said = stderr(&serve);
    assert!(said.contains("limits.card_ttl"), "{said}");
    assert!(said.contains("categories.wipe.mandate_ok"), "{said}");
}

#[test]
fn a_missing_config_is_an_error() {
    let output = consentd(&["check-config", "/nonexistent/consentd.toml"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("/nonexistent/consentd.toml"),
        "{}",
        stderr(&output)
    );
}
