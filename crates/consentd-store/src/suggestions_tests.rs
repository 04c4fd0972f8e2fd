//! Suggestions in the store: the 7-day rule is per kind and target, whoever's uid asked.

use chrono::{Duration, TimeZone, Utc};

use super::outbox::{Body, Outgoing, Sound};
use super::suggestions::{new_suggestion_id, Suggestion};
use super::tests::{t0, Fixture};
use consentd_core::mandate::MandateRequest;

fn suggestion(peer_uid: u32, at: chrono::DateTime<Utc>) -> Suggestion {
    Suggestion {
        id: new_suggestion_id().unwrap(),
        peer_uid,
        request: MandateRequest {
            kind: "publish_x".into(),
            targets: vec!["@news".into()],
            days: 7,
            usd_per_day: Some("0.50".parse().unwrap()),
            actions_per_day: 5,
            reason: Some("suggested by consentd after 3 yeses in 7 days".into()),
            origin: None,
        },
        digest: "ab".repeat(32),
        approvals: 3,
        created_at: at,
        opened_at: None,
    }
}

/// Two uids (two agents, or one agent under two accounts) each reach three yeses to the same
/// kind and target: the owner is offered the same standing permission on two days running.
#[test]
fn the_same_kind_and_target_is_not_suggested_again_within_7_days_from_another_uid() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let message = || Outgoing::message(42, Body::default(), Sound::Silent);
    let day = |d: i64| t0() + Duration::days(d);
    let start = |d: i64| Utc.from_utc_datetime(&day(d).date_naive().and_hms_opt(0, 0, 0).unwrap());
    assert!(db
        .offer_suggestion(&suggestion(1000, day(0)), &message(), start(0), day(0))
        .unwrap());
    let history = db
        .suggestion_history(1001, "publish_x", Some("@news"), day(1))
        .unwrap();
    assert!(
        history.last_suggested.is_some(),
        "the suggestion of yesterday for this kind and target is not seen"
    );
    assert!(
        !db.offer_suggestion(&suggestion(1001, day(1)), &message(), start(1), day(1))
            .unwrap(),
        "the same kind and target was suggested again the next day"
    );
}
