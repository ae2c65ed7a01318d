//! The six payout methods (docs/ARCHITECTURE.md, Payout methods and account fields), each described
//! once: its wire name, the currency it pays in, and the fields of its accounts with their formats.
//!
//! Every property is an exhaustive `match` (or a table reached through one), so a new method
//! does not compile until all of them are stated; routes, the HTTP body reader, the OpenAPI
//! document and verify's one-method rule are derived from [`PayoutMethod::spec`].

use strum::VariantArray;

use crate::account::field::AccountField;
use crate::money::Asset;

/// How a receiver account is paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, VariantArray)]
pub enum PayoutMethod {
    /// Australian direct entry (BECS): BSB and account number, AUD.
    DirectEntry,
    /// US ACH: ABA routing number, account number and type, USD.
    Ach,
    /// Canadian EFT: routing number (institution and transit), account number and type, CAD.
    Eft,
    /// Canadian digital payment to an e-mail recipient, CAD.
    Digital,
    /// SEPA credit transfer: IBAN and BIC, EUR.
    Sepa,
    /// New Zealand direct credit: `BB-bbbb-AAAAAAA-SS(S)`, NZD.
    DirectCredit,
}

/// One payout method, described.
#[derive(Debug)]
pub struct MethodSpec {
    /// `method_name` on the wire.
    pub name: &'static str,
    /// The currency it pays in.
    pub asset: Asset,
    /// The account fields of its create body (besides `receiver_id`), in the order they are
    /// checked and reported.
    pub fields: &'static [FieldSpec],
}

/// One field of a method's accounts.
#[derive(Debug)]
pub struct FieldSpec {
    /// The field.
    pub field: AccountField,
    /// Whether a create body must carry it.
    pub required: bool,
    /// A regular expression every accepted value matches (a necessary condition: checksums and
    /// registries are checked besides), for the OpenAPI document; `None` where no pattern says
    /// anything useful.
    pub pattern: Option<&'static str>,
    /// What the field accepts, for the OpenAPI document.
    pub description: &'static str,
    /// A value the field's checks accept (checksums and registries included), for the
    /// OpenAPI document's examples.
    pub example: &'static str,
    /// A value the field's checks accept of the shortest length they accept (its stored form
    /// may be longer, e.g. a New Zealand number stored as 16 digits): what masking is tested
    /// on, since the shorter a value, the larger the share of it a fixed number of visible
    /// characters would be.
    pub shortest: &'static str,
}

const fn required(
    field: AccountField,
    pattern: Option<&'static str>,
    description: &'static str,
    (example, shortest): (&'static str, &'static str),
) -> FieldSpec {
    FieldSpec {
        field,
        required: true,
        pattern,
        description,
        example,
        shortest,
    }
}

const ACCOUNT_TYPE: FieldSpec = required(
    AccountField::AccountType,
    Some("^(checking|savings)$"),
    "`checking` or `savings`.",
    ("checking", "savings"),
);

const DIRECT_ENTRY: MethodSpec = MethodSpec {
    name: "direct-entry",
    asset: Asset::Aud,
    fields: &[
        required(
            AccountField::Bsb,
            Some("^[0-9]{3}[- ]?[0-9]{3}$"),
            "6 digits; `012-002` and `012 002` are accepted and stored `012002`.",
            ("012002", "012002"),
        ),
        required(
            AccountField::AccountNumber,
            Some("^[0-9]{5,9}$"),
            "5 to 9 digits.",
            ("12345678", "12345"),
        ),
    ],
};

const ACH: MethodSpec = MethodSpec {
    name: "ach",
    asset: Asset::Usd,
    fields: &[
        required(
            AccountField::RoutingNumber,
            Some("^[0-9]{9}$"),
            "An ABA routing number: 9 digits with the 3-7-1 checksum and a Federal Reserve prefix.",
            ("021000021", "021000021"),
        ),
        required(
            AccountField::AccountNumber,
            Some("^[0-9]{4,17}$"),
            "4 to 17 digits.",
            ("123456789", "1234"),
        ),
        ACCOUNT_TYPE,
    ],
};

const EFT: MethodSpec = MethodSpec {
    name: "eft",
    asset: Asset::Cad,
    fields: &[
        required(
            AccountField::RoutingNumber,
            Some("^(0[0-9]{8}|[0-9]{5}-[0-9]{3})$"),
            "`0` + institution (3) + transit (5), or the paper form `TTTTT-III`; the institution \
             must be a Payments Canada member.",
            ("000100002", "000100002"),
        ),
        required(
            AccountField::AccountNumber,
            Some("^[0-9]{7,12}$"),
            "7 to 12 digits.",
            ("1234567", "1234567"),
        ),
        ACCOUNT_TYPE,
    ],
};

