//! What a run of labels holds, gathered as rows are written so that a shard on disk can be judged against a
//! loss without reading it again.

/// The labels of a run of rows, as far as a loss cares: the first row whose label is not finite, the first that
/// is not a class index (a non-negative whole number), the first that is neither 0 nor 1, and the first row of the
/// largest class index. Rows count from the run's first.
///
/// ```
/// use hearth_torch::data::LabelSummary;
///
/// let first = LabelSummary::of(&[0.0, 2.0, 1.0], 0);
/// let later = LabelSummary::of(&[0.5, 2.0], 3);
/// let all = first.then(later);
/// assert_eq!(all.largest_class, Some((1, 2.0)));
/// assert_eq!(all.first_not_class, Some((3, 0.5)));
/// assert_eq!(all.first_not_binary, Some((1, 2.0)));
/// assert_eq!(all.first_not_finite, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LabelSummary {
    /// The first row whose label is NaN or infinite, and its label.
    pub first_not_finite: Option<(usize, f32)>,
    /// The first row whose label is not a non-negative whole number, and its label.
    pub first_not_class: Option<(usize, f32)>,
    /// The first row whose label is neither 0 nor 1, and its label.
    pub first_not_binary: Option<(usize, f32)>,
    /// The first row holding the largest label among those that are class indices, and that label.
    pub largest_class: Option<(usize, f32)>,
}

impl LabelSummary {
    /// The summary of `labels`, the first of which is row `first_row`.
    pub fn of(labels: &[f32], first_row: usize) -> Self {
        let mut summary = Self::default();
        for (offset, &label) in labels.iter().enumerate() {
            let row = Some((first_row + offset, label));
            if !label.is_finite() {
                summary.first_not_finite = summary.first_not_finite.or(row);
            }
            if label >= 0.0 && label.fract() == 0.0 {
                if summary.largest_class.is_none_or(|(_, largest)| label > largest) {
                    summary.largest_class = row;
                }
            } else {
                summary.first_not_class = summary.first_not_class.or(row);
            }
            if label != 0.0 && label != 1.0 {
                summary.first_not_binary = summary.first_not_binary.or(row);
            }
        }
        summary
    }

    /// The summary of this run followed by `later`.
    pub fn then(self, later: Self) -> Self {
        let largest_class = match (self.largest_class, later.largest_class) {
            (Some(earlier), Some(other)) if other.1 > earlier.1 => Some(other),
            (earlier, other) => earlier.or(other),
        };
        Self {
            first_not_finite: self.first_not_finite.or(later.first_not_finite),
            first_not_class: self.first_not_class.or(later.first_not_class),
            first_not_binary: self.first_not_binary.or(later.first_not_binary),
            largest_class,
        }
    }
}
