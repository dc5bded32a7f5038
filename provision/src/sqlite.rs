//! SQLite: a new file per run.

use std::path::{Path, PathBuf};

use super::{ProvisionError, unique_name};

/// A fresh SQLite database file, removed when dropped unless kept.
#[derive(Debug)]
pub struct SqliteFile {
    path: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl SqliteFile {
    /// A new file in a temporary directory (removed with it), or in `dir` (kept) when given.
    pub fn create(dir: Option<&Path>) -> Result<Self, ProvisionError> {
        match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                Ok(Self { path: dir.join(format!("{}.db", unique_name())), _dir: None })
            }
            None => {
                let tmp = tempfile::Builder::new().prefix("hookbench-sqlite-").tempdir()?;
                Ok(Self { path: tmp.path().join("hookbench.db"), _dir: Some(tmp) })
            }
        }
    }

    /// The file's path (the file itself appears when a receiver first connects).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `sqlite:///path` URL receivers connect with.
    pub fn url(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}
