-- What a BigQuery ML user reaches for after the first model, on the German credit data: a DNN that stops
-- when its held-out loss stops improving, its confusion matrix and ROC curve as tables, which columns drive
-- its predictions (integrated gradients), and a linear regression.
--
--   ./dev cargo run -p hearth-cli -- sql examples/credit_explained.sql

CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv'
OPTIONS ('format.has_header' 'true');

CREATE OR REPLACE MODEL credit_dnn
OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['class'], hidden_units = [32],
         learn_rate = 0.003, batch_size = 32, max_iterations = 40, workers = 2, seed = 4,
         data_split_method = 'random', data_split_eval_fraction = 0.3, data_split_seed = 1,
         early_stop = TRUE, min_rel_progress = 0.01)
AS SELECT duration, credit_amount, age, purpose, housing, savings_status, checking_status, class FROM credit;

SELECT epoch, loss, validation_loss, validation_accuracy FROM ML.TRAINING_INFO(MODEL credit_dnn) ORDER BY epoch;

SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_dnn) ORDER BY expected_label DESC;

SELECT * FROM ML.ROC_CURVE(MODEL credit_dnn, TABLE credit, GENERATE_ARRAY(0.1, 0.9, 0.2)) ORDER BY threshold;

SELECT * FROM ML.GLOBAL_EXPLAIN(MODEL credit_dnn) ORDER BY attribution DESC;

SELECT purpose, credit_amount, predicted_class, top_feature_attributions, prediction_value
FROM ML.EXPLAIN_PREDICT(MODEL credit_dnn, (SELECT * FROM credit LIMIT 3), STRUCT(3 AS top_k_features));

CREATE OR REPLACE MODEL credit_amount_lr
OPTIONS (model_type = 'linear_reg', input_label_cols = ['amount'],
         data_split_method = 'random', data_split_eval_fraction = 0.2)
AS SELECT duration, age, housing, credit_amount AS amount FROM credit;

SELECT * FROM ML.WEIGHTS(MODEL credit_amount_lr);

SELECT mean_absolute_error, mean_squared_error, r2_score FROM ML.EVALUATE(MODEL credit_amount_lr);

SHOW MODELS;
