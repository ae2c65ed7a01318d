//! Which signature versions a subaccount's requests may use (docs/API.md, Authentication;
//! Signature policies).
//!
//! A v1 signature covers only `<nonce>.<api key>`, so whoever sees one (a proxy's log, a
//! TLS-terminating middlebox) can send it again with any method, path and body within the
//! freshness window. On a GET that reads what the subaccount could read anyway; on a POST it
//! could move money. So a subaccount's POSTs take v1 only where an operator allowed it: new
//! subaccounts sign their POSTs with v2, and a client written for the provider's v1 scheme keeps
//! working on every GET, and on POSTs of a subaccount whose operator chose [`AnyVersion`].
//!
//! [`AnyVersion`]: SignaturePolicy::AnyVersion

use strum::{EnumString, IntoStaticStr, VariantArray};

use super::signature::SignatureVersion;

/// A subaccount's signature policy.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, VariantArray, IntoStaticStr, EnumString,
)]
#[strum(const_into_str)]
pub enum SignaturePolicy {
    /// v1 or v2 on every request: the provider's scheme as it is, for a client that can sign
    /// only v1. A captured v1 signature of any request can be replayed as a POST within the
    /// freshness window (once: POST nonces are single-use); an operator's explicit choice
    /// (subaccounts created before policies existed have it).
    #[strum(serialize = "any")]
    AnyVersion,
    /// v1 on GET, v2 on every POST: nothing that moves money or changes data can be made from a
    /// captured v1 signature. The default for new subaccounts.
    #[default]
    #[strum(serialize = "v2_for_posts")]
    V2ForPosts,
    /// v2 on every request (`admin require-signature-v2`).
    #[strum(serialize = "v2")]
    V2Only,
}

impl SignaturePolicy {
    /// Every policy.
    pub const ALL: &'static [SignaturePolicy] = Self::VARIANTS;

    /// The stored and printed name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The policy with this name (`any`, `v2_for_posts`, `v2`).
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }

    /// Whether a request of `method` signed with `version` is allowed (`AUTH107` otherwise).
    /// Any method but GET and HEAD counts as a write.
    pub fn allows(self, version: SignatureVersion, method: &str) -> bool {
        let reads = method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD");
        match (self, version) {
            (_, SignatureVersion::V2) | (SignaturePolicy::AnyVersion, SignatureVersion::V1) => true,
            (SignaturePolicy::V2ForPosts, SignatureVersion::V1) => reads,
            (SignaturePolicy::V2Only, SignatureVersion::V1) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_is_always_allowed_and_v1_only_where_the_policy_says() {
        let v1 = SignatureVersion::V1;
        let v2 = SignatureVersion::V2;
        // (policy, v1 GET, v1 POST)
        let table = [
            (SignaturePolicy::AnyVersion, true, true),
            (SignaturePolicy::V2ForPosts, true, false),
            (SignaturePolicy::V2Only, false, false),
        ];
        assert_eq!(table.len(), SignaturePolicy::ALL.len());
        for (policy, get, post) in table {
            assert!(policy.allows(v2, "GET") && policy.allows(v2, "POST"));
            assert_eq!(policy.allows(v1, "GET"), get, "{policy:?} GET");
            assert_eq!(policy.allows(v1, "head"), get, "{policy:?} HEAD");
            assert_eq!(policy.allows(v1, "POST"), post, "{policy:?} POST");
            assert_eq!(policy.allows(v1, "DELETE"), post, "{policy:?} DELETE");
            assert_eq!(SignaturePolicy::parse(policy.as_str()), Some(policy));
        }
        assert_eq!(SignaturePolicy::default(), SignaturePolicy::V2ForPosts);
        assert_eq!(SignaturePolicy::parse("V2"), None);
    }
}
