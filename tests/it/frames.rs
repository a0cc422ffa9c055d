//! Sessions, reading files, and Spark's data frame operations.

use datafusion::arrow::array::Int64Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::functions_nested::expr_fn::make_array;
use datafusion::logical_expr::ident;
use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
use datafusion::prelude::{col, lit};
use hearth::exec::read::schema_of;
use hearth::prelude::*;

use crate::common::*;

#[test]
fn masters_parse_as_spark_writes_them() {
    assert_eq!("local[3]".parse::<Master>().unwrap(), Master::Local { partitions: 3 });
    assert!(matches!("local".parse::<Master>().unwrap(), Master::Local { partitions } if partitions >= 1));
    assert!(matches!("local[*]".parse::<Master>().unwrap(), Master::Local { .. }));
    assert_eq!(
        Session::builder()
            .with_default_features()
            .build("local[3]")
            .unwrap()
            .partitions(),
        3
    );
    assert_eq!(
        Session::builder().with_default_features().local(2).master().to_string(),
        "local[2]"
    );
}

#[tokio::test]
async fn csv_options_header_schema_nulls_and_gzip() {
    let session = Session::builder().with_default_features().local(2);
    let digits = session
        .read_csv(
            dataset("sklearn_digits/digits.csv.gz"),
            &CsvOptions::new().header(false),
        )
        .await
        .unwrap();
    assert_eq!(digits.schema().fields().len(), 65);
    assert_eq!(digits.clone().count().await.unwrap(), 1797);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("people.csv");
    std::fs::write(&path, "name;age\nann;34\nbob;?\n;NaN\n").unwrap();
    let options = CsvOptions::new()
        .delimiter(b';')
        .null_value("?")
        .schema(schema_of(&[("name", DataType::Utf8), ("age", DataType::Float64)]));
    let people = session.read_csv(&path, &options).await.unwrap();
    let ages = doubles(&people, "age").await;
    assert_eq!(ages[0], Some(34.0));
    assert_eq!(ages[1], None);
    assert!(ages[2].unwrap().is_nan());

    let strings = session
        .read_csv(&path, &CsvOptions::new().delimiter(b';').infer_schema(false))
        .await
        .unwrap();
    assert_eq!(
        strings.schema().field_with_unqualified_name("age").unwrap().data_type(),
        &DataType::Utf8
    );
}

#[tokio::test]
async fn parquet_round_trip() {
    let session = Session::builder().with_default_features().local(2);
    let credit = session
        .read_csv(dataset("german_credit/credit-g.csv"), &CsvOptions::new())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credit.parquet");
    credit
        .write_parquet(path.to_str().unwrap(), Default::default(), None)
        .await
        .unwrap();
    let back = session.read_parquet(&path).await.unwrap();
    assert_eq!(back.count().await.unwrap(), 1000);
}

#[tokio::test]
async fn random_split_is_deterministic_for_a_seed_under_any_partitioning() {
    let query = "SELECT x, x % 7 AS y FROM generate_series(1, 10000) AS t(x)";
    let mut sizes = Vec::new();
    for partitions in [1, 4] {
        let session = Session::builder().with_default_features().local(partitions);
        let df = session.sql(query).await.unwrap();
        let parts = df.random_split(&[3.0, 1.0], 7).unwrap();
        let train = doubles(&parts[0].clone().sort(vec![col("x").sort(true, true)]).unwrap(), "x").await;
        let test = parts[1].clone().count().await.unwrap();
        assert_eq!(train.len() + test, 10000);
        assert!((7200..7800).contains(&train.len()), "{}", train.len());
        sizes.push(train);
    }
    assert_eq!(
        sizes[0], sizes[1],
        "the same rows go to training under local[1] and local[4]"
    );

    let session = Session::builder().with_default_features().local(2);
    let df = session.sql(query).await.unwrap();
    let other_seed = df.random_split(&[3.0, 1.0], 8).unwrap()[0]
        .clone()
        .count()
        .await
        .unwrap();
    assert_ne!(other_seed, sizes[0].len());
    assert!(df.random_split(&[1.0, -1.0], 1).is_err());
    assert!(df.random_split(&[], 1).is_err());
}

