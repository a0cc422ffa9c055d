//! The data sets shipped in `datasets/`, and generators for larger ones.

#[path = "../datasets/cifar10.rs"]
pub mod cifar10;
#[path = "../datasets/fashion_mnist.rs"]
pub mod fashion_mnist;
#[path = "../datasets/german_credit.rs"]
pub mod german_credit;
#[path = "../datasets/higgs.rs"]
pub mod higgs;
#[path = "../datasets/mnist.rs"]
pub mod mnist;
