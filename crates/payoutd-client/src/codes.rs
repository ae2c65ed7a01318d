//! The API's error codes (docs/API.md, "Error codes"), as the failure envelope carries them.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! catalogue {
    ($($variant:ident => ($code:literal, $status:literal, $message:literal),)+) => {
        /// A code of the API's error catalogue, e.g. [`ErrorCode::Revr214`] for `REVR214`.
        ///
        /// Prefixes: `REQ` request shape, `AUTH` authentication, `IDEM` idempotency keys,
        /// `SUBA` subaccount, `REVR` receiver, `REAC` receiver account, `PAYO` payout, `SYS`
        /// internal; within a prefix 1xx means not found, 2xx validation on create, 3xx other
        /// rules. A code this version of the crate does not know (a newer server's) is kept as
        /// [`ErrorCode::Other`].
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(
                #[doc = concat!("`", $code, "` (HTTP ", stringify!($status), "): ", $message, ".")]
                $variant,
            )+
            /// A code not in this crate's catalogue, as the server sent it.
            Other(String),
        }

        impl ErrorCode {
            /// Every known code, in catalogue order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The code as the API spells it, e.g. `REVR101`.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                    ErrorCode::Other(code) => code,
                }
            }

            /// The HTTP status the API answers this code with (`None` for an unknown code).
            pub const fn http_status(&self) -> Option<u16> {
                match self {
                    $(ErrorCode::$variant => Some($status),)+
                    ErrorCode::Other(_) => None,
                }
            }

            /// The catalogue's message (`None` for an unknown code). A response may carry a
            /// more specific one (naming a status, say): see [`ErrorItem::message`](crate::ErrorItem::message).
            pub const fn catalogue_message(&self) -> Option<&'static str> {
                match self {
                    $(ErrorCode::$variant => Some($message),)+
                    ErrorCode::Other(_) => None,
                }
            }

            /// The code spelled `code`; unknown spellings are [`ErrorCode::Other`].
            pub fn parse(code: &str) -> Self {
                match code {
                    $($code => ErrorCode::$variant,)+
                    other => ErrorCode::Other(other.to_owned()),
                }
            }
        }
    };
}

