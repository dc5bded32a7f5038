//! The `hookbench` binary: everything lives in the library's [`hookbench::cli`].

/// jemalloc rather than the system allocator: a receiver worker that held bodies for many clients
/// gives the memory back to the system once they leave (glibc's malloc kept most of it).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    hookbench::cli::main()
}
