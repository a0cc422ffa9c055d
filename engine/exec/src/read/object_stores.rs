//! Inputs in object stores: a read of an `s3://` (or Hadoop's `s3a://`), `gs://`, `az://`, `abfs://`,
//! `abfss://`, `http://` or `https://` URL registers the store it names with the session — once per bucket or
//! host — and DataFusion reads it through the `object_store` crate. Each store takes its credentials and
//! settings from its own environment variables, as DataFusion's command line and the stores' own tools do:
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL` and `AWS_ALLOW_HTTP` (for
//! an S3-compatible store such as MinIO); `GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_APPLICATION_CREDENTIALS`;
//! `AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, …. A plain `http://` server is read as it
//! is, without credentials.
//!
//! Object store inputs are read on `local[N]` sessions; a fleet's executors read paths they see themselves.

use std::sync::Arc;

use datafusion::datasource::listing::ListingTableUrl;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::SessionContext;
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;

use crate::error::{HearthError, Result};

/// Whether `location` is a URL of a store other than the local file system (`scheme://…`).
pub(super) fn is_remote(location: &str) -> bool {
    match location.split_once("://") {
        Some((scheme, _)) => {
            !scheme.eq_ignore_ascii_case("file")
                && !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Registers with `context` the store `location` (a URL that [`is_remote`]) is in, unless one is registered
/// for its bucket or host already; an error names the URL and what is wrong with it.
pub(super) fn register(context: &SessionContext, location: &str) -> Result<()> {
    let url = ListingTableUrl::parse(location)
        .map_err(|e| HearthError::persistence(location, "not a URL hearth can read").caused_by(e))?;
    let store_url: &ObjectStoreUrl = &url.object_store();
    let runtime = context.runtime_env();
    if runtime.object_store(store_url).is_ok() {
        return Ok(());
    }
    let scheme = url.scheme().to_ascii_lowercase();
    let opening = |e: object_store::Error| {
        HearthError::persistence(
            location,
            format!("opening its {scheme} store (from the environment's settings)"),
        )
        .caused_by(e)
    };
    let store: Arc<dyn ObjectStore> = match scheme.as_str() {
        "s3" | "s3a" => Arc::new(
            AmazonS3Builder::from_env()
                .with_url(location)
                .build()
                .map_err(opening)?,
        ),
        "gs" | "gcs" => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(location)
                .build()
                .map_err(opening)?,
        ),
        "az" | "azure" | "abfs" | "abfss" | "adl" => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_url(location)
                .build()
                .map_err(opening)?,
        ),
        "http" | "https" => {
            let client = object_store::ClientOptions::new().with_allow_http(scheme == "http");
            let http = HttpBuilder::new()
                .with_url(store_url.as_str())
                .with_client_options(client);
            Arc::new(http.build().map_err(opening)?)
        }
        other => {
            return Err(HearthError::persistence(
                location,
                format!(
                    "no object store for {other}:// URLs: hearth reads s3://, s3a://, gs://, az://, abfs://, \
                     abfss://, http:// and https:// (or a local path)"
                ),
            ));
        }
    };
    runtime.register_object_store(store_url.as_ref(), store);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_stores_are_told_from_local_paths() {
        for remote in [
            "s3://bucket/x.csv",
            "S3A://b/dir/",
            "gs://b/x.parquet",
            "https://host/x.csv",
            "abfss://c@a/x",
        ] {
            assert!(is_remote(remote), "{remote}");
        }
        for local in [
            "data/x.csv",
            "/tmp/x.csv",
            "file:///tmp/x.csv",
            "://x",
            "a b://x",
            "C:\\data\\x.csv",
        ] {
            assert!(!is_remote(local), "{local}");
        }
    }

    #[test]
    fn a_store_is_registered_once_per_host_and_an_unknown_scheme_is_named() {
        let context = SessionContext::new();
        register(&context, "http://127.0.0.1:9/data/x.csv").unwrap();
        let url = ObjectStoreUrl::parse("http://127.0.0.1:9").unwrap();
        let first = context.runtime_env().object_store(&url).unwrap();
        register(&context, "http://127.0.0.1:9/other/y.csv").unwrap();
        assert!(Arc::ptr_eq(&first, &context.runtime_env().object_store(&url).unwrap()));
        let error = register(&context, "ftp://host/x.csv").unwrap_err().to_string();
        assert!(error.contains("no object store for ftp://"), "{error}");
    }
}