/// The first rows of an in-memory table, as a limit on each master returns them.
async fn first_rows(session: &Session) -> Vec<i64> {
    session
        .sql("CREATE TABLE t AS VALUES (1), (2), (3), (4)")
        .await
        .unwrap();
    let mut seen = Vec::new();
    for query in ["SELECT * FROM t LIMIT 2", "SELECT column1 * 10 FROM t LIMIT 1"] {
        let batches = session.sql(query).await.unwrap().collect().await.unwrap();
        for batch in batches {
            let column = batch.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            seen.extend(column.values().iter().copied());
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_takes_an_in_memory_tables_first_rows_on_every_master() {
    assert_eq!(
        first_rows(&Session::builder().with_default_features().local(2)).await,
        [1, 2, 10]
    );
    let standalone = Session::builder()
        .with_default_features()
        .connect("standalone[2]")
        .await
        .unwrap();
    assert_eq!(first_rows(&standalone).await, [1, 2, 10], "on Ballista");
}

#[tokio::test]
async fn repartition_rows_gives_exactly_n_even_partitions() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT x FROM generate_series(1, 3000) AS t(x)")
        .await
        .unwrap();
    let spread = df.repartition_rows(3).unwrap();
    let plan = spread.clone().create_physical_plan().await.unwrap();
    let partitions = datafusion::physical_plan::collect_partitioned(plan, session.context().task_ctx())
        .await
        .unwrap();
    assert_eq!(partitions.len(), 3);
    for part in &partitions {
        let rows: usize = part.iter().map(datafusion::arrow::array::RecordBatch::num_rows).sum();
        assert!((800..1200).contains(&rows), "{rows}");
    }
    let total = spread.filter(ident("x").gt(lit(0))).unwrap().count().await.unwrap();
    assert_eq!(total, 3000);
}

#[tokio::test]
async fn parquet_is_written_a_part_file_per_partition_with_the_codec_asked() {
    use hearth::exec::write::{FrameWriter, OutputFormat};
    let session = Session::builder().with_default_features().local(3);
    let df = session
        .sql("SELECT x, CAST(x AS DOUBLE) / 7 AS y FROM generate_series(1, 3000) AS t(x)")
        .await
        .unwrap()
        .repartition_rows(3)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let parts = |path: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        names.sort();
        names
    };
    let snappy = dir.path().join("snappy");
    let written = FrameWriter::new(OutputFormat::Parquet)
        .save(df.clone(), &snappy)
        .await
        .unwrap();
    assert_eq!(written.rows, 3000);
    let names = parts(&snappy);
    assert_eq!(names.len(), 3, "{names:?}");
    for (part, name) in names.iter().enumerate() {
        assert!(
            name.starts_with(&format!("part-{part:05}-")) && name.ends_with(".snappy.parquet"),
            "{name}"
        );
    }
    let back = session.read_parquet(&snappy).await.unwrap();
    assert_eq!(back.count().await.unwrap(), 3000);

    // Numbers carry their minimum and maximum; the elements of a list (a vector) do not.
    let listed = dir.path().join("listed");
    let with_list = df
        .clone()
        .with_column("v", make_array(vec![col("y"), col("y")]))
        .unwrap();
    FrameWriter::new(OutputFormat::Parquet)
        .save(with_list, &listed)
        .await
        .unwrap();
    let first = std::fs::File::open(listed.join(&parts(&listed)[0])).unwrap();
    let footer = SerializedFileReader::new(first).unwrap();
    let chunks = footer.metadata().row_group(0).columns();
    let stated: Vec<(String, bool)> = chunks
        .iter()
        .map(|c| {
            (
                c.column_path().string(),
                c.statistics().is_some_and(|s| s.min_bytes_opt().is_some()),
            )
        })
        .collect();
    assert_eq!(
        stated,
        [("x".into(), true), ("y".into(), true), ("v.list.item".into(), false)],
        "{stated:?}"
    );

    let zstd = dir.path().join("zstd");
    FrameWriter::new(OutputFormat::Parquet)
        .compression("ZSTD(3)")
        .save(df.clone(), &zstd)
        .await
        .unwrap();
    assert!(parts(&zstd).iter().all(|n| n.ends_with(".zstd.parquet")));
    assert_eq!(session.read_parquet(&zstd).await.unwrap().count().await.unwrap(), 3000);

    // DataFusion's writers' files (CSV and JSON here, Parquet on a fleet) get Spark's names too.
    for format in [OutputFormat::Csv, OutputFormat::Json] {
        let out = dir.path().join(format.extension());
        FrameWriter::new(format).save(df.clone(), &out).await.unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n != "_SUCCESS")
            .collect();
        names.sort();
        assert!(!names.is_empty(), "{names:?}");
        for (part, name) in names.iter().enumerate() {
            let suffix = format!(".{}", format.extension());
            assert!(
                name.starts_with(&format!("part-{part:05}-")) && name.ends_with(&suffix),
                "{name}"
            );
        }
    }

    let refused = dir.path().join("refused");
    let error = FrameWriter::new(OutputFormat::Parquet)
        .compression("lzma")
        .save(df.clone(), &refused)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("lzma"), "{error}");
    assert!(!refused.exists(), "a failed write leaves nothing");

    // A frame with no rows still leaves one file, with the schema.
    let empty = dir.path().join("empty");
    let none = df.filter(col("x").lt(lit(0))).unwrap();
    assert_eq!(
        FrameWriter::new(OutputFormat::Parquet)
            .save(none, &empty)
            .await
            .unwrap()
            .rows,
        0
    );
    assert_eq!(parts(&empty).len(), 1);
    let back = session.read_parquet(&empty).await.unwrap();
    assert_eq!(back.schema().fields().len(), 2);
    assert_eq!(back.count().await.unwrap(), 0);
}

