//! The operator console's listener: the `console` crate's routes over the domain services,
//! wired to the PostgreSQL store, on `PAYOUT_CONSOLE_BIND` (never the API's listener), with TLS
//! when configured.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::{App, HttpServer, web};
use adapters_postgres::PgStore;
use anyhow::Context;
use console::{Console, Transport};
use domain::operators::service::{OperatorPorts, OperatorService};
use domain::operators::{SessionPolicy, ThrottlePolicy};
use domain::ports::{Clock, IdGenerator};

use crate::config::Config;
use crate::console_config::ConsoleConfig;
use crate::system::{Argon2Passwords, RandomIds, SystemClock};

/// The operator use cases over `store`, with argon2id passwords (the console and the CLI).
///
/// # Errors
/// When the password hasher cannot be built.
pub fn operator_service(
    store: &Arc<PgStore>,
    sessions: SessionPolicy,
) -> anyhow::Result<OperatorService> {
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds::default());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let passwords = Arc::new(Argon2Passwords::new(ids.clone())?);
    Ok(OperatorService::new(
        OperatorPorts::with_store(store.clone(), passwords),
        clock,
        ids,
        sessions,
        ThrottlePolicy::default(),
    ))
}

/// The bank file use cases over `store` (the console's pages and `payoutd admin rail-file`).
pub fn bank_files(store: &Arc<PgStore>) -> domain::rail::bank_files::BankFiles {
    domain::rail::bank_files::BankFiles::new(domain::rail::bank_files::BankFilePorts {
        files: store.clone(),
        inbound: store.clone(),
        audit: store.clone(),
        clock: Arc::new(crate::system::SystemClock),
        ids: Arc::new(crate::system::RandomIds::default()),
    })
}

/// The console's services over `store`.
///
/// # Errors
/// When the password hasher cannot be built.
pub fn console_state(
    store: &PgStore,
    settings: &ConsoleConfig,
    allow_private_targets: bool,
) -> anyhow::Result<Console> {
    let store = Arc::new(store.clone());
    Ok(Console {
        operators: Arc::new(operator_service(&store, settings.sessions)?),
        kyc: Arc::new(domain::receiver::operator::OperatorKycService::new(
            store.clone(),
            Arc::new(SystemClock),
            Arc::new(RandomIds::default()),
        )),
        admin: domain::admin::AdminPorts::all(
            store.clone(),
            Arc::new(adapters_webhook::guard::TargetGuard::new(
                allow_private_targets,
            )),
        ),
        subaccounts: domain::subaccount::directory::Subaccounts::new(store.clone()),
        stories: domain::payout_story::PayoutStories::new(store.clone()),
        payouts: domain::payout::operator::OperatorPayouts::new(
            store.clone(),
            Arc::new(SystemClock),
            Arc::new(RandomIds::default()),
        ),
        files: bank_files(&store),
        confirmations: domain::account::notification::resend::ConfirmationRequests::new(
            store.clone(),
            Arc::new(SystemClock),
            Arc::new(RandomIds::default()),
        ),
        overview: domain::overview::Overviews::new(
            store.clone(),
            Arc::new(SystemClock),
            store.batch_schedule().clone(),
        ),
        clock: Arc::new(SystemClock),
        audit: store,
        ids: Arc::new(RandomIds::default()),
        public_url: settings.public_url.clone(),
    })
}

/// A bound, running console server and its port.
pub struct ConsoleServer {
    /// The server (await it to serve).
    pub server: Server,
    /// The bound port.
    pub port: u16,
}

/// Binds the console's listener and builds its server over `store` (whose pool it shares
/// between two workers: the console's traffic is a few people's), letting requests in flight
/// finish for `shutdown_secs` when stopped.
///
/// # Errors
/// When the address cannot be bound or the state cannot be built.
pub fn build(
    config: &Config,
    settings: &ConsoleConfig,
    store: &PgStore,
    shutdown_secs: u64,
) -> anyhow::Result<ConsoleServer> {
    let state = web::Data::new(console_state(
        store,
        settings,
        config.delivery.allow_private_targets,
    )?);
    let transport = web::Data::new(Transport {
        tls: settings.tls.is_some(),
    });
    let listener = TcpListener::bind(settings.bind).with_context(|| {
        format!(
            "binding the console's {} (PAYOUT_CONSOLE_BIND)",
            settings.bind
        )
    })?;
    let port = listener.local_addr()?.port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(transport.clone())
            .configure(console::configure)
    })
    .workers(2)
    .keep_alive(actix_web::http::KeepAlive::Timeout(
        std::time::Duration::from_secs(30),
    ))
    .client_request_timeout(config.http.request_timeout)
    .shutdown_timeout(shutdown_secs);
    let server = match &settings.tls {
        Some(tls) => server.listen_rustls_0_23(listener, tls.server_config())?,
        None => server.listen(listener)?,
    }
    .run();
    Ok(ConsoleServer { server, port })
}
