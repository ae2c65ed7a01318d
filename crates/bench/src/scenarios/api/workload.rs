//! The requests each case sends, how their answers are checked, and the same requests against the
//! bare endpoint.

use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use super::{BULK_ITEMS, Case, CaseKind, Fixture};
use crate::load::{Request, Workload};
use crate::seed::generate::sql_uuid;

/// The requests of one case.
pub(super) struct ApiWorkload {
    pub(super) case: Case,
    pub(super) fixture: Arc<Fixture>,
}

/// How an answer is judged.
pub(super) enum Expect {
    /// `payload.id` is this id.
    Id(String),
    /// `payload.<field>` is a new id.
    Created(&'static str),
    /// `payload` is a list of this many items, the first with this id.
    Page(String, usize),
    /// `payload.created` is this many (a bulk request).
    Bulk(u64),
}

/// A pseudo-random number for request `seq`.
pub(super) fn request_hash(seq: u64) -> u64 {
    let mut x = seq.wrapping_add(0x0A91_5EED);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl ApiWorkload {
    pub(super) fn get(&self, path: String, tag: Expect) -> Request<Expect> {
        Request {
            method: reqwest::Method::GET,
            path,
            body: Vec::new(),
            headers: Vec::new(),
            kind: 0,
            tag,
        }
    }

    pub(super) fn post(&self, path: &str, body: &Value, tag: Expect) -> Request<Expect> {
        Request {
            method: reqwest::Method::POST,
            path: path.to_owned(),
            body: serde_json::to_vec(body).unwrap_or_default(),
            headers: Vec::new(),
            kind: 0,
            tag,
        }
    }

    /// A new receiver as a client would send it: the fields of a generated receiver that was
    /// not seeded, with an email and a reference that name `seq` and the run, so every one is
    /// new.
    pub(super) fn new_receiver(&self, seq: u64) -> Value {
        let f = &self.fixture;
        let r = f.generator.receiver(f.receivers + seq % 1_000_000);
        let local = r.email.split('@').next().unwrap_or("receiver");
        let mut body = json!({
            "subaccount_id": f.subaccount_id,
            "first_name": r.first_name,
            "last_name": r.last_name,
            "email": format!("{local}.{seq}x{}@example.com", f.run_id),
            "dob": r.dob.format("%Y-%m-%d").to_string(),
            "dialcode": r.dialcode,
            "phone": r.phone,
            "address": r.address,
            "city": r.city,
            "state": r.state,
            "postcode": r.postcode,
            "country": r.country,
        });
        if let Some(gender) = r.gender {
            body["gender"] = json!(gender);
        }
        if r.reference.is_some() {
            body["reference"] = json!(format!("CUST-{}-{seq}", f.run_id));
        }
        body
    }
}

impl Workload for ApiWorkload {
    type Tag = Expect;

    fn kinds(&self) -> &[&'static str] {
        match (&self.fixture.pages, self.case.kind) {
            (Some(pages), CaseKind::List) => &pages.kinds,
            _ => &["all"],
        }
    }

    fn request(&self, seq: u64) -> Request<Expect> {
        let f = &self.fixture;
        let h = request_hash(seq);
        match self.case.kind {
            CaseKind::GetReceiver => {
                let id = f.generator.receiver_id(h % f.receivers).to_string();
                self.get(format!("/api/receiver/{id}"), Expect::Id(id))
            }
            CaseKind::GetPayout => {
                let id = sql_uuid(&f.tag, "p", h % f.payouts.max(1)).to_string();
                self.get(format!("/api/payout/{id}"), Expect::Id(id))
            }
            CaseKind::List => {
                let Some(pages) = &f.pages else {
                    return self.get("/api/payout/".to_owned(), Expect::Page(String::new(), 0));
                };
                let deep = seq % 2 == 1;
                let mut path = format!(
                    "/api/payout/?subaccount_id={}&limit={}",
                    f.subaccount_id, f.page_size
                );
                if deep {
                    path.push_str("&lastkey=");
                    path.push_str(&pages.cursor);
                }
                let (first, len) = pages.expected[usize::from(deep)].clone();
                let mut request = self.get(path, Expect::Page(first, len));
                request.kind = usize::from(deep);
                request
            }
            CaseKind::PostReceiver => self.post(
                "/api/receiver",
                &self.new_receiver(seq),
                Expect::Created("receiver_id"),
            ),
            CaseKind::PostPayout => {
                let i = h % f.receivers;
                let body = json!({
                    "receiver_id": f.generator.receiver_id(i).to_string(),
                    "account_id": f.generator.account_id(i).to_string(),
                    "amount": 100 + (h >> 20) % 99_900,
                    "currency": f.generator.method(i).asset().code(),
                    "reference": format!("INV-{}-{}-{seq}", f.run_id, self.case.clients),
                    "note": "bench",
                });
                let mut request =
                    self.post("/api/payout/single", &body, Expect::Created("payout_id"));
                request.headers.push((
                    "idempotency-key",
                    format!("{}-{}-{seq}", f.run_id, self.case.clients),
                ));
                request
            }
            CaseKind::BulkPayout => {
                // Receivers spread over the seeded ones as the reference script spreads them.
                let items: Vec<Value> = (1..=BULK_ITEMS)
                    .map(|g| {
                        let i = h.wrapping_add(g * 7919) % f.receivers;
                        json!({
                            "receiver_id": f.generator.receiver_id(i).to_string(),
                            "account_id": f.generator.account_id(i).to_string(),
                            "amount": 100 + h.wrapping_add(g * 104_729) % 99_900,
                            "currency": f.generator.method(i).asset().code(),
                            "reference": format!("BLK-{}-{}-{seq}-{g}", f.run_id, self.case.clients),
                            "note": "bench",
                        })
                    })
                    .collect();
                let body = json!({"payouts": items, "atomic": false});
                let mut request = self.post("/api/payout/bulk", &body, Expect::Bulk(BULK_ITEMS));
                request.headers.push((
                    "idempotency-key",
                    format!("bulk-{}-{}-{seq}", f.run_id, self.case.clients),
                ));
                request
            }
        }
    }

    fn check(&self, expect: &Expect, body: &[u8]) -> bool {
        if let Expect::Page(first, len) = expect {
            return page_matches(body, first, *len);
        }
        let Ok(answer) = serde_json::from_slice::<Value>(body) else {
            return false;
        };
        let payload = &answer["payload"];
        match expect {
            Expect::Id(id) => payload["id"].as_str() == Some(id),
            Expect::Created(field) => payload[field]
                .as_str()
                .is_some_and(|id| Uuid::parse_str(id).is_ok()),
            Expect::Bulk(n) => payload["created"].as_u64() == Some(*n),
            Expect::Page(..) => false,
        }
    }
}

/// Whether a list answer holds `len` items, the first with id `first`. A page is ~95 KB: only
/// the ids are read, without building a `Value` of the rest, so that checking takes as little as
/// possible of the CPU payoutd shares.
pub(super) fn page_matches(body: &[u8], first: &str, len: usize) -> bool {
    serde_json::from_slice::<PageAnswer<'_>>(body).is_ok_and(|page| {
        page.payload.len() == len && page.payload.first().map(|i| i.id) == Some(first)
    })
}

