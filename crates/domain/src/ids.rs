//! Typed identifiers. Every id is a lower-case UUID on the wire; a typed id can only be built
//! from a well-formed one, so a malformed id never reaches a store.

use std::fmt;
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            /// Wraps an id produced by the id generator or read back from storage.
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// Parses the textual form; `None` when it is not a UUID.
            pub fn parse(raw: &str) -> Option<Self> {
                let raw = raw.trim();
                // Only the canonical hyphenated form is an id on the wire.
                if raw.len() != 36 {
                    return None;
                }
                Uuid::parse_str(raw).ok().map(Self)
            }

            /// The underlying UUID.
            pub const fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }
    };
}

id_type!(
    /// A subaccount: the tenant every other resource belongs to.
    SubaccountId
);
id_type!(
    /// The merchant a subaccount belongs to.
    MerchantId
);
id_type!(
    /// A receiver (a person who is paid).
    ReceiverId
);
id_type!(
    /// A receiver account (a payout destination).
    ReceiverAccountId
);
id_type!(
    /// A payout.
    PayoutId
);
id_type!(
    /// A batch of one subaccount's payouts in one asset (`batch_id`; the reference is
    /// `BATCH_<id>`).
    BatchId
);
id_type!(
    /// An API credential (the row behind an API key).
    ApiKeyId
);
id_type!(
    /// An outbox event; also the `webhook-id` of its deliveries.
    EventId
);
id_type!(
    /// A ledger entry.
    LedgerEntryId
);
id_type!(
    /// A bank file of a production rail.
    RailFileId
);
id_type!(
    /// A fee template (`feetemplate_id`).
    FeeTemplateId
);
id_type!(
    /// The fee group a fee template belongs to (`feegroup_id`).
    FeeGroupId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_canonical_uuids_and_prints_lower_case() {
        let id = ReceiverId::parse("6F9619FF-8B86-4011-B42D-00C04FC964FF");
        assert_eq!(
            id.map(|id| id.to_string()).as_deref(),
            Some("6f9619ff-8b86-4011-b42d-00c04fc964ff")
        );
    }

    #[test]
    fn rejects_everything_else() {
        for raw in [
            "",
            "abc",
            "6f9619ff8b864011b42d00c04fc964ff",
            "{6f9619ff-8b86-4011-b42d-00c04fc964ff}",
            "6f9619ff-8b86-4011-b42d-00c04fc964fg",
            "ééééééééééééééééééééééééééééééééééé",
        ] {
            assert_eq!(ReceiverId::parse(raw), None, "{raw}");
        }
    }
}
id_type!(
    /// A file read from a production rail's inbound directory.
    InboundFileId
);
id_type!(
    /// One line of what an inbound bank file said.
    BankReportId
);
id_type!(
    /// A person who signs in to the operator console.
    OperatorId
);
id_type!(
    /// A row of the audit log.
    AuditEntryId
);
