//! [`SmtpNotifier`]: the `Notifier` port over SMTP.

use std::time::Duration;

use async_trait::async_trait;
use domain::PortError;
use domain::account::ports::{ConfirmationRequest, Notifier, NotifyError};
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use crate::message::{BuildError, build};
use crate::settings::{SmtpConfigError, SmtpSettings, TlsMode};

/// SMTP answers that refuse this message's recipient or address for good: sending again cannot
/// help. Every other failure (connection, timeout, TLS, `4xx`, and `5xx` answers about the
/// session such as a refused AUTH, which a configuration fix cures) is `Unavailable`.
const RECIPIENT_REFUSALS: [&str; 4] = ["501", "550", "551", "553"];

/// Sends confirmation requests through an SMTP relay, one connection per message.
pub struct SmtpNotifier {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    deadline: Duration,
}

/// The conversation of one message (connect, greeting, TLS, AUTH, envelope, data, quit) takes
/// at most this many `timeout`s in all, whatever the server does.
const STEPS: u32 = 6;

impl SmtpNotifier {
    /// A notifier with these settings. Nothing is contacted until the first send.
    ///
    /// # Errors
    /// An unknown sender form, an empty host, or TLS settings (the CA certificate) refused.
    pub fn new(settings: &SmtpSettings) -> Result<Self, SmtpConfigError> {
        let host = settings.host.trim();
        if host.is_empty() {
            return Err(SmtpConfigError::Host);
        }
        let from: Mailbox = settings
            .from
            .parse()
            .map_err(|e: lettre::address::AddressError| SmtpConfigError::From(e.to_string()))?;
        let tls = match settings.tls {
            TlsMode::None => Tls::None,
            TlsMode::Starttls => Tls::Required(tls_parameters(host, settings)?),
            TlsMode::Implicit => Tls::Wrapper(tls_parameters(host, settings)?),
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(settings.port)
            .tls(tls)
            .timeout(Some(settings.timeout));
        if let Some(credentials) = &settings.credentials {
            builder = builder.credentials(Credentials::new(
                credentials.username.clone(),
                credentials.password.expose().clone(),
            ));
        }
        Ok(Self {
            transport: builder.build(),
            from,
            deadline: settings.timeout.saturating_mul(STEPS),
        })
    }
}

fn tls_parameters(host: &str, settings: &SmtpSettings) -> Result<TlsParameters, SmtpConfigError> {
    let refused = |e: lettre::transport::smtp::Error| SmtpConfigError::Tls(e.to_string());
    let mut builder = TlsParameters::builder(host.to_owned());
    if let Some(pem) = &settings.ca_certificate_pem {
        if !pem
            .windows(b"-----BEGIN CERTIFICATE-----".len())
            .any(|w| w == b"-----BEGIN CERTIFICATE-----")
        {
            return Err(SmtpConfigError::Tls(
                "the CA certificate is not a PEM certificate".to_owned(),
            ));
        }
        builder = builder
            .certificate_store(CertificateStore::None)
            .add_root_certificate(Certificate::from_pem(pem).map_err(refused)?);
    }
    builder.build_rustls().map_err(refused)
}

/// The error text of `e`, with the recipient's address (which some servers quote) replaced.
fn describe(e: &lettre::transport::smtp::Error, recipient: &str) -> String {
    let text = format!("{e}");
    let recipient = recipient.trim();
    if recipient.is_empty() {
        text
    } else {
        text.replace(recipient, "<recipient>")
    }
}

/// Which [`NotifyError`] an SMTP failure is.
fn classify(e: &lettre::transport::smtp::Error, recipient: &str) -> NotifyError {
    let refused = e.is_permanent()
        && e.status()
            .is_some_and(|code| RECIPIENT_REFUSALS.contains(&code.to_string().as_str()));
    let text = describe(e, recipient);
    if refused {
        NotifyError::Rejected(text)
    } else {
        NotifyError::Port(PortError::Unavailable(anyhow::anyhow!("smtp: {text}")))
    }
}

#[async_trait]
impl Notifier for SmtpNotifier {
    async fn send_confirmation(&self, request: &ConfirmationRequest) -> Result<(), NotifyError> {
        let message = build(&self.from, request).map_err(|e| match e {
            BuildError::Recipient => {
                NotifyError::Rejected("the receiver's e-mail address cannot be used".to_owned())
            }
            BuildError::Other(reason) => NotifyError::Port(PortError::Unknown(anyhow::anyhow!(
                "building the confirmation e-mail: {reason}"
            ))),
        })?;
        match tokio::time::timeout(self.deadline, self.transport.send(message)).await {
            Ok(sent) => sent
                .map(|_| ())
                .map_err(|e| classify(&e, &request.to_email)),
            Err(_) => Err(NotifyError::Port(PortError::Unavailable(anyhow::anyhow!(
                "smtp: no answer within {:?}",
                self.deadline
            )))),
        }
    }
}