#[tokio::test]
async fn rows_appended_through_a_link_go_into_the_directory_it_names_all_at_once() {
    use hearth::exec::write::{FrameWriter, OutputFormat, SaveMode};
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT x FROM generate_series(1, 1000) AS t(x)")
        .await
        .unwrap()
        .repartition_rows(2)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    FrameWriter::new(OutputFormat::Parquet)
        .save(df.clone(), &data)
        .await
        .unwrap();
    let link = dir.path().join("latest");
    std::os::unix::fs::symlink(&data, &link).unwrap();
    let appended = FrameWriter::new(OutputFormat::Parquet)
        .mode(SaveMode::Append)
        .save(df, &link)
        .await
        .unwrap();
    assert_eq!(appended.files.len(), 2);
    assert!(
        std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
        "the link stays a link"
    );
    assert_eq!(session.read_parquet(&data).await.unwrap().count().await.unwrap(), 2000);
    let beside: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside.len(), 2, "nothing left beside them: {beside:?}");
}

#[tokio::test]
async fn a_read_after_an_append_sees_the_new_files_as_spark_lists_them_again() {
    use hearth::exec::write::{FrameWriter, OutputFormat, SaveMode};
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT x FROM generate_series(1, 10) AS t(x)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    FrameWriter::new(OutputFormat::Parquet)
        .save(df.clone(), &data)
        .await
        .unwrap();
    assert_eq!(session.read_parquet(&data).await.unwrap().count().await.unwrap(), 10);
    FrameWriter::new(OutputFormat::Parquet)
        .mode(SaveMode::Append)
        .save(df, &data)
        .await
        .unwrap();
    assert_eq!(
        session.read_parquet(&data).await.unwrap().count().await.unwrap(),
        20,
        "the directory is listed again, not taken from the first read's listing"
    );
}
