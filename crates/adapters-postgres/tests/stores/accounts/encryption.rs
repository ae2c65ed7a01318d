//! Encryption at rest: values stored only sealed, and unreadable under another master key.

use diesel::sql_types::{Bytea, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::account::ports::AccountStore;

use super::{T0, ach, digital, direct_entry, insert, new_receiver, sepa, values};
use crate::support::{Fixture, store_for};

#[derive(diesel::QueryableByName)]
struct Sealed {
    #[diesel(sql_type = Bytea)]
    data_ciphertext: Vec<u8>,
}

#[derive(diesel::QueryableByName)]
struct RowText {
    #[diesel(sql_type = Text)]
    text: String,
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn account_values_are_stored_only_encrypted() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let accounts = [
        direct_entry(&owner, "012-002", "123456789", T0),
        ach(&owner, "021000021", "000123456789", "Checking", T0 + 1),
        sepa(&owner, T0 + 2),
        digital(&owner, "Jane.Doe@Example.com", "Jane Doe", T0 + 3),
    ];
    let mut conn = fx.raw().await;
    for a in &accounts {
        insert(&fx, a).await.unwrap();
        let sealed: Sealed =
            diesel::sql_query("SELECT data_ciphertext FROM receiver_accounts WHERE id = $1")
                .bind::<SqlUuid, _>(a.id.as_uuid())
                .get_result(&mut conn)
                .await
                .unwrap();
        // Every other plain column, as JSON text. The fingerprints are HMAC outputs shown as hex,
        // where a short digit string (a BSB) could appear by chance; they are keyed hashes, not
        // values, so they are left out of this search.
        let row: RowText = diesel::sql_query(
            "SELECT (row_to_json(r)::jsonb - 'data_ciphertext' - 'details_fingerprint' - 'fp_bsb' \
               - 'fp_account_number' - 'fp_routing_number' - 'fp_account_type' - 'fp_iban' - 'fp_bic' \
               - 'fp_recipient')::text AS text \
             FROM receiver_accounts r WHERE id = $1",
        )
        .bind::<SqlUuid, _>(a.id.as_uuid())
        .get_result(&mut conn)
        .await
        .unwrap();
        assert!(row.text.contains(&a.id.to_string()), "{}", row.text);
        for value in values(a) {
            assert!(
                !contains(&sealed.data_ciphertext, value.as_bytes()),
                "{:?}: ciphertext contains {value}",
                a.method
            );
            assert!(
                !row.text.to_lowercase().contains(&value.to_lowercase()),
                "{:?}: a column contains {value}: {}",
                a.method,
                row.text
            );
        }
    }
    // The values tested above include the identifiers in their normalised form.
    assert!(values(&accounts[0]).contains(&"123456789".to_owned()));
    assert!(values(&accounts[2]).contains(&"DE89370400440532013000".to_owned()));
}

#[tokio::test]
async fn a_store_with_another_master_key_cannot_read_accounts() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012002", "123456789", T0);
    insert(&fx, &a).await.unwrap();

    let stranger = store_for(fx.db.url(), [9; 32]);
    let err = stranger.find_account(sub, a.id).await.unwrap_err();
    assert!(matches!(err, PortError::Unknown(_)), "{err:?}");
    let err = stranger.list_accounts(sub, owner.id).await.unwrap_err();
    assert!(matches!(err, PortError::Unknown(_)), "{err:?}");
    // The right key still reads it.
    assert!(fx.store.find_account(sub, a.id).await.unwrap().is_some());
}
