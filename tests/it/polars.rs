//! polars interop: a preprocessed frame (vectors included) to polars and back, a frame made in polars fitted by
//! a hearth pipeline, and the awkward cases (no rows, no columns, nulls at an odd offset, a type polars lacks).

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, Float32Type};
use datafusion::prelude::{col, lit};
use hearth::datasets::german_credit;
use hearth::display::polars::polars_core::frame::DataFrame as PolarsFrame;
use hearth::display::polars::polars_core::prelude::{
    ChunkCompareIneq, Column, DataType as PolarsType, IntoColumn, NamedFrom, Series,
};
use hearth::exec::vector::vector_dim;
use hearth::prelude::*;

/// Every row's `features` vector as bits, sorted: the vectors as a multiset, whatever the row order.
async fn vector_bits(df: DataFrame) -> Vec<Vec<u32>> {
    let mut rows = Vec::new();
    for batch in df.collect().await.unwrap() {
        let features = batch.column_by_name("features").unwrap().as_fixed_size_list();
        for row in 0..batch.num_rows() {
            let values = features.value(row);
            rows.push(
                values
                    .as_primitive::<Float32Type>()
                    .values()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect(),
            );
        }
    }
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preprocessed_rows_go_to_polars_and_back_with_their_vectors() {
    let session = Session::builder().with_default_features().local(2);
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let (_, prepared) = german_credit::preprocessing().fit_transform(&credit).await.unwrap();
    let prepared = prepared
        .select_columns(&["purpose", "age", "label", "features"])
        .unwrap();

    let frame = prepared.to_polars().await.unwrap();
    assert_eq!(frame.shape(), (1000, 4));
    assert_eq!(
        frame.column("features").unwrap().dtype(),
        &PolarsType::Array(Box::new(PolarsType::Float32), 61)
    );
    assert_eq!(frame.column("purpose").unwrap().dtype(), &PolarsType::String);

    let back = DataFrame::from_polars(&session, &frame).unwrap();
    let schema = back.schema().as_arrow().clone();
    assert_eq!(schema.field_with_name("purpose").unwrap().data_type(), &DataType::Utf8);
    assert_eq!(
        vector_dim(schema.field_with_name("features").unwrap().data_type()),
        Some(61)
    );
    let (expected, returned) = (vector_bits(prepared.clone()).await, vector_bits(back).await);
    assert_eq!(expected.len(), 1000);
    assert_eq!(expected, returned);

    // Explored in polars (as the german_credit notebook does), a selection handed back.
    let raw = credit.to_polars().await.unwrap();
    let older = raw
        .filter(&raw.column("age").unwrap().as_materialized_series().gt(40).unwrap())
        .unwrap();
    let expected_older = credit
        .clone()
        .filter(col("age").gt(lit(40)))
        .unwrap()
        .count()
        .await
        .unwrap();
    assert_eq!(
        DataFrame::from_polars(&session, &older).unwrap().count().await.unwrap(),
        expected_older
    );

    // No rows: the columns and their types still cross, both ways.
    let none = prepared.limit(0, Some(0)).unwrap().to_polars().await.unwrap();
    assert_eq!(none.shape(), (0, 4));
    assert!(none.column("features").unwrap().dtype().is_array());
    let empty = DataFrame::from_polars(&session, &none).unwrap();
    assert_eq!(
        vector_dim(
            empty
                .schema()
                .as_arrow()
                .field_with_name("features")
                .unwrap()
                .data_type()
        ),
        Some(61)
    );
    assert_eq!(empty.count().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_made_in_polars_is_fitted_by_a_pipeline() {
    let session = Session::builder().with_default_features().local(2);
    let colour = Series::new("colour".into(), &["red", "blue", "red", "green", "red"]);
    let size = Series::new("size".into(), &[1.0f64, 2.0, 3.0, 4.0, 5.0]);
    let frame = PolarsFrame::new(5, vec![colour.into_column(), size.into_column()]).unwrap();
    let df = DataFrame::from_polars(&session, &frame).unwrap();
    let (_, fitted) = Pipeline::new()
        .stage(StringIndexer::new().input_col("colour").output_col("colour_idx"))
        .stage(
            VectorAssembler::new()
                .input_cols(["colour_idx", "size"])
                .output_col("features"),
        )
        .fit_transform(&df)
        .await
        .unwrap();
    let out = fitted.to_polars().await.unwrap();
    assert_eq!(out.shape(), (5, 4));
    // Spark's frequencyDesc: red (3 rows) is 0.
    let indices = out.column("colour_idx").unwrap().f64().unwrap();
    let colours = out.column("colour").unwrap().str().unwrap();
    for row in 0..out.height() {
        let (colour, index) = (colours.get(row).unwrap(), indices.get(row).unwrap());
        assert_eq!(colour == "red", index == 0.0, "{colour} → {index}");
    }
    assert!(out.column("features").unwrap().dtype().is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nulls_dictionaries_no_columns_and_types_polars_lacks() {
    let session = Session::builder().with_default_features().local(1);
    // Nulls in a slice starting at an odd row (x from 4 to 16): the validity bits line up both ways.
    let df = session
        .sql(
            "SELECT CASE WHEN x % 3 = 0 THEN NULL ELSE CAST(x AS DOUBLE) END AS v, \
             arrow_cast(CAST(x % 2 AS VARCHAR), 'Dictionary(Int32, Utf8)') AS d \
             FROM generate_series(1, 20) AS t(x)",
        )
        .await
        .unwrap()
        .limit(3, Some(13))
        .unwrap();
    let frame = df.to_polars().await.unwrap();
    assert_eq!(frame.column("v").unwrap().null_count(), 4); // rows 6, 9, 12, 15
    assert_eq!(frame.column("d").unwrap().dtype(), &PolarsType::String);
    let back = DataFrame::from_polars(&session, &frame).unwrap();
    assert_eq!(
        back.clone().filter(col("v").is_null()).unwrap().count().await.unwrap(),
        4
    );
    assert_eq!(back.filter(col("d").eq(lit("1"))).unwrap().count().await.unwrap(), 6); // 5, 7, …, 15

    // A frame of rows without columns keeps its rows.
    let bare = PolarsFrame::empty_with_height(3);
    assert_eq!(
        DataFrame::from_polars(&session, &bare).unwrap().count().await.unwrap(),
        3
    );

    // A type this build of polars cannot hold: an error naming the column, not a panic.
    let decimal = session
        .sql("SELECT CAST(1.5 AS DECIMAL(10, 2)) AS price")
        .await
        .unwrap();
    let error = decimal.to_polars().await.unwrap_err().to_string();
    assert!(error.contains("\"price\"") && error.contains("Decimal"), "{error}");

    let from_columns = PolarsFrame::new(2, vec![Column::new("x".into(), [1i32, 2])]).unwrap();
    assert_eq!(
        DataFrame::from_polars(&session, &from_columns)
            .unwrap()
            .count()
            .await
            .unwrap(),
        2
    );
}
