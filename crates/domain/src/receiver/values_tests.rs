use super::*;

/// Strings that must never make a parser panic.
fn odd_inputs() -> Vec<String> {
    vec![
        "🙂".to_owned(),
        "👩‍👩‍👧‍👦".to_owned(),
        "🇦🇺".repeat(200),
        "é".repeat(300),
        "\u{0301}".to_owned(),
        "\u{0000}\u{FFFF}\u{10FFFF}".to_owned(),
        "\u{202E}abc".to_owned(),
        "\u{200B}".to_owned(),
        "a@".repeat(5_000),
        "1".repeat(100_000),
        "𝔸𝕦𝕤𝕥𝕣𝕒𝕝𝕚𝕒".to_owned(),
        "٠١٢٣".to_owned(),
        "२०२०-०१-०१".to_owned(),
        "２０２０-０１-０１".to_owned(),
        "\"@\".com".to_owned(),
        " <@> ".to_owned(),
        "\u{3000}".to_owned(),
    ]
}

fn day(year: i32, month: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, day).unwrap()
}

#[test]
fn no_parser_panics_on_odd_unicode() {
    let today = day(2025, 6, 15);
    for input in odd_inputs() {
        let _ = EmailAddress::parse(&input);
        let _ = PersonName::parse(&input);
        let _ = DialCode::parse(&input);
        let _ = PhoneNumber::parse(&input);
        let _ = StreetLine::parse(&input);
        let _ = CityName::parse(&input);
        let _ = BoundedText::parse(&input);
        let _ = Gender::parse(&input);
        let _ = DateOfBirth::parse(&input, today);
    }
}

// --- EmailAddress ---

#[test]
fn email_accepts_ordinary_addresses() {
    for text in [
        "jane@example.com",
        "Jane.Doe+payouts@Mail.Example.co.uk",
        "a@b.co",
        "o'brien@example.ie",
        "josé@exämple.com",
    ] {
        assert_eq!(EmailAddress::parse(text).unwrap().as_str(), text);
    }
}

#[test]
fn email_trims_keeps_case_and_normalizes_to_lower_case() {
    let email = EmailAddress::parse("  Jane.Doe@Example.COM\n").unwrap();
    assert_eq!(email.as_str(), "Jane.Doe@Example.COM");
    assert_eq!(email.to_string(), "Jane.Doe@Example.COM");
    assert_eq!(email.normalized(), "jane.doe@example.com");
}

/// The security probe's duplicates: each pair must share one comparison key.
#[test]
fn email_key_unifies_full_width_quoting_case_folding_and_idna() {
    for (a, b) in [
        ("jose@example.com", "ｊｏｓｅ@example.com"),
        ("jose@example.com", "\"jose\"@example.com"),
        ("STRASSE@example.com", "straße@example.com"),
        ("jose@exämple.com", "jose@xn--exmple-cua.com"),
        ("jose@EXÄMPLE.com", "jose@exämple.com"),
        ("\"Jose.Doe\"@Example.com", "jose.doe@example.com"),
    ] {
        let key_a = EmailAddress::parse(a).unwrap().normalized();
        let key_b = EmailAddress::parse(b).unwrap().normalized();
        assert_eq!(key_a, key_b, "{a} / {b}");
    }
    assert_eq!(normalize_email("ｊｏｓｅ@example.com"), "jose@example.com");
    assert_eq!(normalize_email("straße@example.com"), "strasse@example.com");
    assert_eq!(
        normalize_email("jose@exämple.com"),
        "jose@xn--exmple-cua.com"
    );
    // Forms the validator refuses still meet in the key, which the list filter uses.
    assert_eq!(
        normalize_email("jose@ｅｘａｍｐｌｅ．ｃｏｍ"),
        "jose@example.com"
    );
    assert_eq!(
        normalize_email("JOSE\u{0301}@example.com"),
        "josé@example.com"
    );
    assert_eq!(
        EmailAddress::parse("jose@ｅｘａｍｐｌｅ．ｃｏｍ"),
        Err(EmailAddressError::Invalid)
    );
}

proptest::proptest! {
    /// The list filter is normalised when parsed and again by the store: a key must be its
    /// own key.
    #[test]
    fn email_key_is_its_own_key(
        text in "[a-zA-Z0-9\"@.ßẞｊＪ＠．\u{0301}ä\u{FB01} -]{0,24}",
    ) {
        let key = normalize_email(&text);
        proptest::prop_assert_eq!(normalize_email(&key), key);
    }
}

