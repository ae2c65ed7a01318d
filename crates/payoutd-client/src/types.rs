//! Request and response bodies of the API's routes (docs/API.md, Routes), and the values
//! they carry.
//!
//! Responses are read leniently where the API may grow (unknown fields are ignored, an unknown
//! status is [`PayoutStatus::Unknown`] and the like); requests are written exactly as the
//! routes take them. Ids are [`Uuid`]s, money is `i64` minor units (cents), times are Unix
//! milliseconds.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Declares a string-valued enum with an `Unknown` catch-all for values a newer server sends.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[doc = $doc:literal])* $variant:ident = $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[doc = $doc])* #[serde(rename = $wire)] $variant,)+
            /// A value this version of the crate does not know (sent by a newer server).
            #[serde(other, skip_serializing)]
            Unknown,
        }

        impl $name {
            /// Every known value.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value as the API spells it (`"?"` for [`Self::Unknown`]).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                    $name::Unknown => "?",
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum! {
    /// An ISO 4217 currency the API pays in.
    Asset {
        /// Australian dollars.
        Aud = "AUD",
        /// US dollars.
        Usd = "USD",
        /// Canadian dollars.
        Cad = "CAD",
        /// Euros.
        Eur = "EUR",
        /// New Zealand dollars.
        Nzd = "NZD",
    }
}

wire_enum! {
    /// A receiver's status.
    ReceiverStatus {
        /// Being created.
        Creating = "creating",
        /// Waiting for the KYC decision.
        Pending = "pending",
        /// KYC completed: can be paid.
        Active = "active",
        /// Deactivated.
        Inactive = "inactive",
        /// KYC failed: cannot be paid.
        Failed = "failed",
    }
}

wire_enum! {
    /// A receiver's KYC status.
    KycStatus {
        /// Not decided yet.
        Pending = "pending",
        /// Passed.
        Completed = "completed",
        /// Failed.
        Failed = "failed",
    }
}

wire_enum! {
    /// A receiver account's status.
    AccountStatus {
        /// Not confirmed yet.
        Pending = "pending",
        /// Confirmed by the receiver.
        Completed = "completed",
        /// Refused by a rail: cannot be paid.
        Failed = "failed",
    }
}

wire_enum! {
    /// Whether the receiver confirmed an account's details.
    ConfirmStatus {
        /// Not yet: payouts to it wait (`awaiting`).
        Unconfirmed = "unconfirmed",
        /// Confirmed.
        Confirmed = "confirmed",
    }
}

wire_enum! {
    /// A payout's status (docs/API.md, "`GET /api/payout/`").
    PayoutStatus {
        /// Waiting for the receiver to confirm the account.
        Awaiting = "awaiting",
        /// Ready for the next batch.
        Pending = "pending",
        /// Waiting for the receiver's KYC decision.
        Unassessed = "unassessed",
        /// Submitted to the payout rail.
        InProgress = "in_progress",
        /// Paid (a bank may still return it: then `failed`).
        Successful = "successful",
        /// Cancelled before submission; the hold went back to `available`.
        Cancelled = "cancelled",
        /// Not paid, or returned; the amount went back to `available`.
        Failed = "failed",
        /// A status of the provider's API that payoutd never produces.
        SuccessfulPendingKyc = "successful_pending_kyc",
    }
}

wire_enum! {
    /// A batch's status.
    BatchStatus {
        /// Collecting payouts.
        Open = "open",
        /// Closed, about to be submitted.
        Queue = "queue",
        /// Submitted.
        InProgress = "in_progress",
        /// Every payout has a result, some paid.
        Settled = "settled",
        /// Every payout failed.
        Failed = "failed",
        /// Nothing was left to submit.
        Cancelled = "cancelled",
    }
}

wire_enum! {
    /// The account type of an ACH or EFT account.
    AccountType {
        /// A checking account.
        Checking = "checking",
        /// A savings account.
        Savings = "savings",
    }
}

impl PayoutStatus {
    /// The code the list filter `status=` takes (docs/API.md: 0 `awaiting` … 7).
    pub const fn filter_code(self) -> Option<u8> {
        match self {
            PayoutStatus::Awaiting => Some(0),
            PayoutStatus::Pending => Some(1),
            PayoutStatus::Unassessed => Some(2),
            PayoutStatus::InProgress => Some(3),
            PayoutStatus::Successful => Some(4),
            PayoutStatus::Cancelled => Some(5),
            PayoutStatus::Failed => Some(6),
            PayoutStatus::SuccessfulPendingKyc => Some(7),
            PayoutStatus::Unknown => None,
        }
    }
}

impl ReceiverStatus {
    /// The code the list filter `status=` takes (0 `creating` … 4 `failed`).
    pub const fn filter_code(self) -> Option<u8> {
        match self {
            ReceiverStatus::Creating => Some(0),
            ReceiverStatus::Pending => Some(1),
            ReceiverStatus::Active => Some(2),
            ReceiverStatus::Inactive => Some(3),
            ReceiverStatus::Failed => Some(4),
            ReceiverStatus::Unknown => None,
        }
    }
}

impl KycStatus {
    /// The code the list filter `kyc_status=` takes (0 `pending`, 1 `completed`, 2 `failed`).
    pub const fn filter_code(self) -> Option<u8> {
        match self {
            KycStatus::Pending => Some(0),
            KycStatus::Completed => Some(1),
            KycStatus::Failed => Some(2),
            KycStatus::Unknown => None,
        }
    }
}

/// Reads a string of digits (or a number) as an integer: the API sends times, and some
/// amounts, as strings of digits.
fn digits<'de, D: Deserializer<'de>, T>(deserializer: D) -> Result<T, D::Error>
where
    T: std::str::FromStr + TryFrom<u64> + TryFrom<i64>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Unsigned(u64),
        Signed(i64),
        Text(String),
    }
    let value = match Raw::deserialize(deserializer)? {
        Raw::Unsigned(n) => T::try_from(n).ok(),
        Raw::Signed(n) => T::try_from(n).ok(),
        Raw::Text(text) => text.parse().ok(),
    };
    value.ok_or_else(|| de::Error::custom("expected an integer or a string of digits"))
}

