//! Each rail's answer table, written out in full: for every state a payment (or file) can be in
//! and every answer its bank or partner can give, whether payoutd applies it (`A`), records it as
//! already so (`R`) or records it as an anomaly for operators (`X`). A settled payment's money
//! moves only by a real return, on a rail whose scheme has returns.

use adapters_rails::{aba, cpa005, ib4b, interac, nacha, sepa};
use domain::rail::answers::{AnswerRules, AnswerVerdict, RailAnswer, RailState, ReportNames};

use AnswerVerdict::{Anomaly as X, Apply as A, Repeated as R};

/// Columns: acknowledged, settled, rejected, returned.
const ANSWERS: [RailAnswer; 4] = [
    RailAnswer::Acknowledged,
    RailAnswer::Settled,
    RailAnswer::Rejected,
    RailAnswer::Returned,
];

type Table = [(RailState, [AnswerVerdict; 4]); 5];

/// NACHA, pain.001, ABA, Standard 005 and IB4B: returns come after settlement.
const BANK_FILE: Table = [
    (RailState::Sent, [A, A, A, A]),
    (RailState::Acknowledged, [R, A, A, A]),
    (RailState::Settled, [R, R, X, A]),
    (RailState::Rejected, [X, X, R, X]),
    (RailState::Returned, [R, X, X, R]),
];

/// Interac e-Transfer: a deposit is final; nothing is returned.
const INTERAC: Table = [
    (RailState::Sent, [A, A, A, X]),
    (RailState::Acknowledged, [R, A, A, X]),
    (RailState::Settled, [R, R, X, X]),
    (RailState::Rejected, [X, X, R, X]),
    (RailState::Returned, [R, X, X, X]),
];

fn check(rail: &str, rules: AnswerRules, table: &Table) {
    assert_eq!(table.len(), RailState::ALL.len(), "{rail}: a row per state");
    for state in RailState::ALL {
        let (_, row) = table
            .iter()
            .find(|(s, _)| s == state)
            .unwrap_or_else(|| panic!("{rail}: no row for {state:?}"));
        for (answer, expected) in ANSWERS.iter().zip(row) {
            assert_eq!(
                rules.verdict(*state, *answer),
                *expected,
                "{rail}: {state:?} answered {answer:?}"
            );
        }
    }
}

#[test]
fn every_rails_table_over_every_state_and_answer() {
    assert_eq!(ANSWERS.len(), RailAnswer::ALL.len());
    for (rail, rules) in [
        ("usd/ach (NACHA)", nacha::ANSWERS),
        ("eur/sepa (pain.001)", sepa::ANSWERS),
        ("aud/direct-entry (ABA)", aba::ANSWERS),
        ("cad/eft (Standard 005)", cpa005::ANSWERS),
        ("nzd/direct-credit (IB4B)", ib4b::ANSWERS),
    ] {
        check(rail, rules, &BANK_FILE);
        assert_eq!(rules.names, ReportNames::Reusable, "{rail}");
    }
    check("cad/digital (Interac)", interac::ANSWERS, &INTERAC);
    assert_eq!(interac::ANSWERS.names, ReportNames::Unique);
}
