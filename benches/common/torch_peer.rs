#![allow(dead_code)] // shared by the parity benchmark and test, each using part of it

//! Training parity with PyTorch, shared by the parity benchmark and its short version in the tests: one recipe
//! (network, optimizer, batch, epochs, rows) trained by hearth's [`RankTrainer`] and by PyTorch
//! (`benches/parity_torch.py`: a plain loop at one rank, DDP over gloo at two), each giving the test accuracy
//! after every epoch and each epoch's training seconds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hearth::collective::LocalWorld;
use hearth::torch::data::Shard;
use hearth::torch::model::ModelSpec;
use hearth::torch::train::{DeviceChoice, OptimizerSpec, Precision, RankTrainer, TrainOptions, TrainSettings};

/// The longest PyTorch's side may take (its DDP ranks give up on a collective after 10 minutes themselves).
const PEER_TIMEOUT: Duration = Duration::from_secs(3600);

/// The rows both sides train and test on, and the files PyTorch's side reads them from, written once however
/// many runs read them.
pub struct Rows<'a> {
    /// Training rows (dealt round robin to the ranks, on both sides).
    pub train: &'a Shard,
    /// Held-out rows, scored after every epoch.
    pub test: &'a Shard,
    files: tempfile::TempDir,
}

impl<'a> Rows<'a> {
    /// `train` and `test`, written for PyTorch's side into a temporary directory (removed when dropped).
    pub fn new(train: &'a Shard, test: &'a Shard) -> Result<Self, String> {
        let files = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let rows = Self { train, test, files };
        write_rows(&rows.train_file(), train)?;
        write_rows(&rows.test_file(), test)?;
        Ok(rows)
    }

    fn train_file(&self) -> PathBuf {
        self.files.path().join("train.f32")
    }

    fn test_file(&self) -> PathBuf {
        self.files.path().join("test.f32")
    }
}

/// One recipe, as both sides train it.
pub struct Recipe<'a> {
    /// The rows it trains and tests on.
    pub rows: &'a Rows<'a>,
    /// The network (PyTorch builds the same `nn.Sequential` with its own initialisation).
    pub model: ModelSpec,
    /// Rows per step on each rank.
    pub batch: usize,
    /// Passes over the training rows.
    pub epochs: usize,
    /// Ranks: 1 (a plain PyTorch loop) or 2 (PyTorch DDP over gloo).
    pub world: usize,
    /// Threads per rank, on both sides.
    pub threads: usize,
    /// Each epoch in a new random order (else the rows' own order).
    pub shuffle: bool,
    /// Whether PyTorch sends its final tensors back (small models: they travel as JSON).
    pub tensors: bool,
    /// Where both sides train (PyTorch: `cuda` for any `cuda` choice, at one rank).
    pub device: DeviceChoice,
    /// The passes' number format (PyTorch: bf16 under `torch.autocast`).
    pub precision: Precision,
}

/// PyTorch's name of the device a choice trains on.
fn torch_device(choice: &DeviceChoice) -> String {
    match choice {
        DeviceChoice::Cuda(Some(i)) => format!("cuda:{i}"),
        DeviceChoice::Cuda(None) => "cuda".to_string(),
        DeviceChoice::Auto | DeviceChoice::Cpu => "cpu".to_string(),
    }
}

/// What one run reached: the test accuracy and the training seconds of each epoch.
#[derive(Clone, Debug)]
pub struct Curve {
    /// Test accuracy after each epoch.
    pub accuracy: Vec<f64>,
    /// Training seconds of each epoch (the slowest rank's; evaluation excluded).
    pub seconds: Vec<f64>,
    /// The final tensors by PyTorch's names (`"0.weight"`, …), when asked for; hearth's always.
    pub tensors: Vec<(String, Vec<f32>)>,
}

impl Curve {
    /// Training samples per second over the first `epochs` epochs.
    pub fn samples_per_second(&self, train_rows: usize, epochs: usize) -> f64 {
        let seconds: f64 = self.seconds[..epochs].iter().sum();
        (train_rows * epochs) as f64 / seconds
    }
}

