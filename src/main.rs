//! The `consentd` binary: see [`consentd::cli`] for its subcommands.

fn main() -> std::process::ExitCode {
    consentd::main()
}