const DIGITAL: MethodSpec = MethodSpec {
    name: "digital",
    asset: Asset::Cad,
    fields: &[
        required(
            AccountField::Recipient,
            None,
            "The receiver's e-mail address.",
            ("ada.pay@example.com", "a@b.c"),
        ),
        required(
            AccountField::Name,
            None,
            "1 to 255 characters.",
            ("Ada Lovelace", "A"),
        ),
        FieldSpec {
            field: AccountField::Description,
            required: false,
            pattern: None,
            description: "Free text.",
            example: "Household account",
            shortest: "H",
        },
    ],
};

const SEPA: MethodSpec = MethodSpec {
    name: "sepa",
    asset: Asset::Eur,
    fields: &[
        required(
            AccountField::Iban,
            Some("^[A-Za-z]{2}[0-9]{2}[A-Za-z0-9 ]{8,40}$"),
            "An IBAN of a SEPA country (length per country, mod-97); spaces removed, upper-cased.",
            ("DE89370400440532013000", "NO9386011117947"),
        ),
        required(
            AccountField::Bic,
            Some("^[A-Za-z]{6}[A-Za-z0-9]{2}([A-Za-z0-9]{3})?$"),
            "8 or 11 characters; its country must be the IBAN's.",
            ("DEUTDEFF", "DNBANOKK"),
        ),
    ],
};

const DIRECT_CREDIT: MethodSpec = MethodSpec {
    name: "direct-credit",
    asset: Asset::Nzd,
    fields: &[required(
        AccountField::AccountNumber,
        Some("^([0-9]{2}-[0-9]{4}-[0-9]{7}-[0-9]{2,3}|[0-9]{6}-[0-9]{7}-[0-9]{3})$"),
        "`BB-bbbb-AAAAAAA-SS(S)` or `BBbbbb-AAAAAAA-SSS`, with valid New Zealand check \
         digits; stored as 16 digits.",
        ("01-0902-0068389-00", "01-0902-0068389-00"),
    )],
};

impl PayoutMethod {
    /// Every method, in declaration order.
    pub const ALL: &'static [PayoutMethod] = Self::VARIANTS;