/// Reads `""` as `None`, anything else as the value (ids and references the API leaves empty).
fn empty_as_none<'de, D: Deserializer<'de>, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    let text = Option::<String>::deserialize(deserializer)?;
    match text.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text.parse().map(Some).map_err(de::Error::custom),
    }
}

/// The caller's subaccount (`GET /api/subaccount/{id}`); fields operators have not set are
/// `""`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Subaccount {
    /// The subaccount's id.
    pub id: Uuid,
    /// Its merchant.
    pub merchant_id: Uuid,
    /// Its name.
    pub suba_name: String,
    /// The provider-prefixed status, e.g. `ACCEPTED`.
    pub kassi_status: String,
    /// The business name.
    pub business_name: String,
    /// `B` (business) or `I` (individual).
    pub business_or_individual: String,
    /// Contact e-mail.
    pub email: String,
    /// Support e-mail.
    pub support_email: String,
    /// KYC status of the subaccount.
    pub kyc_status: String,
    /// Where webhooks go (`""` when none is set).
    pub postback_url: String,
    /// When it was created, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub created_at: u64,
    /// Every other field of the provider's subaccount object, as sent.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// A balance in one asset (`GET /api/subaccount/balance/{id}?asset=`), minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Balance {
    /// What can be paid out.
    pub available: i64,
    /// Held by payouts not yet settled.
    pub pending: i64,
    /// The asset.
    pub asset: Asset,
}

/// The body of `POST /api/receiver` (the client fills in `subaccount_id`).
///
/// Fill in the required fields and leave the rest to `..NewReceiver::default()`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct NewReceiver {
    /// Letters of any script, spaces, `'`, `’`, `-`.
    pub first_name: String,
    /// Like `first_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub middle_name: Option<String>,
    /// Like `first_name`.
    pub last_name: String,
    /// A bare address; unique per subaccount.
    pub email: String,
    /// `YYYY-MM-DD`, a past date from 1900 on.
    pub dob: String,
    /// 1 to 4 digits (the country calling code).
    pub dialcode: String,
    /// 4 to 15 digits.
    pub phone: String,
    /// Street address, without `.`.
    pub address: String,
    /// Second address line, without `.`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address2: Option<String>,
    /// `M` or `F`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gender: Option<String>,
    /// City.
    pub city: String,
    /// State or region.
    pub state: String,
    /// Postcode.
    pub postcode: String,
    /// ISO 3166-1 alpha-3 country code, e.g. `AUS`.
    pub country: String,
    /// Your own id for the receiver, unique per subaccount.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// The payload of a created receiver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReceiverCreated {
    /// The new receiver's id.
    pub receiver_id: Uuid,
    /// As sent.
    pub first_name: String,
    /// As sent.
    pub last_name: String,
    /// As sent.
    pub email: String,
}

