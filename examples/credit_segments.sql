-- Customer segments with BigQuery ML's k-means, on the German credit data: every column of the query is a
-- feature (numbers standardized, strings one-hot encoded), four clusters by Spark's KMeans (k-means||).
CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv'
OPTIONS ('format.has_header' 'true');

CREATE OR REPLACE MODEL credit_segments
OPTIONS (model_type = 'kmeans', num_clusters = 4, seed = 1)
AS SELECT duration, credit_amount, age, housing FROM credit;

SELECT * FROM ML.EVALUATE(MODEL credit_segments);

SELECT centroid_id, feature, numerical_value, categorical_value
FROM ML.CENTROIDS(MODEL credit_segments) ORDER BY centroid_id, feature;

-- How many segments? Tuned as BigQuery ML tunes k-means: the number of clusters with the lowest Davies–Bouldin
-- index on the training rows.
CREATE OR REPLACE MODEL credit_segments_tuned
OPTIONS (model_type = 'kmeans', seed = 1, num_trials = 5, max_parallel_trials = 2,
         hparam_tuning_algorithm = 'grid_search', num_clusters = HPARAM_CANDIDATES([2, 3, 4, 5, 6]))
AS SELECT duration, credit_amount, age, housing FROM credit;

SELECT trial_id, hyperparameters.num_clusters AS num_clusters,
       hparam_tuning_evaluation_metrics.davies_bouldin_index AS davies_bouldin_index,
       hparam_tuning_evaluation_metrics.mean_squared_distance AS mean_squared_distance, is_optimal
FROM ML.TRIAL_INFO(MODEL credit_segments_tuned) ORDER BY trial_id;

SELECT centroid_id, count(*) AS customers, avg(CASE WHEN class = 'bad' THEN 1.0 ELSE 0.0 END) AS bad_share
FROM ML.PREDICT(MODEL credit_segments, (SELECT * FROM credit))
GROUP BY centroid_id ORDER BY centroid_id;
