//! Distribution of payoutd's schema on Citus, the step `payoutd migrate` runs after the SQL
//! migrations when the database has the `citus` extension (a no-op on plain PostgreSQL).
//!
//! Tables that belong to one subaccount are hash-distributed by `subaccount_id`, all colocated
//! with `receivers`, so a subaccount's rows of every table live on the same node and a
//! transaction of one subaccount runs on one node. Global tables (subaccounts, API keys, the
//! rails' file numbers and inbound files, the bank's reports, maintenance markers, the console's
//! operators, sessions, sign-in failures and audit log) are reference tables, copied to every
//! node.
//!
//! Citus requires the distribution column in every primary key, unique constraint and foreign key
//! between distributed tables. The migrations key most tables by `id` alone, so this step, on
//! Citus only, replaces those keys with `(subaccount_id, id)` (and likewise for the other unique
//! constraints), and foreign keys between distributed tables with composite ones on
//! `(subaccount_id, <column>)`. Global uniqueness of those columns then rests on how their
//! values are made (random UUIDs, hashes of random tokens, sequences); `rail_files.name` becomes
//! unique per subaccount. `bank_reports`, global but pointing at payouts and files, loses its
//! foreign keys to them: a reference table cannot reference a distributed one.
//!
//! Each table is placed once: a table already in `pg_dist_partition` as planned is left alone,
//! so running `migrate` again does nothing, and a table added by a later migration is placed by
//! the next run. Everything runs in one transaction. A table of the schema this plan does not
//! place stops the step with an error rather than leave a local table among distributed ones.

use std::collections::HashMap;

use anyhow::Context;
use diesel::sql_types::{Bool, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

/// Where a table lives on a Citus cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Copied to every node (`create_reference_table`).
    Reference,
    /// Hash-distributed by `subaccount_id`, colocated with [`COLOCATION_ANCHOR`].
    Distributed,
}

/// The distribution column of every distributed table.
pub const DISTRIBUTION_COLUMN: &str = "subaccount_id";

/// The distributed table the others are colocated with (the first one placed).
pub const COLOCATION_ANCHOR: &str = "receivers";

/// diesel's migration bookkeeping: a local table on the coordinator, read only by `migrate`.
pub const MIGRATIONS_TABLE: &str = "__diesel_schema_migrations";

/// One table's placement and the constraint changes Citus needs for it.
#[derive(Debug)]
pub struct TablePlan {
    /// The table.
    pub table: &'static str,
    /// Where it goes.
    pub placement: Placement,
    /// Its foreign keys to be dropped first: those whose referenced key changes, and those a
    /// reference table cannot keep.
    drop_foreign_keys: &'static [&'static str],
    /// Statements that put `subaccount_id` into its primary key and unique constraints.
    rekey: &'static [&'static str],
    /// Statements that add its foreign keys back, after every table is placed.
    foreign_keys: &'static [&'static str],
}

impl TablePlan {
    /// A table placed as it is.
    const fn plain(table: &'static str, placement: Placement) -> Self {
        Self {
            table,
            placement,
            drop_foreign_keys: &[],
            rekey: &[],
            foreign_keys: &[],
        }
    }
}

