//! Which files a session's statements may name. A fleet runs cluster-mode jobs' SQL as its own user, so the
//! scheduler confines each job to its job directory and the fleet's declared data roots (`hearth cluster
//! start --data-roots DIR…`): every plan is checked before it runs — `CREATE EXTERNAL TABLE … LOCATION`,
//! `COPY … TO`, and the files of every table a query scans — and one that names a file elsewhere is refused,
//! naming the file and the roots. A root is a directory (resolved, symbolic links and all) or an object
//! store's URL prefix (`s3://bucket/data/`). A session without roots may name any file.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_engine::prelude::*;
//! use hearth_sql::{DataRoots, SqlSessionExt};
//!
//! let root = tempfile::tempdir().unwrap();
//! let roots = DataRoots::new([root.path().display().to_string()]).unwrap();
//! let session = Session::local(1).with_data_roots(roots);
//! let inside = format!("COPY (SELECT 1 AS x) TO '{}/x.csv' STORED AS CSV", root.path().display());
//! session.sql(&inside).await.unwrap().collect().await.unwrap();
//! let outside = session.sql("COPY (SELECT 1 AS x) TO '/etc/hearth-x.csv' STORED AS CSV").await;
//! assert!(outside.unwrap_err().to_string().contains("outside the data roots"));
//! # });
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::listing::ListingTable;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use hearth_engine::error::{HearthError, Result};

/// The directories and URL prefixes a session's statements may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataRoots {
    dirs: Vec<PathBuf>,
    urls: Vec<String>,
}

impl DataRoots {
    /// Roots from directories (which must exist) and URL prefixes (`scheme://…`).
    pub fn new(roots: impl IntoIterator<Item = impl AsRef<str>>) -> Result<Self> {
        let (mut dirs, mut urls) = (Vec::new(), Vec::new());
        for root in roots {
            let root = root.as_ref();
            if root.contains("://") && !root.starts_with("file://") {
                urls.push(format!("{}/", root.trim_end_matches('/')));
                continue;
            }
            let dir = Path::new(root.trim_start_matches("file://"));
            let resolved = std::fs::canonicalize(dir)
                .map_err(|e| HearthError::invalid_param("data roots", "--data-roots", root.to_string()).caused_by(e))?;
            dirs.push(resolved);
        }
        Ok(Self { dirs, urls })
    }

    /// The roots as given to `hearth sql --data-roots`.
    pub fn to_args(&self) -> Vec<String> {
        let dirs = self.dirs.iter().map(|dir| dir.display().to_string());
        dirs.chain(self.urls.iter().cloned()).collect()
    }

    /// An error unless `location` — a path (relative to the working directory) or a URL — lies under a root;
    /// `what` says what names it (`COPY TO`, `the model catalog`).
    pub fn check(&self, location: &str, what: &str) -> Result<()> {
        let inside = match location.split_once("://") {
            Some(("file", path)) => self.holds_path(Path::new(path)),
            Some(_) => self.urls.iter().any(|url| location.starts_with(url.as_str())),
            None => self.holds_path(Path::new(location)),
        };
        match inside {
            true => Ok(()),
            false => Err(HearthError::invalid_param(
                what.to_string(),
                "data roots",
                format!(
                    "{location} is outside the data roots this session may use ({}); a fleet declares them with \
                     `hearth cluster start --data-roots DIR…`",
                    self.to_args().join(", ")
                ),
            )),
        }
    }

    fn holds_path(&self, path: &Path) -> bool {
        let resolved = resolved(path);
        self.dirs.iter().any(|dir| resolved.starts_with(dir))
    }

    /// An error unless every file `plan` would read or write lies under a root.
    pub fn check_plan(&self, plan: &LogicalPlan) -> Result<()> {
        let mut refused = Ok(());
        plan.apply(|node| {
            let checked = match node {
                LogicalPlan::Ddl(DdlStatement::CreateExternalTable(create)) => {
                    (create.locations.iter()).try_for_each(|location| self.check(location, "CREATE EXTERNAL TABLE"))
                }
                LogicalPlan::Copy(copy) => self.check(&copy.output_url, "COPY TO"),
                LogicalPlan::TableScan(scan) => self.check_scan(&scan.source, scan.table_name.table()),
                _ => Ok(()),
            };
            Ok(match checked {
                Ok(()) => TreeNodeRecursion::Continue,
                Err(e) => {
                    refused = Err(e);
                    TreeNodeRecursion::Stop
                }
            })
        })?;
        refused
    }

    fn check_scan(&self, source: &Arc<dyn datafusion::logical_expr::TableSource>, table: &str) -> Result<()> {
        let Ok(provider) = source_as_provider(source) else {
            return Ok(());
        };
        let Some(listing) = provider.downcast_ref::<ListingTable>() else {
            return Ok(());
        };
        let what = format!("table {table}");
        (listing.table_paths().iter()).try_for_each(|url| self.check(url.as_str(), &what))
    }
}

/// `path` made absolute and resolved: symbolic links of its longest existing part followed, `.` and `..`
/// of the rest taken lexically.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut lexical = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return lexical,
        }
    }
    let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    resolved.extend(rest.iter().rev());
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls_are_held_only_under_their_roots() {
        let root = tempfile::tempdir().unwrap();
        let roots = DataRoots::new([root.path().display().to_string(), "s3://bucket/data".to_string()]).unwrap();
        let inside = root.path().join("new/dir/x.parquet");
        assert!(
            roots.check(&inside.display().to_string(), "COPY TO").is_ok(),
            "a file not yet written"
        );
        let escape = root.path().join("../elsewhere.csv");
        assert!(
            roots.check(&escape.display().to_string(), "COPY TO").is_err(),
            "`..` out of the root"
        );
        assert!(roots.check("s3://bucket/data/x.parquet", "COPY TO").is_ok());
        assert!(
            roots.check("s3://bucket/database/x.parquet", "COPY TO").is_err(),
            "a prefix ends at a /"
        );
        assert!(roots.check("/etc/passwd", "table t").is_err());
        let link = root.path().join("link");
        std::os::unix::fs::symlink("/etc", &link).unwrap();
        assert!(
            roots
                .check(&link.join("passwd").display().to_string(), "table t")
                .is_err(),
            "a link out"
        );
    }
}
