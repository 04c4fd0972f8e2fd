//! `consentd check-config`: a config file's own rules and, unless `--file-only`, this machine
//! as whoever runs it.

use std::path::Path;
use std::process::ExitCode;

use consentd_client::session::EXIT_ERROR;
use consentd_client::{errln, outln};
use consentd_core::config::ConfigError;
use consentd_daemon::config;
use consentd_daemon::preflight;

pub(super) fn check_config(file: &Path, file_only: bool) -> ExitCode {
    let (loaded, notes) = if file_only {
        (config::load(file), Vec::new())
    } else {
        preflight::load_on_machine(file, true)
    };
    // Whom the machine was checked as: another user (the daemon's) may find other answers.
    let checked = if file_only {
        "the file alone: the token, commands, run_as users and env_files were not checked"
            .to_owned()
    } else {
        format!(
            "the token, commands, run_as users and env_files as {} finds them, with this \
             environment; the daemon's user may find otherwise",
            preflight::whoami()
        )
    };
    match loaded {
        Ok(config) => {
            outln!("{}", config.summary());
            for note in &notes {
                outln!("note: {note}");
            }
            outln!("checked: {checked}");
            ExitCode::SUCCESS
        }
        Err(ConfigError::Invalid { problems, .. }) => {
            for problem in &problems {
                outln!("{problem}");
            }
            for note in &notes {
                outln!("note: {note}");
            }
            outln!("checked: {checked}");
            errln!(
                "{}: {} problem{}",
                file.display(),
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            );
            ExitCode::from(EXIT_ERROR)
        }
        Err(error) => {
            errln!("consentd: {error}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