/// A receiver's `address_data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[non_exhaustive]
pub struct ReceiverAddress {
    /// Street address.
    pub address: String,
    /// Second line, or `""`.
    #[serde(default)]
    pub address2: String,
    /// City.
    pub city: String,
    /// State.
    pub state: String,
    /// Alpha-3 country code, upper case.
    pub country: String,
    /// Postcode.
    pub postcode: String,
}

/// A receiver (`GET /api/receiver/{id}`, and the items of the list); optional values that
/// were not given are `""`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Receiver {
    /// The receiver's id.
    pub id: Uuid,
    /// First name, as sent.
    pub first_name: String,
    /// Middle name, or `""`.
    #[serde(default)]
    pub middle_name: String,
    /// Last name, as sent.
    pub last_name: String,
    /// E-mail, as sent.
    pub email: String,
    /// `M`, `F` or `""`.
    #[serde(default)]
    pub gender: String,
    /// Date of birth, `YYYY-MM-DD`.
    pub dob: String,
    /// Country calling code.
    pub dialcode: String,
    /// Phone number.
    pub phone: String,
    /// The KYC provider's applicant id (only from `GET /api/receiver/{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applicant_id: Option<String>,
    /// The KYC status.
    pub kyc_status: KycStatus,
    /// The receiver's status.
    pub status: ReceiverStatus,
    /// Created, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub created_at: u64,
    /// Last changed, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub updated_at: u64,
    /// The address.
    pub address_data: ReceiverAddress,
    /// Your reference, or `""`.
    #[serde(default)]
    pub reference: String,
}

/// Filters of `GET /api/receiver` (the client adds `subaccount_id`, `limit` and `lastkey`).
/// Send the same filters with every page; [`Client::list_receivers`](crate::Client::list_receivers)
/// does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReceiverFilter {
    /// Receivers in this status.
    pub status: Option<ReceiverStatus>,
    /// Receivers with this KYC status.
    pub kyc_status: Option<KycStatus>,
    /// By e-mail comparison key (case, width and IDNA spelling do not matter).
    pub email: Option<String>,
    /// Exactly this reference.
    pub reference: Option<String>,
    /// `M` or `F`.
    pub gender: Option<String>,
    /// Alpha-3 country code.
    pub country: Option<String>,
    /// `YYYY-MM-DD`.
    pub dob: Option<String>,
    /// Other exact-match parameters of the route (`first_name`, `city`, …), as `(name, value)`.
    pub other: Vec<(String, String)>,
}

impl ReceiverFilter {
    pub(crate) fn query(&self) -> Vec<(String, String)> {
        let mut query = Vec::new();
        let code = |code: Option<u8>| code.map(|c| c.to_string());
        let named = [
            ("status", self.status.and_then(|s| code(s.filter_code()))),
            (
                "kyc_status",
                self.kyc_status.and_then(|s| code(s.filter_code())),
            ),
            ("email", self.email.clone()),
            ("reference", self.reference.clone()),
            ("gender", self.gender.clone()),
            ("country", self.country.clone()),
            ("dob", self.dob.clone()),
        ];
        for (name, value) in named {
            if let Some(value) = value {
                query.push((name.to_owned(), value));
            }
        }
        query.extend(self.other.iter().cloned());
        query
    }
}

/// The fields of a receiver account, per payout method: the body of
/// `POST /api/receiver-account/{asset}/{method}` (one route per variant).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewAccount {
    /// `aud/direct-entry`: an Australian bank account.
    AudDirectEntry(AudDirectEntry),
    /// `usd/ach`: a US bank account.
    UsdAch(UsdAch),
    /// `cad/eft`: a Canadian bank account.
    CadEft(CadEft),
    /// `cad/digital`: an Interac e-Transfer recipient.
    CadDigital(CadDigital),
    /// `eur/sepa`: a SEPA account.
    EurSepa(EurSepa),
    /// `nzd/direct-credit`: a New Zealand bank account.
    NzdDirectCredit(NzdDirectCredit),
}

