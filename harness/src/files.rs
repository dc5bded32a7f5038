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

/// A file hookbench was to write that it will not write through: a symbolic link (someone who
/// can write where the file goes must not make hookbench overwrite what the link points at), or
/// anything but a regular file (a FIFO would block the run until someone reads it, a device would
/// take the text somewhere else).
#[derive(Debug, thiserror::Error)]
pub enum WriteRefused {
    /// A symbolic link.
    #[error("{}: a symbolic link; hookbench writes no file through one (remove it)", path.display())]
    Symlink {
        /// Where the link is.
        path: PathBuf,
    },
    /// A FIFO, a socket, a device or a directory.
    #[error("{}: not a regular file ({kind}); hookbench writes only regular files (remove it)", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
}

/// What a file that is not a regular file is, in a word.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else if file_type.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Refuses `path` when it is there and is not a regular file, or is a symlink: what a run checks
/// before it starts, for a file it writes at its end. Absent, or a regular file, it passes.
pub fn refuse_unwritable(path: &Path) -> Result<(), WriteRefused> {
    match std::fs::symlink_metadata(path).map(|m| m.file_type()) {
        Ok(t) if t.is_symlink() => Err(WriteRefused::Symlink { path: path.to_path_buf() }),
        Ok(t) if !t.is_file() => Err(WriteRefused::NotAFile { path: path.to_path_buf(), kind: kind_of(t) }),
        _ => Ok(()),
    }
}

/// Opens `path` for writing as `options` say (truncating or appending), never through a symlink
/// at its last component and only when it is a regular file; every refusal is a [`WriteRefused`]
/// inside the `io::Error`, for the command line to tell it from a full disk. It opens without
/// blocking: a FIFO with no reader fails at once (`ENXIO`), one with a reader is opened and then
/// refused before a byte is written, so no file makes the run wait (a regular file ignores the
/// flag).
fn open_for_writing(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let refused = |why: WriteRefused| io::Error::other(why);
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let file = options.custom_flags(flags.bits()).open(path).map_err(|e| match refuse_unwritable(path) {
        Err(why) => refused(why),
        Ok(()) => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
    })?;
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        return Err(refused(WriteRefused::NotAFile { path: path.to_path_buf(), kind: kind_of(file_type) }));
    }
    Ok(file)
}

/// Creates (or truncates) the regular file `path` for writing, refusing a symlink planted there
/// (`report.html` linked elsewhere in `--out`) or a FIFO, as [`open_for_writing`] does.
pub fn create_nofollow(path: &Path) -> io::Result<File> {
    open_for_writing(path, OpenOptions::new().write(true).create(true).truncate(true))
}

/// Opens the regular file `path` for appending, creating it if absent, as [`create_nofollow`]
/// refuses: for a file others write to as well (GitHub's step summary).
pub fn append_nofollow(path: &Path) -> io::Result<File> {
    open_for_writing(path, OpenOptions::new().append(true).create(true))
}

/// Writes `bytes` to `path` as [`create_nofollow`] opens it.
pub fn write_nofollow(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_nofollow(path)?;
    file.write_all(bytes).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Appends `bytes` to `path` as [`append_nofollow`] opens it.
pub fn append_to_regular(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = append_nofollow(path)?;
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

    /// The refusal inside an `io::Error` from writing.
    fn refusal(e: &io::Error) -> &WriteRefused {
        e.get_ref().and_then(|inner| inner.downcast_ref::<WriteRefused>()).unwrap_or_else(|| panic!("{e}"))
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_at_once_whether_or_not_someone_reads_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("junit.xml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        // With no reader, a blocking open would wait for one for ever.
        for e in [write_nofollow(&fifo, b"x"), append_to_regular(&fifo, b"x")] {
            assert!(matches!(
                refusal(&e.expect_err("no reader")),
                WriteRefused::NotAFile { kind: "a FIFO", .. }
            ));
        }
        // With a reader, the open succeeds and the file is refused before a byte is written.
        let reader = open_regular(&fifo).expect_err("a reader of a FIFO is refused too");
        assert!(matches!(reader, ReadError::NotAFile { .. }));
        let held = OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&fifo)
            .expect("a reader");
        let e = append_to_regular(&fifo, b"x").expect_err("a FIFO with a reader");
        assert!(matches!(refusal(&e), WriteRefused::NotAFile { kind: "a FIFO", .. }), "{e}");
        let mut read = Vec::new();
        let _ = (&held).read_to_end(&mut read);
        assert!(read.is_empty(), "nothing was written: {read:?}");
        let e = write_nofollow(Path::new("/dev/null"), b"x").expect_err("a device");
        assert!(matches!(refusal(&e), WriteRefused::NotAFile { kind: "a device", .. }), "{e}");
    }

    #[test]
    fn appending_keeps_a_regular_file_and_refuses_a_symlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let summary = dir.path().join("summary.md");
        append_to_regular(&summary, b"one\n").expect("created");
        append_to_regular(&summary, b"two\n").expect("appended");
        assert_eq!(std::fs::read(&summary).expect("read"), b"one\ntwo\n");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"keep").expect("write");
        let link = dir.path().join("linked.md");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let e = append_to_regular(&link, b"x").expect_err("a symlink");
        assert!(matches!(refusal(&e), WriteRefused::Symlink { .. }), "{e}");
        assert_eq!(std::fs::read(&target).expect("read"), b"keep");
    }
}
