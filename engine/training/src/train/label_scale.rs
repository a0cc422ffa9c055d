//! A regressor learns any label's scale: it trains on the label standardized, `(y − mean) / std`, so that its
//! initial weights and learning rate fit a label around 40 as one around 3,000, and the fitted network is
//! given back the label's scale by folding `std` and `mean` into its last dense layer (`W·std`,
//! `b·std + mean`): its predictions, explanations and saved weights are in the label's units, and its losses
//! (mean squared errors) are multiplied back by `std²`.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::functions_aggregate::expr_fn::{avg, stddev_pop};
use datafusion::logical_expr::{Expr, cast, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::model::Layer;
use hearth_torch::train::{EpochStats, RankReport};

/// The mean and standard deviation a regressor's label was standardized by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LabelScale {
    mean: f64,
    std: f64,
}

impl LabelScale {
    /// The label's mean and population standard deviation over `training`'s rows; none when the network does
    /// not end with a dense layer (its scale cannot be folded back) or the label is constant.
    pub(crate) async fn of(training: &DataFrame, label: &str, layers: &[Layer]) -> Result<Option<Self>> {
        if !matches!(layers.last(), Some(Layer::Dense { .. })) {
            return Ok(None);
        }
        let batches = training
            .clone()
            .aggregate(
                vec![],
                vec![avg(ident(label)).alias("mean"), stddev_pop(ident(label)).alias("std")],
            )?
            .collect()
            .await?;
        let figure = |column: usize| {
            let values = batches.first()?.column(column).as_primitive_opt::<Float64Type>()?;
            (values.len() == 1 && values.is_valid(0)).then(|| values.value(0))
        };
        Ok(match (figure(0), figure(1)) {
            (Some(mean), Some(std)) if std > 0.0 && std.is_finite() && mean.is_finite() => Some(Self { mean, std }),
            _ => None,
        })
    }

    /// `label` standardized, as a `Float64`.
    pub(crate) fn standardized(&self, label: &str) -> Expr {
        (cast(ident(label), DataType::Float64) - lit(self.mean)) / lit(self.std)
    }

    /// What the losses of the standardized label are multiplied by to be in the label's units.
    pub(crate) fn loss_factor(&self) -> f64 {
        self.std * self.std
    }

    /// `stats` in the label's units.
    pub(crate) fn unscale_stats(&self, stats: &mut EpochStats) {
        stats.loss *= self.loss_factor();
        if let Some(loss) = stats.validation_loss.as_mut() {
            *loss *= self.loss_factor();
        }
    }

    /// Gives the network trained on the standardized label the label's units: its last dense layer (named
    /// `<layers − 1>.weight` and `.bias`) scaled by `std` and shifted by `mean`, its histories' losses
    /// multiplied by `std²`.
    pub(crate) fn unscale(&self, artifact: &mut ModelArtifact, ranks: &mut [RankReport], layers: usize) -> Result<()> {
        let last = layers.saturating_sub(1);
        let (weight, bias) = (format!("{last}.weight"), format!("{last}.bias"));
        let mut folded = 0;
        for tensor in &mut artifact.tensors {
            if tensor.name == weight {
                tensor
                    .values
                    .iter_mut()
                    .for_each(|w| *w = (f64::from(*w) * self.std) as f32);
                folded += 1;
            } else if tensor.name == bias {
                tensor
                    .values
                    .iter_mut()
                    .for_each(|b| *b = (f64::from(*b) * self.std + self.mean) as f32);
                folded += 1;
            }
        }
        if folded != 2 {
            return Err(HearthError::invalid_data(
                "regressor",
                &weight,
                "the trained network has no last dense layer to give the label's scale back to",
            ));
        }
        artifact.history.iter_mut().for_each(|stats| self.unscale_stats(stats));
        for rank in ranks {
            rank.history.iter_mut().for_each(|stats| self.unscale_stats(stats));
        }
        Ok(())
    }
}
