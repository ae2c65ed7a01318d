//! The production configuration the demo writes: every rail of the bank over SFTP, the Interac
//! partner, the mail catcher, manual KYC.

use domain::account::PayoutMethod;

use crate::bank::{Bank, RailKind};

/// The production configuration: every rail of the bank over SFTP, a cut-off every minute on
/// weekdays (bank file rails never open their weekends; `cad/digital`'s partner works every
/// day), same-day settlement, the mail catcher on loopback, manual KYC.
pub(super) fn render_config(
    bank: &Bank,
    partner_url: &str,
    smtp_port: u16,
) -> Result<String, String> {
    let rails = RailKind::all()
        .map(|kind| {
            let rail = bank
                .rail(kind)
                .ok_or_else(|| format!("the bank has no {} rail", kind.route()))?;
            Ok((
                kind,
                rail.outbound.display().to_string(),
                rail.inbound.display().to_string(),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(config_text(&ConfigInputs {
        port: bank.port,
        user: bank.user.clone(),
        private_key: bank.client_key.display().to_string(),
        host_key: bank.host_key.clone(),
        rails,
        partner_url: partner_url.to_owned(),
        smtp_port,
    }))
}

pub(super) struct ConfigInputs {
    port: u16,
    user: String,
    private_key: String,
    host_key: String,
    /// Each rail with its outbound and inbound directories.
    rails: Vec<(RailKind, String, String)>,
    /// The Interac partner's API.
    partner_url: String,
    smtp_port: u16,
}

/// A TOML basic string.
pub(super) fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The originator settings of the rail of `kind` (TOML lines).
pub(super) fn format_settings(kind: RailKind) -> &'static str {
    match kind {
        RailKind::Ach => {
            "immediate_destination = \"021000021\"\n\
             immediate_destination_name = \"BANK SIMULATOR\"\n\
             immediate_origin = \"1234567890\"\n\
             immediate_origin_name = \"PAYOUTD DEMO\"\n\
             company_name = \"PAYOUTD DEMO\"\n\
             company_id = \"1234567890\"\n\
             odfi_routing = \"02100002\"\n\
             entry_description = \"PAYOUT\"\n"
        }
        RailKind::Sepa => {
            "debtor_name = \"Payoutd Demo GmbH\"\n\
             debtor_iban = \"DE89370400440532013000\"\n\
             debtor_bic = \"COBADEFFXXX\"\n\
             initiating_party_name = \"Payoutd Demo GmbH\"\n"
        }
        RailKind::DirectEntry => {
            "bank_mnemonic = \"CBA\"\n\
             user_name = \"PAYOUTD DEMO PTY LTD\"\n\
             apca_user_id = \"301500\"\n\
             description = \"PAYOUTS\"\n\
             remitter_name = \"PAYOUTD DEMO\"\n\
             trace_bsb = \"062000\"\n\
             trace_account = \"10203040\"\n\
             self_balancing = true\n"
        }
        RailKind::Eft => {
            "originator_id = \"PAYOUTD001\"\n\
             data_centre = \"00310\"\n\
             originator_short_name = \"PAYOUTD DEMO\"\n\
             originator_long_name = \"PAYOUTD DEMO INC\"\n\
             return_institution = \"000312345\"\n\
             return_account = \"1234567\"\n\
             transaction_code = 450\n"
        }
        RailKind::DirectCredit => {
            "originating_account = \"0109020068389099\"\n\
             originator_name = \"PAYOUTD DEMO\"\n"
        }
    }
}

pub(super) fn config_text(c: &ConfigInputs) -> String {
    let cutoffs: Vec<String> = (0..24 * 60)
        .map(|m| format!("\"{:02}:{:02}\"", m / 60, m % 60))
        .collect();
    let cutoffs = cutoffs.join(", ");
    let mut text =
        String::from("# Written by `cargo xtask rails-demo`: the local bank simulator's rails.\n");
    for (kind, outbound, inbound) in &c.rails {
        let route = kind.route();
        text.push_str(&format!(
            "[rails.\"{route}\"]\n\
             file_prefix = \"DEMO\"\n\
             cutoffs = [{cutoffs}]\n\
             settlement_days = 0\n\
             {format}\
             \n[rails.\"{route}\".transport]\n\
             kind = \"sftp\"\nhost = \"127.0.0.1\"\nport = {port}\nuser = {user}\nprivate_key = {key}\n\
             host_key = {host_key}\noutbound_dir = {outbound}\ninbound_dir = {inbound}\npoll_interval_secs = 10\n\n",
            format = format_settings(*kind),
            port = c.port,
            user = toml_string(&c.user),
            key = toml_string(&c.private_key),
            host_key = toml_string(&c.host_key),
            outbound = toml_string(outbound),
            inbound = toml_string(inbound),
        ));
    }
    text.push_str(&format!(
        "[rails.\"{route}\"]\n\
         file_prefix = \"DEMO\"\n\
         cutoffs = [{cutoffs}]\n\
         open_on_weekends = true\n\
         settlement_days = 0\n\
         partner_customer_id = \"PAYOUTD-DEMO\"\n\
         sender_name = \"Payoutd Demo\"\n\
         expiry_days = 30\n\
         \n[rails.\"{route}\".transport]\n\
         kind = \"partner_api\"\n\
         base_url = {url}\n\
         shared_secret = \"env:PAYOUT_INTERAC_SECRET\"\n\
         poll_interval_secs = 10\n\n",
        route = PayoutMethod::Digital.route(),
        url = toml_string(&c.partner_url),
    ));
    text.push_str(&format!(
        "[smtp]\n\
         host = \"127.0.0.1\"\n\
         port = {smtp_port}\n\
         tls = \"none\"\n\
         from = \"payouts@example.com\"\n\
         timeout_secs = 10\n\
         \n[kyc]\n\
         provider = \"manual\"\n",
        smtp_port = c.smtp_port,
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_enables_every_rail_over_sftp() {
        let text = config_text(&ConfigInputs {
            port: 2222,
            user: "demo".to_owned(),
            private_key: "/b/ssh/client_ed25519".to_owned(),
            host_key: "ssh-ed25519 AAAA payoutd-bank".to_owned(),
            rails: RailKind::all()
                .map(|kind| {
                    (
                        kind,
                        format!("/b/{}/outbound", kind.dir_name()),
                        format!("/b/{}/inbound", kind.dir_name()),
                    )
                })
                .collect(),
            partner_url: "http://127.0.0.1:4000".to_owned(),
            smtp_port: 2525,
        });
        assert!(text.contains(
            "[rails.\"usd/ach\".transport]\nkind = \"sftp\"\nhost = \"127.0.0.1\"\nport = 2222\n"
        ));
        assert!(text.contains("[rails.\"eur/sepa\".transport]"));
        assert!(text.contains("outbound_dir = \"/b/eur-sepa/outbound\""));
        assert!(text.contains("host_key = \"ssh-ed25519 AAAA payoutd-bank\""));
        assert_eq!(
            text.matches("settlement_days = 0").count(),
            PayoutMethod::ALL.len()
        );
        assert!(text.contains(
            "[rails.\"cad/digital\".transport]\nkind = \"partner_api\"\nbase_url = \"http://127.0.0.1:4000\"\n"
        ));
        // Only cad/digital opens its weekends: the bank's rails settle on weekdays.
        assert_eq!(text.matches("open_on_weekends = true").count(), 1);
        assert!(text.contains("[rails.\"cad/digital\"]\nfile_prefix = \"DEMO\"\ncutoffs"));
        assert!(text.contains("\"00:00\", \"00:01\""));
        assert!(text.contains("\"23:59\"]"));
        assert!(text.contains("port = 2525\ntls = \"none\""));
    }
}
