//! Data in the schema of the ATLAS Higgs boson machine-learning challenge (CERN Open Data record 328),
//! generated deterministically at any row count: for benchmarks and training tests at scale.
//!
//! Columns: `EventId`, the 30 features (`DER_*` derived, `PRI_*` primitive; `PRI_jet_num` is an integer
//! 0–3, and jet features that are undefined for the event's jet count hold −999.0, as in the challenge),
//! `Weight`, and `Label` (`s` signal, about a third of events, or `b` background). Signal and background
//! differ in the mass, momentum and jet features, so a classifier has something real to learn; each row
//! depends only on `(seed, EventId)`, so any slice can be generated on its own.
//!
//! ```
//! let batch = hearth::datasets::higgs::batch(0, 100, 7);
//! assert_eq!(batch.num_rows(), 100);
//! assert_eq!(batch.num_columns(), 33);
//! ```

use std::f64::consts::PI;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use hearth_stats::random::Draws;
use hearth_torch::model::{Activation, ModelSpec};
use hearth_torch::train::Strategy;
use hearth_training::prelude::{
    OneHotEncoder, Pipeline, StandardScaler, StringIndexer, StringOrderType, VectorAssembler,
};

/// The 30 feature columns, in the challenge's order.
pub const FEATURES: [&str; 30] = [
    "DER_mass_MMC",
    "DER_mass_transverse_met_lep",
    "DER_mass_vis",
    "DER_pt_h",
    "DER_deltaeta_jet_jet",
    "DER_mass_jet_jet",
    "DER_prodeta_jet_jet",
    "DER_deltar_tau_lep",
    "DER_pt_tot",
    "DER_sum_pt",
    "DER_pt_ratio_lep_tau",
    "DER_met_phi_centrality",
    "DER_lep_eta_centrality",
    "PRI_tau_pt",
    "PRI_tau_eta",
    "PRI_tau_phi",
    "PRI_lep_pt",
    "PRI_lep_eta",
    "PRI_lep_phi",
    "PRI_met",
    "PRI_met_phi",
    "PRI_met_sumet",
    "PRI_jet_num",
    "PRI_jet_leading_pt",
    "PRI_jet_leading_eta",
    "PRI_jet_leading_phi",
    "PRI_jet_subleading_pt",
    "PRI_jet_subleading_eta",
    "PRI_jet_subleading_phi",
    "PRI_jet_all_pt",
];

/// The value the challenge uses for a feature that is undefined for an event.
pub const UNDEFINED: f64 = -999.0;

const JET_NUM: usize = 22;

/// The schema: `EventId` (Int64), the features (Float64, `PRI_jet_num` Int64), `Weight`, `Label` (Utf8).
pub fn schema() -> SchemaRef {
    let mut fields = vec![Field::new("EventId", DataType::Int64, false)];
    fields.extend(FEATURES.iter().enumerate().map(|(i, name)| {
        let data_type = if i == JET_NUM {
            DataType::Int64
        } else {
            DataType::Float64
        };
        Field::new(*name, data_type, false)
    }));
    fields.push(Field::new("Weight", DataType::Float64, false));
    fields.push(Field::new("Label", DataType::Utf8, false));
    Arc::new(Schema::new(fields))
}

