//! The guide's reference pages are written from the code: a page that differs from what the code writes
//! fails here, naming it. `HEARTH_BLESS_DOCS=1` rewrites the pages instead.

use std::path::Path;

/// Compares the page at `relative` (from the project's root) with `written`, or rewrites it when blessing.
fn check_page(relative: &str, written: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("HEARTH_BLESS_DOCS").is_some() {
        std::fs::write(&path, written).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == written,
        "{relative} is stale: the code now writes it otherwise (run `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` \
         and commit the page)\n--- written by the code ---\n{written}"
    );
}

#[test]
fn the_create_model_options_page_is_written_from_the_options_table() {
    check_page(
        "docs/src/reference/create-model-options.md",
        &hearth::sql::create_model_options_reference(),
    );
}
