//! Reading a run's history back, compressed or not, one line at a time.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::{FILE, FILE_ZST, Line};

/// Why a history cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Neither file is in the directory.
    #[error("{dir} holds no {FILE} or {FILE_ZST} (runs made before hookbench wrote histories have none)")]
    Missing {
        /// The run's directory.
        dir: PathBuf,
    },
    /// The file could not be read.
    #[error("reading {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a history line.
    #[error("{path}, line {line}: {source}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The line's number.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
}

/// Calls `each` with every line of the history in `dir`, in the order written.
pub fn read(dir: &Path, each: &mut dyn FnMut(Line)) -> Result<(), HistoryError> {
    let (path, compressed) = if dir.join(FILE_ZST).exists() {
        (dir.join(FILE_ZST), true)
    } else if dir.join(FILE).exists() {
        (dir.join(FILE), false)
    } else {
        return Err(HistoryError::Missing { dir: dir.to_path_buf() });
    };
    let io = |source| HistoryError::Io { path: path.clone(), source };
    let file = File::open(&path).map_err(io)?;
    let reader: Box<dyn BufRead> = if compressed {
        Box::new(BufReader::new(zstd::Decoder::new(file).map_err(io)?))
    } else {
        Box::new(BufReader::new(file))
    };
    for (n, text) in reader.lines().enumerate() {
        let text = text.map_err(io)?;
        let line = serde_json::from_str(&text).map_err(|source| HistoryError::Line {
            path: path.clone(),
            line: n + 1,
            source,
        })?;
        each(line);
    }
    Ok(())
}
