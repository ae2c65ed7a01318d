use super::*;

/// What verify makes of `value` sent as the field named `field`.
fn normalize_for_match(field: &str, value: &str) -> Option<String> {
    AccountField::from_name(field).and_then(|field| field.normalize_for_match(value))
}

fn some(text: &str) -> Option<String> {
    Some(text.to_owned())
}

/// A valid request for `method`, with only that method's fields (and spellings that need
/// normalising).
fn valid(method: PayoutMethod) -> RawAccount {
    let base = RawAccount {
        receiver_id: some(" rcv_123 "),
        ..RawAccount::default()
    };
    match method {
        PayoutMethod::DirectEntry => RawAccount {
            bsb: some("012-002"),
            account_number: some("12345678"),
            ..base
        },
        PayoutMethod::Ach => RawAccount {
            routing_number: some("021000021"),
            account_number: some("000123456789"),
            account_type: some("Checking"),
            ..base
        },
        PayoutMethod::Eft => RawAccount {
            routing_number: some("12345-003"),
            account_number: some("1234567"),
            account_type: some("SAVINGS"),
            ..base
        },
        PayoutMethod::Digital => RawAccount {
            recipient: some("Jane.Doe@Example.com"),
            name: some(" Jane Doe "),
            description: some(" Rent "),
            ..base
        },
        PayoutMethod::Sepa => RawAccount {
            iban: some("de89 3704 0044 0532 0130 00"),
            bic: some("deutdeff"),
            ..base
        },
        PayoutMethod::DirectCredit => RawAccount {
            account_number: some("01-902-0068389-00"),
            ..base
        },
    }
}

/// The codes of a failed parse, with their fields.
fn failures(method: PayoutMethod, raw: &RawAccount) -> Vec<(ErrorCode, String)> {
    AccountInput::parse(method, raw)
        .unwrap_err()
        .0
        .into_iter()
        .map(|error| (error.code, error.field.into_owned()))
        .collect()
}

fn failure(code: ErrorCode, field: &str) -> (ErrorCode, String) {
    (code, field.to_owned())
}

#[test]
fn parses_a_valid_request_per_method() {
    let parsed = |method| AccountInput::parse(method, &valid(method)).unwrap();

    let input = parsed(PayoutMethod::DirectEntry);
    assert_eq!(input.receiver_id, "rcv_123");
    assert_eq!(
        input.details,
        AccountDetails::DirectEntry {
            bsb: Bsb::parse("012002").unwrap(),
            account_number: AuAccountNumber::parse("12345678").unwrap(),
        }
    );

    assert_eq!(
        parsed(PayoutMethod::Ach).details,
        AccountDetails::Ach {
            routing_number: AbaRoutingNumber::parse("021000021").unwrap(),
            account_number: UsAccountNumber::parse("000123456789").unwrap(),
            account_type: AccountType::Checking,
        }
    );

    let AccountDetails::Eft {
        routing_number,
        account_number,
        account_type,
    } = parsed(PayoutMethod::Eft).details
    else {
        panic!("not EFT details");
    };
    assert_eq!(routing_number.as_str(), "000312345");
    assert_eq!(account_number.as_str(), "1234567");
    assert_eq!(account_type, AccountType::Savings);

    assert_eq!(
        parsed(PayoutMethod::Digital).details,
        AccountDetails::Digital {
            recipient: EmailAddress::parse("Jane.Doe@Example.com").unwrap(),
            name: "Jane Doe".to_owned(),
            description: Some("Rent".to_owned()),
        }
    );

    let AccountDetails::Sepa { iban, bic } = parsed(PayoutMethod::Sepa).details else {
        panic!("not SEPA details");
    };
    assert_eq!(iban.as_str(), "DE89370400440532013000");
    assert_eq!(bic.as_str(), "DEUTDEFF");

    let AccountDetails::DirectCredit { account_number } =
        parsed(PayoutMethod::DirectCredit).details
    else {
        panic!("not direct-credit details");
    };
    assert_eq!(account_number.as_str(), "0109020068389000");

    for &method in PayoutMethod::ALL {
        assert_eq!(parsed(method).details.method(), method);
    }
}

#[test]
fn the_description_is_optional() {
    for description in [None, some(""), some("  \t")] {
        let raw = RawAccount {
            description,
            ..valid(PayoutMethod::Digital)
        };
        let input = AccountInput::parse(PayoutMethod::Digital, &raw).unwrap();
        let AccountDetails::Digital { description, .. } = input.details else {
            panic!("not digital details");
        };
        assert_eq!(description, None);
    }
}