#[test]
fn email_key_keeps_the_address_as_sent() {
    // Quoted local parts were accepted before the key changed, and still are.
    for text in [
        "ｊｏｓｅ@example.com",
        "\"jose\"@example.com",
        "\"jo se\"@example.com",
        "straße@exämple.com",
    ] {
        assert_eq!(EmailAddress::parse(text).unwrap().as_str(), text);
    }
}

#[test]
fn email_key_keeps_quotes_that_change_the_mailbox() {
    // Quoted strings that are not dot-atoms name other mailboxes than their unquoted text.
    for (quoted, key) in [
        ("\"jo se\"@example.com", "\"jo se\"@example.com"),
        ("\"jo..se\"@example.com", "\"jo..se\"@example.com"),
        ("\".jose\"@example.com", "\".jose\"@example.com"),
        ("\"jose.\"@example.com", "\"jose.\"@example.com"),
        ("\"jo@se\"@example.com", "\"jo@se\"@example.com"),
        ("\"\"@example.com", "\"\"@example.com"),
    ] {
        assert_eq!(normalize_email(quoted), key, "{quoted}");
    }
    assert_ne!(
        normalize_email("\"jo se\"@example.com"),
        normalize_email("jose@example.com")
    );
}

#[test]
fn email_key_of_text_that_is_no_address_is_folded() {
    assert_eq!(normalize_email("ＳＴＲＡＳＳＥ"), "strasse");
    assert_eq!(normalize_email("a@-bad-.com"), "a@-bad-.com");
    assert_eq!(normalize_email(" A@B.COM "), "a@b.com");
}

#[test]
fn email_rejects_control_format_and_invisible_characters() {
    for text in [
        "jo\u{202E}se@example.com",
        "jo\u{200B}se@example.com",
        "\u{FEFF}jose@example.com",
        "jose\u{3164}@example.com",
        "\"jo\u{0007}se\"@example.com",
    ] {
        assert_eq!(
            EmailAddress::parse(text),
            Err(EmailAddressError::Invalid),
            "{text:?}"
        );
    }
}

#[test]
fn email_rejects_empty() {
    assert_eq!(EmailAddress::parse(""), Err(EmailAddressError::Empty));
    assert_eq!(EmailAddress::parse("  \t"), Err(EmailAddressError::Empty));
}

#[test]
fn email_length_limit_is_255_characters() {
    // Labels of at most 63 characters keep the address syntactically valid.
    let label = "d".repeat(60);
    let domain = format!("{label}.{label}.{label}.com"); // 60*3 + 2 + 4 = 186
    let local = "l".repeat(64);
    let at_limit = format!("{local}@{domain}{}", ".c".repeat(2)); // 64 + 1 + 186 + 4
    assert_eq!(at_limit.chars().count(), 255);
    assert!(EmailAddress::parse(&at_limit).is_ok());
    let over = format!("{at_limit}c");
    assert_eq!(EmailAddress::parse(&over), Err(EmailAddressError::TooLong));
    let huge = "x".repeat(10_000);
    assert_eq!(EmailAddress::parse(&huge), Err(EmailAddressError::TooLong));
}

#[test]
fn email_rejects_invalid_syntax_and_dotless_domains() {
    for text in [
        "jane",
        "jane@",
        "@example.com",
        "jane@localhost",
        "jane@example.",
        "jane@.com",
        "jane@@example.com",
        "ja ne@example.com",
        "jane@exa mple.com",
        "Jane <jane@example.com>",
        "<jane@example.com>",
        "jane@[192.0.2.1]",
        "jane..doe@example.com",
        "jane@example..com",
        "🙂@🙂",
    ] {
        assert_eq!(
            EmailAddress::parse(text),
            Err(EmailAddressError::Invalid),
            "{text}"
        );
    }
}

// --- PersonName ---

#[test]
fn name_accepts_letters_of_any_script_and_name_punctuation() {
    for text in [
        "Jane",
        "O'Brien",
        "D’Angelo",
        "Jean-Luc",
        "Mary Ann",
        "Zoë",
        "Jose\u{0301}",
        "Łukasz",
        "Ørsted",
        "Nguyễn",
        "Алексей",
        "山田",
        "محمد",
        "X",
    ] {
        assert_eq!(PersonName::parse(text).unwrap().as_str(), text, "{text}");
    }
}

