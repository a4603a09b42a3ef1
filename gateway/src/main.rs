//! The `covo` binary: the command line is `covo::cli` (see there for why).

fn main() -> std::process::ExitCode {
    covo::cli::main()
}