#[test]
fn an_empty_request_gives_exactly_the_required_codes() {
    use ErrorCode as C;
    let cases = [
        (
            PayoutMethod::DirectEntry,
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac202, "bsb"),
                failure(C::Reac204, "account_number"),
            ],
        ),
        (
            PayoutMethod::Ach,
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac206, "routing_number"),
                failure(C::Reac204, "account_number"),
                failure(C::Reac210, "account_type"),
            ],
        ),
        (
            PayoutMethod::Eft,
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac206, "routing_number"),
                failure(C::Reac204, "account_number"),
                failure(C::Reac210, "account_type"),
            ],
        ),
        (
            PayoutMethod::Digital,
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac221, "recipient"),
                failure(C::Reac223, "name"),
            ],
        ),
        (
            PayoutMethod::Sepa,
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac213, "iban"),
                failure(C::Reac217, "bic"),
            ],
        ),
        (
            PayoutMethod::DirectCredit,
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac204, "account_number"),
            ],
        ),
    ];
    for (method, expected) in cases {
        assert_eq!(
            failures(method, &RawAccount::default()),
            expected,
            "{method:?}"
        );
        // Blank values are missing values.
        let blank = RawAccount {
            receiver_id: some(" "),
            bsb: some("\t"),
            account_number: some(""),
            routing_number: some(" "),
            account_type: some(" "),
            iban: some(" "),
            bic: some("\n"),
            recipient: some(" "),
            name: some("  "),
            description: some(" "),
        };
        assert_eq!(failures(method, &blank), expected, "{method:?}");
    }
}

#[test]
fn fields_of_other_methods_are_ignored() {
    for &method in PayoutMethod::ALL {
        let mut raw = valid(method);
        for &field in AccountField::ALL {
            if !method.has_field(field) {
                *raw.slot(field) = Some("x".repeat(300));
            }
        }
        assert!(AccountInput::parse(method, &raw).is_ok(), "{method:?}");
    }
}

#[test]
fn every_code_is_reported_on_its_field() {
    use ErrorCode as C;
    use PayoutMethod as M;
    let cases: Vec<(M, RawAccount, (ErrorCode, String))> = vec![
        (
            M::DirectEntry,
            RawAccount {
                bsb: some("01-2002"),
                ..valid(M::DirectEntry)
            },
            failure(C::Reac203, "bsb"),
        ),
        (
            M::DirectEntry,
            RawAccount {
                account_number: some("1234"),
                ..valid(M::DirectEntry)
            },
            failure(C::Reac205, "account_number"),
        ),
        (
            M::Ach,
            RawAccount {
                account_number: some("12-34"),
                ..valid(M::Ach)
            },
            failure(C::Reac205, "account_number"),
        ),
        (
            M::Eft,
            RawAccount {
                account_number: some("123456"),
                ..valid(M::Eft)
            },
            failure(C::Reac205, "account_number"),
        ),
        (
            M::DirectCredit,
            RawAccount {
                account_number: some("01-0902-068389-00"),
                ..valid(M::DirectCredit)
            },
            failure(C::Reac205, "account_number"),
        ),
        (
            M::DirectCredit,
            RawAccount {
                account_number: some("01-902-0068388-00"),
                ..valid(M::DirectCredit)
            },
            failure(C::Reac220, "account_number"),
        ),
        (
            M::DirectCredit,
            RawAccount {
                account_number: some("05-0001-0068389-00"),
                ..valid(M::DirectCredit)
            },
            failure(C::Reac209, "account_number"),
        ),
        (
            M::Ach,
            RawAccount {
                routing_number: some("02100002"),
                ..valid(M::Ach)
            },
            failure(C::Reac207, "routing_number"),
        ),
        (
            M::Ach,
            RawAccount {
                routing_number: some("021000022"),
                ..valid(M::Ach)
            },
            failure(C::Reac208, "routing_number"),
        ),
        (
            M::Ach,
            RawAccount {
                routing_number: some("500000005"),
                ..valid(M::Ach)
            },
            failure(C::Reac209, "routing_number"),
        ),
        (
            M::Eft,
            RawAccount {
                routing_number: some("12345003"),
                ..valid(M::Eft)
            },
            failure(C::Reac207, "routing_number"),
        ),
        (
            M::Eft,
            RawAccount {
                routing_number: some("12345-999"),
                ..valid(M::Eft)
            },
            failure(C::Reac209, "routing_number"),
        ),
        (
            M::Ach,
            RawAccount {
                account_type: some("current"),
                ..valid(M::Ach)
            },
            failure(C::Reac212, "account_type"),
        ),
        (
            M::Eft,
            RawAccount {
                account_type: some("chequing"),
                ..valid(M::Eft)
            },
            failure(C::Reac212, "account_type"),
        ),
        (
            M::Sepa,
            RawAccount {
                iban: some("DE8937040044053201300"),
                ..valid(M::Sepa)
            },
            failure(C::Reac214, "iban"),
        ),
        (
            M::Sepa,
            RawAccount {
                iban: some("DE88370400440532013000"),
                ..valid(M::Sepa)
            },
            failure(C::Reac215, "iban"),
        ),
        (
            M::Sepa,
            RawAccount {
                iban: some("TR330006100519786457841326"),
                ..valid(M::Sepa)
            },
            failure(C::Reac216, "iban"),
        ),
        (
            M::Sepa,
            RawAccount {
                bic: some("DEUTDEF"),
                ..valid(M::Sepa)
            },
            failure(C::Reac218, "bic"),
        ),
        (
            M::Sepa,
            RawAccount {
                bic: some("NWBKGB2L"),
                ..valid(M::Sepa)
            },
            failure(C::Reac219, "bic"),
        ),
        (
            M::Digital,
            RawAccount {
                recipient: some("jane@localhost"),
                ..valid(M::Digital)
            },
            failure(C::Reac222, "recipient"),
        ),
        (
            M::Digital,
            RawAccount {
                name: some(&"n".repeat(256)),
                ..valid(M::Digital)
            },
            failure(C::Reac226, "name"),
        ),
        (
            M::Digital,
            RawAccount {
                name: some("\u{3164}"),
                ..valid(M::Digital)
            },
            failure(C::Req009, "name"),
        ),
        (
            M::Digital,
            RawAccount {
                name: some("Jane\u{202E}eoD"),
                ..valid(M::Digital)
            },
            failure(C::Req009, "name"),
        ),
        (
            M::Digital,
            RawAccount {
                description: some("Rent\r\nBcc: x"),
                ..valid(M::Digital)
            },
            failure(C::Req009, "description"),
        ),
        (
            M::Digital,
            RawAccount {
                description: some("Re\u{200B}nt"),
                ..valid(M::Digital)
            },
            failure(C::Req009, "description"),
        ),
        (
            M::Digital,
            RawAccount {
                recipient: some("ja\u{2066}ne@example.com"),
                ..valid(M::Digital)
            },
            failure(C::Reac222, "recipient"),
        ),
    ];
    for (method, raw, expected) in cases {
        assert_eq!(
            failures(method, &raw),
            vec![expected.clone()],
            "{expected:?}"
        );
    }
}