/// One event's 30 features, weight and whether it is signal.
fn event(seed: u64, id: u64) -> ([f64; 30], f64, bool) {
    let mut r = Draws::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ id);
    r.next_u64();
    let signal = r.uniform() < 0.343;
    let pick = |s: f64, b: f64| if signal { s } else { b };
    let jet_cumulative = if signal { [0.30, 0.65, 0.85] } else { [0.45, 0.75, 0.90] };
    let u = r.uniform();
    let jets = jet_cumulative.iter().filter(|&&c| u >= c).count();

    let tau_pt = 20.0 + r.exponential(pick(45.0, 35.0));
    let lep_pt = 26.0 + r.exponential(35.0);
    let leading_pt = if jets >= 1 {
        30.0 + r.exponential(pick(70.0, 55.0))
    } else {
        UNDEFINED
    };
    let subleading_pt = if jets >= 2 {
        30.0 + r.exponential(pick(40.0, 30.0))
    } else {
        UNDEFINED
    };
    let jet_all_pt = leading_pt.max(0.0) + subleading_pt.max(0.0) + if jets >= 3 { r.exponential(30.0) } else { 0.0 };
    let mass_mmc = if r.uniform() < pick(0.05, 0.18) {
        UNDEFINED
    } else {
        r.normal(pick(125.0, 100.0), pick(18.0, 42.0)).abs().max(10.0)
    };
    let two_jets = |value: f64| if jets >= 2 { value } else { UNDEFINED };

    let mut f = [0.0; 30];
    f[0] = mass_mmc;
    f[1] = r.normal(pick(30.0, 55.0), pick(20.0, 35.0)).abs();
    f[2] = r.normal(pick(82.0, 72.0), pick(15.0, 30.0)).abs().max(5.0);
    f[3] = r.exponential(pick(60.0, 40.0));
    f[4] = two_jets(r.normal(pick(3.0, 1.8), pick(1.5, 1.2)).abs());
    f[5] = two_jets(r.exponential(pick(500.0, 250.0)));
    f[6] = two_jets(r.normal(pick(-1.0, 0.0), 3.0));
    f[7] = r.normal(pick(2.2, 2.6), pick(0.6, 0.8)).abs();
    f[8] = r.exponential(20.0);
    f[9] = tau_pt + lep_pt + jet_all_pt;
    f[10] = lep_pt / tau_pt;
    f[11] = (r.normal(pick(0.6, 0.0), 0.8)).clamp(-std::f64::consts::SQRT_2, std::f64::consts::SQRT_2);
    f[12] = two_jets(r.uniform().powf(pick(0.5, 1.5)));
    f[13] = tau_pt;
    f[14] = r.normal(0.0, 1.2).clamp(-2.5, 2.5);
    f[15] = r.between(-PI, PI);
    f[16] = lep_pt;
    f[17] = r.normal(0.0, 1.2).clamp(-2.5, 2.5);
    f[18] = r.between(-PI, PI);
    f[19] = r.exponential(pick(35.0, 45.0));
    f[20] = r.between(-PI, PI);
    f[21] = r.normal(210.0, 110.0).abs() + 50.0;
    f[22] = jets as f64;
    f[23] = leading_pt;
    f[24] = if jets >= 1 {
        r.normal(0.0, 1.8).clamp(-4.5, 4.5)
    } else {
        UNDEFINED
    };
    f[25] = if jets >= 1 { r.between(-PI, PI) } else { UNDEFINED };
    f[26] = subleading_pt;
    f[27] = two_jets(r.normal(0.0, 1.8).clamp(-4.5, 4.5));
    f[28] = two_jets(r.between(-PI, PI));
    f[29] = jet_all_pt;
    let weight = if signal {
        r.between(0.001, 0.005)
    } else {
        r.between(0.5, 5.0)
    };
    (f, weight, signal)
}

/// Events `first .. first + rows` as one record batch.
pub fn batch(first: u64, rows: usize, seed: u64) -> RecordBatch {
    let mut features: Vec<Vec<f64>> = (0..30).map(|_| Vec::with_capacity(rows)).collect();
    let mut weights = Vec::with_capacity(rows);
    let mut labels = Vec::with_capacity(rows);
    for id in first..first + rows as u64 {
        let (f, weight, signal) = event(seed, id);
        for (column, value) in features.iter_mut().zip(f) {
            column.push(value);
        }
        weights.push(weight);
        labels.push(if signal { "s" } else { "b" });
    }
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
        (first..first + rows as u64).map(|id| id as i64 + 100_000),
    ))];
    for (i, column) in features.into_iter().enumerate() {
        columns.push(if i == JET_NUM {
            Arc::new(Int64Array::from_iter_values(column.into_iter().map(|v| v as i64)))
        } else {
            Arc::new(Float64Array::from(column))
        });
    }
    columns.push(Arc::new(Float64Array::from(weights)));
    columns.push(Arc::new(StringArray::from(labels)));
    // The columns are built to match `schema()` exactly.
    RecordBatch::try_new(schema(), columns).unwrap_or_else(|e| unreachable!("higgs batch matches its schema: {e}"))
}

/// `rows` events in batches of at most `batch_size` rows.
pub fn batches(rows: usize, batch_size: usize, seed: u64) -> Vec<RecordBatch> {
    let batch_size = batch_size.max(1);
    (0..rows)
        .step_by(batch_size)
        .map(|first| batch(first as u64, batch_size.min(rows - first), seed))
        .collect()
}

