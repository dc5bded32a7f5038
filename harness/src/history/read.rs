//! Reading a run's history back, compressed or not, one line at a time, each line and the whole
//! (decompressed) file read to a limit: a history is a file someone else may have written (a
//! shard's, handed to `merge`; a run's, handed to `explain`), so neither one long line nor a
//! small compressed file that expands without end may size what is held in memory.

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::{FILE, FILE_ZST, Line};
use crate::files::{self, ReadError};

/// The longest line read, bytes (1 MiB): an attempt's line is about 250 bytes, an event's a few
/// hundred, a verdict's a few kilobytes.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most (decompressed) bytes read from one history (1 TiB): it is read a line at a time, so
/// this bounds time, not memory; a bench of 1,000,000 events in each of 14 cells writes about
/// 4 GB, one of `--events 100000000` (the bound) a hundred times that.
pub const MAX_HISTORY_BYTES: u64 = 1 << 40;

/// Why a history cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Neither file is in the directory.
    #[error("{} holds no {FILE} or {FILE_ZST} (runs made before hookbench wrote histories have none)", dir.display())]
    Missing {
        /// The run's directory.
        dir: PathBuf,
    },
    /// The file could not be opened (or is not a regular file).
    #[error(transparent)]
    Open(#[from] ReadError),
    /// The file could not be read.
    #[error("reading {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a history line.
    #[error("{}, line {line}: {source}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line's number.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A line or the whole file is past its limit.
    #[error("{}: {what}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Which limit, and where.
        what: String,
    },
    /// A line the caller refused (a shard's attempt of an event that is not the shard's).
    #[error("{}, line {line}: {what}", path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// The line's number.
        line: usize,
        /// Why: the caller's own error, boxed so that each caller keeps its own type.
        #[source]
        what: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The history file in `dir`, and whether it is compressed.
pub fn path_in(dir: &Path) -> Result<(PathBuf, bool), HistoryError> {
    // `symlink_metadata`: a link (to /dev/zero, say) is still found here, and refused as not a
    // regular file when opened.
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if exists(&dir.join(FILE_ZST)) {
        Ok((dir.join(FILE_ZST), true))
    } else if exists(&dir.join(FILE)) {
        Ok((dir.join(FILE), false))
    } else {
        Err(HistoryError::Missing { dir: dir.to_path_buf() })
    }
}

/// Calls `each` with every line of the history in `dir`, in the order written.
pub fn read(dir: &Path, each: &mut dyn FnMut(Line)) -> Result<(), HistoryError> {
    read_numbered(dir, &mut |_, line| {
        each(line);
        Ok::<(), Infallible>(())
    })
    .map(|_| ())
}

/// Calls `each` with every line of the history in `dir` and its number (from 1), in the order
/// written, stopping at the first line `each` refuses (its error, of the caller's own type, is
/// kept as [`HistoryError::Refused`]'s source, naming the line); the file read.
pub fn read_numbered<E>(
    dir: &Path,
    each: &mut dyn FnMut(usize, Line) -> Result<(), E>,
) -> Result<PathBuf, HistoryError>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let (path, compressed) = path_in(dir)?;
    let io = |source| HistoryError::Io { path: path.clone(), source };
    let file = files::open_regular(&path)?;
    let reader: Box<dyn Read> =
        if compressed { Box::new(zstd::Decoder::new(file).map_err(io)?) } else { Box::new(file) };
    // One byte past the limit tells a file of exactly the limit from a larger one.
    let mut reader = BufReader::new(reader.take(MAX_HISTORY_BYTES.saturating_add(1)));
    let mut text = Vec::new();
    let mut total: u64 = 0;
    for n in 1.. {
        text.clear();
        let cap = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX).saturating_add(1);
        let read = (&mut reader).take(cap).read_until(b'\n', &mut text).map_err(io)?;
        if read == 0 {
            break;
        }
        total = total.saturating_add(read as u64);
        if total > MAX_HISTORY_BYTES {
            let what = format!("larger than {MAX_HISTORY_BYTES} bytes decompressed, the limit for a history");
            return Err(HistoryError::TooLarge { path, what });
        }
        if text.last() == Some(&b'\n') {
            text.pop();
        } else if text.len() > MAX_LINE_BYTES {
            let what =
                format!("line {n} is longer than {MAX_LINE_BYTES} bytes, the limit for a history's line");
            return Err(HistoryError::TooLarge { path, what });
        }
        let line = serde_json::from_slice(&text).map_err(|source| HistoryError::Line {
            path: path.clone(),
            line: n,
            source,
        })?;
        each(n, line).map_err(|what| HistoryError::Refused {
            path: path.clone(),
            line: n,
            what: what.into(),
        })?;
    }
    Ok(path)
}
