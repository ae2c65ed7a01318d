//! What one file of a format may hold, and the split of a batch's payouts into as many files
//! (parts) as those limits need (docs/RAILS.md, Limits of a file).
//!
//! Each format declares its [`FileLimits`] once, beside its writer; the file rail splits a
//! batch's payouts of a method with [`FileLimits::split`] before writing, so a cut-off with more
//! payouts than one file may hold writes several files, each within every limit, instead of
//! failing on a count or total field that cannot carry the number.

use std::ops::Range;

use crate::ids::PayoutId;

/// One file's limits, from the format's count and total fields (and, for formats without
/// such fields, the limits the bank or partner sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimits {
    /// The most payouts one file may carry.
    pub max_items: usize,
    /// The largest total of one file's credits, in minor units; `None` when no field of the
    /// format bounds it.
    pub max_total: Option<i64>,
    /// The most files one batch may be split into for the method (the part number must fit the
    /// identifiers built from it, e.g. a 35-character `MsgId`).
    pub max_parts: u32,
}

/// Why a batch's payouts cannot be split into files within the limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// One payout's amount alone is more than a file's total may be.
    #[error("payout {payout}: its amount {amount} is more than the {max_total} one file may total")]
    AmountOverFileTotal {
        /// The payout.
        payout: PayoutId,
        /// Its amount, minor units.
        amount: i64,
        /// The file's largest total.
        max_total: i64,
    },
    /// More files than the format can number for one batch.
    #[error("{parts} files would be needed; the format numbers at most {max_parts} per batch")]
    TooManyParts {
        /// The files the payouts need.
        parts: usize,
        /// The most the format allows.
        max_parts: u32,
    },
}

impl FileLimits {
    /// Limits that hold any batch in one file (tests, formats with no limit).
    pub const NONE: FileLimits = FileLimits {
        max_items: usize::MAX,
        max_total: None,
        max_parts: 1,
    };

    /// Splits payouts (each with its amount, in file order) into consecutive ranges, one per
    /// file: each range is as long as the limits allow, in order, so the same payouts in the
    /// same order always give the same split, and the split of a suffix continues the split of
    /// the whole.
    ///
    /// # Errors
    /// A payout whose amount alone is over `max_total`, or more parts than `max_parts`.
    pub fn split(
        &self,
        payouts: impl IntoIterator<Item = (PayoutId, i64)>,
    ) -> Result<Vec<Range<usize>>, SplitError> {
        let max_items = self.max_items.max(1);
        let mut parts = Vec::new();
        let (mut start, mut count, mut total) = (0usize, 0usize, 0i64);
        for (index, (payout, amount)) in payouts.into_iter().enumerate() {
            if let Some(max_total) = self.max_total
                && amount > max_total
            {
                return Err(SplitError::AmountOverFileTotal {
                    payout,
                    amount,
                    max_total,
                });
            }
            let over_total = self
                .max_total
                .is_some_and(|max| total.checked_add(amount).is_none_or(|t| t > max));
            if count > 0 && (count == max_items || over_total) {
                parts.push(start..index);
                (start, count, total) = (index, 0, 0);
            }
            count += 1;
            total = total.saturating_add(amount);
        }
        if count > 0 {
            parts.push(start..start + count);
        }
        if parts.len() > usize::try_from(self.max_parts).unwrap_or(usize::MAX) {
            return Err(SplitError::TooManyParts {
                parts: parts.len(),
                max_parts: self.max_parts,
            });
        }
        Ok(parts)
    }
}

#[cfg(test)]
// A split is a list of ranges: one file is a list of one range.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn payouts(amounts: &[i64]) -> Vec<(PayoutId, i64)> {
        amounts
            .iter()
            .enumerate()
            .map(|(i, a)| (PayoutId::from_uuid(Uuid::from_u128(i as u128 + 1)), *a))
            .collect()
    }

    fn limits(max_items: usize, max_total: Option<i64>) -> FileLimits {
        FileLimits {
            max_items,
            max_total,
            max_parts: 99,
        }
    }

    #[test]
    fn counts_at_the_limit_make_one_file_and_one_over_two() {
        let at = payouts(&[1; 5]);
        assert_eq!(limits(5, None).split(at.clone()), Ok([0..5].to_vec()));
        assert_eq!(limits(4, None).split(at), Ok(vec![0..4, 4..5]));
        assert_eq!(
            limits(2, None).split(payouts(&[1; 5])),
            Ok(vec![0..2, 2..4, 4..5])
        );
        assert_eq!(limits(3, None).split(Vec::new()), Ok(vec![]));
    }

    #[test]
    fn totals_at_the_limit_make_one_file_and_one_cent_over_two() {
        assert_eq!(
            limits(10, Some(100)).split(payouts(&[60, 40])),
            Ok([0..2].to_vec())
        );
        assert_eq!(
            limits(10, Some(100)).split(payouts(&[60, 41])),
            Ok(vec![0..1, 1..2])
        );
        // A payout of exactly the file total fits a file of its own.
        assert_eq!(
            limits(10, Some(100)).split(payouts(&[1, 100, 1])),
            Ok(vec![0..1, 1..2, 2..3])
        );
        // Totals that would overflow i64 start a new file rather than wrap.
        assert_eq!(
            limits(10, Some(i64::MAX)).split(payouts(&[i64::MAX, 1])),
            Ok(vec![0..1, 1..2])
        );
    }

    #[test]
    fn a_payout_over_the_file_total_and_too_many_parts_are_refused() {
        let over = payouts(&[5, 101]);
        assert_eq!(
            limits(10, Some(100)).split(over.clone()),
            Err(SplitError::AmountOverFileTotal {
                payout: over[1].0,
                amount: 101,
                max_total: 100,
            })
        );
        let three = FileLimits {
            max_items: 1,
            max_total: None,
            max_parts: 2,
        };
        assert_eq!(
            three.split(payouts(&[1, 1])).map(|p| p.len()),
            Ok(2),
            "exactly the parts allowed"
        );
        assert_eq!(
            three.split(payouts(&[1, 1, 1])),
            Err(SplitError::TooManyParts {
                parts: 3,
                max_parts: 2
            })
        );
    }

    #[test]
    fn the_split_of_a_suffix_continues_the_split_of_the_whole() {
        let all = payouts(&[30, 50, 40, 10, 90, 20, 20, 70]);
        let l = limits(3, Some(100));
        let whole = l.split(all.clone()).unwrap_or_default();
        assert_eq!(whole, vec![0..2, 2..4, 4..5, 5..7, 7..8]);
        for part in &whole {
            let rest = l
                .split(all[part.start..].iter().copied())
                .unwrap_or_default();
            let shifted: Vec<_> = whole
                .iter()
                .filter(|p| p.start >= part.start)
                .map(|p| p.start - part.start..p.end - part.start)
                .collect();
            assert_eq!(rest, shifted);
        }
    }
}
