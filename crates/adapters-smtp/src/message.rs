//! The confirmation e-mail.

use domain::account::ports::ConfirmationRequest;
use domain::account::service::TOKEN_LIFETIME_DAYS;
use lettre::Message;
use lettre::message::{Mailbox, MultiPart};

/// The subject of every confirmation request.
pub const SUBJECT: &str = "Confirm your bank details";

/// Why a message could not be built for a request.
#[derive(Debug)]
pub(crate) enum BuildError {
    /// The receiver's address cannot be used (permanent for this request).
    Recipient,
    /// Anything else.
    Other(String),
}

/// The confirmation e-mail for `request`, from `from`: a greeting with the receiver's name,
/// the masked details, the link and its lifetime, as plain text with an HTML alternative.
pub(crate) fn build(from: &Mailbox, request: &ConfirmationRequest) -> Result<Message, BuildError> {
    let address = request
        .to_email
        .trim()
        .parse()
        .map_err(|_| BuildError::Recipient)?;
    let name = request.receiver_name.trim();
    let to = Mailbox::new((!name.is_empty()).then(|| name.to_owned()), address);
    let (plain, html) = bodies(request);
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(SUBJECT)
        .multipart(MultiPart::alternative_plain_html(plain, html))
        .map_err(|e| BuildError::Other(e.to_string()))
}

fn bodies(request: &ConfirmationRequest) -> (String, String) {
    let name = request.receiver_name.trim();
    let link = request.confirm_url.expose();
    let mut plain =
        format!("Hello {name},\n\nPlease confirm the bank details you will be paid to:\n\n");
    let mut rows = String::new();
    for (field, value) in &request.masked_details {
        plain.push_str(&format!("  {}: {value}\n", label(field.name())));
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td></tr>\n",
            escape(&label(field.name())),
            escape(value)
        ));
    }
    plain.push_str(&format!(
        "\nConfirm them by opening this link:\n{link}\n\nThe link expires in \
         {TOKEN_LIFETIME_DAYS} days. If these are not your details, ignore this message.\n"
    ));
    let html = format!(
        "<!DOCTYPE html>\n<html><body>\n<p>Hello {},</p>\n\
         <p>Please confirm the bank details you will be paid to:</p>\n\
         <table>\n{rows}</table>\n\
         <p><a href=\"{}\">Confirm your bank details</a></p>\n\
         <p>The link expires in {TOKEN_LIFETIME_DAYS} days. If these are not your details, \
         ignore this message.</p>\n</body></html>\n",
        escape(name),
        escape(link),
    );
    (plain, html)
}

/// `account_number` → `Account number`, `bsb` → `BSB`.
fn label(name: &str) -> String {
    if matches!(name, "bsb" | "iban" | "bic") {
        return name.to_uppercase();
    }
    let spaced = name.replace('_', " ");
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use domain::account::AccountField;
    use domain::ids::{ReceiverAccountId, SubaccountId};
    use domain::masking::Secret;
    use uuid::Uuid;

    fn request(name: &str, email: &str) -> ConfirmationRequest {
        ConfirmationRequest {
            account_id: ReceiverAccountId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
            to_email: email.to_owned(),
            to_phone: "+61412345678".to_owned(),
            receiver_name: name.to_owned(),
            confirm_url: Secret::new("https://pay.example.com/confirm/abc_DEF-123".to_owned()),
            masked_details: vec![
                (AccountField::Bsb, "012 ***".to_owned()),
                (AccountField::AccountNumber, "123 ***".to_owned()),
            ],
        }
    }

    fn from() -> Mailbox {
        "Payouts <payouts@example.com>".parse().unwrap()
    }

    #[test]
    fn both_bodies_greet_show_the_masked_details_the_link_and_its_lifetime() {
        let (plain, html) = bodies(&request("Ada <Lovelace>", "ada@example.com"));
        assert!(plain.starts_with("Hello Ada <Lovelace>,"), "{plain}");
        assert!(
            plain.contains("  BSB: 012 ***\n  Account number: 123 ***\n"),
            "{plain}"
        );
        assert!(
            plain.contains("https://pay.example.com/confirm/abc_DEF-123"),
            "{plain}"
        );
        assert!(plain.contains("expires in 7 days"), "{plain}");
        assert!(html.contains("Hello Ada &lt;Lovelace&gt;,"), "{html}");
        assert!(
            html.contains("<tr><td>Account number</td><td>123 ***</td></tr>"),
            "{html}"
        );
        assert!(
            html.contains(r#"<a href="https://pay.example.com/confirm/abc_DEF-123">"#),
            "{html}"
        );
        assert!(html.contains("expires in 7 days"), "{html}");
    }

    #[test]
    fn the_message_has_its_headers_and_an_html_alternative() {
        let message = build(&from(), &request("Ada Lovelace", "ada@example.com"))
            .unwrap_or_else(|_| panic!("built"));
        let text = String::from_utf8(message.formatted()).unwrap();
        assert!(
            text.contains("From: Payouts <payouts@example.com>"),
            "{text}"
        );
        assert!(
            text.contains("To: \"Ada Lovelace\" <ada@example.com>"),
            "{text}"
        );
        assert!(
            text.contains("Subject: Confirm your bank details"),
            "{text}"
        );
        assert!(text.contains("multipart/alternative"), "{text}");
        assert!(text.contains("text/plain"), "{text}");
        assert!(text.contains("text/html"), "{text}");
    }

    #[test]
    fn an_unusable_address_is_a_recipient_error() {
        for bad in ["", "not an address", "ada@", "@example.com"] {
            assert!(
                matches!(
                    build(&from(), &request("Ada", bad)),
                    Err(BuildError::Recipient)
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn labels_read_as_words() {
        assert_eq!(label("account_number"), "Account number");
        assert_eq!(label("iban"), "IBAN");
        assert_eq!(label("bsb"), "BSB");
        assert_eq!(label(""), "");
    }
}