    /// The method's description.
    pub const fn spec(self) -> &'static MethodSpec {
        match self {
            PayoutMethod::DirectEntry => &DIRECT_ENTRY,
            PayoutMethod::Ach => &ACH,
            PayoutMethod::Eft => &EFT,
            PayoutMethod::Digital => &DIGITAL,
            PayoutMethod::Sepa => &SEPA,
            PayoutMethod::DirectCredit => &DIRECT_CREDIT,
        }
    }

    /// `method_name` on the wire.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// The method with this `method_name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The method with this route (`usd/ach`), case-sensitively.
    pub fn from_route(route: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.route() == route)
    }

    /// The currency the method pays in.
    pub const fn asset(self) -> Asset {
        self.spec().asset
    }

    /// The create route below `/api/receiver-account/`, e.g. `aud/direct-entry`.
    pub fn route(self) -> String {
        format!(
            "{}/{}",
            self.asset().code().to_ascii_lowercase(),
            self.name()
        )
    }

    /// The account fields of the method's create body, besides `receiver_id`.
    pub const fn fields(self) -> &'static [FieldSpec] {
        self.spec().fields
    }

    /// Whether the method's accounts carry `field`.
    pub fn has_field(self, field: AccountField) -> bool {
        self.fields().iter().any(|spec| spec.field == field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::field::{PayoutAccountSlot, Visibility};

    #[test]
    fn routes_names_and_assets_follow_the_docs() {
        let routes: Vec<String> = PayoutMethod::ALL.iter().map(|m| m.route()).collect();
        assert_eq!(
            routes,
            [
                "aud/direct-entry",
                "usd/ach",
                "cad/eft",
                "cad/digital",
                "eur/sepa",
                "nzd/direct-credit"
            ]
        );
        for &method in PayoutMethod::ALL {
            assert_eq!(PayoutMethod::from_name(method.name()), Some(method));
        }
        assert_eq!(PayoutMethod::from_name("wire"), None);
    }

    #[test]
    fn every_method_is_well_formed() {
        for &method in PayoutMethod::ALL {
            let fields: Vec<AccountField> = method.fields().iter().map(|s| s.field).collect();
            // No field twice, and at most one value for each slot of a payout's account.
            for (i, field) in fields.iter().enumerate() {
                assert!(!fields[..i].contains(field), "{method:?} repeats {field:?}");
            }
            let slots: Vec<PayoutAccountSlot> =
                fields.iter().filter_map(|f| f.payout_slot()).collect();
            for (i, slot) in slots.iter().enumerate() {
                assert!(
                    !slots[..i].contains(slot),
                    "{method:?} fills {slot:?} twice"
                );
            }
            // Something identifies the account: a masked, matchable, required field.
            assert!(
                method.fields().iter().any(|s| s.required
                    && s.field.matchable()
                    && s.field.visibility() == Visibility::Masked),
                "{method:?}"
            );
            for spec in method.fields() {
                assert!(!spec.description.is_empty(), "{method:?} {:?}", spec.field);
                assert!(method.has_field(spec.field));
            }
        }
    }

    #[test]
    fn every_example_is_accepted() {
        use crate::account::input::{AccountInput, RawAccount};

        for &method in PayoutMethod::ALL {
            let mut raw = RawAccount {
                receiver_id: Some("7d3c0b4e-2f1a-4c5b-9e8d-1a2b3c4d5e6f".to_owned()),
                ..RawAccount::default()
            };
            for spec in method.fields() {
                *raw.slot(spec.field) = Some(spec.example.to_owned());
            }
            assert!(
                AccountInput::parse(method, &raw).is_ok(),
                "{method:?}: {:?}",
                AccountInput::parse(method, &raw).err()
            );
            // An example is not just any value: each one broken is refused.
            for spec in method.fields().iter().filter(|s| s.required) {
                let mut broken = raw.clone();
                *broken.slot(spec.field) = Some(format!("{}\u{7}", spec.example));
                assert!(
                    AccountInput::parse(method, &broken).is_err(),
                    "{method:?} {:?}",
                    spec.field
                );
            }
        }
    }

    /// Every field's shortest accepted value, each method's together (a BIC must go with its
    /// IBAN), as a create body would carry them.
    fn shortest(method: PayoutMethod) -> crate::account::input::RawAccount {
        let mut raw = crate::account::input::RawAccount {
            receiver_id: Some("7d3c0b4e-2f1a-4c5b-9e8d-1a2b3c4d5e6f".to_owned()),
            ..Default::default()
        };
        for spec in method.fields() {
            *raw.slot(spec.field) = Some(spec.shortest.to_owned());
        }
        raw
    }

    #[test]
    fn every_shortest_value_is_accepted_and_nothing_shorter_is() {
        use crate::account::input::AccountInput;

        for &method in PayoutMethod::ALL {
            let raw = shortest(method);
            assert!(
                AccountInput::parse(method, &raw).is_ok(),
                "{method:?}: {:?}",
                AccountInput::parse(method, &raw).err()
            );
            for spec in method.fields().iter().filter(|s| s.required) {
                let mut shorter = raw.clone();
                let mut value = spec.shortest.to_owned();
                value.pop();
                *shorter.slot(spec.field) = Some(value);
                assert!(
                    AccountInput::parse(method, &shorter).is_err() || value_is_free(spec.field),
                    "{method:?} {:?}: a shorter value is accepted",
                    spec.field
                );
            }
        }
    }

    /// Fields with no length of their own beyond "not blank" (a name: one character is the
    /// shortest, and nothing shorter is a value).
    fn value_is_free(field: AccountField) -> bool {
        matches!(field, AccountField::Name | AccountField::AccountType)
    }

    #[test]
    fn masking_never_shows_more_than_three_characters_nor_half_of_any_identifier() {
        use crate::account::data::AccountData;
        use crate::account::field::Visibility;
        use crate::account::input::AccountInput;
        use crate::masking::MaskedValue;

        let mut checked = 0;
        for &method in PayoutMethod::ALL {
            let Ok(input) = AccountInput::parse(method, &shortest(method)) else {
                panic!("{method:?}: the shortest values parse");
            };
            let data = AccountData::from_details(&input.details);
            for (field, masked) in data.masked() {
                if field.visibility() != Visibility::Masked {
                    continue;
                }
                let stored = data.expose(field).unwrap_or_default();
                let length = stored.chars().count();
                let shown = MaskedValue::mask(stored).shown();
                assert!(
                    shown <= MaskedValue::VISIBLE && 2 * shown <= length,
                    "{method:?} {field:?}: {masked:?} shows {shown} of {length} characters"
                );
                assert!(!masked.contains(&stored[stored.len() / 2..]), "{masked}");
                checked += 1;
            }
        }
        // Every masked field of every method.
        let masked_fields: usize = PayoutMethod::ALL
            .iter()
            .map(|m| {
                m.fields()
                    .iter()
                    .filter(|s| s.field.visibility() == Visibility::Masked)
                    .count()
            })
            .sum();
        assert_eq!(checked, masked_fields);
    }
}
