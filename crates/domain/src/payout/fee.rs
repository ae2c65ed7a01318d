//! The fee rule (docs/API.md, `POST /api/payout/single`):
//! `max(fixed + round_half_up(amount × percentage / 100), min_amount)` in integer minor units,
//! charged on top of the amount.

use crate::money::{Fee, MinorUnits, Percentage};
use crate::subaccount::FeeTemplate;

/// The fee for `amount` under `template`; no template means no fee.
pub fn fee(amount: MinorUnits, template: Option<&FeeTemplate>) -> Fee {
    let Some(template) = template else {
        return Fee::ZERO;
    };
    let variable = percentage_of(amount.get(), template.percentage);
    // A template's parts are never negative (the operator command and the table's checks
    // refuse it), so neither is their sum.
    Fee::at_least_zero(
        template
            .fixed
            .saturating_add(variable)
            .max(template.min_amount),
    )
}

/// `round_half_up(amount × percentage / 100)`, exactly, in integers.
fn percentage_of(amount: i64, percentage: Percentage) -> i64 {
    // percentage is in ten-thousandths of a percent: amount × p / (100 × 10_000).
    let denominator: i128 = 100 * i128::from(Percentage::SCALE);
    let numerator = i128::from(amount) * i128::from(percentage.ten_thousandths());
    let rounded = (numerator + denominator / 2) / denominator;
    i64::try_from(rounded).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FeeGroupId, FeeTemplateId};
    use crate::money::Asset;
    use uuid::Uuid;

    fn template(fixed: i64, percentage: &str, min_amount: i64) -> FeeTemplate {
        FeeTemplate {
            id: FeeTemplateId::from_uuid(Uuid::from_u128(1)),
            group_id: FeeGroupId::from_uuid(Uuid::from_u128(2)),
            asset: Asset::Aud,
            fixed,
            percentage: Percentage::parse(percentage).unwrap_or_default(),
            min_amount,
        }
    }

    fn amount(cents: i64) -> MinorUnits {
        MinorUnits::new(cents).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fee, in minor units.
    fn fee(amount: MinorUnits, template: Option<&FeeTemplate>) -> i64 {
        super::fee(amount, template).get()
    }

    #[test]
    fn fixed_plus_percentage_or_the_minimum() {
        let t = template(30, "1.5", 50);
        assert_eq!(fee(amount(10_000), Some(&t)), 30 + 150);
        assert_eq!(
            fee(amount(100), Some(&t)),
            50,
            "30 + 2 is below the minimum"
        );
        assert_eq!(fee(amount(10_000), None), 0);
        assert_eq!(fee(amount(10_000), Some(&template(0, "0", 0))), 0);
    }

    #[test]
    fn rounds_half_up_exactly() {
        // 1 % of 50 cents is 0.5 -> 1; of 49 cents 0.49 -> 0; 2.5 % of 1 cent is 0.025 -> 0.
        assert_eq!(fee(amount(50), Some(&template(0, "1", 0))), 1);
        assert_eq!(fee(amount(49), Some(&template(0, "1", 0))), 0);
        assert_eq!(fee(amount(1), Some(&template(0, "2.5", 0))), 0);
        // 0.0001 % of 5_000_000 cents is 5 cents exactly; of 4_999_999 it is 4.999999 -> 5.
        assert_eq!(fee(amount(5_000_000), Some(&template(0, "0.0001", 0))), 5);
        assert_eq!(fee(amount(4_999_999), Some(&template(0, "0.0001", 0))), 5);
        assert_eq!(
            fee(amount(4_500_000), Some(&template(0, "0.0001", 0))),
            5,
            "4.5 rounds up"
        );
        assert_eq!(fee(amount(4_499_999), Some(&template(0, "0.0001", 0))), 4);
    }

    #[test]
    fn the_largest_amounts_do_not_overflow() {
        let max = amount(crate::money::MAX_AMOUNT);
        assert_eq!(
            fee(max, Some(&template(1_000_000_000_000, "100", 0))),
            2_000_000_000_000
        );
    }
}
