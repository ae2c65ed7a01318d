//! What every console handler shares: the domain services it calls.

use std::sync::Arc;

use domain::account::notification::resend::ConfirmationRequests;
use domain::admin::AdminPorts;
use domain::audit::AuditLog;
use domain::operators::service::OperatorService;
use domain::overview::Overviews;
use domain::payout_story::PayoutStories;
use domain::ports::{Clock, IdGenerator};
use domain::rail::bank_files::BankFiles;
use domain::receiver::operator::OperatorKycService;

/// The console's services.
pub struct Console {
    /// Operators, sessions and sign-in.
    pub operators: Arc<OperatorService>,
    /// KYC decisions and the queue.
    pub kyc: Arc<OperatorKycService>,
    /// Subaccounts: the list and each one's profile.
    pub subaccounts: domain::subaccount::directory::Subaccounts,
    /// Payout changes operators make (cancel).
    pub payouts: domain::payout::operator::OperatorPayouts,
    /// Payout searches and stories.
    pub stories: PayoutStories,
    /// Bank files, their answers and downloads.
    pub files: BankFiles,
    /// Confirmation requests: the queue, and sending a failed one again.
    pub confirmations: ConfirmationRequests,
    /// The overview (the home page).
    pub overview: Overviews,
    /// The audit log.
    pub audit: Arc<dyn AuditLog>,
    /// The ports of the admin use cases (`payoutd admin`'s): each request runs them as its
    /// operator ([`crate::session::SignedIn::admin`]), so no change is made for no one.
    pub admin: AdminPorts,
    /// The time.
    pub clock: Arc<dyn Clock>,
    /// Randomness (pre-session form secrets).
    pub ids: Arc<dyn IdGenerator>,
    /// The console's public base URL (enrolment links start with it).
    pub public_url: String,
}
