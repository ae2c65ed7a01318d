//! Receiver and KYC statuses, their numeric filter codes (those of the provider's API) and
//! their transitions: a new receiver is `pending`/`pending`; KYC `completed` makes it `active`, KYC
//! `failed` makes it `failed`. Nothing else moves a receiver in this version.

use crate::coded_status::coded_status;

coded_status!(
    /// Where a receiver is in its life.
    ReceiverStatus {
        Creating = (0, "creating"),
        Pending = (1, "pending"),
        Active = (2, "active"),
        Inactive = (3, "inactive"),
        Failed = (4, "failed"),
    }
);

coded_status!(
    /// Where a receiver's identity check is.
    KycStatus {
        Pending = (0, "pending"),
        Completed = (1, "completed"),
        Failed = (2, "failed"),
    }
);

/// What the KYC provider decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KycOutcome {
    /// Identity verified.
    Completed,
    /// Identity could not be verified.
    Failed,
}

/// The statuses a receiver moves to when a KYC outcome arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KycTransition {
    /// New receiver status.
    pub status: ReceiverStatus,
    /// New KYC status.
    pub kyc_status: KycStatus,
}

/// A KYC outcome arrived for a receiver whose KYC is already decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("KYC is already {from:?}; outcome {outcome:?} cannot apply")]
pub struct IllegalKycTransition {
    /// The KYC status the receiver has.
    pub from: KycStatus,
    /// The outcome that arrived.
    pub outcome: KycOutcome,
}

impl KycStatus {
    /// The transition a KYC outcome causes. Only a `pending` check can be decided, and only once.
    pub fn apply(self, outcome: KycOutcome) -> Result<KycTransition, IllegalKycTransition> {
        match (self, outcome) {
            (KycStatus::Pending, KycOutcome::Completed) => Ok(KycTransition {
                status: ReceiverStatus::Active,
                kyc_status: KycStatus::Completed,
            }),
            (KycStatus::Pending, KycOutcome::Failed) => Ok(KycTransition {
                status: ReceiverStatus::Failed,
                kyc_status: KycStatus::Failed,
            }),
            (from, outcome) => Err(IllegalKycTransition { from, outcome }),
        }
    }
}

impl ReceiverStatus {
    /// Whether a receiver in this status may be paid.
    pub const fn can_be_paid(self) -> bool {
        matches!(self, ReceiverStatus::Active)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_seed() {
        let receiver: Vec<_> = ReceiverStatus::ALL
            .iter()
            .map(|s| (s.code(), s.as_str()))
            .collect();
        assert_eq!(
            receiver,
            [
                (0, "creating"),
                (1, "pending"),
                (2, "active"),
                (3, "inactive"),
                (4, "failed")
            ]
        );
        let kyc: Vec<_> = KycStatus::ALL
            .iter()
            .map(|s| (s.code(), s.as_str()))
            .collect();
        assert_eq!(kyc, [(0, "pending"), (1, "completed"), (2, "failed")]);
    }

    #[test]
    fn filter_codes_parse_strictly() {
        assert_eq!(
            ReceiverStatus::parse_code("2"),
            Some(ReceiverStatus::Active)
        );
        assert_eq!(KycStatus::parse_code("2"), Some(KycStatus::Failed));
        for bad in ["5", "02", "-1", "", "a", "active"] {
            assert_eq!(ReceiverStatus::parse_code(bad), None, "{bad}");
        }
        assert_eq!(KycStatus::parse_code("3"), None);
    }

    #[test]
    fn every_kyc_transition() {
        for from in KycStatus::ALL {
            for outcome in [KycOutcome::Completed, KycOutcome::Failed] {
                let result = from.apply(outcome);
                match (from, outcome) {
                    (KycStatus::Pending, KycOutcome::Completed) => assert_eq!(
                        result,
                        Ok(KycTransition {
                            status: ReceiverStatus::Active,
                            kyc_status: KycStatus::Completed
                        })
                    ),
                    (KycStatus::Pending, KycOutcome::Failed) => assert_eq!(
                        result,
                        Ok(KycTransition {
                            status: ReceiverStatus::Failed,
                            kyc_status: KycStatus::Failed
                        })
                    ),
                    _ => assert_eq!(
                        result,
                        Err(IllegalKycTransition {
                            from: *from,
                            outcome
                        })
                    ),
                }
            }
        }
    }

    #[test]
    fn only_active_receivers_can_be_paid() {
        let payable: Vec<_> = ReceiverStatus::ALL
            .iter()
            .filter(|s| s.can_be_paid())
            .collect();
        assert_eq!(payable, [&ReceiverStatus::Active]);
    }
}
