//! Which files a session's statements may name. A fleet runs cluster-mode jobs' SQL as its own user, so the
//! scheduler confines each job to its job directory and the fleet's declared data roots (`hearth cluster
//! start --data-roots DIR…`): every plan is checked before it runs — `CREATE EXTERNAL TABLE … LOCATION`,
//! `COPY … TO`, and the files of every table a query scans — and one that names a file elsewhere is refused,
//! naming the file and the roots. A root is a directory (resolved, symbolic links and all) or an object
//! store's URL prefix (`s3://bucket/data/`). A session without roots may name any file.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::prelude::*;
//! use hearth_sql::{DataRoots, SqlSessionExt};
//!
//! let root = tempfile::tempdir().unwrap();
//! let roots = DataRoots::new([root.path().display().to_string()]).unwrap();
//! let session = Session::builder().local(1).with_data_roots(roots);
//! let inside = format!("COPY (SELECT 1 AS x) TO '{}/x.csv' STORED AS CSV", root.path().display());
//! session.sql(&inside).await.unwrap().collect().await.unwrap();
//! let outside = session.sql("COPY (SELECT 1 AS x) TO '/etc/hearth-x.csv' STORED AS CSV").await;
//! assert!(outside.unwrap_err().to_string().contains("outside the data roots"));
//! # });
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, TableSource};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::read::file_urls;
use url::Url;

/// The directories and URL prefixes a session's statements may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataRoots {
    dirs: Vec<PathBuf>,
    urls: Vec<Url>,
    /// Directories refused even under a root, unless a root inside them holds the file.
    denied: Vec<PathBuf>,
}

impl DataRoots {
    /// Roots from directories (which must exist) and URL prefixes (`scheme://…`).
    pub fn new(roots: impl IntoIterator<Item = impl AsRef<str>>) -> Result<Self> {
        let (mut dirs, mut urls) = (Vec::new(), Vec::new());
        for root in roots {
            let root = root.as_ref();
            let invalid =
                |why: String| HearthError::invalid_param("data roots", "--data-roots", format!("{root}: {why}"));
            match Url::parse(root) {
                Ok(url) if url.scheme() != "file" => urls.push(url),
                parsed => {
                    let dir = match parsed {
                        Ok(url) => url.to_file_path().map_err(|()| invalid("not a local path".into()))?,
                        Err(_) => PathBuf::from(root),
                    };
                    let unreadable = |e| HearthError::invalid_param("data roots", "--data-roots", root).caused_by(e);
                    dirs.push(std::fs::canonicalize(&dir).map_err(unreadable)?);
                }
            }
        }
        Ok(Self {
            dirs,
            urls,
            denied: Vec::new(),
        })
    }

    /// These roots, refusing the files under `dirs` (those that exist) unless a root inside one of them holds
    /// them: a fleet refuses its state directory — the secret, other jobs' folders — while a job's own folder
    /// in it stays a root.
    pub fn denying(self, dirs: impl IntoIterator<Item = impl AsRef<Path>>) -> Self {
        let denied = (dirs.into_iter())
            .filter_map(|dir| std::fs::canonicalize(dir.as_ref()).ok())
            .collect();
        Self { denied, ..self }
    }

    /// The directories refused under the roots (see [`DataRoots::denying`]).
    pub fn denied(&self) -> &[PathBuf] {
        &self.denied
    }

    /// The roots as given to `hearth sql --data-roots`.
    pub fn to_args(&self) -> Vec<String> {
        let dirs = self.dirs.iter().map(|dir| dir.display().to_string());
        dirs.chain(self.urls.iter().map(ToString::to_string)).collect()
    }