/// Every table of the schema but [`MIGRATIONS_TABLE`], in placement order: reference tables
/// first (distributed tables reference `subaccounts`), then [`COLOCATION_ANCHOR`], then the
/// other distributed tables.
pub const PLAN: &[TablePlan] = &[
    TablePlan::plain("subaccounts", Placement::Reference),
    // Authentication finds a key by `api_key` alone, which must stay unique across subaccounts.
    TablePlan::plain("api_keys", Placement::Reference),
    // File numbers count the originator's files, not a subaccount's.
    TablePlan::plain("rail_file_numbers", Placement::Reference),
    // Files read from a rail: no subaccount (a file may concern many).
    TablePlan::plain("inbound_files", Placement::Reference),
    // A report's subaccount is null when it matches no payout, so it cannot be distributed by it.
    TablePlan {
        table: "bank_reports",
        placement: Placement::Reference,
        drop_foreign_keys: &[
            "bank_reports_payout_id_fkey",
            "bank_reports_rail_file_id_fkey",
        ],
        rekey: &[],
        foreign_keys: &[],
    },
    TablePlan::plain("maintenance_markers", Placement::Reference),
    // The console's operators, sessions, sign-in failures and the audit log: global, small,
    // read on every console request from any node.
    TablePlan::plain("operators", Placement::Reference),
    TablePlan::plain("operator_sessions", Placement::Reference),
    TablePlan::plain("login_failures", Placement::Reference),
    TablePlan::plain("audit_log", Placement::Reference),
    TablePlan {
        table: "receivers",
        placement: Placement::Distributed,
        drop_foreign_keys: &[],
        rekey: &["ALTER TABLE receivers DROP CONSTRAINT receivers_pkey, \
             ADD CONSTRAINT receivers_pkey PRIMARY KEY (subaccount_id, id)"],
        foreign_keys: &[],
    },
    TablePlan {
        table: "request_nonces",
        placement: Placement::Distributed,
        drop_foreign_keys: &[],
        rekey: &[
            "ALTER TABLE request_nonces DROP CONSTRAINT request_nonces_pkey, \
             ADD CONSTRAINT request_nonces_pkey PRIMARY KEY (subaccount_id, api_key_id, nonce)",
        ],
        foreign_keys: &[],
    },
    TablePlan::plain("balances", Placement::Distributed),
    TablePlan {
        table: "ledger_entries",
        placement: Placement::Distributed,
        drop_foreign_keys: &[],
        rekey: &[
            "ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_pkey, \
             ADD CONSTRAINT ledger_entries_pkey PRIMARY KEY (subaccount_id, id)",
            "DROP INDEX ledger_entries_seq",
            "CREATE UNIQUE INDEX ledger_entries_seq ON ledger_entries (subaccount_id, seq)",
        ],
        foreign_keys: &[],
    },
    TablePlan::plain("fee_templates", Placement::Distributed),
    TablePlan {
        table: "outbox_events",
        placement: Placement::Distributed,
        drop_foreign_keys: &[],
        rekey: &[
            "ALTER TABLE outbox_events DROP CONSTRAINT outbox_events_pkey, \
             ADD CONSTRAINT outbox_events_pkey PRIMARY KEY (subaccount_id, id)",
            "ALTER TABLE outbox_events DROP CONSTRAINT outbox_events_object_id_sequence_key, \
             ADD CONSTRAINT outbox_events_object_id_sequence_key \
             UNIQUE (subaccount_id, object_id, sequence)",
        ],
        foreign_keys: &[],
    },
    TablePlan {
        table: "outbox_sequences",
        placement: Placement::Distributed,
        drop_foreign_keys: &[],
        rekey: &[
            "ALTER TABLE outbox_sequences DROP CONSTRAINT outbox_sequences_pkey, \
             ADD CONSTRAINT outbox_sequences_pkey PRIMARY KEY (subaccount_id, object_id)",
        ],
        foreign_keys: &[],
    },
    TablePlan::plain("idempotency_keys", Placement::Distributed),
    TablePlan {
        table: "receiver_accounts",
        placement: Placement::Distributed,
        drop_foreign_keys: &["receiver_accounts_receiver_id_fkey"],
        rekey: &[
            "ALTER TABLE receiver_accounts DROP CONSTRAINT receiver_accounts_pkey, \
             ADD CONSTRAINT receiver_accounts_pkey PRIMARY KEY (subaccount_id, id)",
            "DROP INDEX receiver_accounts_details_unique",
            "CREATE UNIQUE INDEX receiver_accounts_details_unique \
             ON receiver_accounts (subaccount_id, receiver_id, details_fingerprint)",
        ],
        foreign_keys: &[
            "ALTER TABLE receiver_accounts ADD CONSTRAINT receiver_accounts_receiver_id_fkey \
             FOREIGN KEY (subaccount_id, receiver_id) REFERENCES receivers (subaccount_id, id)",
        ],
    },
    TablePlan {
        table: "account_confirmations",
        placement: Placement::Distributed,
        drop_foreign_keys: &["account_confirmations_account_id_fkey"],
        rekey: &[
            "ALTER TABLE account_confirmations DROP CONSTRAINT account_confirmations_pkey, \
             ADD CONSTRAINT account_confirmations_pkey PRIMARY KEY (subaccount_id, token_hash)",
        ],
        foreign_keys: &[
            "ALTER TABLE account_confirmations ADD CONSTRAINT account_confirmations_account_id_fkey \
             FOREIGN KEY (subaccount_id, account_id) \
             REFERENCES receiver_accounts (subaccount_id, id)",
        ],
    },
    TablePlan {
        table: "webhook_attempts",
        placement: Placement::Distributed,
        drop_foreign_keys: &["webhook_attempts_event_id_fkey"],
        rekey: &[
            "ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, \
             ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (subaccount_id, id)",
        ],
        foreign_keys: &[
            "ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_event_id_fkey \
             FOREIGN KEY (subaccount_id, event_id) REFERENCES outbox_events (subaccount_id, id)",
        ],
    },
    TablePlan::plain("webhook_endpoints", Placement::Distributed),
    TablePlan {
        table: "batches",
        placement: Placement::Distributed,
        drop_foreign_keys: &[],
        rekey: &["ALTER TABLE batches DROP CONSTRAINT batches_pkey, \
             ADD CONSTRAINT batches_pkey PRIMARY KEY (subaccount_id, id)"],
        foreign_keys: &[],
    },
    TablePlan {
        table: "payouts",
        placement: Placement::Distributed,
        drop_foreign_keys: &[
            "payouts_receiver_id_fkey",
            "payouts_account_id_fkey",
            "payouts_batch",
        ],
        rekey: &["ALTER TABLE payouts DROP CONSTRAINT payouts_pkey, \
             ADD CONSTRAINT payouts_pkey PRIMARY KEY (subaccount_id, id)"],
        foreign_keys: &[
            "ALTER TABLE payouts ADD CONSTRAINT payouts_receiver_id_fkey \
             FOREIGN KEY (subaccount_id, receiver_id) REFERENCES receivers (subaccount_id, id)",
            "ALTER TABLE payouts ADD CONSTRAINT payouts_account_id_fkey \
             FOREIGN KEY (subaccount_id, account_id) \
             REFERENCES receiver_accounts (subaccount_id, id)",
            "ALTER TABLE payouts ADD CONSTRAINT payouts_batch \
             FOREIGN KEY (subaccount_id, batch_id) REFERENCES batches (subaccount_id, id)",
        ],
    },
    TablePlan {
        table: "rail_files",
        placement: Placement::Distributed,
        drop_foreign_keys: &["rail_files_batch_id_fkey"],
        rekey: &[
            "ALTER TABLE rail_files DROP CONSTRAINT rail_files_pkey, \
             ADD CONSTRAINT rail_files_pkey PRIMARY KEY (subaccount_id, id)",
            "ALTER TABLE rail_files DROP CONSTRAINT rail_files_name_key, \
             ADD CONSTRAINT rail_files_name_key UNIQUE (subaccount_id, name)",
        ],
        foreign_keys: &[
            "ALTER TABLE rail_files ADD CONSTRAINT rail_files_batch_id_fkey \
             FOREIGN KEY (subaccount_id, batch_id) REFERENCES batches (subaccount_id, id)",
        ],
    },
    TablePlan {
        table: "rail_file_items",
        placement: Placement::Distributed,
        drop_foreign_keys: &[
            "rail_file_items_file_id_fkey",
            "rail_file_items_payout_id_fkey",
        ],
        rekey: &[
            "ALTER TABLE rail_file_items DROP CONSTRAINT rail_file_items_pkey, \
             ADD CONSTRAINT rail_file_items_pkey PRIMARY KEY (subaccount_id, file_id, position)",
            "ALTER TABLE rail_file_items DROP CONSTRAINT rail_file_items_reference_unique, \
             ADD CONSTRAINT rail_file_items_reference_unique \
             UNIQUE (subaccount_id, file_id, reference)",
            "ALTER TABLE rail_file_items DROP CONSTRAINT rail_file_items_payout_once, \
             ADD CONSTRAINT rail_file_items_payout_once UNIQUE (subaccount_id, file_id, payout_id)",
        ],
        foreign_keys: &[
            "ALTER TABLE rail_file_items ADD CONSTRAINT rail_file_items_file_id_fkey \
             FOREIGN KEY (subaccount_id, file_id) REFERENCES rail_files (subaccount_id, id)",
            "ALTER TABLE rail_file_items ADD CONSTRAINT rail_file_items_payout_id_fkey \
             FOREIGN KEY (subaccount_id, payout_id) REFERENCES payouts (subaccount_id, id)",
        ],
    },
    TablePlan {
        table: "notifications",
        placement: Placement::Distributed,
        drop_foreign_keys: &["notifications_account_id_fkey"],
        rekey: &[
            "ALTER TABLE notifications DROP CONSTRAINT notifications_pkey, \
             ADD CONSTRAINT notifications_pkey PRIMARY KEY (subaccount_id, id)",
        ],
        foreign_keys: &[
            "ALTER TABLE notifications ADD CONSTRAINT notifications_account_id_fkey \
             FOREIGN KEY (subaccount_id, account_id) \
             REFERENCES receiver_accounts (subaccount_id, id)",
        ],
    },
    TablePlan {
        table: "kyc_decisions",
        placement: Placement::Distributed,
        drop_foreign_keys: &["kyc_decisions_receiver_id_fkey"],
        rekey: &[
            "ALTER TABLE kyc_decisions DROP CONSTRAINT kyc_decisions_pkey, \
             ADD CONSTRAINT kyc_decisions_pkey PRIMARY KEY (subaccount_id, id)",
            "ALTER TABLE kyc_decisions DROP CONSTRAINT kyc_decisions_one_per_receiver, \
             ADD CONSTRAINT kyc_decisions_one_per_receiver UNIQUE (subaccount_id, receiver_id)",
        ],
        foreign_keys: &[
            "ALTER TABLE kyc_decisions ADD CONSTRAINT kyc_decisions_receiver_id_fkey \
             FOREIGN KEY (subaccount_id, receiver_id) REFERENCES receivers (subaccount_id, id)",
        ],
    },
];

