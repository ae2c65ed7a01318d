//! The receiver-account use cases: create (with a confirmation request), read, list, verify,
//! confirm.

use std::collections::BTreeSet;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration;
use sha2::{Digest, Sha256};

use crate::account::data::AccountData;
use crate::account::input::{AccountInput, RawAccount};
use crate::account::notification::worker::NotificationWorker;
use crate::account::notification::{NotificationId, NotificationOutcome};
use crate::account::ports::{
    AccountStore, ConfirmationRequest, ConfirmationToken, InsertAccountError, TokenLookup,
};
use crate::account::status::confirm;
use crate::account::{AccountField, AccountStatus, ConfirmStatus, PayoutMethod, ReceiverAccount};
use crate::auth::Caller;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::events::{EventKind, OutboxEvent};
use crate::idempotency::WriteKey;
use crate::ids::{EventId, ReceiverAccountId, ReceiverId};
use crate::masking::Secret;
use crate::payout::change::{PayoutReaction, ReactionTrigger};
use crate::ports::{Clock, IdGenerator};
use crate::receiver::Receiver;
use crate::receiver::ports::ReceiverStore;
use crate::validation::ValidationErrors;

/// How long a confirmation link works (docs/API.md, `/confirm/{token}`).
pub const TOKEN_LIFETIME_DAYS: i64 = 7;

/// Why an account was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateAccountError {
    /// Invalid fields and/or an unknown or foreign receiver (`REAC211`), every problem listed.
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// The receiver already has an account with these details (`REAC230`).
    #[error("account already exists")]
    Duplicate,
    /// The payout method has no rail in this deployment (`REAC302`).
    #[error("payout method {} is not enabled", .0.route())]
    NotEnabled(PayoutMethod),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why an account (or a receiver's accounts) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GetAccountError {
    /// No such account or receiver in the caller's subaccount.
    #[error("not found")]
    NotFound,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why a verify request was refused (always answered with the one verify message).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// Missing or foreign `subaccount_id`, or empty `account_data` or an unknown field in it.
    #[error("missing or invalid subaccount_id or account_data")]
    Invalid,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why a confirmation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    /// Unknown, expired or already used token, or an account that cannot be confirmed.
    #[error("the confirmation link is invalid or has expired")]
    Invalid,
    /// No such account in the caller's subaccount (sandbox helper).
    #[error("account not found")]
    NotFound,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A created account and whether its confirmation request went out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedAccount {
    /// The account.
    pub account: ReceiverAccount,
    /// False when the first attempt to send it failed; the account exists regardless, and the
    /// request stays queued for the retry job (unless refused for good).
    pub confirmation_sent: bool,
}

/// A verify query: the caller's `subaccount_id` and the `account_data` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyRequest {
    /// `subaccount_id` as sent.
    pub subaccount_id: Option<String>,
    /// `account_data` as sent (strings only; the HTTP layer refuses other types).
    pub account_data: Vec<(String, String)>,
}

/// The longest token text looked up; anything longer is not a token this service issued.
const MAX_TOKEN_LEN: usize = 128;

/// What a confirmation link can still do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// It confirms its account when the receiver asks (the page shows a Confirm button).
    Confirmable,
    /// Its account is confirmed already; there is nothing left to do.
    AlreadyConfirmed,
}

/// What the confirmation page shows: never an unmasked value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmationView {
    /// Who asks: the merchant's name as its receivers know it.
    pub merchant: String,
    /// The receiver's name as the merchant registered it.
    pub receiver_name: String,
    /// The account's payout method.
    pub method: PayoutMethod,
    /// Its details, masked as everywhere else ([`AccountData::masked`]).
    pub masked_details: Vec<(AccountField, String)>,
    /// Whether the link can still confirm.
    pub state: LinkState,
}

/// What a found token can do at `now`; `None` when nothing: expired, or spent or unusable on
/// an account that is not confirmed. An expired link shows nothing, not even that its account
/// was confirmed.
fn link_state(found: &TokenLookup, now: chrono::DateTime<chrono::Utc>) -> Option<LinkState> {
    if found.expires_at <= now {
        return None;
    }
    let account = &found.account;
    if account.confirm_status == ConfirmStatus::Confirmed {
        return Some(LinkState::AlreadyConfirmed);
    }
    if found.used {
        return None;
    }
    confirm(account.status, account.confirm_status).map(|_| LinkState::Confirmable)
}

