// @generated automatically by Diesel CLI.

diesel::table! {
    account_confirmations (token_hash) {
        token_hash -> Bytea,
        account_id -> Uuid,
        subaccount_id -> Uuid,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        api_key -> Text,
        secret_ciphertext -> Bytea,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    balances (subaccount_id, asset) {
        subaccount_id -> Uuid,
        asset -> Text,
        available -> Int8,
        pending -> Int8,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    batches (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        asset -> Text,
        status -> Text,
        batch_run_time -> Timestamptz,
        total_tx -> Int4,
        amount -> Int8,
        process_amount -> Int8,
        total_failed -> Int4,
        claimed_until -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    fee_templates (subaccount_id, asset) {
        subaccount_id -> Uuid,
        asset -> Text,
        id -> Uuid,
        group_id -> Uuid,
        fixed -> Int8,
        percentage -> Int4,
        min_amount -> Int8,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    idempotency_keys (idempotency_key, subaccount_id) {
        subaccount_id -> Uuid,
        idempotency_key -> Text,
        request_hash -> Bytea,
        state -> Text,
        response_status -> Nullable<Int2>,
        response_body -> Nullable<Bytea>,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        locked_until -> Nullable<Timestamptz>,
        committed -> Bool,
    }
}

diesel::table! {
    kyc_decisions (id) {
        id -> Uuid,
        receiver_id -> Uuid,
        subaccount_id -> Uuid,
        decision -> Text,
        reason -> Nullable<Text>,
        decided_by -> Text,
        decided_at -> Timestamptz,
    }
}

diesel::table! {
    ledger_entries (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        asset -> Text,
        kind -> Text,
        available_delta -> Int8,
        pending_delta -> Int8,
        payout_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        seq -> Int8,
    }
}

diesel::table! {
    outbox_events (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        object_id -> Uuid,
        sequence -> Int4,
        event_type -> Text,
        payload -> Jsonb,
        created_at -> Timestamptz,
        status -> Text,
        attempts -> Int4,
        next_attempt_at -> Timestamptz,
        delivered_at -> Nullable<Timestamptz>,
        claimed_until -> Nullable<Timestamptz>,
        last_error -> Nullable<Text>,
    }
}

diesel::table! {
    outbox_sequences (object_id) {
        object_id -> Uuid,
        subaccount_id -> Uuid,
        last_sequence -> Int4,
    }
}

diesel::table! {
    payouts (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        receiver_id -> Uuid,
        account_id -> Uuid,
        asset -> Text,
        amount -> Int8,
        fee -> Int8,
        fee_template_id -> Nullable<Uuid>,
        fee_group_id -> Nullable<Uuid>,
        fee_fixed -> Nullable<Int8>,
        fee_percentage -> Nullable<Int4>,
        fee_min_amount -> Nullable<Int8>,
        reference -> Nullable<Text>,
        note -> Text,
        status -> Int2,
        batch_id -> Nullable<Uuid>,
        provider_reference -> Text,
        duplicate -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        submitted_at -> Nullable<Timestamptz>,
        receiver_is_invalid -> Bool,
        failure_reason -> Nullable<Text>,
        return_code -> Nullable<Text>,
    }
}

diesel::table! {
    receiver_accounts (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        receiver_id -> Uuid,
        method -> Text,
        asset -> Text,
        status -> Text,
        confirm_status -> Text,
        data_ciphertext -> Bytea,
        details_fingerprint -> Bytea,
        fp_bsb -> Nullable<Bytea>,
        fp_account_number -> Nullable<Bytea>,
        fp_routing_number -> Nullable<Bytea>,
        fp_account_type -> Nullable<Bytea>,
        fp_iban -> Nullable<Bytea>,
        fp_bic -> Nullable<Bytea>,
        fp_recipient -> Nullable<Bytea>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    receivers (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        first_name -> Text,
        middle_name -> Text,
        last_name -> Text,
        email -> Text,
        gender -> Nullable<Text>,
        dob -> Date,
        dialcode -> Text,
        phone -> Text,
        address -> Text,
        address2 -> Text,
        city -> Text,
        state -> Text,
        country -> Text,
        postcode -> Text,
        reference -> Nullable<Text>,
        applicant_id -> Text,
        status -> Int2,
        kyc_status -> Int2,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        email_normalized -> Text,
    }
}

diesel::table! {
    request_nonces (api_key_id, nonce) {
        api_key_id -> Uuid,
        nonce -> Int8,
        subaccount_id -> Uuid,
        seen_at -> Timestamptz,
    }
}

diesel::table! {
    subaccounts (id) {
        id -> Uuid,
        merchant_id -> Uuid,
        name -> Text,
        title -> Text,
        first_name -> Text,
        last_name -> Text,
        email -> Text,
        dob -> Nullable<Date>,
        provider_status -> Text,
        business_name -> Text,
        business_or_individual -> Text,
        support_email -> Text,
        mobile_dialcode -> Text,
        mobile -> Text,
        home_phone_dialcode -> Text,
        home_telephone -> Text,
        address -> Text,
        suburb -> Text,
        state -> Text,
        country -> Text,
        postcode -> Text,
        has_passed_kyc -> Text,
        kyc_status -> Text,
        postback_url -> Nullable<Text>,
        // sms_provider and email_provider (text, default ''): no longer read or written; a
        // subaccount reports the deployment's notifiers (kept for instances of the previous
        // version during a rolling upgrade).
        require_signature_v2 -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        signature_policy -> Text,
    }
}

diesel::table! {
    webhook_endpoints (subaccount_id) {
        subaccount_id -> Uuid,
        secret -> Bytea,
        previous_secret -> Nullable<Bytea>,
        previous_until -> Nullable<Timestamptz>,
        disabled_at -> Nullable<Timestamptz>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_attempts (id) {
        id -> Int8,
        event_id -> Uuid,
        attempt -> Int4,
        subaccount_id -> Uuid,
        attempted_at -> Timestamptz,
        outcome -> Text,
        status_code -> Nullable<Int2>,
        latency_ms -> Int4,
        error -> Nullable<Text>,
    }
}

diesel::table! {
    rail_files (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        batch_id -> Uuid,
        method -> Text,
        name -> Text,
        sha256 -> Bytea,
        bytes -> Bytea,
        state -> Text,
        effective_date -> Date,
        reason -> Nullable<Text>,
        created_at -> Timestamptz,
        uploaded_at -> Nullable<Timestamptz>,
        answered_at -> Nullable<Timestamptz>,
        part -> Int4,
    }
}

diesel::table! {
    rail_file_items (file_id, position) {
        file_id -> Uuid,
        position -> Int4,
        subaccount_id -> Uuid,
        payout_id -> Uuid,
        reference -> Text,
    }
}

diesel::table! {
    rail_file_numbers (method, day) {
        method -> Text,
        day -> Date,
        last -> Int4,
    }
}

diesel::table! {
    inbound_files (id) {
        id -> Uuid,
        method -> Text,
        name -> Text,
        sha256 -> Bytea,
        outcome -> Text,
        detail -> Nullable<Text>,
        received_at -> Timestamptz,
        bytes -> Nullable<Bytea>,
        original_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    bank_reports (id) {
        id -> Uuid,
        inbound_file_id -> Uuid,
        position -> Int4,
        method -> Text,
        kind -> Text,
        reference -> Text,
        code -> Nullable<Text>,
        reason -> Nullable<Text>,
        account_invalid -> Bool,
        amount -> Nullable<Int8>,
        subaccount_id -> Nullable<Uuid>,
        payout_id -> Nullable<Uuid>,
        rail_file_id -> Nullable<Uuid>,
        resolution -> Text,
        created_at -> Timestamptz,
        contradicts -> Nullable<Uuid>,
    }
}

diesel::table! {
    notifications (id) {
        id -> Uuid,
        subaccount_id -> Uuid,
        account_id -> Uuid,
        channel -> Text,
        recipient_ciphertext -> Bytea,
        link_ciphertext -> Bytea,
        masked_details -> Jsonb,
        status -> Text,
        attempts -> Int4,
        next_attempt_at -> Nullable<Timestamptz>,
        last_error -> Nullable<Text>,
        created_at -> Timestamptz,
        sent_at -> Nullable<Timestamptz>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Uuid,
        at -> Timestamptz,
        actor_kind -> Text,
        actor_id -> Nullable<Uuid>,
        actor_name -> Text,
        action -> Text,
        object_kind -> Text,
        object_id -> Text,
        before -> Nullable<Jsonb>,
        after -> Nullable<Jsonb>,
        request_id -> Nullable<Text>,
        client_address -> Nullable<Text>,
    }
}

diesel::table! {
    login_failures (subject) {
        subject -> Text,
        failures -> Int4,
        window_started_at -> Timestamptz,
    }
}

diesel::table! {
    operator_sessions (token_hash) {
        token_hash -> Bytea,
        operator_id -> Uuid,
        created_at -> Timestamptz,
        last_seen_at -> Timestamptz,
        expires_at -> Timestamptz,
        ended_at -> Nullable<Timestamptz>,
        client_address -> Nullable<Text>,
    }
}

diesel::table! {
    operators (id) {
        id -> Uuid,
        email -> Text,
        role -> Text,
        status -> Text,
        password_hash -> Nullable<Text>,
        totp_secret_ciphertext -> Bytea,
        last_totp_step -> Nullable<Int8>,
        enrolment_token_hash -> Nullable<Bytea>,
        enrolment_expires_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        enrolled_at -> Nullable<Timestamptz>,
        disabled_at -> Nullable<Timestamptz>,
        time_zone -> Text,
    }
}

diesel::joinable!(account_confirmations -> receiver_accounts (account_id));
diesel::joinable!(api_keys -> subaccounts (subaccount_id));
diesel::joinable!(balances -> subaccounts (subaccount_id));
diesel::joinable!(batches -> subaccounts (subaccount_id));
diesel::joinable!(payouts -> batches (batch_id));
diesel::joinable!(fee_templates -> subaccounts (subaccount_id));
diesel::joinable!(kyc_decisions -> receivers (receiver_id));
diesel::joinable!(kyc_decisions -> subaccounts (subaccount_id));
diesel::joinable!(ledger_entries -> subaccounts (subaccount_id));
diesel::joinable!(operator_sessions -> operators (operator_id));
diesel::joinable!(notifications -> receiver_accounts (account_id));
diesel::joinable!(notifications -> subaccounts (subaccount_id));
diesel::joinable!(payouts -> receiver_accounts (account_id));
diesel::joinable!(payouts -> receivers (receiver_id));
diesel::joinable!(payouts -> subaccounts (subaccount_id));
diesel::joinable!(receiver_accounts -> receivers (receiver_id));
diesel::joinable!(receiver_accounts -> subaccounts (subaccount_id));
diesel::joinable!(rail_file_items -> rail_files (file_id));
diesel::joinable!(bank_reports -> inbound_files (inbound_file_id));
diesel::joinable!(receivers -> subaccounts (subaccount_id));
diesel::joinable!(webhook_attempts -> outbox_events (event_id));
diesel::joinable!(webhook_endpoints -> subaccounts (subaccount_id));

diesel::allow_tables_to_appear_in_same_query!(
    account_confirmations,
    api_keys,
    audit_log,
    balances,
    bank_reports,
    batches,
    fee_templates,
    idempotency_keys,
    inbound_files,
    kyc_decisions,
    ledger_entries,
    login_failures,
    notifications,
    operator_sessions,
    operators,
    outbox_events,
    outbox_sequences,
    payouts,
    rail_file_items,
    rail_file_numbers,
    rail_files,
    receiver_accounts,
    receivers,
    request_nonces,
    subaccounts,
    webhook_attempts,
    webhook_endpoints,
);
