//! The config's file: reading it. Its rules (parsing, validation, the types) are
//! `consentd_core::config`.

use std::path::Path;
use std::sync::Arc;

use consentd_core::config::{parse_checked, Config, ConfigError, MoreChecks};

/// Reads, parses and validates the config file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_checked(path, &mut |_, _, _| Vec::new())
}

/// [`load`], with `more` run over the parts of the config a check of the machine needs (see
/// [`parse_checked`]; `serve` and `check-config` pass `preflight::check`).
pub fn load_checked(path: &Path, more: MoreChecks<'_>) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
        path: path.to_owned(),
        source: Arc::new(e),
    })?;
    parse_checked(&text, &path.display().to_string(), more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_reads_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, include_str!("../../../config.toml")).expect("write");
        let config = load(&path).expect("valid");
        assert!(config.categories.contains_key("channel_post"));

        std::fs::write(&path, "[paths]\nstate_dir = \"rel\"\n").expect("write");
        let err = load(&path).expect_err("invalid");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("1 problem(s) in {}:", path.display())),
            "{text}"
        );
    }

    #[test]
    fn load_reports_a_missing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("absent.toml");
        let err = load(&path).expect_err("missing");
        assert!(
            matches!(&err, ConfigError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
        );
        assert!(
            err.to_string()
                .starts_with(&format!("cannot read {}: ", path.display())),
            "{err}"
        );
    }
}
