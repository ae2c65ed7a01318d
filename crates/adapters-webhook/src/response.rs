//! Reading what an endpoint answered, when it did not answer 2xx: its `retry-after` and a
//! short, secret-free excerpt of its body.

use std::time::{Duration, SystemTime};

/// The longest description an outcome carries (at most 500 characters).
pub(crate) const MAX_EXCERPT_CHARS: usize = 500;

/// How many body bytes are read for the excerpt. 500 characters take at most 2,000 bytes; the
/// rest leaves room for a secret that starts inside the excerpt but ends after it, so that it
/// is still whole, hence recognised and redacted.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024;

const REDACTED: &str = "[REDACTED]";

/// `retry-after` as a duration from `now`: delta-seconds or an HTTP-date (a date in the past
/// means "now"). `None` when absent from the value or unparsable.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// At most [`MAX_EXCERPT_CHARS`] characters of `body`, with every occurrence of a signing
/// secret (whole, or its base64 part) replaced by `[REDACTED]`: a receiver may echo its copy
/// of the secret in an error message.
pub(crate) fn body_excerpt(body: &[u8], secrets: &[&str]) -> String {
    let mut text = String::from_utf8_lossy(body).into_owned();
    for secret in secrets {
        text = redact(&text, secret);
        if let Some(key) = secret.strip_prefix("whsec_") {
            text = redact(&text, key);
        }
    }
    truncate(text.trim())
}

/// `text` cut to at most [`MAX_EXCERPT_CHARS`] characters.
pub(crate) fn truncate(text: &str) -> String {
    text.chars().take(MAX_EXCERPT_CHARS).collect()
}

fn redact(text: &str, secret: &str) -> String {
    // A very short "secret" would blank out ordinary text; real keys are far longer.
    if secret.len() < 8 {
        return text.to_owned();
    }
    text.replace(secret, REDACTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(unix_secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(unix_secs)
    }

    // Sun, 06 Nov 1994 08:49:37 GMT, the example date of RFC 9110.
    const NOV_1994: u64 = 784_111_777;

    #[test]
    fn retry_after_in_delta_seconds() {
        assert_eq!(
            parse_retry_after("120", at(0)),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", at(0)), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_as_an_http_date_in_every_format() {
        let now = at(NOV_1994 - 90);
        for date in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(date, now),
                Some(Duration::from_secs(90)),
                "{date}"
            );
        }
    }

    #[test]
    fn retry_after_in_the_past_means_now() {
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at(NOV_1994 + 10)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn unparsable_retry_after_is_ignored() {
        for bad in [
            "",
            "-5",
            "1.5",
            "soon",
            "99999999999999999999999",
            "06 Nov 1994",
        ] {
            assert_eq!(parse_retry_after(bad, at(0)), None, "{bad:?}");
        }
    }

    #[test]
    fn excerpts_are_at_most_500_characters() {
        let body = "é".repeat(1_000);
        let excerpt = body_excerpt(body.as_bytes(), &[]);
        assert_eq!(excerpt.chars().count(), 500);
        assert!(excerpt.chars().all(|c| c == 'é'));
    }

    #[test]
    fn excerpts_survive_invalid_utf8() {
        assert_eq!(body_excerpt(b"bad \xff byte", &[]), "bad \u{fffd} byte");
    }

    #[test]
    fn secrets_are_redacted_whole_or_as_their_key() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = format!(
            "expected {secret}; key MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw; a whsec_ is not enough"
        );
        let excerpt = body_excerpt(body.as_bytes(), &[secret]);
        assert_eq!(
            excerpt,
            "expected [REDACTED]; key [REDACTED]; a whsec_ is not enough"
        );
    }
}
