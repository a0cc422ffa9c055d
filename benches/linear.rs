//! Benchmark: Spark's `LogisticRegression` (L-BFGS, no penalty) and `LinearRegression` (the normal equation)
//! fitted by hearth on `local[2]` (two ranks of the barrier stage), against PySpark 4 ML on `local[2]` and
//! scikit-learn, on the same generated Higgs-schema rows read from one Parquet file: fit time (from the file,
//! best of 3), iterations, and how far each tool's coefficients are from Spark's.
//!
//! ```text
//! ./dev bench --bench linear        # 1,000,000 rows; HEARTH_LINEAR_ROWS=… for another size,
//!                                   # HEARTH_BENCH_PYSPARK=0 to skip PySpark and scikit-learn
//! ```
//!
//! The features are the 18 numbers every event defines (see [`linear_features::LEFT_OUT`]) but `DER_mass_vis`; the logistic label
//! is `Label` (`s` = 1), the linear one `DER_mass_vis`. pyspark and scikit-learn are installed into the libtorch environment the first time.

use std::path::Path;
use std::time::Instant;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{cast, ident, lit, when};
use hearth::prelude::*;
use prettytable::{Table, row};
use serde_json::Value;

#[path = "common/linear_features.rs"]
mod linear_features;
#[path = "common/python.rs"]
mod python;

use linear_features::{TARGET, feature_columns, generated_csv, write_one_parquet};

const RUNS: usize = 3;
const PARTITIONS: usize = 2;
/// The packages the reference fits need, installed when missing.
const PACKAGES: [(&str, &str); 2] = [("pyspark", "pyspark==4.0.5"), ("sklearn", "scikit-learn")];

/// One tool's fit of one model.
struct Fit {
    seconds: f64,
    iterations: Option<u64>,
    coefficients: Vec<f64>,
    intercept: f64,
}

impl Fit {
    fn of(report: &Value) -> Option<Self> {
        Some(Self {
            seconds: report["seconds"].as_f64()?,
            iterations: report["iterations"].as_u64(),
            coefficients: report["coefficients"]
                .as_array()?
                .iter()
                .map(Value::as_f64)
                .collect::<Option<_>>()?,
            intercept: report["intercept"].as_f64()?,
        })
    }

    /// The largest difference from `reference`'s coefficients and intercept, relative to its largest one.
    fn distance(&self, reference: &Fit) -> f64 {
        let scale = reference
            .coefficients
            .iter()
            .chain([&reference.intercept])
            .fold(0.0f64, |m, c| m.max(c.abs()));
        self.coefficients
            .iter()
            .zip(&reference.coefficients)
            .chain([(&self.intercept, &reference.intercept)])
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
            / scale
    }
}

/// The generated rows as one Parquet file of the features (as doubles), `label` and `target`.
async fn write_parquet(session: &Session, csv: &Path, parquet: &Path) {
    let label = when(ident("Label").eq(lit("s")), lit(1.0))
        .otherwise(lit(0.0))
        .expect("label")
        .alias("label");
    let target = cast(ident(TARGET), DataType::Float64).alias("target");
    write_one_parquet(session, csv, parquet, vec![label, target]).await;
}

/// hearth's best of [`RUNS`] fits of each model, from the Parquet file.
async fn hearth_fits(session: &Session, parquet: &Path) -> (Fit, Fit) {
    let assembler = VectorAssembler::new()
        .input_cols(feature_columns())
        .output_col("features");
    let mut logistic: Option<Fit> = None;
    let mut linear: Option<Fit> = None;
    let keep = |best: &mut Option<Fit>, fit: Fit| {
        if best.as_ref().is_none_or(|b| fit.seconds < b.seconds) {
            *best = Some(fit);
        }
    };
    for _ in 0..RUNS {
        let rows = assembler
            .transform(&session.read_parquet(parquet).await.expect("read parquet"))
            .expect("assemble");
        let started = Instant::now();
        let model = LogisticRegression::new()
            .workers(PARTITIONS)
            .fit(&rows)
            .await
            .expect("logistic");
        let seconds = started.elapsed().as_secs_f64();
        keep(
            &mut logistic,
            Fit {
                seconds,
                iterations: model.summary().map(|s| s.total_iterations as u64),
                coefficients: model.coefficients().to_vec(),
                intercept: model.intercept(),
            },
        );
        let started = Instant::now();
        let model = LinearRegression::new()
            .label_col("target")
            .solver("normal")
            .workers(PARTITIONS)
            .fit(&rows)
            .await
            .expect("linear");
        let seconds = started.elapsed().as_secs_f64();
        keep(
            &mut linear,
            Fit {
                seconds,
                iterations: Some(model.summary().total_iterations as u64),
                coefficients: model.coefficients().to_vec(),
                intercept: model.intercept(),
            },
        );
    }
    (logistic.expect("a run"), linear.expect("a run"))
}