/// A list answer, as far as checking it needs: the items' ids (the rest is skipped).
#[derive(serde::Deserialize)]
pub(super) struct PageAnswer<'a> {
    #[serde(borrow)]
    payload: Vec<PageItem<'a>>,
}

#[derive(serde::Deserialize)]
pub(super) struct PageItem<'a> {
    id: &'a str,
}

/// The same requests against the bare endpoint, which answers them all alike.
pub(super) struct Bare(pub(super) Arc<ApiWorkload>);

impl Workload for Bare {
    type Tag = Expect;

    fn kinds(&self) -> &[&'static str] {
        self.0.kinds()
    }

    fn request(&self, seq: u64) -> Request<Expect> {
        self.0.request(seq)
    }

    fn check(&self, _: &Expect, _: &[u8]) -> bool {
        true
    }
}
#[cfg(test)]
mod page_tests {
    use super::page_matches;

    #[test]
    fn a_page_is_checked_by_its_length_and_first_id() {
        let page = br#"{"message":"ok","payload":[
            {"id":"p1","amount":100,"receiver":{"id":"r1","name":"A \"quoted\" name"}},
            {"id":"p2","amount":200,"account":{"bsb":"***-*01"}}]}"#;
        assert!(page_matches(page, "p1", 2));
        assert!(!page_matches(page, "p2", 2));
        assert!(!page_matches(page, "p1", 3));
        // No first item to match (a list case without seeded pages counts as wrong).
        assert!(!page_matches(br#"{"payload":[]}"#, "", 0));
        assert!(!page_matches(br#"{"payload":{"id":"p1"}}"#, "p1", 1));
        assert!(!page_matches(br#"{"payload":[{"amount":1}]}"#, "p1", 1));
        assert!(!page_matches(b"not json", "p1", 1));
    }
}