impl NewAccount {
    /// The route's `{asset}/{method}`, e.g. `aud/direct-entry`.
    pub const fn route(&self) -> &'static str {
        match self {
            NewAccount::AudDirectEntry(_) => "aud/direct-entry",
            NewAccount::UsdAch(_) => "usd/ach",
            NewAccount::CadEft(_) => "cad/eft",
            NewAccount::CadDigital(_) => "cad/digital",
            NewAccount::EurSepa(_) => "eur/sepa",
            NewAccount::NzdDirectCredit(_) => "nzd/direct-credit",
        }
    }

    pub(crate) fn body(&self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            NewAccount::AudDirectEntry(a) => serde_json::to_vec(a),
            NewAccount::UsdAch(a) => serde_json::to_vec(a),
            NewAccount::CadEft(a) => serde_json::to_vec(a),
            NewAccount::CadDigital(a) => serde_json::to_vec(a),
            NewAccount::EurSepa(a) => serde_json::to_vec(a),
            NewAccount::NzdDirectCredit(a) => serde_json::to_vec(a),
        }
    }
}

macro_rules! account_kinds {
    ($($(#[doc = $doc:literal])* $name:ident { $($(#[$fmeta:meta])* $field:ident: $ty:ty,)+ })+) => {$(
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        pub struct $name {
            /// A receiver of the caller's subaccount.
            pub receiver_id: Uuid,
            $($(#[$fmeta])* pub $field: $ty,)+
        }

        impl From<$name> for NewAccount {
            fn from(account: $name) -> Self {
                NewAccount::$name(account)
            }
        }
    )+};
}

account_kinds! {
    /// An AUD account paid by direct entry.
    AudDirectEntry {
        /// 6 digits (`012-002` and `012 002` are accepted).
        bsb: String,
        /// 5 to 9 digits.
        account_number: String,
    }
    /// A USD account paid by ACH.
    UsdAch {
        /// 9 digits with a valid ABA checksum.
        routing_number: String,
        /// 4 to 17 digits.
        account_number: String,
        /// Checking or savings.
        account_type: AccountType,
    }
    /// A CAD account paid by EFT.
    CadEft {
        /// `0` + institution (3) + transit (5), or the paper form `TTTTT-III`.
        routing_number: String,
        /// 7 to 12 digits.
        account_number: String,
        /// Checking or savings.
        account_type: AccountType,
    }
    /// A CAD Interac e-Transfer recipient.
    CadDigital {
        /// The recipient's e-mail address.
        recipient: String,
        /// The recipient's name.
        name: String,
        /// An optional description.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    }
    /// A EUR account paid by SEPA credit transfer.
    EurSepa {
        /// An IBAN of a SEPA country (spaces allowed).
        iban: String,
        /// 8 or 11 characters, of the IBAN's country.
        bic: String,
    }
    /// An NZD account paid by direct credit.
    NzdDirectCredit {
        /// `BB-bbbb-AAAAAAA-SS(S)` or `BBbbbb-AAAAAAA-SSS`, with valid check digits.
        account_number: String,
    }
}

/// The payload of a created receiver account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AccountCreated {
    /// The new account's id.
    pub receiver_account_id: Uuid,
    /// Its receiver.
    pub receiver_id: Uuid,
    /// `pending`.
    pub status: AccountStatus,
    /// `unconfirmed`.
    pub confirm_status: ConfirmStatus,
}

/// An account's method fields; identifiers masked in responses (`012 ***`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[non_exhaustive]
pub struct AccountData {
    /// BSB (AUD), masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bsb: Option<String>,
    /// Account number, masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_number: Option<String>,
    /// Routing number (USD, CAD EFT), masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_number: Option<String>,
    /// `checking` or `savings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_type: Option<String>,
    /// IBAN (EUR), masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iban: Option<String>,
    /// BIC (EUR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bic: Option<String>,
    /// Interac recipient, masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    /// Interac recipient's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Interac description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A receiver account (`GET /api/receiver-account/{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReceiverAccount {
    /// The account's id.
    pub id: Uuid,
    /// Its receiver.
    pub receiver_id: Uuid,
    /// The receiver's e-mail.
    pub email: String,
    /// The account's asset.
    pub asset: Asset,
    /// The payout method, e.g. `direct-entry`.
    pub method_name: String,
    /// The receiver's reference, or `""`.
    #[serde(default)]
    pub reference: String,
    /// The receiver's address.
    pub address_data: ReceiverAddress,
    /// The method's fields, identifiers masked.
    pub account_data: AccountData,
    /// The account's status.
    pub status: AccountStatus,
    /// Whether the receiver confirmed it.
    pub confirm_status: ConfirmStatus,
    /// Created, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub created_at: u64,
    /// Last changed, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub updated_at: u64,
}

/// What `POST /api/receiver-account/verify` looks for: some of one method's identifying
/// fields (the client adds `subaccount_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct AccountMatch {
    /// BSB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bsb: Option<String>,
    /// Account number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_number: Option<String>,
    /// Routing number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_number: Option<String>,
    /// `checking` or `savings`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_type: Option<String>,
    /// IBAN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iban: Option<String>,
    /// BIC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bic: Option<String>,
    /// Interac recipient.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
}

/// The answer of verify: the oldest matching account, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Verification {
    /// Whether an account matched.
    pub exists: bool,
    /// The matching account's receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_id: Option<Uuid>,
    /// The matching account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<Uuid>,
    /// Its fields, identifiers masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_data: Option<AccountData>,
}

/// The body of `POST /api/payout/single`, and an item of a bulk request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewPayout {
    /// A receiver of the caller's subaccount.
    pub receiver_id: Uuid,
    /// An account of that receiver.
    pub account_id: Uuid,
    /// Minor units, 1 to 10^12.
    pub amount: i64,
    /// The account's asset.
    pub currency: Asset,
    /// Your reference, unique among the subaccount's payouts (required in a bulk request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Free text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl NewPayout {
    /// A payout of `amount` minor units of `currency` to `account_id` of `receiver_id`.
    pub fn new(receiver_id: Uuid, account_id: Uuid, amount: i64, currency: Asset) -> Self {
        Self {
            receiver_id,
            account_id,
            amount,
            currency,
            reference: None,
            note: None,
        }
    }

    /// With `reference`.
    pub fn reference(mut self, reference: impl Into<String>) -> Self {
        self.reference = Some(reference.into());
        self
    }

    /// With `note`.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// The payload of a created payout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayoutCreated {
    /// The new payout's id.
    pub payout_id: Uuid,
}

