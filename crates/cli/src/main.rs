//! The `musepi` binary: a thin `main` over the `musepi_cli` library, which
//! parses the command line, runs the command and maps the outcome to an
//! exit code (0 success, 1 the operation failed, 2 bad usage or bad input,
//! 3 the session is busy).

fn main() -> std::process::ExitCode {
    musepi_cli::commands::main()
}
