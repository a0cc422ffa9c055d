-- Hyperparameter tuning as BigQuery ML spells it, on the German credit data: 8 trials of an MLP, two at a
-- time (each its own two-worker barrier stage), the learning rate drawn on a log scale, the layers and the
-- dropout from candidates. Every trial is scored on the held-out rows; the best by ROC AUC is the model.
CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv'
OPTIONS ('format.has_header' 'true');

CREATE OR REPLACE MODEL credit_tuned
OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['class'],
         num_trials = 8, max_parallel_trials = 2,
         learn_rate = HPARAM_RANGE(0.0001, 0.01),
         hidden_units = HPARAM_CANDIDATES([STRUCT([16]), STRUCT([32, 16]), STRUCT([64, 32])]),
         dropout = HPARAM_CANDIDATES([0.0, 0.1, 0.3]),
         max_iterations = 20, batch_size = 32, workers = 2, seed = 7,
         data_split_method = 'random', data_split_eval_fraction = 0.2, data_split_seed = 42)
AS SELECT * FROM credit;

SELECT trial_id, hyperparameters.learn_rate AS learn_rate, hyperparameters.hidden_units AS hidden_units,
       hyperparameters.dropout AS dropout, hparam_tuning_evaluation_metrics.roc_auc AS roc_auc,
       eval_loss, start_seconds, seconds, is_optimal
FROM ML.TRIAL_INFO(MODEL credit_tuned) ORDER BY trial_id;
