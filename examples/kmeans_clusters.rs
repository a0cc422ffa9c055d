//! The UCluster notebook's shape on MNIST: a network trained through the barrier stage (two ranks averaging
//! gradients) learns an embedding with a custom loss — classification plus a clustering term pulling each
//! embedding to the nearest of k learned centers — then KMeans clusters the held-out images' embeddings and the
//! clustering accuracy (Hungarian matching of clusters to digits, UCluster's `cluster_acc`) is reported beside
//! KMeans on the raw pixels and on embeddings trained without the clustering term.
//!
//! ```text
//! ./dev cargo run --release --example kmeans_clusters                 # MNIST's 10,000 shipped images
//! ./dev cargo run --release --example kmeans_clusters -- --epochs 5 --lambda 0.3
//! ```
//!
//! The training loop is the user's own code, written against the raw barrier API: a [`BarrierFunction`] that
//! gets its partition's rows and the ring, and returns the embeddings of its held-out rows as a table.

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use datafusion::arrow::array::{AsArray, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result as DfResult};
use hearth::datasets::mnist;
use hearth::exec::barrier::{BarrierFunction, BarrierStage, BarrierTaskContext, register_function};
use hearth::prelude::*;
use hearth::torch::horovod::{DistributedOptimizer, Horovod};
use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Table, row};
use serde::{Deserialize, Serialize};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

/// Cluster MNIST digits by the embeddings of a network trained with a clustering term.
#[derive(Parser)]
struct Args {
    /// Passes over each rank's training rows.
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    /// Weight of the clustering term in the loss.
    #[arg(long, default_value_t = 0.1)]
    lambda: f64,
    /// Width of the embedding.
    #[arg(long, default_value_t = 16)]
    embedding: usize,
    /// Ranks training together.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Seed of the held-out split, the weights and KMeans.
    #[arg(long, default_value_t = 3)]
    seed: u64,
}

/// What the barrier function is told.
#[derive(Serialize, Deserialize)]
struct EmbedArgs {
    epochs: usize,
    lambda: f64,
    embedding: usize,
    seed: u64,
}

const CLUSTERS: i64 = 10;

/// The user's training code as a barrier function: trains on the rows not held out, embeds the rest.
#[derive(Debug)]
struct UClusterEmbedding;

fn failed(e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(e.to_string())
}

fn output_schema(width: usize) -> SchemaRef {
    let item = Arc::new(Field::new_list_field(DataType::Float32, true));
    Arc::new(Schema::new(vec![
        Field::new("embedding", DataType::FixedSizeList(item, width as i32), false),
        Field::new("label", DataType::Float64, false),
    ]))
}

/// A partition's rows as tensors: the images and digits to train on, and the held-out images and digits.
struct Partition {
    x: Tensor,
    y: Tensor,
    held_x: Tensor,
    held_y: Vec<f64>,
}

/// The partition of a task's rows, split by their `held_out` flag.
fn partition(rows: &[RecordBatch]) -> DfResult<Partition> {
    let (mut train_x, mut train_y, mut held_x, mut held_y) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for batch in rows {
        let images = batch
            .column_by_name("image")
            .ok_or_else(|| failed("no image column"))?
            .as_fixed_size_list();
        let pixels = images.values().as_primitive::<Float32Type>().values();
        let labels = batch
            .column_by_name("label")
            .ok_or_else(|| failed("no label column"))?
            .as_primitive::<Float64Type>();
        let held: &BooleanArray = batch
            .column_by_name("held_out")
            .ok_or_else(|| failed("no held_out column"))?
            .as_boolean();
        for row in 0..batch.num_rows() {
            let image = &pixels[row * 784..(row + 1) * 784];
            if held.value(row) {
                held_x.extend_from_slice(image);
                held_y.push(labels.value(row));
            } else {
                train_x.extend_from_slice(image);
                train_y.push(labels.value(row) as i64);
            }
        }
    }
    Ok(Partition {
        x: Tensor::from_slice(&train_x).view([-1, 784]),
        y: Tensor::from_slice(&train_y),
        held_x: Tensor::from_slice(&held_x).view([-1, 784]),
        held_y,
    })
}

impl BarrierFunction for UClusterEmbedding {
    fn name(&self) -> &str {
        "ucluster_embedding"
    }

    fn schema(&self, args: &str) -> DfResult<SchemaRef> {
        let args: EmbedArgs = serde_json::from_str(args).map_err(failed)?;
        Ok(output_schema(args.embedding))
    }