/// The body of `POST /api/payout/bulk`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkPayouts {
    /// 1 to 1000 payouts, each with a `reference` unique within the request.
    pub payouts: Vec<NewPayout>,
    /// All or nothing (default `false`: each item that passes is created).
    pub atomic: bool,
}

/// What became of each item of a bulk request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BulkOutcome {
    /// Payouts created (0 when an atomic request failed).
    pub created: u32,
    /// Items refused.
    pub failed: u32,
    /// One per item, in request order.
    pub items: Vec<BulkItem>,
}

/// One item's outcome: `payout_id` when created, `error` when refused, neither for an item
/// that passed in a refused atomic request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BulkItem {
    /// Its position in the request, from 0.
    pub index: u32,
    /// The payout created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout_id: Option<Uuid>,
    /// Why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Vec<crate::ErrorItem>>,
}

/// A payout's `payout_data`: the payout as the rail reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayoutData {
    /// The rail's status, e.g. `PENDING`.
    pub status: String,
    /// Another payout to the same account, amount and currency in the previous 24 hours.
    #[serde(default)]
    pub transaction_is_duplicated: bool,
    /// The rail refused the receiver's account.
    #[serde(default)]
    pub receiver_is_invalid: bool,
    /// Not cancelled or failed.
    #[serde(default)]
    pub accepted: bool,
    /// The rail's reasons for a failure.
    #[serde(default)]
    pub errors: Option<Vec<String>>,
    /// The rail's reference, or `""`.
    #[serde(default)]
    pub transaction_id: String,
}

