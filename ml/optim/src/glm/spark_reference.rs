//! The fits against Spark 4.0.0's own answers on small datasets (PySpark `local[1]`; the rows and settings
//! below are those Spark was given), and the same fits split over three ranks.

use super::testing::three_classes;
use super::threads::on_threads;
use super::*;

/// PySpark's `LogisticRegression` doctest rows: (label, weight, features).
const B: [(f64, f64, [f64; 2]); 4] = [
    (1., 1., [0., 5.]),
    (0., 2., [1., 2.]),
    (1., 3., [2., 1.]),
    (0., 4., [3., 3.]),
];
/// `WeightedLeastSquaresSuite`'s rows: (label, weight, features).
const L: [(f64, f64, [f64; 2]); 4] = [
    (17., 1., [0., 5.]),
    (19., 2., [1., 7.]),
    (23., 3., [2., 11.]),
    (29., 4., [3., 13.]),
];

fn shard_of(rows: &[(f64, f64, [f64; 2])]) -> Shard {
    let features = rows.iter().flat_map(|r| r.2).collect();
    let labels = rows.iter().map(|r| r.0).collect();
    Shard::new(2, features, labels, Some(rows.iter().map(|r| r.1).collect())).unwrap()
}

fn close(got: &[f64], want: &[f64], tolerance: f64) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() <= tolerance * w.abs().max(1e-3))
}

#[test]
fn binomial_logistic_matches_spark_for_each_penalty() {
    // (regParam, elasticNetParam, standardization, fitIntercept) → coefficients, intercept, iterations.
    let cases = [
        (
            0.0,
            0.0,
            true,
            true,
            [-1.233408566474461, -0.7348970347245962],
            3.5651650398595685,
            8,
        ),
        (
            0.01,
            0.0,
            true,
            true,
            [-1.080726443643386, -0.6462904483725023],
            3.1127664706875913,
            7,
        ),
        (
            0.1,
            0.0,
            false,
            true,
            [-0.696474857068073, -0.4514423536092847],
            1.9932685517898407,
            6,
        ),
        (
            0.1,
            0.5,
            true,
            true,
            [-0.5075351699384059, -0.2584938690183636],
            1.1956957010826623,
            6,
        ),
        (
            0.1,
            0.5,
            false,
            true,
            [-0.6127911606944944, -0.3658465537431386],
            1.642147426644721,
            6,
        ),
        (0.1, 1.0, true, false, [-0.23181606809248617, 0.0], 0.0, 10),
        (
            0.0,
            0.0,
            true,
            false,
            [-0.30216631094268476, -0.044520659808934805],
            0.0,
            6,
        ),
    ];
    let shard = shard_of(&B);
    for (reg, alpha, standardization, fit_intercept, coefficients, intercept, iterations) in cases {
        let settings = LogisticSettings {
            reg_param: reg,
            elastic_net_param: alpha,
            standardization,
            fit_intercept,
            ..LogisticSettings::default()
        };
        let fit = fit_logistic(&shard, &settings, &mut Alone).unwrap();
        let case = format!("reg {reg} alpha {alpha} std {standardization} intercept {fit_intercept}: {fit:?}");
        assert!(close(&fit.coefficient_matrix, &coefficients, 1e-9), "{case}");
        assert!(close(&fit.intercept_vector, &[intercept], 1e-9), "{case}");
        assert_eq!(fit.solved.unwrap().total_iterations, iterations, "{case}");
    }
}

#[test]
fn multinomial_logistic_matches_spark_and_zeroes_a_constant_feature() {
    let cases = [
        (
            0.0,
            0.0,
            [
                -0.29780678993416243,
                0.9099278256569651,
                0.,
                0.7515581612717952,
                -1.598153620224637,
                0.,
                -0.4537513713376327,
                0.688225794567672,
                0.,
            ],
            [0.23892751474235308, -0.9294112225217501, 0.6904837077793972],
            12,
        ),
        (
            0.1,
            0.5,
            [
                0.,
                0.14683049199594642,
                0.,
                0.12136298491706404,
                -0.7180772103311949,
                0.,
                -0.06117326709703234,
                0.,
                0.,
            ],
            [-0.09282944765455609, -0.059990339822423765, 0.15281978747697986],
            15,
        ),
    ];
    let shard = three_classes(true);
    for (reg, alpha, coefficients, intercepts, iterations) in cases {
        let settings = LogisticSettings {
            reg_param: reg,
            elastic_net_param: alpha,
            ..LogisticSettings::default()
        };
        let fit = fit_logistic(&shard, &settings, &mut Alone).unwrap();
        assert!(fit.multinomial);
        assert!(
            close(&fit.coefficient_matrix, &coefficients, 1e-8),
            "reg {reg}: {fit:?}"
        );
        assert!(close(&fit.intercept_vector, &intercepts, 1e-8), "reg {reg}: {fit:?}");
        assert_eq!(fit.solved.unwrap().total_iterations, iterations);
    }
}

/// A `LinearRegression` case: (fitIntercept, regParam, elasticNetParam, standardization, solver) → intercept,
/// coefficients, iterations.
type LinearCase = ((bool, f64, f64, bool, LinearSolver), f64, [f64; 2], usize);

