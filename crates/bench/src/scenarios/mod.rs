//! The scenarios. Each is a module with clap `Args` and `run(&Env, &Args) -> ExitCode`, and
//! the subcommand of the same name in `main.rs`.

pub mod api;
pub mod chaos;
pub mod cutoff;
pub mod delivery;
pub mod verify;