/// Serialises concurrent `migrate` runs over the placement (a transaction-level advisory lock).
const PLACEMENT_LOCK: i64 = 0x7061_796f_7574_6463;

/// The tables one run placed; both empty when everything already was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Distribution {
    /// Tables made reference tables, in placement order.
    pub reference: Vec<String>,
    /// Tables distributed by `subaccount_id`, in placement order.
    pub distributed: Vec<String>,
}

#[derive(diesel::QueryableByName)]
struct Exists {
    #[diesel(sql_type = Bool)]
    exists: bool,
}

#[derive(diesel::QueryableByName)]
struct TableName {
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(diesel::QueryableByName)]
struct PartitionRow {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    partmethod: String,
    #[diesel(sql_type = Text)]
    repmodel: String,
}

/// Whether the connected database has the `citus` extension.
pub async fn has_citus(conn: &mut AsyncPgConnection) -> anyhow::Result<bool> {
    let found: Exists = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS exists",
    )
    .get_result(conn)
    .await
    .context("looking for the citus extension")?;
    Ok(found.exists)
}

/// Places every table of [`PLAN`] not yet placed, as the module docs describe; `None` on a
/// database without the `citus` extension, where it changes nothing.
pub async fn distribute_tables(
    conn: &mut AsyncPgConnection,
) -> anyhow::Result<Option<Distribution>> {
    if !has_citus(conn).await? {
        return Ok(None);
    }
    let placed = conn
        .transaction::<_, anyhow::Error, _>(async |conn| {
            diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
                .bind::<diesel::sql_types::BigInt, _>(PLACEMENT_LOCK)
                .execute(conn)
                .await
                .context("waiting for another migrate's Citus placement")?;
            for setting in [
                // Several placements in one transaction after reference tables changed.
                "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'",
                // ledger_entries' append-only trigger only raises an error: safe on shards.
                "SET LOCAL citus.enable_unsafe_triggers TO on",
            ] {
                diesel::sql_query(setting)
                    .execute(conn)
                    .await
                    .with_context(|| format!("preparing the Citus placement: {setting}"))?;
            }
            let pending = pending_tables(conn).await?;
            place(conn, &pending).await?;
            Ok(pending)
        })
        .await?;
    let mut distribution = Distribution::default();
    for plan in placed {
        match plan.placement {
            Placement::Reference => distribution.reference.push(plan.table.to_owned()),
            Placement::Distributed => distribution.distributed.push(plan.table.to_owned()),
        }
    }
    Ok(Some(distribution))
}