#[test]
fn name_checks_full_width_letters_after_nfkc_and_keeps_them_as_sent() {
    for text in ["Ｊａｎｅ", "Ｏ’Ｂｒｉｅｎ", "𝔸𝕦𝕤𝕥𝕚𝕟"] {
        assert_eq!(PersonName::parse(text).unwrap().as_str(), text, "{text}");
    }
}

#[test]
fn name_trims() {
    assert_eq!(PersonName::parse("  Jane \n").unwrap().to_string(), "Jane");
}

#[test]
fn name_rejects_empty() {
    assert_eq!(PersonName::parse(""), Err(PersonNameError::Empty));
    assert_eq!(PersonName::parse("   "), Err(PersonNameError::Empty));
}

#[test]
fn name_length_limit_is_255_characters() {
    // Two-byte letters prove the limit counts characters, not bytes.
    assert!(PersonName::parse(&"é".repeat(255)).is_ok());
    assert_eq!(
        PersonName::parse(&"é".repeat(256)),
        Err(PersonNameError::TooLong)
    );
    assert!(PersonName::parse(&format!("  {}  ", "a".repeat(255))).is_ok());
}

#[test]
fn name_rejects_other_characters_or_no_letter() {
    for text in [
        "Jane2",
        "Jane.",
        "Jane_Doe",
        "Jane\tDoe",
        "Jane\u{00A0}Doe",
        "Jane🙂",
        "Ja\u{200B}ne",
        "-",
        "'",
        "- ' -",
        "\u{0301}",
        "Jane@Doe",
        "Robert); DROP TABLE",
        // The probe: a Hangul filler alone, or inside a name, is no letter.
        "\u{3164}",
        "Jane\u{3164}",
        "\u{115F}",
        "\u{1160}",
        "\u{FFA0}",
        "\u{2800}",
        "Ja\u{200D}ne",
        "Ja\u{202E}ne",
        "Ja\u{FEFF}ne",
        "Ja\u{00AD}ne",
        "Jane\rDoe",
        "Jane\nDoe",
        // Compatibility forms of forbidden characters are checked after NFKC.
        "Jane\u{FF0E}",
        "Ｊａｎｅ２",
        "Jane\u{2024}",
    ] {
        assert_eq!(
            PersonName::parse(text),
            Err(PersonNameError::InvalidCharacters),
            "{text}"
        );
    }
}

// --- DialCode ---

#[test]
fn dial_code_accepts_one_to_four_digits_with_optional_plus() {
    assert_eq!(DialCode::parse("1").unwrap().as_str(), "1");
    assert_eq!(DialCode::parse("61").unwrap().as_str(), "61");
    assert_eq!(DialCode::parse("+61").unwrap().as_str(), "61");
    assert_eq!(DialCode::parse(" +1868 ").unwrap().to_string(), "1868");
    assert_eq!(DialCode::parse("0000").unwrap().as_str(), "0000");
}

#[test]
fn dial_code_rejects_empty() {
    assert_eq!(DialCode::parse(""), Err(DialCodeError::Empty));
    assert_eq!(DialCode::parse(" "), Err(DialCodeError::Empty));
}

#[test]
fn dial_code_rejects_anything_else() {
    for text in [
        "+", "12345", "+12345", "++61", "6+1", "61+", "+ 61", "6 1", "-61", "a1", "６１", "٦١",
        "1.5",
    ] {
        assert_eq!(DialCode::parse(text), Err(DialCodeError::Invalid), "{text}");
    }
}

// --- PhoneNumber ---

#[test]
fn phone_accepts_four_to_fifteen_digits() {
    assert_eq!(PhoneNumber::parse("1234").unwrap().as_str(), "1234");
    assert_eq!(
        PhoneNumber::parse("0412345678").unwrap().as_str(),
        "0412345678"
    );
    assert_eq!(
        PhoneNumber::parse(" 123456789012345 ").unwrap().to_string(),
        "123456789012345"
    );
}

#[test]
fn phone_rejects_empty() {
    assert_eq!(PhoneNumber::parse(""), Err(PhoneNumberError::Empty));
    assert_eq!(PhoneNumber::parse("\n"), Err(PhoneNumberError::Empty));
}

#[test]
fn phone_rejects_anything_else() {
    for text in [
        "123",
        "1234567890123456",
        "+61412345678",
        "0412 345 678",
        "0412-345-678",
        "(04)12345678",
        "04123456x",
        "０４１２３４５",
    ] {
        assert_eq!(
            PhoneNumber::parse(text),
            Err(PhoneNumberError::Invalid),
            "{text}"
        );
    }
}