#[rustfmt::skip]
const LINEAR_CASES: [LinearCase; 12] = [
    ((true, 0.0, 0.0, true, LinearSolver::Normal), 18.08000000000135, [6.080000000000795, -0.6000000000002824], 0),
    ((true, 0.0, 0.0, true, LinearSolver::LBfgs), 18.08000047325232, [6.080000255463001, -0.6000000946325309], 6),
    ((true, 0.1, 0.0, true, LinearSolver::Normal), 14.06462017004917, [3.565796260621999, 0.26959493352950314], 0),
    ((true, 0.1, 0.0, true, LinearSolver::LBfgs), 13.831628298392399, [3.4055575918682908, 0.32281312671836726], 6),
    ((true, 1.0, 0.0, false, LinearSolver::Normal), 10.123799635095025, [0.9708558425346043, 1.1475469884457468], 0),
    ((true, 0.5, 0.5, true, LinearSolver::Normal), 13.814425122875313, [2.7220249169075363, 0.45591586954900154], 5),
    ((true, 0.5, 0.5, true, LinearSolver::LBfgs), 13.845421654940196, [2.5894137779338164, 0.4784375758838625], 5),
    ((true, 0.5, 1.0, false, LinearSolver::Normal), 8.865671173449744, [0.0, 1.4552239256298325], 12),
    ((false, 0.0, 0.0, true, LinearSolver::Normal), 0.0, [-3.7271214642262773, 3.0099833610648896], 0),
    ((false, 0.0, 0.0, true, LinearSolver::LBfgs), 0.0, [-3.727121465042623, 3.009983361037011], 9),
    ((false, 1.0, 0.0, false, LinearSolver::LBfgs), 0.0, [-1.7120795268107112, 2.5965723969193797], 8),
    ((false, 0.5, 1.0, false, LinearSolver::Normal), 0.0, [-0.8164968492131917, 2.4145117347124048], 24),
];

#[test]
fn linear_regression_matches_spark_on_both_solvers() {
    let shard = shard_of(&L);
    for ((fit_intercept, reg, alpha, standardization, solver), intercept, coefficients, iterations) in LINEAR_CASES {
        let settings = LinearSettings {
            fit_intercept,
            reg_param: reg,
            elastic_net_param: alpha,
            standardization,
            solver,
            ..LinearSettings::default()
        };
        let fit = fit_linear(&shard, &settings, &mut Alone).unwrap();
        let case = format!("{settings:?}: {fit:?}");
        assert!(close(&fit.coefficients, &coefficients, 1e-7), "{case}");
        assert!(close(&[fit.intercept], &[intercept], 1e-7), "{case}");
        assert_eq!(fit.solved.total_iterations, iterations, "{case}");
    }
}

#[test]
fn a_singular_gram_matrix_falls_back_to_lbfgs_as_spark_does() {
    // A constant first feature: Cholesky fails, L-BFGS finds [0, 1.1] and intercept 1.1 in 2 iterations.
    let rows = [
        (1., 1., [1., 0.]),
        (3., 1., [1., 1.]),
        (2., 1., [1., 2.]),
        (5., 1., [1., 3.]),
    ];
    let fit = fit_linear(&shard_of(&rows), &LinearSettings::default(), &mut Alone).unwrap();
    assert!(
        close(&fit.coefficients, &[0.0, 1.1], 1e-9) && (fit.intercept - 1.1).abs() < 1e-9,
        "{fit:?}"
    );
    assert_eq!(fit.solved.total_iterations, 2);
}

#[test]
fn a_constant_label_is_its_own_intercept_and_a_single_class_is_certain() {
    let rows = [(4., 1., [0., 1.]), (4., 1., [1., 2.]), (4., 1., [2., 0.])];
    let fit = fit_linear(&shard_of(&rows), &LinearSettings::default(), &mut Alone).unwrap();
    assert_eq!((fit.coefficients, fit.intercept), (vec![0.0, 0.0], 4.0));
    let ones = [(1., 1., [0., 1.]), (1., 1., [1., 2.])];
    let fit = fit_logistic(&shard_of(&ones), &LogisticSettings::default(), &mut Alone).unwrap();
    assert_eq!(fit.intercept_vector, vec![f64::INFINITY]);
    assert!(fit.solved.is_none());
}

#[test]
fn a_label_that_is_not_a_class_index_is_named_with_its_row() {
    let rows = [(0., 1., [0., 1.]), (1.5, 1., [1., 2.])];
    let error = fit_logistic(&shard_of(&rows), &LogisticSettings::default(), &mut Alone).unwrap_err();
    assert_eq!(error.to_string(), "row 1: label 1.5 is not a class index (0, 1, 2, …)");
}

#[test]
fn fits_split_over_ranks_agree_with_one_rank() {
    let whole = three_classes(true);
    let shards: Vec<Shard> = (0..3)
        .map(|r| {
            let rows: Vec<usize> = (0..whole.rows()).filter(|i| i % 3 == r).collect();
            let features = rows.iter().flat_map(|i| whole.row(*i).to_vec()).collect();
            let labels = rows.iter().map(|i| whole.label(*i)).collect();
            let weights = rows.iter().map(|i| whole.weight(*i)).collect();
            Shard::new(3, features, labels, Some(weights)).unwrap()
        })
        .collect();
    let settings = LogisticSettings {
        reg_param: 0.01,
        ..LogisticSettings::default()
    };
    let alone = fit_logistic(&whole, &settings, &mut Alone).unwrap();
    let split = on_threads(&shards, |shard, ranks| fit_logistic(shard, &settings, ranks).unwrap());
    assert!(
        split.windows(2).all(|w| w[0] == w[1]),
        "every rank ends with the same fit"
    );
    assert!(close(&split[0].coefficient_matrix, &alone.coefficient_matrix, 1e-9));
    let linear = LinearSettings {
        solver: LinearSolver::LBfgs,
        ..LinearSettings::default()
    };
    let alone = fit_linear(&whole, &linear, &mut Alone).unwrap();
    let split = on_threads(&shards, |shard, ranks| fit_linear(shard, &linear, ranks).unwrap());
    assert!(close(&split[2].coefficients, &alone.coefficients, 1e-9));
}