catalogue! {
    Req001 => ("REQ001", 400, "Request body must be a JSON object"),
    Req002 => ("REQ002", 400, "Query parameter is not valid"),
    Req003 => ("REQ003", 400, "lastkey is not valid"),
    Req004 => ("REQ004", 400, "Field has the wrong type"),
    Req005 => ("REQ005", 400, "Unknown field or query parameter"),
    Req006 => ("REQ006", 404, "Route not found"),
    Req007 => ("REQ007", 405, "Method not allowed"),
    Req008 => ("REQ008", 413, "Request body is larger than the route accepts (64 KiB; 1 MiB for bulk payouts)"),
    Req009 => ("REQ009", 400, "Field value is not allowed"),
    Req010 => ("REQ010", 429, "Too many requests: slow down and retry after the given seconds"),
    Req011 => ("REQ011", 400, "Request body repeats a key"),
    Req012 => ("REQ012", 400, "More problems were found than are listed"),
    Auth101 => ("AUTH101", 401, "Missing x-api-key or signature header"),
    Auth102 => ("AUTH102", 401, "Unknown or revoked API key"),
    Auth103 => ("AUTH103", 401, "Malformed signature"),
    Auth104 => ("AUTH104", 401, "Signature does not match"),
    Auth105 => ("AUTH105", 401, "Signature nonce is outside the freshness window"),
    Auth106 => ("AUTH106", 401, "Signature nonce already used"),
    Auth107 => ("AUTH107", 401, "This subaccount requires signature version 2"),
    Idem001 => ("IDEM001", 409, "A request with this idempotency key is still in progress"),
    Idem002 => ("IDEM002", 409, "This idempotency key was used with a different request"),
    Idem003 => ("IDEM003", 409, "The request with this idempotency key was processed but its response was lost: look the result up instead of retrying"),
    Idem201 => ("IDEM201", 400, "Idempotency key must be 1 to 255 printable characters"),
    Revr101 => ("REVR101", 400, "Receiver ID not found"),
    Revr201 => ("REVR201", 400, "Email already exist"),
    Revr202 => ("REVR202", 400, "Subaccount ID is required"),
    Revr203 => ("REVR203", 400, "Email is required"),
    Revr204 => ("REVR204", 400, "First name is required"),
    Revr205 => ("REVR205", 400, "Last name is required"),
    Revr206 => ("REVR206", 400, "Dialcode is required"),
    Revr207 => ("REVR207", 400, "Phone is required"),
    Revr208 => ("REVR208", 400, "Address is required"),
    Revr210 => ("REVR210", 400, "City is required"),
    Revr211 => ("REVR211", 400, "State is required"),
    Revr212 => ("REVR212", 400, "Postcode is required"),
    Revr213 => ("REVR213", 400, "Country is required"),
    Revr214 => ("REVR214", 400, "Email is not valid"),
    Revr215 => ("REVR215", 400, "First name may contain only letters, spaces, apostrophes and hyphens"),
    Revr216 => ("REVR216", 400, "Last name may contain only letters, spaces, apostrophes and hyphens"),
    Revr217 => ("REVR217", 400, "Gender must be F or M"),
    Revr218 => ("REVR218", 400, "Dialcode is not valid: 1 to 4 digits"),
    Revr219 => ("REVR219", 400, "Phone is not valid: 4 to 15 digits"),
    Revr220 => ("REVR220", 400, "Address must not contain a dot"),
    Revr221 => ("REVR221", 400, "Address2 must not contain a dot"),
    Revr222 => ("REVR222", 400, "City is not valid"),
    Revr223 => ("REVR223", 400, "Date of birth is required and must be a valid past date YYYY-MM-DD"),
    Revr224 => ("REVR224", 400, "Country is not a valid ISO 3166 alpha-3 code"),
    Revr225 => ("REVR225", 400, "Reference already used in this subaccount"),
    Revr226 => ("REVR226", 400, "Field is longer than 255 characters"),
    Revr227 => ("REVR227", 400, "Middle name may contain only letters, spaces, apostrophes and hyphens"),
    Revr301 => ("REVR301", 400, "Receiver KYC is already decided"),
    Payo101 => ("PAYO101", 400, "Payout ID not found"),
    Payo102 => ("PAYO102", 400, "Batch ID not found"),
    Payo201 => ("PAYO201", 400, "Receiver not found"),
    Payo202 => ("PAYO202", 400, "Receiver account not found for this receiver"),
    Payo203 => ("PAYO203", 400, "Amount must be a whole number of minor units from 1 to 10^12"),
    Payo204 => ("PAYO204", 400, "Currency is not supported or does not match the account"),
    Payo205 => ("PAYO205", 400, "Receiver or receiver account cannot be paid"),
    Payo206 => ("PAYO206", 400, "Reference already used by another payout"),
    Payo207 => ("PAYO207", 400, "Insufficient balance"),
    Payo208 => ("PAYO208", 400, "Field is longer than 255 characters"),
    Payo209 => ("PAYO209", 400, "Bulk payout not created"),
    Payo210 => ("PAYO210", 400, "Reference is required"),
    Payo211 => ("PAYO211", 400, "Receiver or receiver account changed while the payout was created: send it again"),
    Payo212 => ("PAYO212", 400, "payouts must be a list of 1 to 1000 payouts"),
    Payo301 => ("PAYO301", 400, "Payout cannot be cancelled in status <status>"),
    Payo302 => ("PAYO302", 400, "Date is not valid: expected YYYY-MM-DD hh:mm"),
    Payo303 => ("PAYO303", 400, "Payout is not in progress"),
    Payo304 => ("PAYO304", 400, "No open batch for this subaccount and asset"),
    Reac101 => ("REAC101", 400, "Receiver Account ID not found"),
    Reac104 => ("REAC104", 400, "Receiver ID not found"),
    Reac201 => ("REAC201", 400, "Receiver ID is required"),
    Reac202 => ("REAC202", 400, "BSB is required"),
    Reac203 => ("REAC203", 400, "BSB must be 6 digits"),
    Reac204 => ("REAC204", 400, "Account number is required"),
    Reac205 => ("REAC205", 400, "Account number format is not valid for this payout method"),
    Reac206 => ("REAC206", 400, "Routing number is required"),
    Reac207 => ("REAC207", 400, "Routing number format is not valid"),
    Reac208 => ("REAC208", 400, "Routing number checksum is not valid"),
    Reac209 => ("REAC209", 400, "Bank or institution number is unknown"),
    Reac210 => ("REAC210", 400, "Account type is required"),
    Reac211 => ("REAC211", 400, "Receiver ID is not valid"),
    Reac212 => ("REAC212", 400, "Account type must be checking or savings"),
    Reac213 => ("REAC213", 400, "IBAN is required"),
    Reac214 => ("REAC214", 400, "IBAN format or length is not valid for its country"),
    Reac215 => ("REAC215", 400, "IBAN check digits are not valid"),
    Reac216 => ("REAC216", 400, "IBAN country is not in the SEPA area"),
    Reac217 => ("REAC217", 400, "BIC is required"),
    Reac218 => ("REAC218", 400, "BIC format is not valid"),
    Reac219 => ("REAC219", 400, "BIC country does not match the IBAN country"),
    Reac220 => ("REAC220", 400, "Account number check digits are not valid"),
    Reac221 => ("REAC221", 400, "Recipient is required"),
    Reac222 => ("REAC222", 400, "Recipient must be a valid e-mail address"),
    Reac223 => ("REAC223", 400, "Name is required"),
    Reac226 => ("REAC226", 400, "Field is longer than 255 characters"),
    Reac230 => ("REAC230", 400, "Receiver account already exists"),
    Reac301 => ("REAC301", 400, "Receiver account cannot be confirmed in its status"),
    Reac302 => ("REAC302", 400, "Payout method <method> is not enabled"),
    Suba101 => ("SUBA101", 400, "SubAccount not found"),
    Suba303 => ("SUBA303", 400, "Asset is required"),
    Suba304 => ("SUBA304", 400, "Asset is not valid"),
    Sys500 => ("SYS500", 500, "Internal error"),
    Sys503 => ("SYS503", 503, "Service temporarily unavailable"),
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        Ok(ErrorCode::parse(&code))
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_reads_back_as_itself() {
        for code in ErrorCode::ALL {
            assert_eq!(&ErrorCode::parse(code.as_str()), code);
            assert!(code.http_status().is_some());
        }
        assert_eq!(
            ErrorCode::parse("NEW999"),
            ErrorCode::Other("NEW999".to_owned())
        );
        assert_eq!(ErrorCode::Revr214.as_str(), "REVR214");
        assert_eq!(ErrorCode::Req010.http_status(), Some(429));
    }
}