// --- StreetLine ---

#[test]
fn street_line_accepts_any_text_without_a_dot() {
    for text in [
        "12 Smith St",
        "Unit 4/27 O'Connell Rd",
        "Straße 5",
        "#3, 北京路",
    ] {
        assert_eq!(StreetLine::parse(text).unwrap().as_str(), text);
    }
    assert_eq!(
        StreetLine::parse(" 1 Main Rd ").unwrap().to_string(),
        "1 Main Rd"
    );
}

#[test]
fn street_line_rejects_empty_too_long_and_dots() {
    assert_eq!(StreetLine::parse(""), Err(StreetLineError::Empty));
    assert_eq!(StreetLine::parse("  "), Err(StreetLineError::Empty));
    assert!(StreetLine::parse(&"ß".repeat(255)).is_ok());
    assert_eq!(
        StreetLine::parse(&"ß".repeat(256)),
        Err(StreetLineError::TooLong)
    );
    assert_eq!(
        StreetLine::parse("12 Smith St."),
        Err(StreetLineError::ContainsDot)
    );
    assert_eq!(StreetLine::parse("."), Err(StreetLineError::ContainsDot));
}

#[test]
fn street_line_counts_compatibility_dots_after_nfkc() {
    // The probe: full-width full stop and one-dot leader.
    for text in [
        "12 Smith St\u{FF0E}",
        "P\u{2024}O Box 5",
        "Lvl\u{2025}3",
        "Unit\u{FE52}4",
    ] {
        assert_eq!(
            StreetLine::parse(text),
            Err(StreetLineError::ContainsDot),
            "{text:?}"
        );
    }
    assert_eq!(
        StreetLine::parse("１２ Ｓｍｉｔｈ Ｓｔ").unwrap().as_str(),
        "１２ Ｓｍｉｔｈ Ｓｔ"
    );
}

#[test]
fn street_line_rejects_control_format_and_invisible_characters() {
    // The probe: a right-to-left override in an address.
    for text in [
        "12 \u{202E}tS htimS",
        "12 Smith\nSt",
        "12 Smith\rSt",
        "12\tSmith St",
        "12 Smith St\u{2066}",
        "\u{200B}12 Smith St",
        "12 Smith\u{2028}St",
        "\u{3164}",
    ] {
        assert_eq!(
            StreetLine::parse(text),
            Err(StreetLineError::Invalid),
            "{text:?}"
        );
    }
}

// --- CityName ---

#[test]
fn city_accepts_letters_and_city_punctuation() {
    for text in [
        "Melbourne",
        "St. Kilda",
        "Stratford-upon-Avon",
        "L'Aquila",
        "São Paulo",
        "Zürich",
        "東京",
    ] {
        assert_eq!(CityName::parse(text).unwrap().as_str(), text, "{text}");
    }
    assert_eq!(CityName::parse(" Perth ").unwrap().to_string(), "Perth");
}

#[test]
fn city_rejects_empty_and_too_long() {
    assert_eq!(CityName::parse(""), Err(CityNameError::Empty));
    assert_eq!(CityName::parse(" "), Err(CityNameError::Empty));
    assert!(CityName::parse(&"a".repeat(255)).is_ok());
    assert_eq!(
        CityName::parse(&"a".repeat(256)),
        Err(CityNameError::TooLong)
    );
}

#[test]
fn city_rejects_other_characters_or_no_letter() {
    for text in [
        "Melbourne 3000",
        "Sydney!",
        "Perth/WA",
        "...",
        "-",
        "🏙️",
        "A\tB",
        "Perth\u{202E}",
        "\u{3164}",
        "Perth\u{FF01}",
        "Ｐｅｒｔｈ３",
    ] {
        assert_eq!(CityName::parse(text), Err(CityNameError::Invalid), "{text}");
    }
}

// --- BoundedText ---

#[test]
fn bounded_text_accepts_any_text_up_to_255_characters() {
    assert_eq!(BoundedText::parse("VIC").unwrap().as_str(), "VIC");
    assert_eq!(BoundedText::parse(" 3000 ").unwrap().to_string(), "3000");
    assert_eq!(BoundedText::parse("a.b/c 🙂").unwrap().as_str(), "a.b/c 🙂");
    assert!(BoundedText::parse(&"🙂".repeat(255)).is_ok());
}

