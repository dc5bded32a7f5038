//! Files hookbench reads that someone else may have written (templates, threshold files, shard
//! files, histories, reports) are read to a size limit, and files it writes into `--out` never
//! follow a symlink planted there. A limit exceeded is an error naming the file and the limit, never
//! an allocation the file chose; a FIFO or a device (`/dev/zero`) is refused before it is read.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a file could not be read within its limit.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// It is not a regular file (a FIFO, a device, a directory).
    #[error("{}: not a regular file", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// It is larger than the limit.
    #[error("{}: larger than {limit} bytes, the limit for {what}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, bytes.
        limit: u64,
        /// What kind of file it is (`a template`, `a shard's history`).
        what: &'static str,
    },
    /// It is not UTF-8.
    #[error("{}: not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

/// Opens `path` for reading, refusing anything but a regular file (after following symlinks: a
/// user may link a template; the size limit still holds). It opens without blocking, so a FIFO
/// no one writes to is refused, not waited on (a regular file ignores the flag).
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile { path: path.to_path_buf() });
    }
    Ok(file)
}

/// The bytes of `path`, at most `limit` of them; `what` names the kind of file in the error. A
/// file whose metadata says it is larger is refused before a byte is read; the read stops one
/// byte past `limit` all the same, for a file that grows meanwhile.
pub fn read_capped(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let file = open_regular(path)?;
    let too_large = || ReadError::TooLarge { path: path.to_path_buf(), limit, what };
    let size = file.metadata().map_err(io)?.len();
    if size > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // One byte past the limit tells a file of exactly `limit` bytes from a larger one.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of `path`, at most `limit` bytes of UTF-8.
pub fn read_text_capped(path: &Path, limit: u64, what: &'static str) -> Result<String, ReadError> {
    let bytes = read_capped(path, limit, what)?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotText { path: path.to_path_buf() })
}

/// A symbolic link where hookbench was to write a file: refused, never written through (someone
/// who can write into `--out` must not make hookbench overwrite what the link points at).
#[derive(Debug, thiserror::Error)]
#[error("{}: a symbolic link; hookbench writes no file through one (remove it)", path.display())]
pub struct SymlinkRefused {
    /// Where the link is.
    pub path: PathBuf,
}

/// Creates (or truncates) `path` for writing without following a symlink at its last component:
/// a link planted in `--out` as `report.html` makes this fail with a [`SymlinkRefused`] (inside
/// the `io::Error`, for the command line to tell it from a full disk) instead of writing where
/// it points.
pub fn create_nofollow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(|e| {
            let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if is_link {
                io::Error::other(SymlinkRefused { path: path.to_path_buf() })
            } else {
                io::Error::new(e.kind(), format!("{}: {e}", path.display()))
            }
        })
}

/// Writes `bytes` to `path` as [`create_nofollow`] opens it.
pub fn write_nofollow(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_nofollow(path)?;
    file.write_all(bytes).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_up_to_its_limit_and_refused_past_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.json");
        std::fs::write(&path, b"0123456789").expect("write");
        assert_eq!(read_capped(&path, 10, "a test file").expect("at the limit"), b"0123456789");
        let err = read_capped(&path, 9, "a test file").expect_err("past the limit");
        assert!(err.to_string().ends_with("larger than 9 bytes, the limit for a test file"), "{err}");
    }

    #[test]
    fn a_device_or_a_fifo_is_refused_before_it_is_read() {
        let err = read_capped(Path::new("/dev/zero"), 1 << 20, "a test file").expect_err("a device");
        assert!(matches!(err, ReadError::NotAFile { .. }), "{err}");
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        // Opened blocking, this would wait for a writer that never comes.
        let err = read_capped(&fifo, 1 << 20, "a test file").expect_err("a FIFO");
        assert!(matches!(err, ReadError::NotAFile { .. }), "{err}");
    }

    #[test]
    fn a_file_larger_than_its_limit_is_refused_by_its_size_before_it_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sparse.json");
        // 1 TiB of nothing: read, it would take what the machine has.
        File::create(&path).and_then(|f| f.set_len(1 << 40)).expect("a sparse file");
        let err = read_capped(&path, 1 << 20, "a test file").expect_err("too large");
        assert!(matches!(err, ReadError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.txt");
        std::fs::write(&path, [0xff, 0xfe]).expect("write");
        assert!(matches!(read_text_capped(&path, 10, "a test file"), Err(ReadError::NotText { .. })));
    }

    #[test]
    fn a_symlink_planted_where_a_file_is_written_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"keep").expect("write");
        let link = dir.path().join("report.html");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(write_nofollow(&link, b"overwritten").is_err());
        assert_eq!(std::fs::read(&target).expect("read"), b"keep");
        let plain = dir.path().join("report.md");
        write_nofollow(&plain, b"new").expect("a plain file is written");
        write_nofollow(&plain, b"again").expect("and rewritten");
        assert_eq!(std::fs::read(&plain).expect("read"), b"again");
    }
}
