//! Pays a receiver in the sandbox, end to end, with the client crate.
//!
//! Against the demo server (`cargo xtask serve` in the payoutd repository, which writes the
//! credentials to `target/dev/demo.env`):
//!
//! ```sh
//! set -a; . target/dev/demo.env; set +a
//! cargo run -p payoutd-client --features sandbox --example pay_a_receiver
//! ```
//!
//! Elsewhere, set `PAYOUTD_URL`, `PAYOUTD_SUBACCOUNT_ID`, `PAYOUTD_API_KEY` and
//! `PAYOUTD_API_SECRET` (the demo's `BASE`, `SUB`, `KEY` and `SECRET` are read when these are
//! not set). Without the `sandbox` feature the payout is created and read back but stays
//! `unassessed`: nobody decides the receiver's KYC or confirms the account.

use futures_util::{StreamExt, TryStreamExt};
use payoutd_client::{Asset, AudDirectEntry, Client, NewPayout, NewReceiver, PayoutFilter, Uuid};

/// `name`, or the demo's `fallback`, from the environment.
fn setting(name: &str, fallback: &str) -> Result<String, String> {
    std::env::var(name)
        .or_else(|_| std::env::var(fallback))
        .map_err(|_| format!("set {name} (or load target/dev/demo.env, which sets {fallback})"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let subaccount: Uuid = setting("PAYOUTD_SUBACCOUNT_ID", "SUB")?.parse()?;
    let client = Client::new(
        &setting("PAYOUTD_URL", "BASE")?,
        &setting("PAYOUTD_API_KEY", "KEY")?,
        &setting("PAYOUTD_API_SECRET", "SECRET")?,
        subaccount,
    )?;
    // One run's own names: e-mails and references are unique per subaccount.
    let run = Uuid::new_v4().simple().to_string()[..8].to_owned();

    let balance = client.get_balance(Asset::Aud).await?;
    println!(
        "balance: {} available, {} pending (AUD cents)",
        balance.available, balance.pending
    );

    let receiver = client
        .create_receiver(&NewReceiver {
            first_name: "Ada".into(),
            last_name: "Lovelace".into(),
            email: format!("ada+{run}@example.com"),
            dob: "1990-12-10".into(),
            dialcode: "61".into(),
            phone: "412345678".into(),
            address: "1 Example Street".into(),
            city: "Sydney".into(),
            state: "NSW".into(),
            postcode: "2000".into(),
            country: "AUS".into(),
            ..NewReceiver::default()
        })
        .await?;
    println!("receiver {}", receiver.receiver_id);

    let account = client
        .create_receiver_account(AudDirectEntry {
            receiver_id: receiver.receiver_id,
            bsb: "012002".into(),
            account_number: "123456789".into(),
        })
        .await?;
    println!("account  {}", account.receiver_account_id);

    #[cfg(feature = "sandbox")]
    {
        use payoutd_client::KycDecision;
        // What the KYC provider and the receiver (clicking the confirmation link) would do.
        client
            .sandbox_decide_kyc(receiver.receiver_id, KycDecision::Completed)
            .await?;
        client
            .sandbox_confirm_account(account.receiver_account_id)
            .await?;
    }

    let reference = format!("invoice-{run}");
    let payout = NewPayout::new(
        receiver.receiver_id,
        account.receiver_account_id,
        1_000,
        Asset::Aud,
    )
    .reference(&reference);
    // The reference doubles as the idempotency key: running this call again, even after a
    // crash, replays the first answer instead of paying twice.
    let created = client
        .create_payout(&payout)
        .idempotency_key(&reference)
        .await?;
    let read = client.get_payout(created.payout_id).await?;
    println!(
        "payout   {} {} {} cents, fee {} cents",
        read.id,
        read.status,
        read.amount,
        read.fee_data.fee_value.unwrap_or_default()
    );

    #[cfg(feature = "sandbox")]
    {
        use payoutd_client::{RailResult, SettleTarget};
        // What the batch schedule and the bank would do.
        let batch = client.sandbox_run_batch(Asset::Aud).await?;
        client
            .sandbox_settle(SettleTarget::Batch(batch.batch_id), RailResult::Success)
            .await?;
        let paid = client.get_payout(created.payout_id).await?;
        println!(
            "payout   {} {} in batch {}",
            paid.id, paid.status, batch.batch_reference
        );
    }

    // The newest payouts, fetched page by page as the stream is read.
    let recent: Vec<_> = client
        .list_payouts(PayoutFilter::default())
        .try_filter(|p| std::future::ready(p.reference.starts_with("invoice-")))
        .take(5)
        .try_collect()
        .await?;
    for payout in recent {
        println!(
            "  {} {:>8} {} {}",
            payout.reference, payout.amount, payout.asset, payout.status
        );
    }
    Ok(())
}