/// The tables of [`PLAN`] not yet placed as planned, in plan order. Fails when the schema has a
/// table the plan does not place, lacks one it does, or has one placed otherwise than planned.
async fn pending_tables(conn: &mut AsyncPgConnection) -> anyhow::Result<Vec<&'static TablePlan>> {
    let tables: Vec<TableName> = diesel::sql_query(
        "SELECT c.relname::text AS name FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition",
    )
    .load(conn)
    .await
    .context("listing the schema's tables")?;
    let unplanned: Vec<&str> = tables
        .iter()
        .map(|t| t.name.as_str())
        .filter(|name| *name != MIGRATIONS_TABLE && !PLAN.iter().any(|p| p.table == *name))
        .collect();
    anyhow::ensure!(
        unplanned.is_empty(),
        "the Citus placement has no plan for table(s) {}: add them to adapters-postgres's \
         citus::PLAN",
        unplanned.join(", ")
    );
    let missing: Vec<&str> = PLAN
        .iter()
        .map(|p| p.table)
        .filter(|planned| !tables.iter().any(|t| t.name == *planned))
        .collect();
    anyhow::ensure!(
        missing.is_empty(),
        "the Citus placement plans table(s) the schema lacks: {}",
        missing.join(", ")
    );
    let placements = current_placements(conn).await?;
    let mut pending = Vec::new();
    for plan in PLAN {
        match placements.get(plan.table).copied().flatten() {
            Some(placement) if placement == plan.placement => {}
            Some(placement) => anyhow::bail!(
                "table {} is already a Citus {placement:?} table, but the plan makes it {:?}; \
                 change it by hand (undistribute_table) first",
                plan.table,
                plan.placement
            ),
            // Not in Citus' metadata, or a Citus local table (added automatically when a
            // foreign key points at a reference table).
            None => pending.push(plan),
        }
    }
    Ok(pending)
}