/// A payout's `fee_data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FeeData {
    /// The fee charged, minor units (only from `GET /api/payout/{id}`).
    #[serde(default, deserialize_with = "optional_digits")]
    pub fee_value: Option<i64>,
    /// The fee template's id, or `""`.
    #[serde(default)]
    pub feetemplate_id: String,
    /// Fixed part, minor units.
    pub fixed: i64,
    /// Percentage of the amount.
    pub percentage: f64,
    /// Smallest fee, minor units.
    pub min_amount: i64,
}

fn optional_digits<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    digits(deserializer).map(Some)
}

/// A payout's `receiver`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayoutReceiver {
    /// The receiver's id.
    pub id: Uuid,
    /// First name (the provider's spelling).
    pub firstname: String,
    /// Last name.
    pub lastname: String,
    /// E-mail.
    pub email: String,
}

/// A payout's `receiver_account`: identifiers masked, `""` where the method has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayoutAccount {
    /// The account's id.
    pub id: Uuid,
    /// The receiver's e-mail.
    pub email: String,
    /// BSB, masked.
    pub bsb: String,
    /// Routing number or BIC, masked.
    pub bank_code: String,
    /// Account number, IBAN or recipient, masked.
    pub account_number: String,
}

/// One money movement of a payout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayoutTransaction {
    /// The movement's id.
    pub transaction_id: Uuid,
    /// Minor units: negative for a hold, positive for its reversal.
    pub amount: i64,
    /// The asset.
    pub asset: Asset,
    /// `payout` or `fee`.
    pub transaction_type: String,
    /// When, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub created_at: u64,
}

/// A payout: `GET /api/payout/{id}`, and (without `merchant`, `transactions` and the fee
/// charged) the items of `GET /api/payout/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Payout {
    /// The payout's id.
    pub id: Uuid,
    /// Created, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub created_at: u64,
    /// Last changed, Unix milliseconds.
    #[serde(deserialize_with = "digits")]
    pub updated_at: u64,
    /// Its status.
    pub status: PayoutStatus,
    /// Minor units (the list sends a string, the get a number: both are read).
    #[serde(deserialize_with = "digits")]
    pub amount: i64,
    /// The asset.
    pub asset: Asset,
    /// Your reference, or `""`.
    #[serde(default)]
    pub reference: String,
    /// Your note, or `""`.
    #[serde(default)]
    pub note: String,
    /// The batch it joined, once it is `pending`.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub batch_id: Option<Uuid>,
    /// The rail's reference, or `""` before submission.
    #[serde(default)]
    pub provider_reference: String,
    /// `MERC#<merchant id>` (only from `GET /api/payout/{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant: Option<String>,
    /// The fee.
    pub fee_data: FeeData,
    /// As the rail reports it.
    pub payout_data: PayoutData,
    /// Who is paid.
    pub receiver: PayoutReceiver,
    /// Where.
    pub receiver_account: PayoutAccount,
    /// Holds and their reversals (only from `GET /api/payout/{id}`).
    #[serde(default)]
    pub transactions: Vec<PayoutTransaction>,
}

/// Filters of `GET /api/payout/` (the client adds `subaccount_id`, `limit` and `lastkey`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PayoutFilter {
    /// Payouts in this status.
    pub status: Option<PayoutStatus>,
    /// Created at or after, `YYYY-MM-DD hh:mm` (UTC).
    pub from: Option<String>,
    /// Created at or before (inclusive to the minute), `YYYY-MM-DD hh:mm` (UTC).
    pub to: Option<String>,
    /// Exactly this reference.
    pub reference: Option<String>,
}

impl PayoutFilter {
    pub(crate) fn query(&self) -> Vec<(String, String)> {
        let named = [
            (
                "status",
                self.status
                    .and_then(PayoutStatus::filter_code)
                    .map(|c| c.to_string()),
            ),
            ("from", self.from.clone()),
            ("to", self.to.clone()),
            ("reference", self.reference.clone()),
        ];
        named
            .into_iter()
            .filter_map(|(name, value)| value.map(|value| (name.to_owned(), value)))
            .collect()
    }
}

/// The payload of a cancelled payout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayoutCancelled {
    /// The payout.
    pub payout_id: Uuid,
    /// `cancelled`.
    pub status: PayoutStatus,
}

/// One page of a list route: the items and the cursor of the next page (`None` on the last).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// The `lastkey` to send for the next page; `None` when this is the last one.
    pub lastkey: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "types_tests.rs"]
mod tests;