    fn run(&self, context: &mut BarrierTaskContext, args: &str, input: Vec<RecordBatch>) -> DfResult<RecordBatch> {
        let args: EmbedArgs = serde_json::from_str(args).map_err(failed)?;
        let Partition { x, y, held_x, held_y } = partition(&input)?;
        drop(input);
        let mut hvd = Horovod::new(context.communicator());
        tch::manual_seed(args.seed as i64);
        tch::set_num_threads(1);
        let store = nn::VarStore::new(Device::Cpu);
        let root = store.root();
        let encoder = nn::seq()
            .add(nn::linear(&root / "encoder1", 784, 256, Default::default()))
            .add_fn(Tensor::relu)
            .add(nn::linear(
                &root / "encoder2",
                256,
                args.embedding as i64,
                Default::default(),
            ));
        let classifier = nn::linear(
            &root / "classifier",
            args.embedding as i64,
            CLUSTERS,
            Default::default(),
        );
        let centers = root.randn("centers", &[CLUSTERS, args.embedding as i64], 0.0, 1.0);
        hvd.broadcast_parameters(&store.trainable_variables(), 0)
            .map_err(failed)?;
        let adam = nn::Adam::default().build(&store, 1e-3).map_err(failed)?;
        let mut optimizer = DistributedOptimizer::new(adam, &store);
        let batch = 64;
        // The ranks agree on the steps of an epoch: the fewest any rank's rows give.
        let steps = hvd
            .communicator()
            .min_u64((y.size()[0] / batch) as u64)
            .map_err(failed)? as i64;
        for _ in 0..args.epochs {
            let order = Tensor::randperm(y.size()[0], (Kind::Int64, Device::Cpu));
            for step in 0..steps {
                let rows = order.narrow(0, step * batch, batch);
                let embedded = encoder.forward(&x.index_select(0, &rows));
                let classification = classifier
                    .forward(&embedded)
                    .cross_entropy_for_logits(&y.index_select(0, &rows));
                // UCluster's clustering term: each embedding's squared distance to its nearest center.
                let distances =
                    (embedded.unsqueeze(1) - centers.unsqueeze(0))
                        .square()
                        .sum_dim_intlist(2, false, Kind::Float);
                let clustering = distances.min_dim(1, false).0.mean(Kind::Float);
                let loss = classification + clustering * args.lambda;
                optimizer.backward_step(&mut hvd, &loss).map_err(failed)?;
            }
        }
        let embeddings = tch::no_grad(|| encoder.forward(&held_x));
        let values = Vec::<f32>::try_from(embeddings.flatten(0, -1)).map_err(failed)?;
        let item = Arc::new(Field::new_list_field(DataType::Float32, true));
        let vectors =
            FixedSizeListArray::try_new(item, args.embedding as i32, Arc::new(Float32Array::from(values)), None)?;
        Ok(RecordBatch::try_new(
            output_schema(args.embedding),
            vec![Arc::new(vectors), Arc::new(Float64Array::from(held_y))],
        )?)
    }
}

/// KMeans with k = 10 on `column`, then the clustering accuracy against the digits and the silhouette.
async fn cluster(frame: &DataFrame, column: &str, seed: u64) -> Result<(f64, f64, f64), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let model = KMeans::new()
        .k(10)
        .seed(seed as i64)
        .features_col(column)
        .fit(frame)
        .await?;
    let seconds = started.elapsed().as_secs_f64();
    let scored = model.transform(frame)?;
    let evaluator = ClusteringEvaluator::new().features_col(column);
    let accuracy = evaluator
        .clone()
        .metric_name("clusterAccuracy")
        .evaluate(&scored)
        .await?;
    let silhouette = evaluator.evaluate(&scored).await?;
    Ok((accuracy, silhouette, seconds))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let session = Session::builder().with_default_features().local(args.workers);
    session.register("mnist", &mnist::train(&session)?)?;
    // A fifth of the images held out, drawn from a hash of each row: the same split on every run.
    let flagged = session
        .sql(&format!(
            "SELECT image, label, ml_row_uniform({}, label, image) < 0.2 AS held_out FROM mnist",
            args.seed
        ))
        .await?;
    register_function(UClusterEmbedding);

    let mut table = Table::new();
    table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
    table.set_titles(row![
        "clustered",
        "cluster accuracy",
        "silhouette",
        "train s",
        "KMeans s"
    ]);
    let held_out = flagged.clone().filter(datafusion::prelude::col("held_out"))?;
    let (accuracy, silhouette, seconds) = cluster(&held_out, "image", args.seed).await?;
    table.add_row(row![
        "raw pixels (784)",
        format!("{accuracy:.4}"),
        format!("{silhouette:.4}"),
        "-",
        format!("{seconds:.1}")
    ]);
    for (name, lambda) in [
        ("embedding, classification loss", 0.0),
        ("embedding, + clustering term", args.lambda),
    ] {
        let embed = EmbedArgs {
            epochs: args.epochs,
            lambda,
            embedding: args.embedding,
            seed: args.seed,
        };
        let started = Instant::now();
        let batches = BarrierStage::new("ucluster_embedding", serde_json::to_string(&embed)?)
            .workers(args.workers)
            .run(&flagged)
            .await?;
        let trained = started.elapsed().as_secs_f64();
        let embedded = session.read_batches(output_schema(args.embedding), batches)?;
        let (accuracy, silhouette, seconds) = cluster(&embedded, "embedding", args.seed).await?;
        table.add_row(row![
            format!("{name} ({}, λ = {lambda})", args.embedding),
            format!("{accuracy:.4}"),
            format!("{silhouette:.4}"),
            format!("{trained:.1}"),
            format!("{seconds:.1}")
        ]);
    }
    println!(
        "KMeans (k = 10) on {} held-out MNIST images; networks trained on the other {} by {} ranks for {} epochs",
        held_out.clone().count().await?,
        flagged.clone().count().await? - held_out.clone().count().await?,
        args.workers,
        args.epochs
    );
    table.printstd();
    Ok(())
}
