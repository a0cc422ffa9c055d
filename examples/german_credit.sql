-- hearth's main job in SQL: the German Credit data split 80/20, the same preprocessing and MLP as
-- `./dev run` (StringIndexer → OneHotEncoder → VectorAssembler → StandardScaler, then an MLP 32-16 with
-- dropout 0.1 on two workers, seed 7), evaluated on the held-out rows. The same seeds give the same metrics.
--
--   ./dev cargo run -p hearth-cli -- sql examples/german_credit.sql

CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv'
OPTIONS ('format.has_header' 'true');

CREATE OR REPLACE MODEL credit_risk
OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['class'],
         hidden_units = [32, 16], dropout = 0.1, optimizer = 'adam', learn_rate = 0.001,
         max_iterations = 20, batch_size = 32, seed = 7, workers = 2,
         data_split_method = 'random', data_split_eval_fraction = 0.2, data_split_seed = 42)
TRANSFORM (
  ML.STANDARD_SCALER(
    ML.VECTOR_ASSEMBLER(
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(checking_status, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(credit_history, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(purpose, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(savings_status, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(employment, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(personal_status, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(other_parties, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(property_magnitude, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(other_payment_plans, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(housing, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(job, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(own_telephone, handle_invalid => 'keep') OVER ()) OVER (),
      ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(foreign_worker, handle_invalid => 'keep') OVER ()) OVER (),
      duration, credit_amount, installment_commitment, residence_since, age, existing_credits, num_dependents),
    with_mean => TRUE) OVER () AS features,
  class)
AS SELECT * FROM credit;

SELECT epoch, loss, accuracy, learning_rate FROM ML.TRAINING_INFO(MODEL credit_risk) WHERE epoch IN (1, 5, 10, 15, 20);

SELECT * FROM ML.EVALUATE(MODEL credit_risk);

SELECT purpose, duration, credit_amount, class, predicted_class
FROM ML.PREDICT(MODEL credit_risk, (SELECT * FROM credit))
ORDER BY credit_amount DESC
LIMIT 5;
