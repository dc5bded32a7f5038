//! history.jsonl: every attempt of a run as it happens, then the judge's verdict event by event
//! and account by account, and the plan changes the database recorded, so that a verdict can be
//! explained (`hookbench explain`) without judging again.
//!
//! The sender hands each attempt's line to a [`Tap`]; a writer thread serialises the lines into
//! `history.jsonl` in the run's directory, or `history.jsonl.zst` (zstd) when asked or when the run
//! would write more than [`COMPRESS_PAST_ATTEMPTS`] attempts. The channel between them is bounded
//! ([`BACKLOG`] lines), so a run of any size holds at most that many lines in memory: if the disk
//! falls behind, the sender waits for it.

pub mod line;
mod read;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

pub use line::{AccountLine, AttemptLine, ChangeLine, EventLine, Fate, Line, Outcome, VerdictLine};
pub use read::{HistoryError, MAX_HISTORY_BYTES, MAX_LINE_BYTES, path_in, read, read_numbered};

/// Lines waiting for the writer at most.
pub const BACKLOG: usize = 65_536;
/// Past this many planned attempts (all cells together), the history is compressed by default:
/// about 20 MB of JSON lines with the events' lines (a default bench, 14 cells of 10,000 events,
/// is past it).
pub const COMPRESS_PAST_ATTEMPTS: u64 = 50_000;
/// The file name, uncompressed.
pub const FILE: &str = "history.jsonl";
/// The file name, compressed.
pub const FILE_ZST: &str = "history.jsonl.zst";

/// A run's history being written.
pub struct History {
    tx: SyncSender<Line>,
    writer: JoinHandle<io::Result<u64>>,
    path: PathBuf,
}

/// Where a cell's lines go; cheap to clone.
#[derive(Debug, Clone)]
pub struct Tap {
    tx: SyncSender<Line>,
    cell: String,
}

impl Tap {
    /// The cell's name in every line.
    pub fn cell(&self) -> &str {
        &self.cell
    }

    /// A tap into the same history for another cell.
    pub fn with_cell(&self, cell: String) -> Tap {
        Tap { tx: self.tx.clone(), cell }
    }

    /// Hands a line to the writer (waiting while it is [`BACKLOG`] lines behind). A writer that
    /// failed drops the line; [`History::finish`] reports its error.
    pub fn send(&self, line: Line) {
        let _ = self.tx.send(line);
    }
}

fn write_lines(rx: &Receiver<Line>, out: &mut dyn Write) -> io::Result<u64> {
    let mut n = 0;
    for line in rx {
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    out.flush()?;
    Ok(n)
}

impl History {
    /// Starts writing the history of a run into `dir`, compressed or not; never through a
    /// symlink planted where the file goes (the error names the file).
    pub fn create(dir: &Path, compress: bool) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(if compress { FILE_ZST } else { FILE });
        // An earlier run's history in the other form would be read as this run's (the readers
        // take whichever is there): it goes, as the file of this form is overwritten.
        match std::fs::remove_file(dir.join(if compress { FILE } else { FILE_ZST })) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let file = BufWriter::with_capacity(1 << 20, crate::files::create_nofollow(&path)?);
        let (tx, rx) = sync_channel(BACKLOG);
        let writer = std::thread::Builder::new().name("history".into()).spawn(move || {
            if compress {
                let mut z = zstd::Encoder::new(file, 3)?;
                let n = write_lines(&rx, &mut z)?;
                z.finish()?.flush()?;
                Ok(n)
            } else {
                let mut file = file;
                write_lines(&rx, &mut file)
            }
        })?;
        Ok(Self { tx, writer, path })
    }

    /// A tap for the cell `backend/design`.
    pub fn tap(&self, cell: String) -> Tap {
        Tap { tx: self.tx.clone(), cell }
    }

    /// Waits for every line to be written; the file and its line count.
    pub fn finish(self) -> io::Result<(PathBuf, u64)> {
        drop(self.tx);
        let lines = self.writer.join().map_err(|_| io::Error::other("the history writer panicked"))??;
        Ok((self.path, lines))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u32) -> Line {
        Line::Event(EventLine {
            cell: "sqlite/atomic".into(),
            event: format!("evt_{n:06}"),
            kind: "credit".into(),
            account: i64::from(n % 7),
            applied: Some(1),
            version: None,
            created: None,
            final_version: None,
            latest_version: None,
            poisoned: false,
            anomalies: Vec::new(),
        })
    }

    #[test]
    fn lines_come_back_as_written_compressed_or_not() {
        for compress in [false, true] {
            let dir = tempfile::tempdir().expect("tempdir");
            let history = History::create(dir.path(), compress).expect("create");
            let tap = history.tap("sqlite/atomic".into());
            for n in 0..1000 {
                tap.send(event(n));
            }
            drop(tap);
            let (path, lines) = history.finish().expect("finish");
            assert_eq!((lines, path.ends_with(FILE_ZST)), (1000, compress));
            let mut back = Vec::new();
            read(dir.path(), &mut |l| back.push(l)).expect("read");
            assert_eq!(back.len(), 1000);
            assert_eq!(back[999], event(999));
        }
        let long = tempfile::tempdir().expect("tempdir");
        let text = format!("{}\n", "x".repeat(MAX_LINE_BYTES + 1));
        std::fs::write(long.path().join(FILE), text).expect("write");
        let e = read(long.path(), &mut |_| {}).expect_err("too long").to_string();
        assert!(e.ends_with("line 1 is longer than 1048576 bytes, the limit for a history's line"), "{e}");
        let empty = tempfile::tempdir().expect("tempdir");
        let e = read(empty.path(), &mut |_| {}).expect_err("no history").to_string();
        assert!(e.contains("holds no history.jsonl"), "{e}");
    }

    /// A run written into a directory that holds an earlier run's history in the other form is
    /// read back as itself: the earlier file is gone (it was read in its place, and a truncated
    /// one failed the report's witnesses).
    #[test]
    fn an_earlier_history_in_the_other_form_is_not_read_as_this_one() {
        for compress in [false, true] {
            let dir = tempfile::tempdir().expect("tempdir");
            let other = dir.path().join(if compress { FILE } else { FILE_ZST });
            std::fs::write(&other, b"an earlier run's history, cut short").expect("write");
            let history = History::create(dir.path(), compress).expect("create");
            let tap = history.tap("sqlite/atomic".into());
            tap.send(event(1));
            drop(tap);
            history.finish().expect("finish");
            assert!(!other.exists(), "compress {compress}: the earlier file is still there");
            let mut back = Vec::new();
            read(dir.path(), &mut |l| back.push(l)).expect("read");
            assert_eq!(back, [event(1)], "compress {compress}");
        }
    }
}