/// The receiver-account use cases.
pub struct AccountService {
    accounts: Arc<dyn AccountStore>,
    receivers: Arc<dyn ReceiverStore>,
    notifications: Arc<NotificationWorker>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    confirm_base_url: String,
    enabled: Option<BTreeSet<PayoutMethod>>,
}

/// SHA-256 of a confirmation token's text: what the store keeps.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl AccountService {
    /// `confirm_base_url` is the public base URL confirmation links start with; `notifications`
    /// sends (and records) the confirmation requests.
    pub fn new(
        accounts: Arc<dyn AccountStore>,
        receivers: Arc<dyn ReceiverStore>,
        notifications: Arc<NotificationWorker>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        confirm_base_url: String,
    ) -> Self {
        Self {
            accounts,
            receivers,
            notifications,
            clock,
            ids,
            confirm_base_url,
            enabled: None,
        }
    }

    /// The same service accepting new accounts of `methods` only (production mode: the methods
    /// with a rail); others are refused with [`CreateAccountError::NotEnabled`]. Without it
    /// every method is accepted (sandbox mode).
    pub fn enabling(self, methods: BTreeSet<PayoutMethod>) -> Self {
        Self {
            enabled: Some(methods),
            ..self
        }
    }

    async fn callers_receiver(
        &self,
        caller: &Caller,
        raw: &str,
    ) -> Result<Option<Receiver>, PortError> {
        match ReceiverId::parse(raw) {
            Some(id) => self.receivers.find_receiver(caller.subaccount_id, id).await,
            None => Ok(None),
        }
    }

    /// Every check of [`Self::create`] that comes before storing (so not `REAC230`), writing
    /// nothing: for a request whose body also has problems of its own.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, method = ?method)
    )]
    pub async fn validate(
        &self,
        caller: &Caller,
        method: PayoutMethod,
        raw: &RawAccount,
    ) -> Result<(), CreateAccountError> {
        self.checked(caller, method, raw).await.map(|_| ())
    }

    async fn checked(
        &self,
        caller: &Caller,
        method: PayoutMethod,
        raw: &RawAccount,
    ) -> Result<(AccountInput, Receiver), CreateAccountError> {
        if self
            .enabled
            .as_ref()
            .is_some_and(|enabled| !enabled.contains(&method))
        {
            return Err(CreateAccountError::NotEnabled(method));
        }
        let parsed = AccountInput::parse(method, raw);
        let receiver_id = raw
            .receiver_id
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        let receiver = match receiver_id {
            Some(id) if id.chars().count() <= 255 => self.callers_receiver(caller, id).await?,
            _ => None,
        };
        match (parsed, receiver) {
            (Ok(input), Some(receiver)) => Ok((input, receiver)),
            (parsed, receiver) => {
                let mut errors = parsed.err().unwrap_or_default();
                if receiver.is_none() && receiver_id.is_some_and(|id| id.chars().count() <= 255) {
                    errors.push(ErrorCode::Reac211, "receiver_id");
                }
                Err(CreateAccountError::Invalid(errors))
            }
        }
    }

    /// Validates the details, checks the receiver is the caller's, stores the account
    /// (`pending`/`unconfirmed`) with its token, `accountCreated` event and queued confirmation
    /// request, then makes the request's first attempt.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, method = ?method)
    )]
    pub async fn create(
        &self,
        caller: &Caller,
        method: PayoutMethod,
        raw: &RawAccount,
        key: &WriteKey<ReceiverAccount>,
    ) -> Result<CreatedAccount, CreateAccountError> {
        let (input, receiver) = self.checked(caller, method, raw).await?;
        let now = self.clock.now();
        let account = ReceiverAccount {
            id: ReceiverAccountId::from_uuid(self.ids.new_id()),
            receiver_id: receiver.id,
            subaccount_id: caller.subaccount_id,
            method,
            data: AccountData::from_details(&input.details),
            status: AccountStatus::Pending,
            confirm_status: ConfirmStatus::Unconfirmed,
            created_at: now,
            updated_at: now,
        };
        let token = URL_SAFE_NO_PAD.encode(self.ids.random_bytes());
        let stored_token = ConfirmationToken {
            hash: token_hash(&token),
            expires_at: now + Duration::days(TOKEN_LIFETIME_DAYS),
        };
        let event = OutboxEvent::account(
            EventKind::AccountCreated,
            EventId::from_uuid(self.ids.new_id()),
            &account,
            now,
        );
        let request = ConfirmationRequest {
            account_id: account.id,
            subaccount_id: account.subaccount_id,
            to_email: receiver.email.clone(),
            to_phone: format!("+{}{}", receiver.dialcode, receiver.phone),
            receiver_name: format!("{} {}", receiver.first_name, receiver.last_name),
            confirm_url: Secret::new(format!(
                "{}/confirm/{token}",
                self.confirm_base_url.trim_end_matches('/')
            )),
            masked_details: account.data.masked(),
        };
        let queued =
            self.notifications
                .prepare(NotificationId::from_uuid(self.ids.new_id()), request, now);
        self.accounts
            .insert_account(&account, &stored_token, &[event], &queued, key)
            .await
            .map_err(|e| match e {
                InsertAccountError::Duplicate => CreateAccountError::Duplicate,
                InsertAccountError::Port(e) => CreateAccountError::Port(e),
            })?;
        // The request is recorded with the account; its first attempt is made now, and the
        // retry job makes the others.
        let confirmation_sent = matches!(
            self.notifications.attempt(&queued).await,
            NotificationOutcome::Sent { .. }
        );
        Ok(CreatedAccount {
            account,
            confirmation_sent,
        })
    }

    /// The caller's account with this id, with its receiver (for the fields the account object
    /// shows from it).
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn get(
        &self,
        caller: &Caller,
        raw_id: &str,
    ) -> Result<(ReceiverAccount, Receiver), GetAccountError> {
        let id = ReceiverAccountId::parse(raw_id).ok_or(GetAccountError::NotFound)?;
        let account = self
            .accounts
            .find_account(caller.subaccount_id, id)
            .await?
            .ok_or(GetAccountError::NotFound)?;
        let receiver = self
            .receivers
            .find_receiver(caller.subaccount_id, account.receiver_id)
            .await?
            .ok_or_else(|| {
                PortError::Unknown(anyhow::anyhow!("account {} has no receiver", account.id))
            })?;
        Ok((account, receiver))
    }

    /// The accounts of the caller's receiver, oldest first.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn list_for_receiver(
        &self,
        caller: &Caller,
        raw_receiver_id: &str,
    ) -> Result<(Receiver, Vec<ReceiverAccount>), GetAccountError> {
        let receiver = self
            .callers_receiver(caller, raw_receiver_id)
            .await?
            .ok_or(GetAccountError::NotFound)?;
        let accounts = self
            .accounts
            .list_accounts(caller.subaccount_id, receiver.id)
            .await?;
        Ok((receiver, accounts))
    }

    /// The oldest account of the caller's subaccount matching every given field, after
    /// normalising each value as create does. A value no account could have matches nothing.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn verify(
        &self,
        caller: &Caller,
        request: &VerifyRequest,
    ) -> Result<Option<ReceiverAccount>, VerifyError> {
        let callers = request
            .subaccount_id
            .as_deref()
            .is_some_and(|id| caller.owns(id));
        // Only matchable fields, each once; names of descriptive fields (`name`) or of no field
        // at all are refused like any other malformed request.
        let mut fields: Vec<(AccountField, &str)> = Vec::with_capacity(request.account_data.len());
        for (name, value) in &request.account_data {
            match AccountField::from_name(name) {
                Some(field) if field.matchable() && !fields.iter().any(|(f, _)| *f == field) => {
                    fields.push((field, value));
                }
                _ => return Err(VerifyError::Invalid),
            }
        }
        if !callers || fields.is_empty() {
            return Err(VerifyError::Invalid);
        }
        // Fields of different payout methods (a BSB with an IBAN) can never be one account's;
        // answering without a query also keeps such a request from walking every account that
        // shares one of its values.
        let one_method = PayoutMethod::ALL
            .iter()
            .any(|m| fields.iter().all(|(field, _)| m.has_field(*field)));
        if !one_method {
            return Ok(None);
        }
        let mut normalized = Vec::with_capacity(fields.len());
        for (field, value) in fields {
            if value.chars().count() > 255 {
                return Err(VerifyError::Invalid);
            }
            match field.normalize_for_match(value) {
                Some(value) => normalized.push((field, value)),
                None => return Ok(None),
            }
        }
        Ok(self
            .accounts
            .find_first_match(caller.subaccount_id, &normalized)
            .await?)
    }

    async fn apply_confirmation(
        &self,
        account: ReceiverAccount,
        token: Option<[u8; 32]>,
        key: &WriteKey<ReceiverAccount>,
    ) -> Result<ReceiverAccount, ConfirmError> {
        let Some((status, confirm_status)) = confirm(account.status, account.confirm_status) else {
            return if account.confirm_status == ConfirmStatus::Confirmed {
                Ok(account)
            } else {
                Err(ConfirmError::Invalid)
            };
        };
        let now = self.clock.now();
        let updated = ReceiverAccount {
            status,
            confirm_status,
            updated_at: now,
            ..account
        };
        let event = OutboxEvent::account(
            EventKind::AccountUpdate,
            EventId::from_uuid(self.ids.new_id()),
            &updated,
            now,
        );
        if self
            .accounts
            .confirm_account(
                &updated,
                token,
                &[event],
                &PayoutReaction::new(ReactionTrigger::AccountConfirmed, now, self.ids.clone()),
                key,
            )
            .await?
        {
            return Ok(updated);
        }
        // Lost a race: someone confirmed it (or used the token) first. Report what is stored.
        let stored = self
            .accounts
            .find_account(updated.subaccount_id, updated.id)
            .await?;
        match stored {
            Some(stored) if stored.confirm_status == ConfirmStatus::Confirmed => Ok(stored),
            _ => Err(ConfirmError::Invalid),
        }
    }

    /// Looks the link's token up: `None` when it is malformed or unknown.
    async fn lookup(&self, token: &str) -> Result<Option<(TokenLookup, [u8; 32])>, PortError> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Ok(None);
        }
        let hash = token_hash(token);
        Ok(self
            .accounts
            .find_token(&hash)
            .await?
            .map(|found| (found, hash)))
    }

    /// What the confirmation link shows, changing nothing (e-mail link scanners
    /// fetch every link, so opening it must not confirm). `Invalid` for an unknown, malformed
    /// or expired token, and for one that can no longer confirm its account.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn show_confirmation(&self, token: &str) -> Result<ConfirmationView, ConfirmError> {
        let (found, _) = self.lookup(token).await?.ok_or(ConfirmError::Invalid)?;
        let state = link_state(&found, self.clock.now()).ok_or(ConfirmError::Invalid)?;
        Ok(ConfirmationView {
            merchant: found.merchant.shown().to_owned(),
            receiver_name: crate::receiver::full_name(found.receiver_names),
            method: found.account.method,
            masked_details: found.account.data.masked(),
            state,
        })
    }

    /// Confirms through the link sent to the receiver (its form's `POST`). A token works for
    /// [`TOKEN_LIFETIME_DAYS`]; once its account is confirmed (by it or otherwise) it only
    /// shows the account confirmed, writing nothing.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn confirm_with_token(&self, token: &str) -> Result<ReceiverAccount, ConfirmError> {
        let (found, hash) = self.lookup(token).await?.ok_or(ConfirmError::Invalid)?;
        match link_state(&found, self.clock.now()) {
            Some(LinkState::Confirmable) => {
                self.apply_confirmation(found.account, Some(hash), &WriteKey::none())
                    .await
            }
            Some(LinkState::AlreadyConfirmed) => Ok(found.account),
            None => Err(ConfirmError::Invalid),
        }
    }

    /// Confirms an account of the caller's subaccount directly (sandbox helper), applying `key`
    /// with the confirmation (an account confirmed already is answered without a write).
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn confirm_by_id(
        &self,
        caller: &Caller,
        raw_id: &str,
        key: &WriteKey<ReceiverAccount>,
    ) -> Result<ReceiverAccount, ConfirmError> {
        let id = ReceiverAccountId::parse(raw_id).ok_or(ConfirmError::NotFound)?;
        let account = self
            .accounts
            .find_account(caller.subaccount_id, id)
            .await?
            .ok_or(ConfirmError::NotFound)?;
        self.apply_confirmation(account, None, key).await
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
