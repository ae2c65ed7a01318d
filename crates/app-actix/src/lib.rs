//! The `payoutd` application: the HTTP surface over the domain's use cases, configuration, the
//! operator CLI and the wiring of adapters into ports. The binary is `src/main.rs`.

pub mod admin_console;
pub mod admin_kyc;
pub mod admin_rails;
pub mod cli;
pub mod config;
pub mod console_config;
pub mod console_server;
pub mod http;
pub mod jobs;
pub mod metrics;
pub mod partner_callbacks;
pub mod production;
pub mod production_config;
pub mod secret_source;
pub mod startup;
pub mod state;
pub mod system;
pub mod telemetry;
pub mod tls;
