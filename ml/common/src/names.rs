//! The closest of a list of names to one that is not there, for errors that say what the user may have meant
//! (an option, a function, a column), as DataFusion suggests a function's name.

use strsim::levenshtein;

/// The candidate closest to `name` (ignoring case) in edit distance, when it is close enough to be a typo: at
/// most a third of the longer name's letters apart, and at least one letter kept.
///
/// ```
/// use hearth_common::names::closest;
/// assert_eq!(closest("num_cluster", ["num_clusters", "num_trials", "seed"]), Some("num_clusters"));
/// assert_eq!(closest("learning_rate", ["seed", "tol"]), None);
/// ```
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = name.to_lowercase();
    candidates
        .into_iter()
        .map(|candidate| (levenshtein(&wanted, &candidate.to_lowercase()), candidate))
        .filter(|(distance, candidate)| {
            let longer = wanted.chars().count().max(candidate.chars().count());
            *distance > 0 && *distance < longer && *distance * 3 <= longer
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// `" (did you mean X?)"` for the [`closest`] candidate, or nothing: the end of an error naming `name`.
///
/// ```
/// use hearth_common::names::did_you_mean;
/// assert_eq!(did_you_mean("ML.PREDCT", ["ML.PREDICT", "ML.EVALUATE"]), " (did you mean ML.PREDICT?)");
/// assert_eq!(did_you_mean("x", ["ML.PREDICT"]), "");
/// ```
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates).map_or_else(String::new, |close| format!(" (did you mean {close}?)"))
}