    /// An error unless `location` — a path (relative to the working directory) or a URL, read as DataFusion
    /// reads it (`file:` URLs decoded, dot segments resolved) — lies under a root; `what` says what names it
    /// (`COPY TO`, `the model catalog`).
    pub fn check(&self, location: &str, what: &str) -> Result<()> {
        let inside = match ListingTableUrl::parse(location) {
            Ok(url) => self.holds(url.get_url()),
            Err(_) => false,
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

    /// Whether `url` lies under a root: a local file under a directory, else under a URL prefix of the same
    /// scheme and host, segment by segment.
    fn holds(&self, url: &Url) -> bool {
        if url.scheme() == "file" {
            let Ok(path) = url.to_file_path() else {
                return false;
            };
            let resolved = resolved(&path);
            return self.dirs.iter().any(|dir| {
                resolved.starts_with(dir)
                    && (self.denied.iter()).all(|denied| !resolved.starts_with(denied) || dir.starts_with(denied))
            });
        }
        let segments = |url: &Url| -> Vec<String> {
            url.path_segments()
                .map(|segments| segments.filter(|s| !s.is_empty()).map(str::to_string).collect())
                .unwrap_or_default()
        };
        let inside = segments(url);
        self.urls.iter().any(|root| {
            let prefix = segments(root);
            root.scheme() == url.scheme()
                && root.host_str() == url.host_str()
                && root.port() == url.port()
                && inside.starts_with(&prefix)
        })
    }

    /// An error unless every file `plan` would read or write — its subqueries' included — lies under a root.
    pub fn check_plan(&self, plan: &LogicalPlan) -> Result<()> {
        let mut refused = Ok(());
        plan.apply_with_subqueries(|node| {
            let checked = match node {
                LogicalPlan::Ddl(DdlStatement::CreateExternalTable(create)) => {
                    (create.locations.iter()).try_for_each(|location| self.check(location, "CREATE EXTERNAL TABLE"))
                }
                LogicalPlan::Copy(copy) => self.check(&copy.output_url, "COPY TO"),
                LogicalPlan::TableScan(scan) => self.check_table(&scan.source, scan.table_name.table()),
                LogicalPlan::Dml(dml) => self.check_table(&dml.target, dml.table_name.table()),
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

    /// An error unless the files of `table` (`source`), when it reads files, lie under a root.
    fn check_table(&self, source: &Arc<dyn TableSource>, table: &str) -> Result<()> {
        let Ok(provider) = source_as_provider(source) else {
            return Ok(());
        };
        let what = format!("table {table}");
        (file_urls(provider.as_ref()).unwrap_or_default().iter()).try_for_each(|url| self.check(url, &what))
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
        assert!(
            roots.check("s3://bucket/data/../other/x", "COPY TO").is_err(),
            "dot segments resolved"
        );
        assert!(roots.check("s3://other/data/x", "COPY TO").is_err(), "another bucket");
        // URLs as DataFusion reads them: a host of localhost, no slashes, percent-encoded dot segments.
        for outside in ["file://localhost/etc/passwd", "file:/etc/passwd", "file:///etc/passwd"] {
            assert!(roots.check(outside, "table t").is_err(), "{outside}");
        }
        let encoded = format!("file://{}/%2e%2e/%2e%2e/x.csv", root.path().display());
        assert!(roots.check(&encoded, "COPY TO").is_err(), "{encoded}");
        let in_root = format!("file://{}/x.csv", root.path().display());
        assert!(roots.check(&in_root, "COPY TO").is_ok(), "{in_root}");

        // A denied directory under a root stays refused, but for a root inside it.
        std::fs::create_dir_all(root.path().join("state/jobs/own")).unwrap();
        let own = root.path().join("state/jobs/own").display().to_string();
        let roots = DataRoots::new([root.path().display().to_string(), own.clone()])
            .unwrap()
            .denying([root.path().join("state")]);
        assert!(
            roots
                .check(&root.path().join("state/secret").display().to_string(), "t")
                .is_err()
        );
        assert!(
            roots
                .check(&root.path().join("state/jobs/other/x").display().to_string(), "t")
                .is_err()
        );
        assert!(roots.check(&format!("{own}/out.csv"), "COPY TO").is_ok());
        assert!(
            roots
                .check(&root.path().join("data.csv").display().to_string(), "t")
                .is_ok()
        );
        let link = root.path().join("link");
        std::os::unix::fs::symlink("/etc", &link).unwrap();
        assert!(
            roots
                .check(&link.join("passwd").display().to_string(), "table t")
                .is_err(),
            "a link out"
        );
    }

    #[tokio::test]
    async fn a_table_read_in_a_subquery_is_checked_too() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let file = outside.path().join("t.csv");
        std::fs::write(&file, "x\n1\n").unwrap();
        let ctx = datafusion::prelude::SessionContext::new();
        let options = datafusion::prelude::CsvReadOptions::new();
        ctx.register_csv("t", file.to_str().unwrap(), options).await.unwrap();
        let roots = DataRoots::new([root.path().display().to_string()]).unwrap();
        for sql in [
            "SELECT x FROM t",
            "SELECT (SELECT max(x) FROM t) AS m",
            "SELECT 1 WHERE EXISTS (SELECT x FROM t)",
        ] {
            let plan = ctx.state().create_logical_plan(sql).await.unwrap();
            let refused = roots.check_plan(&plan).unwrap_err().to_string();
            assert!(
                refused.contains("table t") && refused.contains("outside the data roots"),
                "{sql}: {refused}"
            );
        }
        let plan = ctx.state().create_logical_plan("SELECT 1 AS one").await.unwrap();
        assert!(roots.check_plan(&plan).is_ok());
    }
}
