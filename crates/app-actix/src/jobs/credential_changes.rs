//! The listener of credential changes ([`adapters_postgres::credential_changes`]): each
//! announced revocation or signature-requirement change is recorded on the process's
//! [`CredentialChanges`], which every worker's credential cache consults, so a revoked key is
//! refused by this instance as soon as the announcement arrives.

use std::sync::Arc;

use adapters_postgres::credential_changes::{CredentialChange, listen};
use domain::auth::CredentialChanges;
use domain::ports::Clock;

/// Listens until `stop` says so.
pub async fn run(
    database_url: String,
    changes: Arc<CredentialChanges>,
    clock: Arc<dyn Clock>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    listen(
        database_url,
        move |change| match change {
            CredentialChange::Key(api_key) => changes.key_changed(&api_key, clock.now()),
            CredentialChange::Every => changes.all_changed(clock.now()),
        },
        stop,
    )
    .await;
}
