//! Keyset paging: newest first (`created_at` desc, then `id` desc), so the cost of page N does
//! not grow with N (docs/ARCHITECTURE.md, Keyset paging and the sealed cursor).

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The default page size when the client sends no `limit`.
pub const DEFAULT_LIMIT: u16 = 10;
/// The largest page a client may ask for.
pub const MAX_LIMIT: u16 = 100;

/// The position of the last item of a page; the next page starts strictly after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// `created_at` of the last item returned.
    pub created_at: DateTime<Utc>,
    /// `id` of the last item returned (breaks ties between equal timestamps). A plain `Uuid`:
    /// every list (receivers, payouts) pages by its own kind of id, and the cursor
    /// is scoped to its list when sealed.
    pub id: Uuid,
}

impl Position {
    /// As it travels in a console link: `<microseconds since the epoch>.<id>`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.created_at.timestamp_micros(), self.id)
    }

    /// The position [`Position::encode`] wrote, or `None` for anything else.
    pub fn decode(raw: &str) -> Option<Self> {
        let (micros, id) = raw.split_once('.')?;
        if micros.len() > 20 || id.len() != 36 {
            return None;
        }
        Some(Self {
            created_at: DateTime::from_timestamp_micros(micros.parse().ok()?)?,
            id: Uuid::parse_str(id).ok()?,
        })
    }
}

/// Which page to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// How many items at most (1..=[`MAX_LIMIT`]).
    pub limit: u16,
    /// Start strictly after this position; `None` for the first page.
    pub after: Option<Position>,
}

/// Parses the `limit` query parameter: digits only, 1..=100; absent means the default.
pub fn parse_limit(raw: Option<&str>) -> Option<u16> {
    match raw {
        None => Some(DEFAULT_LIMIT),
        Some(raw)
            if !raw.is_empty() && raw.len() <= 3 && raw.bytes().all(|b| b.is_ascii_digit()) =>
        {
            raw.parse::<u16>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
        }
        Some(_) => None,
    }
}

/// One page of results and where the next one starts (`None`: this was the last page).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// The position to pass back for the next page.
    pub next: Option<Position>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows read in order: the extra row only tells that
    /// another page exists, and is dropped.
    pub fn from_overfetch(mut rows: Vec<T>, limit: u16, position: impl Fn(&T) -> Position) -> Self {
        let limit = usize::from(limit);
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = if more {
            rows.last().map(position)
        } else {
            None
        };
        Self { items: rows, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_defaults_and_bounds() {
        assert_eq!(parse_limit(None), Some(10));
        assert_eq!(parse_limit(Some("1")), Some(1));
        assert_eq!(parse_limit(Some("100")), Some(100));
        for bad in ["0", "101", "", "-1", "1.0", "abc", "0100", "99999999999"] {
            assert_eq!(parse_limit(Some(bad)), None, "{bad}");
        }
    }

    #[test]
    fn overfetch_sets_the_next_position_only_when_more_exist() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let pos = |n: &u128| Position {
            created_at: at,
            id: Uuid::from_u128(*n),
        };
        let page = Page::from_overfetch(vec![3, 2, 1], 2, pos);
        assert_eq!(page.items, vec![3, 2]);
        assert_eq!(page.next.map(|p| p.id), Some(Uuid::from_u128(2)));
        let last = Page::from_overfetch(vec![3, 2], 2, pos);
        assert_eq!(last.next, None);
    }
}

/// Seals and opens `lastkey` cursors: a position plus a MAC binding it to the subaccount, so a
/// tampered or foreign cursor is rejected (`REQ003`) instead of being trusted.
pub mod cursor {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use chrono::DateTime;
    use hmac::{KeyInit, Mac};
    use sha2::Sha256;
    use uuid::Uuid;

    use super::Position;
    use crate::ids::SubaccountId;
    use crate::masking::Secret;

    const TAG_LEN: usize = 16;
    const BODY_LEN: usize = 8 + 16;

    /// The key cursors are sealed with (from configuration).
    #[derive(Clone)]
    pub struct CursorKey(Secret<[u8; 32]>);

    impl CursorKey {
        /// Wraps 32 key bytes.
        pub const fn new(bytes: [u8; 32]) -> Self {
            Self(Secret::new(bytes))
        }

