//! Which answers of a bank or partner may follow which (docs/RAILS.md, Results and returns): one
//! table per rail, over where a payment (or a whole file) stands and what the rail says of it.
//!
//! The table decides, for every pair, whether the answer is applied, was so already, or
//! contradicts what happened (an anomaly: recorded with the document it contradicts, shown to
//! operators, and never applied). Only two answers move money after a payout was sent: a
//! settlement posts its hold, and a rejection or return before settlement releases it. After
//! settlement only a real return (on a rail whose scheme has returns) gives the amount back: a
//! rejection, or a "return" on a rail without returns, of a settled payment is an anomaly.
//!
//! Each rail states its [`AnswerRules`] once; [`AnswerRules::verdict`] is an exhaustive match, so
//! a new state or answer does not compile until every rail's decision for it is stated.

use strum::VariantArray;

/// Where a payment, or a whole file, stands at its rail as payoutd knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum RailState {
    /// Sent (the payout `in_progress`, its file `generated` or `uploaded`), no answer yet.
    Sent,
    /// The bank accepted it for processing (its file `acknowledged`); not paid yet.
    Acknowledged,
    /// Paid (the payout `successful`, by a settlement report or on its file's effective date).
    Settled,
    /// Refused before it was paid (the payout `failed` by a rejection, or its file
    /// `rejected`).
    Rejected,
    /// Sent back by the receiving bank (the payout `failed` by a return).
    Returned,
}

impl RailState {
    /// Every state.
    pub const ALL: &'static [RailState] = Self::VARIANTS;

    /// The name used in docs and anomaly messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Acknowledged => "acknowledged",
            Self::Settled => "settled",
            Self::Rejected => "rejected",
            Self::Returned => "returned",
        }
    }
}

/// What a bank's or partner's report says of a payment or a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum RailAnswer {
    /// Accepted for processing (a file acknowledgement, pain.002 `ACTC`/`ACCP`).
    Acknowledged,
    /// Paid (pain.002 `ACSC`, an Interac `deposited`).
    Settled,
    /// Refused before payment (pain.002 `RJCT`, an Interac `declined`/`expired`/`failed`, a
    /// rejected file).
    Rejected,
    /// Paid and sent back by the receiving bank (a NACHA return, an ABA or Standard 005 returned
    /// item, an IB4B dishonour).
    Returned,
}

impl RailAnswer {
    /// Every answer.
    pub const ALL: &'static [RailAnswer] = Self::VARIANTS;

    /// Where the answer puts what it is applied to.
    pub const fn state(self) -> RailState {
        match self {
            Self::Acknowledged => RailState::Acknowledged,
            Self::Settled => RailState::Settled,
            Self::Rejected => RailState::Rejected,
            Self::Returned => RailState::Returned,
        }
    }

    /// The name used in docs and anomaly messages.
    pub const fn as_str(self) -> &'static str {
        self.state().as_str()
    }
}

/// What payoutd does with an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum AnswerVerdict {
    /// It is applied: what it concerns moves to the answer's state.
    Apply,
    /// It says what is so already, or what is behind what is so (an acknowledgement of a paid
    /// payment): recorded, nothing applied.
    Repeated,
    /// It contradicts what happened: recorded with the document it contradicts, shown to
    /// operators, nothing applied.
    Anomaly,
}

/// Whether a rail's scheme sends paid payments back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum Returns {
    /// The receiving bank can send a paid payment back (ACH, BECS, Standard 005, IB4B, SEPA
    /// R-transactions): a return after settlement gives the amount back.
    AfterSettlement,
    /// Nothing comes back once paid (Interac e-Transfer: a deposited transfer is final; a
    /// transfer that is not deposited is rejected, never returned).
    Never,
}

/// How a rail names the documents it sends payoutd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum ReportNames {
    /// Each name is a document's identity (the Interac partner's `report_id`): the same name
    /// with other content is an altered document, an anomaly, never a new report.
    Unique,
    /// A drop directory, where a bank may reuse a file name for a new file: a name with other
    /// content is a new file.
    Reusable,
}

/// The answer rules of one rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AnswerRules {
    /// Whether its scheme has returns.
    pub returns: Returns,
    /// How it names its documents.
    pub names: ReportNames,
}

impl AnswerRules {
    /// The rules of a bank file rail (NACHA, pain.001, ABA, Standard 005, IB4B): returns after
    /// settlement, files named by the bank.
    pub const FILE_RAIL: Self = Self {
        returns: Returns::AfterSettlement,
        names: ReportNames::Reusable,
    };