#[test]
fn any_field_over_255_characters_is_reac226() {
    let long = "é".repeat(256);
    for &method in PayoutMethod::ALL {
        let mut fields = vec![None];
        fields.extend(method.fields().iter().map(|spec| Some(spec.field)));
        for field in fields {
            let mut raw = valid(method);
            let (slot, field) = match field {
                None => (&mut raw.receiver_id, "receiver_id"),
                Some(field) => (raw.slot(field), field.name()),
            };
            *slot = Some(long.clone());
            assert_eq!(
                failures(method, &raw),
                vec![failure(ErrorCode::Reac226, field)],
                "{method:?} {field}"
            );
        }
    }
    // 255 characters (of two bytes each) are within the limit.
    let raw = RawAccount {
        receiver_id: Some("é".repeat(255)),
        description: Some(format!("  {}  ", "é".repeat(255))),
        ..valid(PayoutMethod::Digital)
    };
    assert!(AccountInput::parse(PayoutMethod::Digital, &raw).is_ok());
}

#[test]
fn reports_several_failures_at_once_in_field_order() {
    use ErrorCode as C;
    let raw = RawAccount {
        receiver_id: None,
        iban: some("GB82WEST12345698765433"),
        bic: some("DEUTDEFF5"),
        ..RawAccount::default()
    };
    assert_eq!(
        failures(PayoutMethod::Sepa, &raw),
        vec![
            failure(C::Reac201, "receiver_id"),
            failure(C::Reac215, "iban"),
            failure(C::Reac218, "bic"),
        ]
    );
    let raw = RawAccount {
        receiver_id: some("rcv_1"),
        routing_number: some("99999-999"),
        account_number: some("12"),
        account_type: some("both"),
        ..RawAccount::default()
    };
    assert_eq!(
        failures(PayoutMethod::Eft, &raw),
        vec![
            failure(C::Reac209, "routing_number"),
            failure(C::Reac205, "account_number"),
            failure(C::Reac212, "account_type"),
        ]
    );
    let raw = RawAccount {
        recipient: some("not an address"),
        name: None,
        description: Some("d".repeat(300)),
        ..RawAccount::default()
    };
    assert_eq!(
        failures(PayoutMethod::Digital, &raw),
        vec![
            failure(C::Reac201, "receiver_id"),
            failure(C::Reac222, "recipient"),
            failure(C::Reac223, "name"),
            failure(C::Reac226, "description"),
        ]
    );
}

