//! What the command line prints, written so that a reader that has gone is not a crash.
//!
//! `println!` panics when stdout is a pipe whose reader has closed it (`consentd list | head -3`):
//! Rust ignores SIGPIPE, so the write fails with EPIPE instead of ending the process, and the
//! macro turns the error into a panic (exit 101, a message on stderr). Every line a subcommand
//! prints goes through [`outln!`] or [`errln!`] instead: what nobody reads any more is dropped,
//! quietly, and the command goes on to its own exit code (an ask's outcome is still its exit code
//! when nobody reads its result).

use std::fmt;
use std::io::{ErrorKind, Write};

/// Where a line goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Writes `args` and then `end` to `stream`. A closed pipe drops the text; any other failure
/// (a full disk behind a redirect) is said once on stderr, since output that vanishes without a
/// word is worse than a line about it.
pub fn write(stream: Stream, args: fmt::Arguments<'_>, end: &str) {
    let written = match stream {
        Stream::Stdout => write_to(&mut std::io::stdout().lock(), args, end),
        Stream::Stderr => write_to(&mut std::io::stderr().lock(), args, end),
    };
    match written {
        Err(error) if error.kind() != ErrorKind::BrokenPipe && stream == Stream::Stdout => {
            let _ = writeln!(
                std::io::stderr(),
                "consentd: cannot write to stdout: {error}"
            );
        }
        _ => {}
    }
}

fn write_to(out: &mut impl Write, args: fmt::Arguments<'_>, end: &str) -> std::io::Result<()> {
    out.write_fmt(args)?;
    out.write_all(end.as_bytes())?;
    out.flush()
}

/// `println!` that a closed stdout does not turn into a panic.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write($crate::output::Stream::Stdout, format_args!($($arg)*), "\n")
    };
}

/// `eprintln!` that a closed stderr does not turn into a panic.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::write($crate::output::Stream::Stderr, format_args!(""), "\n")
    };
    ($($arg:tt)*) => {
        $crate::output::write($crate::output::Stream::Stderr, format_args!($($arg)*), "\n")
    };
}

pub use crate::{errln, outln};

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_an_error_not_a_panic() {
        let error = write_to(&mut Closed, format_args!("{}", 1), "\n").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::BrokenPipe);
    }

    #[test]
    fn a_line_is_its_text_and_its_end() {
        let mut out = Vec::new();
        write_to(&mut out, format_args!("ok: {}", 3), "\n").unwrap();
        assert_eq!(out, b"ok: 3\n");
    }
}
