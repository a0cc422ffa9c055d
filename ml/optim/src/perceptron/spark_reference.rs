//! The perceptron's fits against Spark 4.0.0's own (PySpark `local[1]`, one partition).

use super::*;
use crate::glm::Alone;
use crate::glm::testing::three_classes;

/// Spark's draws for layers [2, 2, 2] and seed 123 (`maxIter` 0).
#[rustfmt::skip]
const XOR_INITIAL: [f64; 12] = [
    -1.160946702561173, 0.505000787625046, 1.5373067685657458, -0.6420459004292237,
    -1.0780893151888158, -0.19661861230624025, 1.4634145827329261, 0.17717683544712765,
    0.1056139348376191, 0.6901617736588427, -0.35733446259521856, -0.23830150074765347,
];

/// XOR fitted by L-BFGS, `blockSize` 1 (37 iterations).
#[rustfmt::skip]
const XOR_FITTED: [f64; 12] = [
    -41.41893803284078, 10.032913144477664, 13.259695161244585, -15.751183816221767,
    -11.447132920133603, -7.598847163933414, -57.98485016501546, 59.62544158319566,
    -27.14998349791581, 27.945759207011772, 8.753400091411592, -9.34903605402496,
];

/// XOR after 5 L-BFGS iterations, `blockSize` 128.
#[rustfmt::skip]
const XOR_FIVE_STEPS: [f64; 12] = [
    -0.5959169231142567, 0.44315259604497426, 1.2198526947330293, -0.6507466270377327,
    -0.9003739066371819, -0.31685123132107607, 0.535829088874437, 1.1047623293056168,
    0.2909265992861674, 0.5048491092102936, -0.14127565437076076, -0.4543603089721137,
];

/// The three classes, layers [3, 4, 3], seed 7, `blockSize` 4, 50 L-BFGS iterations.
#[rustfmt::skip]
const THREE_CLASSES_LBFGS: [f64; 31] = [
    -56.809231494077466, -97.53772218701066, 12.864987853634634, 24.11935984205172,
    45.3213721193977, 107.34402818001587, -5.5511315669446, -25.92379956135074,
    4.4753609356486255, 49.296683567076364, -0.9168789861877733, -21.564449613624813,
    3.334721472943932, 22.95783227290473, 0.2667042592060015, -10.441991819900645,
    36.80587526382576, -19.715634006383272, -15.261898662917845, 55.46959405121802,
    -117.91017414964433, 62.083591931790544, -21.47710383015673, 26.195429333260602,
    -2.4986144703388806, 64.25532344704908, -75.33338056209402, 8.224049859618294,
    -7.325331988636819, 14.594760604944687, -6.28385271590029,
];

/// The same by 50 steps of gradient descent (step 0.03).
#[rustfmt::skip]
const THREE_CLASSES_GD: [f64; 31] = [
    -0.6088269192517521, -0.14632716885928113, 0.7463896700875785, 0.4426279809574169,
    0.07717191920215466, 1.157416503976269, -0.5947042593935077, 1.3521232401479308,
    -0.9656902881654982, 0.8530822932163094, 0.8390543147479749, -1.3393471263813208,
    0.6141958610368138, -1.2639683640252004, 1.1446709096738643, -0.3294405762789353,
    0.9140708857268062, -0.1087304866794186, 1.0230021955918802, -0.24219515279778092,
    -1.2353477484841378, 1.1205547345635338, 0.6318804421026283, 0.7531410862802403,
    0.834689504098827, -0.9740676553470071, -0.7511619892080627, -1.128777610962189,
    0.5681874720962844, 1.0802420243072277, -0.6628535961463121,
];

fn xor() -> Shard {
    Shard::new(2, vec![0., 0., 0., 1., 1., 0., 1., 1.], vec![0., 1., 1., 0.], None).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tolerance: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * w.abs().max(1.0),
            "weight {i}: hearth {g}, Spark {w}"
        );
    }
}

#[test]
fn initial_weights_are_sparks_draws() {
    let settings = MlpSettings {
        layers: vec![2, 2, 2],
        max_iter: 0,
        seed: 123,
        ..MlpSettings::default()
    };
    let fit = fit_mlp(&xor(), &settings, &mut Alone).unwrap();
    assert_eq!(fit.weights, XOR_INITIAL);
}

#[test]
fn lbfgs_on_xor_takes_sparks_steps() {
    let settings = MlpSettings {
        layers: vec![2, 2, 2],
        block_size: 1,
        seed: 123,
        ..MlpSettings::default()
    };
    let fit = fit_mlp(&xor(), &settings, &mut Alone).unwrap();
    assert_close(&fit.weights, &XOR_FITTED, 1e-6);
    assert_eq!(fit.solved.objective_history.len(), 38);
    let settings = MlpSettings {
        layers: vec![2, 2, 2],
        max_iter: 5,
        seed: 123,
        ..MlpSettings::default()
    };
    let fit = fit_mlp(&xor(), &settings, &mut Alone).unwrap();
    assert_close(&fit.weights, &XOR_FIVE_STEPS, 1e-9);
}

#[test]
fn stacks_of_four_on_three_classes_by_lbfgs_and_by_descent() {
    let lbfgs = MlpSettings {
        layers: vec![3, 4, 3],
        block_size: 4,
        seed: 7,
        max_iter: 50,
        ..MlpSettings::default()
    };
    let fit = fit_mlp(&three_classes(false), &lbfgs, &mut Alone).unwrap();
    assert_close(&fit.weights, &THREE_CLASSES_LBFGS, 1e-6);
    assert_eq!(fit.solved.objective_history.len(), 51);
    let gd = MlpSettings {
        solver: MlpSolver::Gd,
        ..lbfgs
    };
    let fit = fit_mlp(&three_classes(false), &gd, &mut Alone).unwrap();
    assert_close(&fit.weights, &THREE_CLASSES_GD, 1e-9);
    let history = &fit.solved.objective_history;
    assert_eq!(history.len(), 51);
    assert!((history[50] - 1.0433147589143237).abs() < 1e-9, "{history:?}");
}

#[test]
fn layers_that_do_not_fit_the_features_are_named() {
    let settings = MlpSettings {
        layers: vec![3, 2],
        ..MlpSettings::default()
    };
    let error = fit_mlp(&xor(), &settings, &mut Alone).unwrap_err();
    assert_eq!(error.to_string(), "layers start with 3 inputs, the features have 2");
}
