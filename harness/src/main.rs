//! The `hookbench` binary: everything lives in the library's [`hookbench::cli`].

fn main() -> std::process::ExitCode {
    hookbench::cli::main()
}