/// Each table in `pg_dist_partition` with its [`Placement`], or `None` for a Citus local table.
pub async fn current_placements(
    conn: &mut AsyncPgConnection,
) -> anyhow::Result<HashMap<String, Option<Placement>>> {
    let rows: Vec<PartitionRow> = diesel::sql_query(
        "SELECT c.relname::text AS name, p.partmethod::text AS partmethod, \
                p.repmodel::text AS repmodel \
         FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
    )
    .load(conn)
    .await
    .context("reading pg_dist_partition")?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let placement = match (row.partmethod.as_str(), row.repmodel.as_str()) {
                ("h", _) => Some(Placement::Distributed),
                ("n", "t") => Some(Placement::Reference),
                _ => None,
            };
            (row.name, placement)
        })
        .collect())
}

/// Drops the foreign keys to be replaced, rekeys, places and adds the foreign keys back, for
/// `pending` (in plan order).
async fn place(conn: &mut AsyncPgConnection, pending: &[&TablePlan]) -> anyhow::Result<()> {
    let mut statements: Vec<String> = Vec::new();
    for plan in pending {
        for constraint in plan.drop_foreign_keys {
            statements.push(format!(
                "ALTER TABLE {} DROP CONSTRAINT IF EXISTS {constraint}",
                plan.table
            ));
        }
    }
    for plan in pending {
        statements.extend(plan.rekey.iter().map(|sql| (*sql).to_owned()));
    }
    for plan in pending {
        statements.push(match plan.placement {
            Placement::Reference => format!("SELECT create_reference_table('{}')", plan.table),
            Placement::Distributed if plan.table == COLOCATION_ANCHOR => format!(
                "SELECT create_distributed_table('{}', '{DISTRIBUTION_COLUMN}')",
                plan.table
            ),
            Placement::Distributed => format!(
                "SELECT create_distributed_table('{}', '{DISTRIBUTION_COLUMN}', \
                 colocate_with => '{COLOCATION_ANCHOR}')",
                plan.table
            ),
        });
    }
    for plan in pending {
        statements.extend(plan.foreign_keys.iter().map(|sql| (*sql).to_owned()));
    }
    for sql in statements {
        diesel::sql_query(&sql)
            .execute(conn)
            .await
            .with_context(|| format!("placing tables on Citus: {sql}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_tables_come_first_and_the_anchor_leads_the_distributed_ones() {
        let first_distributed = PLAN
            .iter()
            .position(|p| p.placement == Placement::Distributed);
        assert_eq!(
            first_distributed.map(|i| PLAN[i].table),
            Some(COLOCATION_ANCHOR)
        );
        assert!(
            PLAN.iter()
                .skip(first_distributed.unwrap_or_default())
                .all(|p| p.placement == Placement::Distributed)
        );
    }

    #[test]
    fn every_table_is_planned_once() {
        let mut tables: Vec<&str> = PLAN.iter().map(|p| p.table).collect();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(tables.len(), PLAN.len());
    }

    #[test]
    fn keys_and_foreign_keys_lead_with_the_distribution_column() {
        for plan in PLAN {
            for sql in plan.rekey.iter().chain(plan.foreign_keys) {
                let own_table = sql.starts_with(&format!("ALTER TABLE {} ", plan.table))
                    || sql.contains(&format!(" ON {} (", plan.table))
                    || sql.starts_with(&format!("DROP INDEX {}_", plan.table));
                assert!(own_table, "{sql} changes another table than {}", plan.table);
                if let Some((_, referenced)) = sql.split_once("REFERENCES ") {
                    assert!(referenced.contains(" (subaccount_id, id)"), "{sql}");
                }
                for key in ["PRIMARY KEY (", "UNIQUE (", "FOREIGN KEY ("] {
                    if let Some((_, columns)) = sql.split_once(key) {
                        assert!(columns.starts_with("subaccount_id"), "{sql}");
                    }
                }
                if let Some((_, columns)) = sql.split_once(" UNIQUE INDEX ") {
                    assert!(columns.contains("(subaccount_id, "), "{sql}");
                }
            }
            if plan.placement == Placement::Reference {
                assert!(plan.rekey.is_empty() && plan.foreign_keys.is_empty());
            }
        }
    }
}