/// Writes `rows` events as CSV with a header line, as the challenge file is laid out.
pub fn write_csv(path: &Path, rows: usize, seed: u64) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    let mut header = vec!["EventId"];
    header.extend(FEATURES);
    header.extend(["Weight", "Label"]);
    writeln!(out, "{}", header.join(","))?;
    for id in 0..rows as u64 {
        let (f, weight, signal) = event(seed, id);
        write!(out, "{}", id + 100_000)?;
        for (i, value) in f.iter().enumerate() {
            if i == JET_NUM || *value == UNDEFINED {
                write!(out, ",{}", *value as i64)?;
            } else {
                write!(out, ",{value:.6}")?;
            }
        }
        writeln!(out, ",{weight:.6},{}", if signal { 's' } else { 'b' })?;
    }
    out.flush()
}

/// The dist-keras preprocessing: `Label` indexed alphabetically into `label` (`b` = 0, `s` = 1), the 30
/// features assembled into `raw`, then centred and scaled into `features`.
pub fn preprocessing() -> Pipeline {
    Pipeline::new()
        .stage(
            StringIndexer::new()
                .input_col("Label")
                .output_col("label")
                .string_order_type(StringOrderType::AlphabetAsc),
        )
        .stage(VectorAssembler::new().input_cols(FEATURES).output_col("raw"))
        .stage(
            StandardScaler::new()
                .input_col("raw")
                .output_col("features")
                .with_mean(true),
        )
}

/// The preprocessing benchmarks' four stages, with Spark's defaults: `PRI_jet_num` and `Label` indexed by
/// frequency into `jet_idx` and `label`, `jet_idx` one-hot encoded into `jet_vec` (the last category
/// dropped), the 29 float features and `jet_vec` assembled into `raw` (33 slots), then centred and scaled
/// into `features`.
///
/// ```
/// assert_eq!(hearth::datasets::higgs::four_stage_preprocessing().stages().len(), 4);
/// ```
pub fn four_stage_preprocessing() -> Pipeline {
    let mut assembled: Vec<&str> = FEATURES.iter().copied().filter(|f| *f != "PRI_jet_num").collect();
    assembled.push("jet_vec");
    Pipeline::new()
        .stage(
            StringIndexer::new()
                .input_cols(["PRI_jet_num", "Label"])
                .output_cols(["jet_idx", "label"]),
        )
        .stage(OneHotEncoder::new().input_col("jet_idx").output_col("jet_vec"))
        .stage(VectorAssembler::new().input_cols(assembled).output_col("raw"))
        .stage(
            StandardScaler::new()
                .input_col("raw")
                .output_col("features")
                .with_mean(true),
        )
}

/// dist-keras's Higgs MLP on `inputs` features: two hidden layers of 600 ReLU units, dropout 0.2, two classes.
///
/// ```
/// let spec = hearth::datasets::higgs::dist_keras_mlp(30);
/// assert_eq!(spec.input_features(), 30);
/// ```
pub fn dist_keras_mlp(inputs: usize) -> ModelSpec {
    ModelSpec::Mlp {
        inputs,
        hidden: vec![600, 600],
        outputs: 2,
        activation: Activation::Relu,
        dropout: 0.2,
    }
}

/// dist-keras's trainers as the walk-through runs them on this data, the synchronous allreduce among them:
/// SingleTrainer, EASGD (ρ 5, η 0.04, every 10 steps), asynchronous EASGD (window 30), asynchronous EAMSGD
/// (window 10, momentum 0.85), DOWNPOUR (window 5), ADAG (window 12), and model averaging every 10 steps.
///
/// ```
/// let names: Vec<&str> = hearth::datasets::higgs::dist_keras_trainers().iter().map(|s| s.name()).collect();
/// assert_eq!(names[..2], ["single", "synchronous"]);
/// ```
pub fn dist_keras_trainers() -> Vec<Strategy> {
    vec![
        Strategy::Single,
        Strategy::Synchronous,
        Strategy::Easgd {
            rho: 5.0,
            communication_window: 10,
            learning_rate: Some(0.04),
        },
        Strategy::AsyncEasgd {
            rho: 5.0,
            communication_window: 30,
            learning_rate: Some(0.04),
        },
        Strategy::AsyncEamsgd {
            rho: 5.0,
            communication_window: 10,
            momentum: 0.85,
            learning_rate: Some(0.04),
        },
        Strategy::Downpour {
            communication_window: 5,
        },
        Strategy::Adag {
            communication_window: 12,
        },
        Strategy::LocalSgd { period: 10 },
    ]
}