#[test]
fn a_bic_is_only_compared_with_a_fully_valid_iban() {
    // A non-SEPA IBAN with a BIC of its own country: only the IBAN fails.
    let raw = RawAccount {
        iban: some("TR330006100519786457841326"),
        bic: some("TCZBTR2A"),
        ..valid(PayoutMethod::Sepa)
    };
    assert_eq!(
        failures(PayoutMethod::Sepa, &raw),
        vec![failure(ErrorCode::Reac216, "iban")]
    );
    // A Jersey BIC goes with a GB IBAN.
    let raw = RawAccount {
        iban: some("GB82WEST12345698765432"),
        bic: some("ABCDJESH"),
        ..valid(PayoutMethod::Sepa)
    };
    assert!(AccountInput::parse(PayoutMethod::Sepa, &raw).is_ok());
}

#[test]
fn values_are_the_methods_fields_in_stored_order() {
    for &method in PayoutMethod::ALL {
        let details = AccountInput::parse(method, &valid(method)).unwrap().details;
        let mut names: Vec<AccountField> =
            details.values().iter().map(|(field, _)| *field).collect();
        names.sort();
        let mut expected: Vec<AccountField> =
            method.fields().iter().map(|spec| spec.field).collect();
        expected.sort();
        assert_eq!(names, expected, "{method:?}");
        assert_eq!(details.method(), method);
    }
    let digital = AccountInput::parse(PayoutMethod::Digital, &valid(PayoutMethod::Digital))
        .unwrap()
        .details;
    assert_eq!(
        digital.values(),
        vec![
            (AccountField::Recipient, "jane.doe@example.com".to_owned()),
            (AccountField::Name, "Jane Doe".to_owned()),
            (AccountField::Description, "Rent".to_owned()),
        ]
    );
    let nz = AccountInput::parse(
        PayoutMethod::DirectCredit,
        &valid(PayoutMethod::DirectCredit),
    )
    .unwrap()
    .details;
    assert_eq!(
        nz.values(),
        vec![(AccountField::AccountNumber, "0109020068389000".to_owned())]
    );
}

#[test]
fn stored_and_queried_values_normalise_alike() {
    for &method in PayoutMethod::ALL {
        let raw = valid(method);
        let details = AccountInput::parse(method, &raw).unwrap().details;
        for (field, stored) in details.values() {
            if !field.matchable() {
                continue;
            }
            assert_eq!(
                field.normalize_for_match(&stored).as_deref(),
                Some(stored.as_str()),
                "{method:?} {field:?} (stored)"
            );
            let sent = raw.get(field).unwrap();
            assert_eq!(
                field.normalize_for_match(sent).as_deref(),
                Some(stored.as_str()),
                "{method:?} {field:?} (as sent)"
            );
        }
    }
}

#[test]
fn normalize_for_match_known_answers() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("bsb", "012-002", Some("012002")),
        ("bsb", " 012002 ", Some("012002")),
        ("bsb", "01200", None),
        ("account_number", " 12345678 ", Some("12345678")),
        ("account_number", "1234", Some("1234")),
        (
            "account_number",
            "12345678901234567",
            Some("12345678901234567"),
        ),
        ("account_number", "123", None),
        ("account_number", "123456789012345678", None),
        (
            "account_number",
            "01-902-0068389-00",
            Some("0109020068389000"),
        ),
        (
            "account_number",
            "01 0902 0068389 000",
            Some("0109020068389000"),
        ),
        (
            "account_number",
            "0109020068389000",
            Some("0109020068389000"),
        ),
        ("account_number", "1234-5678", None),
        ("account_number", "01-902-0068388-00", None),
        ("account_number", "１２３４５", None),
        ("routing_number", "021000021", Some("021000021")),
        ("routing_number", "12345-003", Some("000312345")),
        ("routing_number", "000312345", Some("000312345")),
        ("routing_number", "021000022", None),
        ("account_type", " Savings ", Some("savings")),
        ("account_type", "chequing", None),
        (
            "iban",
            "gb82 west 1234 5698 7654 32",
            Some("GB82WEST12345698765432"),
        ),
        ("iban", "TR330006100519786457841326", None),
        ("bic", "deutdeff500", Some("DEUTDEFF500")),
        ("recipient", " Jane@Example.COM ", Some("jane@example.com")),
        ("name", "Jane", None),
        ("description", "Rent", None),
    ];
    for &(field, value, expected) in cases {
        assert_eq!(
            normalize_for_match(field, value).as_deref(),
            expected,
            "{field} {value}"
        );
    }
    for field in AccountField::ALL.iter().map(|f| f.name()) {
        for odd in [
            "",
            "   ",
            "🤷",
            "\u{0000}",
            "é\u{0301}",
            &"9".repeat(100_000),
        ] {
            assert_eq!(normalize_for_match(field, odd), None, "{field} {odd:.10}");
        }
    }
}
