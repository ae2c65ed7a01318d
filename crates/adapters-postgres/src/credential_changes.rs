//! Announcing credential changes to every server instance: a revocation or a change of a
//! subaccount's signature requirement is announced with PostgreSQL `NOTIFY` in the transaction
//! that makes it (delivered when it commits), and [`listen`] hands each announcement to the
//! instance's credential cache, so a revoked key stops working everywhere within the
//! notification's latency (milliseconds on one database) instead of the cache's time to live.
//!
//! If the listening connection drops, the listener reconnects and announces a change of every
//! key (announcements may have been missed meanwhile); until it is back, the cache's time to
//! live bounds the delay as before.

use std::pin::pin;
use std::time::Duration;

use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures_util::StreamExt;
use tokio::sync::watch;

/// The channel of the announcements.
pub const CHANNEL: &str = "payoutd_credentials";

/// The payload announcing that every key may have changed.
pub const EVERY_KEY: &str = "*";

/// What an announcement says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialChange {
    /// This API key's credential changed (it was revoked).
    Key(String),
    /// Any credential may have changed (a subaccount's requirement; a reconnect).
    Every,
}

impl CredentialChange {
    fn from_payload(payload: &str) -> Self {
        if payload == EVERY_KEY {
            Self::Every
        } else {
            Self::Key(payload.to_owned())
        }
    }
}

/// Announces `payload` (an API key, or [`EVERY_KEY`]) on [`CHANNEL`] within the caller's
/// transaction on `conn`.
pub(crate) async fn announce(
    conn: &mut AsyncPgConnection,
    payload: &str,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(CHANNEL)
        .bind::<Text, _>(payload)
        .execute(conn)
        .await
        .map(drop)
}

/// How long to wait before connecting again after the listening connection failed.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Listens on [`CHANNEL`] of the database at `url` and hands every announcement to
/// `on_change` until `stop` says so. A failed or dropped connection is opened again after a
/// second, followed by a [`CredentialChange::Every`].
pub async fn listen(
    url: String,
    on_change: impl Fn(CredentialChange) + Send + Sync,
    mut stop: watch::Receiver<bool>,
) {
    let mut first = true;
    loop {
        if *stop.borrow() {
            return;
        }
        match AsyncPgConnection::establish(&url).await {
            Ok(mut conn) => {
                match diesel::sql_query(format!("LISTEN {CHANNEL}"))
                    .execute(&mut conn)
                    .await
                {
                    Ok(_) => {
                        if !first {
                            // Announcements may have been missed while disconnected.
                            on_change(CredentialChange::Every);
                        }
                        let mut notifications = pin!(conn.notifications_stream());
                        loop {
                            tokio::select! {
                                next = notifications.next() => match next {
                                    Some(Ok(notification)) => {
                                        on_change(CredentialChange::from_payload(&notification.payload));
                                    }
                                    Some(Err(e)) => {
                                        tracing::warn!(error = %e, "credential change listener lost its connection");
                                        break;
                                    }
                                    None => break,
                                },
                                _ = stop.changed() => return,
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for credential changes");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot connect to listen for credential changes"),
        }
        first = false;
        tokio::select! {
            () = tokio::time::sleep(RECONNECT_AFTER) => {}
            _ = stop.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CredentialChange, EVERY_KEY};

    #[test]
    fn payloads_name_a_key_or_every_key() {
        assert_eq!(
            CredentialChange::from_payload("pk_live_1"),
            CredentialChange::Key("pk_live_1".to_owned())
        );
        assert_eq!(
            CredentialChange::from_payload(EVERY_KEY),
            CredentialChange::Every
        );
    }
}
