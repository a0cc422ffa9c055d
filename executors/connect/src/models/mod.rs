//! `pyspark.ml`'s objects on the server: hearth's stages made from Spark's class names and params, a session's
//! fitted models, and their attributes.

mod attributes;
mod cache;
pub(crate) mod literals;
mod operators;
mod params;
pub(crate) mod predict;
mod regression_summary;
pub(crate) mod summaries;
mod summary_value;

pub(crate) use attributes::attribute;
pub(crate) use cache::ModelCache;
pub(crate) use literals::json_params;
pub(crate) use operators::{
    SERVED, WORKERS, estimator_stage, served_class, served_evaluator, spark_class, stage, stage_json, with_params,
};
pub(crate) use params::{literal_json, param_json};
