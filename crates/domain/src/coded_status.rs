//! `coded_status!`: the status enums whose variants each carry one of the provider's numeric filter
//! codes and a wire name (receiver, KYC and payout statuses).

/// Declares a status enum whose variants each carry the provider's numeric filter code and the
/// lower-case name responses and webhooks show, both written once on the variant:
///
/// ```text
/// coded_status!(
///     /// Docs of the enum.
///     Name {
///         /// Docs of the variant.
///         Variant = (0, "variant"),
///     }
/// );
/// ```
///
/// The code is the variant's discriminant; strum derives the list of variants, the name and the
/// lookup by code from the attributes, so no table repeats them.
macro_rules! coded_status {
    (
        $(#[$doc:meta])*
        $name:ident {
            $(
                $(#[$variant_doc:meta])*
                $variant:ident = ($code:literal, $wire:literal),
            )+
        }
    ) => {
        $(#[$doc])*
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            ::strum::VariantArray,
            ::strum::IntoStaticStr,
            ::strum::FromRepr,
        )]
        #[strum(const_into_str)]
        #[repr(u8)]
        pub enum $name {
            $(
                $(#[$variant_doc])*
                #[doc = concat!("\n\nWire name `", $wire, "`, filter code ", stringify!($code), ".")]
                #[strum(serialize = $wire)]
                $variant = $code,
            )+
        }

        impl $name {
            /// Every status, in code order.
            pub const ALL: &'static [$name] = <$name as ::strum::VariantArray>::VARIANTS;

            /// The numeric filter code of the provider's API.
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The lower-case name responses and webhooks show.
            pub const fn as_str(self) -> &'static str {
                self.into_str()
            }

            /// The status with this numeric code.
            pub const fn from_code(code: u8) -> Option<Self> {
                Self::from_repr(code)
            }

            /// The status with this lower-case name (`"in_progress"`).
            pub fn parse_name(raw: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|status| status.as_str() == raw)
            }

            /// Parses a filter value: the code as a string of digits (`"2"`).
            pub fn parse_code(raw: &str) -> Option<Self> {
                if raw.len() != 1 {
                    return None;
                }
                raw.parse::<u8>().ok().and_then(Self::from_code)
            }
        }
    };
}

pub(crate) use coded_status;