impl Recipe<'_> {
    /// hearth's run with `optimizer` and `seed`, on `world` ranks in this process (as `local[world]`).
    pub fn hearth(&self, optimizer: &OptimizerSpec, seed: u64) -> Curve {
        let options = TrainOptions::new(
            self.model.clone(),
            TrainSettings {
                optimizer: optimizer.clone(),
                epochs: self.epochs,
                batch_size: self.batch,
                seed,
                shuffle: self.shuffle,
                device: self.device.clone(),
                precision: self.precision,
                threads: Some(self.threads),
                ..TrainSettings::default()
            },
        );
        let world = self.world;
        let outcomes: Vec<_> = LocalWorld::new(world)
            .run(|mut comm| {
                let rank = comm.rank();
                let (train, test) = (
                    self.rows.train.round_robin(rank, world),
                    self.rows.test.round_robin(rank, world),
                );
                RankTrainer::new(&train, &options).validation(&test).run(&mut comm)
            })
            .expect("the ranks join")
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("hearth trains");
        let tensors = outcomes
            .iter()
            .find_map(|o| o.tensors.as_ref())
            .map_or(Vec::new(), |tensors| {
                tensors.iter().map(|t| (t.name.clone(), t.values.clone())).collect()
            });
        let reports: Vec<_> = outcomes.into_iter().map(|o| o.report).collect();
        let history = &reports[0].history;
        Curve {
            tensors,
            accuracy: history
                .iter()
                .map(|e| e.validation_accuracy.unwrap_or(f64::NAN))
                .collect(),
            seconds: (0..history.len())
                .map(|e| reports.iter().map(|r| r.history[e].seconds).fold(0.0, f64::max))
                .collect(),
        }
    }

    /// PyTorch's runs of each `(optimizer, seed)`, in one Python process (or one pair, under DDP) with
    /// `python3` from PATH (`./dev` puts the libtorch environment's first), or why they could not run.
    pub fn torch(&self, runs: &[(OptimizerSpec, u64)]) -> Result<Vec<Curve>, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let runs: Vec<serde_json::Value> = runs
            .iter()
            .map(|(optimizer, seed)| serde_json::json!({"optimizer": optimizer, "seed": seed}))
            .collect();
        let config = serde_json::json!({
            "train": self.rows.train_file(), "test": self.rows.test_file(), "dim": self.rows.train.dim(),
            "model": self.model,
            "batch": self.batch, "epochs": self.epochs, "world": self.world, "threads": self.threads,
            "shuffle": self.shuffle, "tensors": self.tensors, "runs": runs,
            "device": torch_device(&self.device),
            "precision": self.precision,
        });
        let config_path = dir.path().join("config.json");
        std::fs::write(&config_path, config.to_string()).map_err(|e| format!("{}: {e}", config_path.display()))?;
        // The checkout's script, else the one under the working directory (a program built elsewhere).
        let built_in = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/parity_torch.py");
        let script = if Path::new(built_in).exists() {
            built_in
        } else {
            "benches/parity_torch.py"
        };
        let (stdout, stderr) = (dir.path().join("stdout.json"), dir.path().join("stderr.txt"));
        let file = |path: &Path| std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()));
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&config_path)
            .stdout(file(&stdout)?)
            .stderr(file(&stderr)?)
            .spawn()
            .map_err(|e| format!("python3 could not start: {e}"))?;
        let deadline = Instant::now() + PEER_TIMEOUT;
        let status = loop {
            match child.try_wait().map_err(|e| format!("waiting for {script}: {e}"))? {
                Some(status) => break status,
                None if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{script} did not finish within {PEER_TIMEOUT:?}"));
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        if !status.success() {
            let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
            return Err(format!(
                "{script} failed: {}",
                stderr.trim_end().lines().last().unwrap_or("")
            ));
        }
        let stdout = std::fs::read(&stdout).map_err(|e| format!("{}: {e}", stdout.display()))?;
        let results: Vec<serde_json::Value> =
            serde_json::from_slice(&stdout).map_err(|e| format!("{script} printed no results: {e}"))?;
        let floats = |values: &serde_json::Value| -> Vec<f64> {
            values
                .as_array()
                .map_or(Vec::new(), |a| a.iter().filter_map(serde_json::Value::as_f64).collect())
        };
        Ok(results
            .iter()
            .map(|run| Curve {
                accuracy: floats(&run["accuracy"]),
                seconds: floats(&run["seconds"]),
                tensors: run["tensors"].as_object().map_or(Vec::new(), |tensors| {
                    tensors
                        .iter()
                        .map(|(name, values)| (name.clone(), floats(values).into_iter().map(|v| v as f32).collect()))
                        .collect()
                }),
            })
            .collect())
    }
}

/// The shard as float32 rows of its features followed by the label, little-endian.
fn write_rows(path: &Path, shard: &Shard) -> Result<(), String> {
    let mut bytes = Vec::with_capacity(shard.rows() * (shard.dim() + 1) * 4);
    for (row, label) in shard.features().chunks(shard.dim()).zip(shard.labels()) {
        row.iter()
            .chain([label])
            .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(&bytes))
        .map_err(|e| format!("{}: {e}", path.display()))
}
