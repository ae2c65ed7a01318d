use super::*;

#[test]
fn a_list_item_and_a_payout_read_as_one_type() {
    let item = serde_json::json!({
        "id": "2f1c7bd2-6f61-4a5a-9d3f-0f0a8c0b7e11", "created_at": "1795271698837",
        "updated_at": "1795271698837", "provider_reference": "", "batch_id": "",
        "asset": "AUD", "reference": "inv-1", "note": "",
        "payout_data": {"status": "PENDING", "transaction_is_duplicated": false,
            "receiver_is_invalid": false, "accepted": true, "errors": null,
            "transaction_id": "", "sender_is_invalid": false},
        "status": "unassessed", "amount": "1000",
        "fee_data": {"feetemplate_id": "", "feegroup_id": "", "fixed": 0, "percentage": 0.0, "min_amount": 0},
        "subaccount": {"id": "x"},
        "receiver": {"id": "2f1c7bd2-6f61-4a5a-9d3f-0f0a8c0b7e12", "firstname": "Ada", "lastname": "L", "email": "a@b.c"},
        "receiver_account": {"id": "2f1c7bd2-6f61-4a5a-9d3f-0f0a8c0b7e13", "email": "a@b.c", "bsb": "012 ***", "bank_code": "", "account_number": "123 ***"},
        "payout_provider": {"id": "sandbox"}
    });
    let payout: Payout = serde_json::from_value(item).unwrap();
    assert_eq!(payout.amount, 1000);
    assert_eq!(payout.batch_id, None);
    assert_eq!(payout.status, PayoutStatus::Unassessed);
    assert_eq!(payout.fee_data.fee_value, None);
}

#[test]
fn an_unknown_status_is_kept_as_unknown() {
    let status: PayoutStatus = serde_json::from_str("\"reviewing\"").unwrap();
    assert_eq!(status, PayoutStatus::Unknown);
    let status: PayoutStatus = serde_json::from_str("\"in_progress\"").unwrap();
    assert_eq!(status, PayoutStatus::InProgress);
}

#[test]
fn account_bodies_carry_only_their_methods_fields() {
    let account: NewAccount = CadDigital {
        receiver_id: Uuid::nil(),
        recipient: "ada@example.com".to_owned(),
        name: "Ada".to_owned(),
        description: None,
    }
    .into();
    assert_eq!(account.route(), "cad/digital");
    let body: serde_json::Value = serde_json::from_slice(&account.body().unwrap()).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"receiver_id": Uuid::nil(), "recipient": "ada@example.com", "name": "Ada"})
    );
}

#[test]
fn filters_use_the_routes_codes() {
    let filter = PayoutFilter {
        status: Some(PayoutStatus::Cancelled),
        reference: Some("r".to_owned()),
        ..PayoutFilter::default()
    };
    assert_eq!(
        filter.query(),
        [
            ("status".to_owned(), "5".to_owned()),
            ("reference".to_owned(), "r".to_owned())
        ]
    );
    let filter = ReceiverFilter {
        kyc_status: Some(KycStatus::Completed),
        ..ReceiverFilter::default()
    };
    assert_eq!(filter.query(), [("kyc_status".to_owned(), "1".to_owned())]);
}
