//! What the demo does as a client and an operator would, then the wait for the results.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use domain::account::PayoutMethod;
use serde_json::{Value, json};

use super::accounts::method_account_body;
use super::api::{Api, http, payload_str};
use super::mail::confirmation_links;
use super::waits::{
    Wait, failed_references, refused, returned_payouts, still_waiting, unreadable, wait_until,
};
use super::{Counterparties, LAST_NAMES, Options, RECEIVERS};
use crate::failure::Failure;
use crate::serve::{Payoutd, field};

/// Everything a client and an operator do, then the wait for the results; the summary
/// without `files` and `ledger`.
pub(super) fn drive(
    payoutd: &Payoutd,
    database_url: &str,
    addr: SocketAddr,
    mail_dir: &Path,
    others: &Counterparties<'_>,
    options: &Options,
    started: Instant,
) -> Result<Value, Failure> {
    let Counterparties { responder, partner } = *others;
    let created = payoutd.json(&[
        "admin",
        "create-subaccount",
        "--name",
        "Rails demo",
        "--email",
        "rails-demo@example.com",
        // The demo's client signs with v1 (docs/API.md, Signature policies).
        "--signature-policy",
        "any",
    ])?;
    let subaccount = field(&created, "subaccount_id")?;
    let key = payoutd.json(&["admin", "issue-key", "--subaccount", &subaccount])?;
    let mut api = Api::new(addr, &field(&key, "api_key")?, &field(&key, "api_secret")?);
    let currencies: BTreeSet<&str> = PayoutMethod::ALL.iter().map(|m| m.asset().code()).collect();
    for asset in currencies {
        payoutd.json(&[
            "admin",
            "fund",
            "--subaccount",
            &subaccount,
            "--asset",
            asset,
            "--amount",
            "10000000",
            "--reason",
            "rails demo float",
        ])?;
    }

    // Receivers, KYC by the operator, one account of each method each.
    let mut accounts: BTreeMap<PayoutMethod, Vec<(String, String)>> = BTreeMap::new();
    for i in 0..RECEIVERS {
        let receiver = api.post(
            "/api/receiver",
            &json!({
                "subaccount_id": subaccount, "first_name": "Demo", "last_name": LAST_NAMES[i % LAST_NAMES.len()],
                "email": format!("receiver{i}@example.com"), "dob": "1990-12-10", "dialcode": "1",
                "phone": "2025550100", "address": "1 Example Street", "city": "Springfield",
                "state": "IL", "postcode": "62701", "country": "USA"
            }),
        )?;
        let receiver = payload_str(&receiver, "receiver_id")?;
        let decided = payoutd.json(&[
            "admin",
            "kyc",
            "--receiver",
            &receiver,
            "--decision",
            "completed",
        ])?;
        if field(&decided, "kyc_status")? != "completed" {
            return Err(Failure::new(
                "`payoutd admin kyc --decision completed` to complete KYC",
                format!("{decided}"),
            ));
        }
        for &method in PayoutMethod::ALL {
            let mut body = method_account_body(method, i);
            body["receiver_id"] = json!(receiver);
            let account = api.post(&format!("/api/receiver-account/{}", method.route()), &body)?;
            accounts.entry(method).or_default().push((
                receiver.clone(),
                payload_str(&account, "receiver_account_id")?,
            ));
        }
    }

    // The confirmation e-mails: one per account; POST each link.
    let expected = PayoutMethod::ALL.len() * RECEIVERS;
    let mut links = Vec::new();
    wait_until(started, &format!("{expected} confirmation e-mails"), || {
        links = confirmation_links(mail_dir)?;
        Ok(if links.len() >= expected {
            Wait::Done
        } else {
            Wait::Pending(format!("{} in {}", links.len(), mail_dir.display()))
        })
    })?;
    for link in &links {
        let path = link
            .strip_prefix(&format!("http://{addr}"))
            .ok_or_else(|| {
                format!("the link {link:?} does not point at payoutd (http://{addr})")
            })?;
        let (status, body) = http(addr, "POST", path, &[], b"")?;
        if status != 200 {
            return Err(Failure::new(
                "200 to the POST of a confirmation link",
                format!("{status}: {body}"),
            ));
        }
    }
    for (_, account) in accounts.values().flatten() {
        let shown = api.get(&format!("/api/receiver-account/{account}"))?;
        let status = payload_str(&shown, "confirm_status")?;
        if status != "confirmed" {
            return Err(Failure::new(
                format!("account {account} confirmed once its link was posted"),
                format!("it is {status}"),
            ));
        }
    }

    // The payouts.
    let mut payouts = Vec::new();
    for &method in PayoutMethod::ALL {
        let accounts = accounts
            .get(&method)
            .ok_or_else(|| format!("no {} accounts", method.route()))?;
        let currency = method.asset().code();
        for n in 0..options.per_method {
            let (receiver, account) = &accounts[n % accounts.len()];
            let created = api.post(
                "/api/payout/single",
                &json!({"receiver_id": receiver, "account_id": account, "amount": 1000 + n, "currency": currency}),
            )?;
            payouts.push(payload_str(&created, "payout_id")?);
        }
    }
    eprintln!(
        "rails-demo: [{:>3} s] {} payouts created; waiting for the cut-offs and the bank's \
         answers",
        started.elapsed().as_secs(),
        payouts.len()
    );

    // Wait: every payout final, and every refusal and return of the bank and the partner
    // applied. "Final" alone is not enough: with same-day settlement a payout is successful
    // before the bank's first answer, which fails it (a return after settlement) only once
    // payoutd reads that answer. payoutd reads a rail's inbound files in name order, so when one
    // pass finds both of the bank's answers, `…-late-returns` comes before `…-returns`: waiting
    // only for the late returns ended the wait between the two, and the check below then found
    // the first answer's refusals not applied (one run in five in CI).
    let mut seen_successful = BTreeSet::new();
    let mut last: BTreeMap<String, (String, String)> = BTreeMap::new();
    let expected = format!(
        "all {} payouts final, the bank's and the partner's answers applied",
        payouts.len()
    );
    wait_until(started, &expected, || {
        let tally = responder.tally()?;
        if !tally.unreadable.is_empty() {
            return Err(unreadable(&tally));
        }
        for id in &payouts {
            let shown = api.get(&format!("/api/payout/{id}"))?;
            let status = payload_str(&shown, "status")?;
            let reference = shown["payload"]["provider_reference"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if status == "successful" {
                seen_successful.insert(id.clone());
            }
            last.insert(id.clone(), (status, reference));
        }
        Ok(
            match still_waiting(&last, &tally, &partner.statuses(), payouts.len()) {
                None => Wait::Done,
                Some(progress) => Wait::Pending(format!(
                    "{progress}; the slowest API call so far: {}",
                    api.slowest()
                )),
            },
        )
    })?;
    let tally = responder.tally()?;
    if !tally.unreadable.is_empty() {
        return Err(unreadable(&tally));
    }
    let successful = last.values().filter(|(s, _)| s == "successful").count();
    let failed = last.values().filter(|(s, _)| s == "failed").count();
    let seen_returned = last
        .iter()
        .filter(|(id, (s, _))| s == "failed" && seen_successful.contains(*id))
        .count();
    // payoutd's results must be the bank's decisions: every refusal and return applied (the
    // wait saw to that), and no other payout failed.
    let failed_refs = failed_references(&last);
    let bank_failed = refused(&tally, &partner.statuses());
    if failed_refs != bank_failed {
        return Err(Failure::new(
            format!(
                "payoutd to fail the payouts the bank and the partner refused or returned, {bank_failed:?}"
            ),
            format!("it failed {failed_refs:?}"),
        ));
    }
    // Returned: failed after settlement, with the amount credited back (`payout_return`).
    let returned = returned_payouts(database_url)?;
    if returned < tally.returned_late.len().max(seen_returned) || returned > failed {
        return Err(Failure::new(
            format!(
                "a payout_return ledger entry for at least the {} payouts the bank returned after \
                 settlement and the {seen_returned} seen successful then failed, and for at most \
                 the {failed} failed",
                tally.returned_late.len()
            ),
            format!("{returned}"),
        ));
    }
    Ok(json!({
        "methods": PayoutMethod::ALL.len(),
        "payouts": payouts.len(),
        "successful": successful,
        "failed": failed,
        "returned": returned,
    }))
}