    /// The verdict on `answer` for something in `state`. Total: every pair is decided here.
    pub const fn verdict(self, state: RailState, answer: RailAnswer) -> AnswerVerdict {
        use AnswerVerdict::{Anomaly, Apply, Repeated};
        let returned = match self.returns {
            Returns::AfterSettlement => Apply,
            Returns::Never => Anomaly,
        };
        match (state, answer) {
            // Nothing answered yet: any answer the rail can give is taken as it comes.
            (
                RailState::Sent,
                RailAnswer::Acknowledged | RailAnswer::Settled | RailAnswer::Rejected,
            ) => Apply,
            (RailState::Sent, RailAnswer::Returned) => returned,
            // Accepted, not paid: it may still be paid, refused or (before the payout's effective
            // date was reached) returned.
            (RailState::Acknowledged, RailAnswer::Acknowledged) => Repeated,
            (RailState::Acknowledged, RailAnswer::Settled | RailAnswer::Rejected) => Apply,
            (RailState::Acknowledged, RailAnswer::Returned) => returned,
            // Paid: only a real return undoes it.
            (RailState::Settled, RailAnswer::Acknowledged | RailAnswer::Settled) => Repeated,
            (RailState::Settled, RailAnswer::Rejected) => Anomaly,
            (RailState::Settled, RailAnswer::Returned) => returned,
            // Refused: the money never left, and nothing says otherwise.
            (RailState::Rejected, RailAnswer::Rejected) => Repeated,
            (
                RailState::Rejected,
                RailAnswer::Acknowledged | RailAnswer::Settled | RailAnswer::Returned,
            ) => Anomaly,
            // Came back: the same return again is nothing new; a later acknowledgement is stale.
            (RailState::Returned, RailAnswer::Acknowledged) => Repeated,
            (RailState::Returned, RailAnswer::Returned) => match self.returns {
                Returns::AfterSettlement => Repeated,
                Returns::Never => Anomaly,
            },
            (RailState::Returned, RailAnswer::Settled | RailAnswer::Rejected) => Anomaly,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use AnswerVerdict::{Anomaly as X, Apply as A, Repeated as R};

    /// The table of a rail with returns, by state (rows) and answer (columns: acknowledged,
    /// settled, rejected, returned), written out in full.
    const WITH_RETURNS: [(RailState, [AnswerVerdict; 4]); 5] = [
        (RailState::Sent, [A, A, A, A]),
        (RailState::Acknowledged, [R, A, A, A]),
        (RailState::Settled, [R, R, X, A]),
        (RailState::Rejected, [X, X, R, X]),
        (RailState::Returned, [R, X, X, R]),
    ];

    /// The table of a rail without returns.
    const WITHOUT_RETURNS: [(RailState, [AnswerVerdict; 4]); 5] = [
        (RailState::Sent, [A, A, A, X]),
        (RailState::Acknowledged, [R, A, A, X]),
        (RailState::Settled, [R, R, X, X]),
        (RailState::Rejected, [X, X, R, X]),
        (RailState::Returned, [R, X, X, X]),
    ];

    const COLUMNS: [RailAnswer; 4] = [
        RailAnswer::Acknowledged,
        RailAnswer::Settled,
        RailAnswer::Rejected,
        RailAnswer::Returned,
    ];

    fn check(rules: AnswerRules, table: &[(RailState, [AnswerVerdict; 4]); 5]) {
        assert_eq!(table.len(), RailState::ALL.len());
        assert_eq!(COLUMNS.len(), RailAnswer::ALL.len());
        for state in RailState::ALL {
            let (_, row) = table
                .iter()
                .find(|(s, _)| s == state)
                .unwrap_or_else(|| panic!("{state:?} has no row"));
            for (answer, expected) in COLUMNS.iter().zip(row) {
                assert_eq!(
                    rules.verdict(*state, *answer),
                    *expected,
                    "{state:?} answered {answer:?}"
                );
            }
        }
    }

    #[test]
    fn every_state_and_answer_of_a_rail_with_returns() {
        for names in ReportNames::VARIANTS {
            check(
                AnswerRules {
                    returns: Returns::AfterSettlement,
                    names: *names,
                },
                &WITH_RETURNS,
            );
        }
    }

    #[test]
    fn every_state_and_answer_of_a_rail_without_returns() {
        for names in ReportNames::VARIANTS {
            check(
                AnswerRules {
                    returns: Returns::Never,
                    names: *names,
                },
                &WITHOUT_RETURNS,
            );
        }
    }

    #[test]
    fn after_settlement_only_a_real_return_is_applied() {
        for returns in Returns::VARIANTS {
            let rules = AnswerRules {
                returns: *returns,
                names: ReportNames::Unique,
            };
            let applied: Vec<_> = RailAnswer::ALL
                .iter()
                .filter(|a| rules.verdict(RailState::Settled, **a) == AnswerVerdict::Apply)
                .collect();
            match returns {
                Returns::AfterSettlement => assert_eq!(applied, [&RailAnswer::Returned]),
                Returns::Never => assert!(applied.is_empty()),
            }
        }
    }

    #[test]
    fn an_answer_already_so_is_never_applied_again() {
        for returns in Returns::VARIANTS {
            let rules = AnswerRules {
                returns: *returns,
                names: ReportNames::Reusable,
            };
            for answer in RailAnswer::ALL {
                assert_ne!(
                    rules.verdict(answer.state(), *answer),
                    AnswerVerdict::Apply,
                    "{answer:?} twice ({returns:?})"
                );
            }
        }
    }
}
