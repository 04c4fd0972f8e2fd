//! The `consentd` binary: see [`consentd::cli`].

fn main() -> std::process::ExitCode {
    consentd::cli::main()
}
