//! One typed method per route of the API (docs/API.md, Routes).

use futures_util::stream::{self, Stream, TryStreamExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use uuid::Uuid;

use crate::client::{Answer, Client, Post};
use crate::error::Error;
use crate::types::*;

/// Items asked for per page by the list streams: the API's largest page.
pub const STREAM_PAGE_SIZE: u8 = 100;

impl Client {
    /// `GET /api/subaccount/{id}`: the caller's subaccount.
    ///
    /// # Errors
    /// See [`Error`]; every method below fails the same ways.
    pub async fn get_subaccount(&self) -> Result<Subaccount, Error> {
        self.get(&format!("/api/subaccount/{}", self.subaccount_id()))
            .await
    }

    /// `GET /api/subaccount/balance/{id}?asset=`: the balance in one asset.
    pub async fn get_balance(&self, asset: Asset) -> Result<Balance, Error> {
        self.get(&format!(
            "/api/subaccount/balance/{}?asset={}",
            self.subaccount_id(),
            asset.as_str()
        ))
        .await
    }

    /// `POST /api/receiver`: creates a receiver (KYC starts at once).
    pub fn create_receiver(&self, receiver: &NewReceiver) -> Post<'_, ReceiverCreated> {
        let body = serde_json::to_value(receiver).and_then(|mut body| {
            body["subaccount_id"] = json!(self.subaccount_id());
            serde_json::to_vec(&body)
        });
        self.post_with("/api/receiver", body, Answer::payload)
    }

    /// `GET /api/receiver/{id}`: one receiver.
    pub async fn get_receiver(&self, receiver_id: Uuid) -> Result<Receiver, Error> {
        self.get(&format!("/api/receiver/{receiver_id}")).await
    }

    /// `GET /api/receiver`: one page of receivers, newest first. `lastkey` is the previous
    /// page's [`Page::lastkey`] (`None` for the first page); `limit` is 1 to 100.
    pub async fn list_receivers_page(
        &self,
        filter: &ReceiverFilter,
        limit: u8,
        lastkey: Option<&str>,
    ) -> Result<Page<Receiver>, Error> {
        self.page("/api/receiver", filter.query(), limit, lastkey)
            .await
    }

    /// `GET /api/receiver`: every receiver that matches `filter`, newest first, fetched page
    /// by page as the stream is read.
    ///
    /// ```no_run
    /// # async fn run(client: payoutd_client::Client) -> Result<(), payoutd_client::Error> {
    /// use futures_util::TryStreamExt;
    /// use payoutd_client::ReceiverFilter;
    ///
    /// let receivers: Vec<_> = client.list_receivers(ReceiverFilter::default()).try_collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn list_receivers(
        &self,
        filter: ReceiverFilter,
    ) -> impl Stream<Item = Result<Receiver, Error>> + Send + '_ {
        self.stream("/api/receiver", filter.query())
    }

    /// `POST /api/receiver-account/{asset}/{method}`: creates an account of one of the six
    /// payout methods for a receiver (the variant of `account` picks the route).
    pub fn create_receiver_account(
        &self,
        account: impl Into<NewAccount>,
    ) -> Post<'_, AccountCreated> {
        let account = account.into();
        self.post_with(
            &format!("/api/receiver-account/{}", account.route()),
            account.body(),
            Answer::payload,
        )
    }

    /// `GET /api/receiver-account/{id}`: one account, identifiers masked.
    pub async fn get_receiver_account(&self, account_id: Uuid) -> Result<ReceiverAccount, Error> {
        self.get(&format!("/api/receiver-account/{account_id}"))
            .await
    }

    /// `GET /api/receiver-account/receiver/{id}`: a receiver's accounts, oldest first.
    pub async fn list_receiver_accounts(
        &self,
        receiver_id: Uuid,
    ) -> Result<Vec<ReceiverAccount>, Error> {
        self.get(&format!("/api/receiver-account/receiver/{receiver_id}"))
            .await
    }

    /// `POST /api/receiver-account/verify`: the oldest account of the subaccount having every
    /// given value. A refusal (no field given, say) is an [`Error::Api`] with only a message.
    pub fn verify_receiver_account(&self, fields: &AccountMatch) -> Post<'_, Verification> {
        let body = serde_json::to_vec(&json!({
            "subaccount_id": self.subaccount_id(),
            "account_data": fields,
        }));
        self.post_with("/api/receiver-account/verify", body, Answer::bare)
    }

    /// `POST /api/payout/single`: creates a payout; `amount + fee` moves from `available` to
    /// `pending` at once.
    pub fn create_payout(&self, payout: &NewPayout) -> Post<'_, PayoutCreated> {
        self.post_with(
            "/api/payout/single",
            serde_json::to_vec(payout),
            Answer::payload,
        )
    }

    /// `POST /api/payout/bulk`: up to 1000 payouts in one request. A refused atomic request
    /// is an [`Error::Api`] with `PAYO209` whose [`ApiError::bulk_outcome`](crate::ApiError::bulk_outcome)
    /// tells each item's fate.
    pub fn create_payouts(&self, bulk: &BulkPayouts) -> Post<'_, BulkOutcome> {
        self.post_with(
            "/api/payout/bulk",
            serde_json::to_vec(bulk),
            Answer::payload,
        )
    }

    /// `GET /api/payout/{id}`: one payout with its money movements.
    pub async fn get_payout(&self, payout_id: Uuid) -> Result<Payout, Error> {
        self.get(&format!("/api/payout/{payout_id}")).await
    }

    /// `GET /api/payout/`: one page of payouts, newest first (see
    /// [`Client::list_receivers_page`] for `limit` and `lastkey`).
    pub async fn list_payouts_page(
        &self,
        filter: &PayoutFilter,
        limit: u8,
        lastkey: Option<&str>,
    ) -> Result<Page<Payout>, Error> {
        self.page("/api/payout/", filter.query(), limit, lastkey)
            .await
    }

    /// `GET /api/payout/`: every payout that matches `filter`, newest first, page by page.
    pub fn list_payouts(
        &self,
        filter: PayoutFilter,
    ) -> impl Stream<Item = Result<Payout, Error>> + Send + '_ {
        self.stream("/api/payout/", filter.query())
    }

    /// `POST /api/payout/{id}/cancel`: cancels a payout not yet submitted; its hold goes back
    /// to `available`.
    pub fn cancel_payout(&self, payout_id: Uuid) -> Post<'_, PayoutCancelled> {
        self.post_with(
            &format!("/api/payout/{payout_id}/cancel"),
            Ok(Vec::new()),
            Answer::payload,
        )
    }

    /// One page of a list route.
    async fn page<T: DeserializeOwned>(
        &self,
        path: &str,
        filters: Vec<(String, String)>,
        limit: u8,
        lastkey: Option<&str>,
    ) -> Result<Page<T>, Error> {
        let mut query = vec![
            ("subaccount_id".to_owned(), self.subaccount_id().to_string()),
            ("limit".to_owned(), limit.to_string()),
        ];
        query.extend(filters);
        if let Some(lastkey) = lastkey {
            query.push(("lastkey".to_owned(), lastkey.to_owned()));
        }
        let query = serde_urlencoded::to_string(&query)
            .map_err(|e| Error::Invalid(format!("query: {e}")))?;
        self.get_answer(&format!("{path}?{query}")).await?.page()
    }

    /// Every item of a list route, following `lastkey` until the last page.
    fn stream<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &'static str,
        filters: Vec<(String, String)>,
    ) -> impl Stream<Item = Result<T, Error>> + Send + '_ {
        // `Some(cursor)` while there is a page to fetch (the first has no cursor).
        let start: Option<Option<String>> = Some(None);
        stream::try_unfold(start, move |cursor| {
            let filters = filters.clone();
            async move {
                let Some(lastkey) = cursor else {
                    return Ok(None);
                };
                let page: Page<T> = self
                    .page(path, filters, STREAM_PAGE_SIZE, lastkey.as_deref())
                    .await?;
                if page.lastkey.is_some() && page.lastkey == lastkey {
                    return Err(Error::Decode {
                        status: 200,
                        reason: "the list answered the same lastkey again".to_owned(),
                    });
                }
                let next = page.lastkey.map(Some);
                Ok(Some((stream::iter(page.items.into_iter().map(Ok)), next)))
            }
        })
        .try_flatten()
    }
}