        fn tag(
            &self,
            scope: &str,
            subaccount: SubaccountId,
            body: &[u8],
        ) -> Option<hmac::Hmac<Sha256>> {
            let mut mac = hmac::Hmac::<Sha256>::new_from_slice(self.0.expose()).ok()?;
            mac.update(scope.as_bytes());
            mac.update(subaccount.as_uuid().as_bytes());
            mac.update(body);
            Some(mac)
        }

        /// The opaque `lastkey` for `position` in a list of `scope` (e.g. `receivers`).
        pub fn seal(&self, scope: &str, subaccount: SubaccountId, position: &Position) -> String {
            let mut out = Vec::with_capacity(BODY_LEN + TAG_LEN);
            out.extend_from_slice(&position.created_at.timestamp_micros().to_be_bytes());
            out.extend_from_slice(position.id.as_bytes());
            if let Some(mac) = self.tag(scope, subaccount, &out) {
                out.extend_from_slice(&mac.finalize().into_bytes()[..TAG_LEN]);
            }
            URL_SAFE_NO_PAD.encode(out)
        }

        /// The position inside a `lastkey`, or `None` when it is malformed, tampered with, or
        /// was sealed for another subaccount or list.
        pub fn open(
            &self,
            scope: &str,
            subaccount: SubaccountId,
            lastkey: &str,
        ) -> Option<Position> {
            if lastkey.len() > 128 {
                return None;
            }
            let raw = URL_SAFE_NO_PAD.decode(lastkey).ok()?;
            if raw.len() != BODY_LEN + TAG_LEN {
                return None;
            }
            let (body, tag) = raw.split_at(BODY_LEN);
            self.tag(scope, subaccount, body)?
                .verify_truncated_left(tag)
                .ok()?;
            let micros = i64::from_be_bytes(body[..8].try_into().ok()?);
            let id = Uuid::from_slice(&body[8..]).ok()?;
            Some(Position {
                created_at: DateTime::from_timestamp_micros(micros)?,
                id,
            })
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn round_trips_and_refuses_tampered_or_foreign_cursors() {
            let key = CursorKey::new([7; 32]);
            let mine = SubaccountId::from_uuid(Uuid::from_u128(1));
            let theirs = SubaccountId::from_uuid(Uuid::from_u128(2));
            let position = Position {
                created_at: DateTime::from_timestamp_micros(1_700_000_000_123_456)
                    .unwrap_or_default(),
                id: Uuid::from_u128(42),
            };
            let sealed = key.seal("receivers", mine, &position);
            assert_eq!(key.open("receivers", mine, &sealed), Some(position));
            assert_eq!(key.open("receivers", theirs, &sealed), None);
            assert_eq!(key.open("payouts", mine, &sealed), None);
            assert_eq!(
                CursorKey::new([8; 32]).open("receivers", mine, &sealed),
                None
            );
            let mut chars: Vec<char> = sealed.chars().collect();
            chars[3] = if chars[3] == 'A' { 'B' } else { 'A' };
            let tampered: String = chars.into_iter().collect();
            assert_eq!(key.open("receivers", mine, &tampered), None);
            for junk in ["", "x", "!!!!", &"A".repeat(500)] {
                assert_eq!(key.open("receivers", mine, junk), None);
            }
        }
    }
}

/// The start of a list request shared by every list: `subaccount_id` must be given (`missing`
/// otherwise) and be the caller's (`SUBA101`), and a `lastkey` must open under `scope` for the
/// caller's subaccount (`REQ003`). Every problem is reported; `Ok` carries where to start.
pub fn list_start(
    caller: &crate::auth::Caller,
    subaccount_id: Option<&str>,
    missing: crate::codes::ErrorCode,
    lastkey: Option<&str>,
    cursors: &cursor::CursorKey,
    scope: &str,
) -> Result<Option<Position>, crate::validation::ValidationErrors> {
    use crate::codes::ErrorCode;
    let mut errors = crate::validation::ValidationErrors::default();
    match subaccount_id.map(str::trim) {
        None | Some("") => errors.push(missing, "subaccount_id"),
        Some(id) if !caller.owns(id) => errors.push(ErrorCode::Suba101, "subaccount_id"),
        Some(_) => {}
    }
    let after = lastkey.and_then(|lastkey| {
        let opened = cursors.open(scope, caller.subaccount_id, lastkey);
        if opened.is_none() {
            errors.push(ErrorCode::Req003, "lastkey");
        }
        opened
    });
    errors.into_result().map(|()| after)
}
