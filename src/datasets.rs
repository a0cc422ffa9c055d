//! The data sets shipped in `datasets/`, and generators for larger ones.

#[path = "../datasets/german_credit.rs"]
pub mod german_credit;
#[path = "../datasets/higgs.rs"]
pub mod higgs;