#[test]
fn bounded_text_rejects_control_format_and_invisible_characters() {
    // The probe: CR/LF in `state`.
    for text in [
        "VIC\r\nX-Injected: 1",
        "VIC\nNSW",
        "V\tIC",
        "VIC\u{202E}",
        "V\u{200B}IC",
        "\u{3164}",
        "\u{FFA0}",
        "VIC\u{2029}NSW",
        "ref\u{E0001}",
    ] {
        assert_eq!(
            BoundedText::parse(text),
            Err(BoundedTextError::Invalid),
            "{text:?}"
        );
    }
    assert_eq!(BoundedText::parse(" VIC\r\n").unwrap().as_str(), "VIC");
}

#[test]
fn bounded_text_rejects_empty_and_too_long() {
    assert_eq!(BoundedText::parse(""), Err(BoundedTextError::Empty));
    assert_eq!(BoundedText::parse("\t \n"), Err(BoundedTextError::Empty));
    assert_eq!(
        BoundedText::parse(&"🙂".repeat(256)),
        Err(BoundedTextError::TooLong)
    );
}

// --- Gender ---

#[test]
fn gender_parses_m_and_f_in_either_case() {
    assert_eq!(Gender::parse("M"), Ok(Gender::Male));
    assert_eq!(Gender::parse("m"), Ok(Gender::Male));
    assert_eq!(Gender::parse("F"), Ok(Gender::Female));
    assert_eq!(Gender::parse(" f "), Ok(Gender::Female));
    assert_eq!(Gender::Male.as_str(), "M");
    assert_eq!(Gender::Female.to_string(), "F");
}

#[test]
fn gender_rejects_anything_else() {
    for text in ["", " ", "X", "Male", "female", "MF", "Ｍ", "ｆ"] {
        assert_eq!(Gender::parse(text), Err(GenderError::Invalid), "{text}");
    }
}

// --- DateOfBirth ---

#[test]
fn dob_accepts_real_past_dates() {
    let today = day(2025, 6, 15);
    let dob = DateOfBirth::parse("1990-02-28", today).unwrap();
    assert_eq!(dob.date(), day(1990, 2, 28));
    assert_eq!(dob.to_string(), "1990-02-28");
    assert_eq!(
        DateOfBirth::parse(" 2000-02-29 ", today).unwrap().date(),
        day(2000, 2, 29)
    );
}

#[test]
fn dob_boundaries() {
    let today = day(2025, 6, 15);
    assert_eq!(
        DateOfBirth::parse("1900-01-01", today).unwrap().to_string(),
        "1900-01-01"
    );
    assert_eq!(
        DateOfBirth::parse("1899-12-31", today),
        Err(DateOfBirthError::Invalid)
    );
    assert_eq!(
        DateOfBirth::parse("2025-06-14", today).unwrap().date(),
        day(2025, 6, 14)
    );
    assert_eq!(
        DateOfBirth::parse("2025-06-15", today),
        Err(DateOfBirthError::NotInPast)
    );
    assert_eq!(
        DateOfBirth::parse("2025-06-16", today),
        Err(DateOfBirthError::NotInPast)
    );
    assert_eq!(
        DateOfBirth::parse("9999-12-31", today),
        Err(DateOfBirthError::NotInPast)
    );
}

#[test]
fn dob_rejects_empty() {
    let today = day(2025, 6, 15);
    assert_eq!(DateOfBirth::parse("", today), Err(DateOfBirthError::Empty));
    assert_eq!(
        DateOfBirth::parse("  ", today),
        Err(DateOfBirthError::Empty)
    );
}

#[test]
fn dob_rejects_other_formats_and_unreal_dates() {
    let today = day(2025, 6, 15);
    for text in [
        "1990-2-28",
        "1990-02-8",
        "90-02-28",
        "1990/02/28",
        "28-02-1990",
        "19900228",
        "1990-02-28T00:00:00",
        "1990-02-2８",
        "+990-02-28",
        "-990-02-28",
        "1990-13-01",
        "1990-00-10",
        "1990-01-00",
        "1990-02-29",
        "1990-04-31",
        "0000-01-01",
        "1990-02-28x",
        "٠١٩٩-٠٢-٢٨",
        "abcd-ef-gh",
    ] {
        assert_eq!(
            DateOfBirth::parse(text, today),
            Err(DateOfBirthError::Invalid),
            "{text}"
        );
    }
}