/// PySpark's and scikit-learn's report, or why there is none.
fn reference_fits(parquet: &Path) -> Result<Value, String> {
    if std::env::var("HEARTH_BENCH_PYSPARK").is_ok_and(|v| v == "0") {
        return Err("skipped (HEARTH_BENCH_PYSPARK=0)".to_string());
    }
    for (module, package) in PACKAGES {
        python::ensure_module(module, package)?;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/linear_reference.py");
    let args = [
        parquet.as_os_str().to_owned(),
        RUNS.to_string().into(),
        PARTITIONS.to_string().into(),
    ];
    python::json_report("the reference fits", script, args)
}

#[tokio::main]
async fn main() {
    let (rows, dir, csv) = generated_csv("HEARTH_LINEAR_ROWS");
    let parquet = dir.path().join("linear.parquet");
    let session = Session::builder().with_default_features().local(PARTITIONS);
    write_parquet(&session, &csv, &parquet).await;
    println!(
        "linear models benchmark: {rows} Higgs-schema rows, {} features, local[{PARTITIONS}], best of {RUNS} fits \
         from one Parquet file\n",
        feature_columns().len()
    );
    let (logistic, linear) = hearth_fits(&session, &parquet).await;
    let reference = reference_fits(&parquet);

    let mut table = Table::new();
    table.set_titles(row![
        "model",
        "tool",
        "fit s",
        "iterations",
        "coefficients vs Spark",
        "Spark's time ÷ this"
    ]);
    let iterations = |fit: &Fit| fit.iterations.map_or("-".to_string(), |n| n.to_string());
    for (name, hearth) in [("logistic", &logistic), ("linear", &linear)] {
        let spark = reference
            .as_ref()
            .ok()
            .and_then(|r| Fit::of(&r[format!("spark_{name}")]));
        let sklearn = reference
            .as_ref()
            .ok()
            .and_then(|r| Fit::of(&r[format!("sklearn_{name}")]));
        let versus = |fit: &Fit| {
            spark
                .as_ref()
                .map_or("-".to_string(), |s| format!("{:.2e}", fit.distance(s)))
        };
        let speed = |fit: &Fit| {
            spark
                .as_ref()
                .map_or("-".to_string(), |s| format!("{:.1}", s.seconds / fit.seconds))
        };
        let label = match name {
            "logistic" => "LogisticRegression",
            _ => "LinearRegression (normal)",
        };
        table.add_row(row![
            label,
            "hearth",
            format!("{:.3}", hearth.seconds),
            iterations(hearth),
            versus(hearth),
            speed(hearth)
        ]);
        for (tool, fit) in [("PySpark", &spark), ("scikit-learn", &sklearn)] {
            if let Some(fit) = fit {
                table.add_row(row![
                    label,
                    tool,
                    format!("{:.3}", fit.seconds),
                    iterations(fit),
                    versus(fit),
                    speed(fit)
                ]);
            }
        }
    }
    table.printstd();
    match &reference {
        Ok(report) => println!(
            "\nPySpark {} (local[{PARTITIONS}], JVM warm), scikit-learn {} (its LogisticRegression on the rows \
             standardized as Spark standardizes them, coefficients mapped back; LinearRegression by least squares)",
            report["spark"].as_str().unwrap_or("?"),
            report["sklearn"].as_str().unwrap_or("?")
        ),
        Err(why) => println!("\nPySpark and scikit-learn: {why}"),
    }
}
