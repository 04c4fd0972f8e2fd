//! The emulator checked through teloxide and raw HTTP: what each method answers, the chat it
//! keeps, the scripted answers, and what teloxide 0.17 makes of them (the crate docs' table).

use super::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use teloxide::prelude::*;
use teloxide::types::{
    BotCommand, CallbackQueryId, InlineKeyboardButton, InlineKeyboardMarkup, InputFile,
    MaybeInaccessibleMessage, MessageEntityKind, MessageId, MessageOrigin, UpdateKind,
};
use teloxide::{ApiError, RequestError};

const TOKEN: &str = "123456:TEST-token_abc";
const OWNER: i64 = 42;

async fn start() -> Emulator {
    Emulator::start(TOKEN).await.expect("emulator starts")
}

/// A bot on the emulator, with proxies from the environment ignored so loopback stays
/// loopback.
fn bot_with(emulator: &Emulator, token: &str, timeout: Duration) -> Bot {
    let client = teloxide::net::default_reqwest_settings()
        .no_proxy()
        .timeout(timeout)
        .build()
        .expect("http client");
    Bot::with_client(token, client).set_api_url(emulator.api_url().parse().unwrap())
}

fn bot(emulator: &Emulator) -> Bot {
    bot_with(emulator, TOKEN, Duration::from_secs(17))
}

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Ann").username("ann").language("ru")
}

fn keyboard(yes: &str, no: &str) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([[
        InlineKeyboardButton::callback("Yes", yes),
        InlineKeyboardButton::callback("No", no),
    ]])
}

fn message_id(message: &Message) -> i64 {
    i64::from(message.id.0)
}

/// A plain HTTP/1.1 request, for what teloxide cannot send (other cases, forms, bad tokens)
/// and for answers teloxide would stall on (5xx).
fn raw_blocking(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(content_type) = content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).expect("utf-8 response");
    let (head, body) = response.split_once("\r\n\r\n").expect("http response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

async fn raw(
    emulator: &Emulator,
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
) -> (u16, Value) {
    let addr = emulator.addr();
    let (status, body) =
        tokio::task::spawn_blocking(move || raw_blocking(addr, method, &path, content_type, &body))
            .await
            .unwrap();
    (status, serde_json::from_str(&body).expect("a JSON body"))
}

#[tokio::test]
async fn get_me_deserializes_into_teloxide_me() {
    let emulator = start().await;
    let me = bot(&emulator).get_me().await.expect("getMe");
    assert_eq!(me.username(), emulator.bot_username());
    assert_eq!(me.id.0, 123_456);
    assert!(me.is_bot);
    assert_eq!(emulator.calls_to("getMe").len(), 1);
    assert!(emulator.calls()[0].is_ok());
}

#[tokio::test]
async fn send_then_edit_text_then_markup_keeps_the_chat_state() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.add_user(&owner());
    let yes_no = keyboard("y:1", "n:1");
    let sent = bot
        .send_message(ChatId(OWNER), "Card")
        .reply_markup(yes_no.clone())
        .disable_notification(true)
        .await
        .expect("sendMessage");
    assert_eq!(sent.text(), Some("Card"));
    assert_eq!(sent.reply_markup(), Some(&yes_no));
    assert_eq!(sent.chat.id, ChatId(OWNER));
    assert_eq!(sent.from.as_ref().unwrap().id.0, 123_456);

    let edited = bot
        .edit_message_text(ChatId(OWNER), sent.id, "Card: granted")
        .reply_markup(yes_no.clone())
        .await
        .expect("editMessageText");
    assert_eq!(edited.text(), Some("Card: granted"));
    assert_eq!(edited.reply_markup(), Some(&yes_no));
    assert!(edited.edit_date().is_some());

    let undo = InlineKeyboardMarkup::new([[InlineKeyboardButton::callback("Undo", "u:1")]]);
    let edited = bot
        .edit_message_reply_markup(ChatId(OWNER), sent.id)
        .reply_markup(undo.clone())
        .await
        .expect("editMessageReplyMarkup");
    assert_eq!(edited.reply_markup(), Some(&undo));

    // An edit without reply_markup takes the keyboard away, as in Telegram.
    let done = bot
        .edit_message_text(ChatId(OWNER), sent.id, "Done")
        .await
        .expect("editMessageText");
    assert!(done.reply_markup().is_none());

    let messages = emulator.messages(OWNER);
    assert_eq!(messages.len(), 1);
    let card = &messages[0];
    assert!(card.outgoing && card.disable_notification && !card.deleted);
    assert_eq!(card.text.as_deref(), Some("Done"));
    assert!(card.reply_markup.is_none());
    let history: Vec<_> = card
        .history
        .iter()
        .map(|r| (r.text.as_deref().unwrap(), r.replaced_by.as_str()))
        .collect();
    assert_eq!(
        history,
        [
            ("Card", "editmessagetext"),
            ("Card: granted", "editmessagereplymarkup"),
            ("Card: granted", "editmessagetext"),
        ]
    );
    let first_buttons: Vec<_> = ChatMessage {
        reply_markup: card.history[0].reply_markup.clone(),
        ..card.clone()
    }
    .buttons()
    .into_iter()
    .map(|b| (b.text, b.callback_data.unwrap()))
    .collect();
    assert_eq!(
        first_buttons,
        [
            ("Yes".to_owned(), "y:1".to_owned()),
            ("No".to_owned(), "n:1".to_owned())
        ]
    );
}

#[tokio::test]
async fn an_edit_that_changes_nothing_is_message_not_modified() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let yes_no = keyboard("y:1", "n:1");
    let sent = bot
        .send_message(ChatId(OWNER), "Card")
        .reply_markup(yes_no.clone())
        .await
        .unwrap();

    let err = bot
        .edit_message_text(ChatId(OWNER), sent.id, "Card")
        .reply_markup(yes_no.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageNotModified)),
        "{err:?}"
    );
    let err = bot
        .edit_message_reply_markup(ChatId(OWNER), sent.id)
        .reply_markup(yes_no.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageNotModified)),
        "{err:?}"
    );

    // The same answer scripted, for an edit that would otherwise succeed.
    emulator.script("editMessageText", Scripted::not_modified());
    let err = bot
        .edit_message_text(ChatId(OWNER), sent.id, "Other")
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageNotModified)),
        "{err:?}"
    );
    let card = emulator.message(OWNER, message_id(&sent)).unwrap();
    assert_eq!(card.text.as_deref(), Some("Card"));
    assert!(card.history.is_empty());
    assert_eq!(emulator.pending_scripts(), 0);
}

#[tokio::test]
async fn editing_or_deleting_a_missing_message_fails_like_telegram() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let err = bot
        .edit_message_text(ChatId(OWNER), MessageId(999), "x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageToEditNotFound)),
        "{err:?}"
    );

    let sent = bot.send_message(ChatId(OWNER), "Card").await.unwrap();
    bot.delete_message(ChatId(OWNER), sent.id)
        .await
        .expect("deleteMessage");
    assert!(emulator.message(OWNER, message_id(&sent)).unwrap().deleted);
    let err = bot
        .edit_message_text(ChatId(OWNER), sent.id, "late")
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageToEditNotFound)),
        "{err:?}"
    );
    let err = bot
        .delete_message(ChatId(OWNER), sent.id)
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageToDeleteNotFound)),
        "{err:?}"
    );

    // The user's own messages cannot be edited by the bot.
    let update = emulator.message_update(&owner(), ChatSpec::private(OWNER), "hi");
    let theirs = MessageId(update["message"]["message_id"].as_i64().unwrap() as i32);
    let err = bot
        .edit_message_text(ChatId(OWNER), theirs, "hijacked")
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageCantBeEdited)),
        "{err:?}"
    );
}

#[tokio::test]
async fn callback_queries_are_answered_once_and_scripted_too_old_is_unknown_to_teloxide() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let yes_no = keyboard("y:1", "n:1");
    let sent = bot
        .send_message(ChatId(OWNER), "Card")
        .reply_markup(yes_no.clone())
        .await
        .unwrap();
    emulator.push_press(&owner(), ChatSpec::private(OWNER), message_id(&sent), "y:1");

    let updates = bot.get_updates().await.unwrap();
    let UpdateKind::CallbackQuery(query) = &updates[0].kind else {
        panic!("not a callback query: {:?}", updates[0]);
    };
    assert_eq!(query.data.as_deref(), Some("y:1"));
    assert_eq!(query.from.id.0, OWNER as u64);
    assert!(!query.chat_instance.is_empty());
    let message = query.regular_message().expect("the card");
    assert_eq!(message.id, sent.id);
    assert_eq!(message.reply_markup(), Some(&yes_no));

    bot.answer_callback_query(query.id.clone())
        .text("Granted")
        .await
        .expect("answerCallbackQuery");
    let answers = emulator.callback_answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].callback_query_id, query.id.0);
    assert_eq!(answers[0].text.as_deref(), Some("Granted"));

    // Telegram's text says "query ID"; teloxide's InvalidQueryId expects "query id", so the
    // error arrives as Unknown. Matching on InvalidQueryId would never fire.
    let too_old = |err: &RequestError| matches!(err, RequestError::Api(ApiError::Unknown(text)) if text == description::QUERY_TOO_OLD);
    let err = bot
        .answer_callback_query(query.id.clone())
        .await
        .unwrap_err();
    assert!(too_old(&err), "a second answer: {err:?}");
    let err = bot
        .answer_callback_query(CallbackQueryId("never-sent".to_owned()))
        .await
        .unwrap_err();
    assert!(too_old(&err), "an unknown id: {err:?}");

    emulator.push_press(&owner(), ChatSpec::private(OWNER), message_id(&sent), "n:1");
    let updates = bot
        .get_updates()
        .offset(updates[0].id.0 as i32 + 1)
        .await
        .unwrap();
    let UpdateKind::CallbackQuery(second) = &updates[0].kind else {
        panic!("not a callback query");
    };
    emulator.script("answerCallbackQuery", Scripted::query_too_old());
    let err = bot
        .answer_callback_query(second.id.clone())
        .await
        .unwrap_err();
    assert!(too_old(&err), "scripted: {err:?}");
    assert_eq!(emulator.callback_answers().len(), 1);
}

#[tokio::test]
async fn photo_and_document_uploads_record_length_and_sha256() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let photo: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let sent = bot
        .send_photo(ChatId(OWNER), InputFile::memory(photo.clone()))
        .caption("attachment 1")
        .await
        .expect("sendPhoto");
    assert_eq!(sent.caption(), Some("attachment 1"));
    assert_eq!(sent.photo().map(<[_]>::len), Some(2));
    let call = emulator.calls_to("sendphoto").pop().unwrap();
    let photo_sha = hex::encode(Sha256::digest(&photo));
    assert_eq!(call.params["photo"]["sha256"], json!(photo_sha));
    assert_eq!(call.params["photo"]["bytes"], json!(5000));
    assert_eq!(call.params["chat_id"], json!(OWNER));
    assert_eq!(call.params["caption"], json!("attachment 1"));

    let pdf = b"%PDF-1.4 not really a pdf".to_vec();
    let sent = bot
        .send_document(
            ChatId(OWNER),
            InputFile::memory(pdf.clone()).file_name("report.pdf"),
        )
        .await
        .expect("sendDocument");
    let document = sent.document().expect("a document");
    assert_eq!(document.file_name.as_deref(), Some("report.pdf"));
    assert_eq!(
        document
            .mime_type
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("application/pdf")
    );
    let call = emulator.calls_to("SendDocument").pop().unwrap();
    let pdf_sha = hex::encode(Sha256::digest(&pdf));
    assert_eq!(
        call.params["document"],
        json!({"name": "report.pdf", "bytes": pdf.len(), "sha256": pdf_sha})
    );

    // Sent again by file_id: the same file, no upload.
    let again = bot
        .send_document(ChatId(OWNER), InputFile::file_id(document.file.id.clone()))
        .await
        .expect("sendDocument by file_id");
    let stored = emulator.message(OWNER, message_id(&again)).unwrap();
    assert_eq!(stored.kind, ContentKind::Document);
    assert_eq!(stored.file.unwrap().sha256, pdf_sha);
    let kinds: Vec<_> = emulator.messages(OWNER).iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [
            ContentKind::Photo,
            ContentKind::Document,
            ContentKind::Document
        ]
    );
}

#[tokio::test]
async fn get_updates_offset_confirms_earlier_updates() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let first = emulator.push_text(&owner(), ChatSpec::private(OWNER), "/start abc");
    let second = emulator.push_text(&owner(), ChatSpec::private(OWNER), "hello");
    assert_eq!((first, second), (1, 2));

    // Without an offset nothing is confirmed: the same batch again.
    for _ in 0..2 {
        let updates = bot.get_updates().await.unwrap();
        let ids: Vec<u32> = updates.iter().map(|u| u.id.0).collect();
        assert_eq!(ids, [1, 2]);
    }
    let updates = bot.get_updates().limit(1).await.unwrap();
    assert_eq!(updates.len(), 1);

    let updates = bot.get_updates().offset(2).await.unwrap();
    let ids: Vec<u32> = updates.iter().map(|u| u.id.0).collect();
    assert_eq!(ids, [2]);
    assert_eq!(emulator.pending_updates().len(), 1);

    let updates = bot.get_updates().offset(3).await.unwrap();
    assert!(updates.is_empty());
    assert!(emulator.pending_updates().is_empty());
    assert_eq!(
        emulator
            .calls_to("getupdates")
            .last()
            .unwrap()
            .param_i64("offset"),
        Some(3)
    );
}

#[tokio::test]
async fn a_long_poll_returns_at_once_when_an_update_is_pushed() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let pusher = emulator.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        pusher.push_text(&owner(), ChatSpec::private(OWNER), "/pending");
    });
    let started = Instant::now();
    let updates = bot.get_updates().timeout(1).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(updates.len(), 1);
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_millis(800),
        "{waited:?}"
    );

    // With nothing pushed, the poll lasts its timeout and answers an empty list.
    let started = Instant::now();
    let updates = bot.get_updates().offset(2).timeout(1).await.unwrap();
    assert!(updates.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(950));
}

#[tokio::test]
async fn a_newer_get_updates_ends_a_waiting_one_with_conflict() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let other = bot.clone();
    let first = tokio::spawn(async move { other.get_updates().timeout(5).await });
    emulator
        .wait_until("the first poll waits", Duration::from_secs(3), |e| {
            e.calls_to("getupdates")
                .iter()
                .any(|call| call.outcome.is_none())
        })
        .await
        .unwrap();
    let updates = bot.get_updates().await.unwrap();
    assert!(updates.is_empty());
    let err = first.await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            RequestError::Api(ApiError::TerminatedByOtherGetUpdates)
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn scripted_429_is_retry_after_and_409_is_conflict() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.script("sendMessage", Scripted::too_many_requests(3));
    let err = bot.send_message(ChatId(OWNER), "x").await.unwrap_err();
    assert!(
        matches!(err, RequestError::RetryAfter(seconds) if seconds.seconds() == 3),
        "{err:?}"
    );
    // Only the next call was scripted.
    bot.send_message(ChatId(OWNER), "x").await.unwrap();
    assert_eq!(emulator.messages(OWNER).len(), 1);

    emulator.script("getUpdates", Scripted::conflict());
    let err = bot.get_updates().await.unwrap_err();
    assert!(
        matches!(
            err,
            RequestError::Api(ApiError::TerminatedByOtherGetUpdates)
        ),
        "{err:?}"
    );
    let outcomes: Vec<_> = emulator
        .calls()
        .into_iter()
        .map(|call| match call.outcome {
            Some(Outcome::Error {
                code, retry_after, ..
            }) => (code, retry_after),
            Some(Outcome::Ok(_)) => (200, None),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(outcomes, [(429, Some(3)), (200, None), (409, None)]);
}

/// An outage answers every call until it ends, ahead of queued scripts, which wait for it.
#[tokio::test]
async fn an_outage_answers_every_call_until_it_ends() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.script("sendMessage", Scripted::not_modified());
    emulator.outage("sendMessage", Scripted::unauthorized());
    for _ in 0..3 {
        let err = bot.send_message(ChatId(OWNER), "x").await.unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::InvalidToken)),
            "{err:?}"
        );
    }
    assert!(emulator.messages(OWNER).is_empty());
    emulator.end_outage("SENDMESSAGE");
    let err = bot.send_message(ChatId(OWNER), "x").await.unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageNotModified)),
        "the queued script comes after the outage: {err:?}"
    );
    bot.send_message(ChatId(OWNER), "x").await.unwrap();
    assert_eq!(emulator.messages(OWNER).len(), 1);
}

#[tokio::test]
async fn counting_views_agree_with_the_full_ones() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.script("sendMessage", Scripted::too_many_requests(1));
    emulator.script("SENDMESSAGE", Scripted::MalformedJson);
    emulator.script("getMe", Scripted::MalformedJson);
    assert_eq!(emulator.pending_scripts_for("sendmessage"), 2);
    assert_eq!(emulator.pending_scripts_for("getMe"), 1);
    assert_eq!(emulator.pending_scripts_for("editMessageText"), 0);
    let before = emulator.elapsed();
    let _ = bot.send_message(ChatId(OWNER), "one").await;
    let _ = bot.get_me().await;
    assert_eq!(emulator.pending_scripts_for("sendMessage"), 1);
    assert_eq!(emulator.pending_scripts_for("getme"), 0);
    assert_eq!(emulator.call_count(), emulator.calls().len());
    assert_eq!(emulator.call_count(), 2);
    let since: Vec<String> = emulator
        .calls_since(1)
        .into_iter()
        .map(|c| c.method)
        .collect();
    assert_eq!(since, ["getme"]);
    assert!(emulator.calls_since(5).is_empty());
    assert!(emulator.calls()[0].elapsed >= before);
    assert!(emulator.calls()[1].elapsed <= emulator.elapsed());
}

#[tokio::test]
async fn dropped_connections_malformed_json_and_delays() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.script("sendMessage", Scripted::Drop);
    let err = bot.send_message(ChatId(OWNER), "x").await.unwrap_err();
    assert!(matches!(err, RequestError::Network(_)), "{err:?}");
    assert_eq!(
        emulator.calls_to("sendmessage")[0].outcome,
        Some(Outcome::Dropped)
    );
    bot.send_message(ChatId(OWNER), "after the drop")
        .await
        .expect("a new connection works");

    emulator.script("getMe", Scripted::MalformedJson);
    let err = bot.get_me().await.unwrap_err();
    assert!(matches!(err, RequestError::InvalidJson { .. }), "{err:?}");

    emulator.script("getMe", Scripted::Delay(Duration::from_millis(300)));
    let started = Instant::now();
    bot.get_me().await.expect("a delayed answer");
    assert!(started.elapsed() >= Duration::from_millis(300));

    // A delay past the client's timeout is a network error on the client's side.
    let impatient = bot_with(&emulator, TOKEN, Duration::from_millis(200));
    emulator.script("getMe", Scripted::Delay(Duration::from_secs(1)));
    let err = impatient.get_me().await.unwrap_err();
    assert!(matches!(err, RequestError::Network(_)), "{err:?}");
}

/// A message answered late is in the chat before its sender learns its id: what an owner may
/// press or reply to while the bot is still waiting for Telegram's answer.
#[tokio::test]
async fn an_answer_late_is_handled_at_once_and_answered_after() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.script("sendMessage", Scripted::AnswerLate(Duration::from_secs(2)));
    let started = Instant::now();
    let send = tokio::spawn(async move { bot.send_message(ChatId(OWNER), "early").await });
    emulator
        .wait_until("the message", Duration::from_secs(5), |e| {
            !e.messages(OWNER).is_empty()
        })
        .await
        .expect("the message is in the chat");
    let in_chat = started.elapsed();
    assert!(
        in_chat < Duration::from_secs(2),
        "in the chat after {in_chat:?}"
    );
    assert!(!send.is_finished(), "answered before its delay");
    let sent = send.await.unwrap().expect("the late answer");
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(message_id(&sent), emulator.messages(OWNER)[0].message_id);
}

#[tokio::test]
async fn server_errors_answer_the_envelope_with_their_status() {
    let emulator = start().await;
    emulator.script("getMe", Scripted::server_error(502));
    let (status, body) = raw(
        &emulator,
        "GET",
        format!("/bot{TOKEN}/getMe"),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 502, "description": "Bad Gateway"})
    );
}

#[tokio::test(start_paused = true)]
async fn teloxide_stalls_ten_seconds_on_a_server_error() {
    let emulator = start().await;
    let bot = bot(&emulator);
    emulator.script("getMe", Scripted::server_error(502));
    let started = tokio::time::Instant::now();
    let err = bot.get_me().await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(10));
    assert!(
        matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == "Bad Gateway"),
        "{err:?}"
    );
}

#[tokio::test]
async fn method_names_match_in_any_case_and_any_encoding() {
    let emulator = start().await;
    let (status, body) = raw(
        &emulator,
        "POST",
        format!("/bot{TOKEN}/sendmessage"),
        Some("application/json"),
        br#"{"chat_id":42,"text":"lower"}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["text"], json!("lower"));

    let (status, body) = raw(
        &emulator,
        "POST",
        format!("/bot{TOKEN}/SENDMESSAGE"),
        Some("application/x-www-form-urlencoded"),
        b"chat_id=42&text=upper+case%21&disable_notification=true".to_vec(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["text"], json!("upper case!"));

    let (status, body) = raw(
        &emulator,
        "GET",
        format!("/bot{TOKEN}/getme"),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["username"], json!(emulator.bot_username()));

    let calls = emulator.calls_to("SendMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|call| call.method == "sendmessage"));
    // The form's strings are parsed back into what JSON would have carried.
    assert_eq!(calls[1].params["chat_id"], json!(42));
    assert_eq!(calls[1].params["disable_notification"], json!(true));
    assert!(emulator.messages(OWNER)[1].disable_notification);
}

#[tokio::test]
async fn raw_multipart_with_a_file_part_named_like_the_parameter() {
    let emulator = start().await;
    let png = b"\x89PNG\r\n\x1a\n fake image bytes".to_vec();
    let mut body = Vec::new();
    let text_part = |name: &str, value: &str| {
        format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
    };
    body.extend(text_part("chat_id", "42").as_bytes());
    body.extend(text_part("caption", "123").as_bytes());
    body.extend(
        text_part(
            "reply_markup",
            r#"{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}"#,
        )
        .as_bytes(),
    );
    body.extend(
        b"--XyZ\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"cat.png\"\r\nContent-Type: image/png\r\n\r\n",
    );
    body.extend(&png);
    body.extend(b"\r\n--XyZ--\r\n");
    let (status, answer) = raw(
        &emulator,
        "POST",
        format!("/bot{TOKEN}/sendPhoto"),
        Some("multipart/form-data; boundary=XyZ"),
        body,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["caption"], json!("123"));
    let call = emulator.calls_to("sendphoto").pop().unwrap();
    assert_eq!(call.params["chat_id"], json!(42));
    assert_eq!(call.params["caption"], json!("123"), "free text stays text");
    assert_eq!(
        call.params["photo"],
        json!({"name": "cat.png", "bytes": png.len(), "sha256": hex::encode(Sha256::digest(&png))})
    );
    let stored = &emulator.messages(OWNER)[0];
    assert_eq!(stored.file.as_ref().unwrap().media_type, "image/png");
    assert_eq!(stored.buttons()[0].callback_data.as_deref(), Some("a"));
}

#[tokio::test]
async fn a_wrong_token_is_401_and_an_unknown_method_404() {
    let emulator = start().await;
    let (status, body) = raw(
        &emulator,
        "POST",
        "/bot999:wrong/getMe".to_owned(),
        Some("application/json"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    let wrong = bot_with(&emulator, "999:wrong", Duration::from_secs(5));
    let err = wrong.get_me().await.unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::InvalidToken)),
        "{err:?}"
    );
    assert!(emulator.calls().iter().all(|call| !call.authorized));

    let (status, body) = raw(
        &emulator,
        "POST",
        format!("/bot{TOKEN}/sendDice"),
        Some("application/json"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(body["description"], json!("Not Found"));
    let (status, _) = raw(&emulator, "GET", "/nothing".to_owned(), None, Vec::new()).await;
    assert_eq!(status, 404);
    // teloxide only calls methods that exist; a scripted 404 shows what it makes of one.
    emulator.script("getMe", Scripted::error(404, description::NOT_FOUND));
    let err = bot(&emulator).get_me().await.unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::InvalidToken)),
        "{err:?}"
    );
}

#[tokio::test]
async fn telegram_limits_are_enforced() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let err = bot
        .send_message(ChatId(OWNER), "card")
        .reply_markup(keyboard(&"d".repeat(65), "n"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::ButtonDataInvalid)),
        "{err:?}"
    );
    bot.send_message(ChatId(OWNER), "card")
        .reply_markup(keyboard(&"d".repeat(64), "n"))
        .await
        .expect("64 bytes of callback data fit");

    bot.send_message(ChatId(OWNER), "a".repeat(4096))
        .await
        .expect("4096 fit");
    let err = bot
        .send_message(ChatId(OWNER), "a".repeat(4097))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageIsTooLong)),
        "{err:?}"
    );
    // 2049 code points, 4098 UTF-16 units: too long for clients that count units.
    let err = bot
        .send_message(ChatId(OWNER), "😀".repeat(2049))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageIsTooLong)),
        "{err:?}"
    );
    let err = bot.send_message(ChatId(OWNER), " \n ").await.unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::MessageTextIsEmpty)),
        "{err:?}"
    );
    let first = &emulator.messages(OWNER)[0];
    let err = bot
        .edit_message_text(
            ChatId(OWNER),
            MessageId(first.message_id as i32),
            "b".repeat(4097),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Api(ApiError::EditedMessageIsTooLong)),
        "{err:?}"
    );
    let err = bot
        .send_photo(ChatId(OWNER), InputFile::memory(vec![1u8; 10]))
        .caption("c".repeat(1025))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == description::CAPTION_TOO_LONG),
        "{err:?}"
    );
    assert_eq!(emulator.messages(OWNER).len(), 2);
}

#[tokio::test]
async fn built_updates_deserialize_as_teloxide_updates() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let eve = UserSpec::new(7, "Eve");
    let yes_no = keyboard("y:1", "n:1");
    let card = bot
        .send_message(ChatId(OWNER), "card")
        .reply_markup(yes_no.clone())
        .await
        .unwrap();
    let chat = ChatSpec::private(OWNER);

    let update = emulator.message_update(&owner(), chat, "/pending now");
    let written = update["message"]["message_id"].as_i64().unwrap();
    assert_eq!(
        written, 2,
        "message ids are shared by both sides of the chat"
    );
    emulator.push_update(update);
    emulator.push_update(emulator.edited_message_update(&owner(), chat, written, "/pending later"));
    emulator.push_update(emulator.forwarded_message_update(&owner(), chat, "fwd", &eve));
    emulator.push_update(emulator.message_update(&eve, ChatSpec::group(100), "hi all"));
    emulator.push_update(emulator.callback_update(&owner(), chat, message_id(&card), "y:1"));
    emulator.push_update(emulator.callback_update(&owner(), chat, 999, "y:1"));

    let updates = bot.get_updates().await.unwrap();
    assert_eq!(updates.len(), 6);
    let UpdateKind::Message(message) = &updates[0].kind else {
        panic!("{:?}", updates[0]);
    };
    assert_eq!(message.text(), Some("/pending now"));
    let entity = &message.entities().unwrap()[0];
    assert_eq!(
        (entity.kind.clone(), entity.offset, entity.length),
        (MessageEntityKind::BotCommand, 0, 8)
    );
    assert_eq!(
        message.from.as_ref().unwrap().language_code.as_deref(),
        Some("ru")
    );
    assert!(message.chat.is_private());

    let UpdateKind::EditedMessage(edited) = &updates[1].kind else {
        panic!("{:?}", updates[1]);
    };
    assert_eq!(edited.text(), Some("/pending later"));
    assert!(edited.edit_date().is_some());
    assert_eq!(emulator.message(OWNER, written).unwrap().history.len(), 1);

    let UpdateKind::Message(forwarded) = &updates[2].kind else {
        panic!("{:?}", updates[2]);
    };
    assert!(
        matches!(forwarded.forward_origin(), Some(MessageOrigin::User { sender_user, .. }) if sender_user.id.0 == 7)
    );

    let UpdateKind::Message(in_group) = &updates[3].kind else {
        panic!("{:?}", updates[3]);
    };
    assert!(in_group.chat.is_group());
    assert_eq!(in_group.chat.id, ChatId(-100));

    let UpdateKind::CallbackQuery(press) = &updates[4].kind else {
        panic!("{:?}", updates[4]);
    };
    let pressed = press.regular_message().unwrap();
    assert_eq!((pressed.id, pressed.text()), (card.id, Some("card")));
    assert_eq!(pressed.reply_markup(), Some(&yes_no));

    let UpdateKind::CallbackQuery(stale) = &updates[5].kind else {
        panic!("{:?}", updates[5]);
    };
    assert!(matches!(
        stale.message,
        Some(MaybeInaccessibleMessage::Inaccessible(_))
    ));
}

#[tokio::test]
async fn pushed_ids_keep_duplicates_and_order_and_assigned_ids_continue_above() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let chat = ChatSpec::private(OWNER);
    let mut update = emulator.message_update(&owner(), chat, "one");
    update["update_id"] = json!(10);
    assert_eq!(emulator.push_update(update.clone()), 10);
    assert_eq!(emulator.push_update(update.clone()), 10);
    update["update_id"] = json!(5);
    assert_eq!(emulator.push_update(update), 5);
    assert_eq!(emulator.push_text(&owner(), chat, "two"), 11);

    let ids: Vec<u32> = bot
        .get_updates()
        .await
        .unwrap()
        .iter()
        .map(|u| u.id.0)
        .collect();
    assert_eq!(ids, [10, 10, 5, 11]);
    let ids: Vec<u32> = bot
        .get_updates()
        .offset(11)
        .await
        .unwrap()
        .iter()
        .map(|u| u.id.0)
        .collect();
    assert_eq!(ids, [11]);
}

#[tokio::test]
async fn commands_round_trip_and_delete_webhook_can_drop_pending_updates() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let commands = vec![
        BotCommand::new("pending", "Open cards"),
        BotCommand::new("help", "Help"),
    ];
    bot.set_my_commands(commands.clone())
        .await
        .expect("setMyCommands");
    assert_eq!(bot.get_my_commands().await.unwrap(), commands);
    assert!(bot
        .get_my_commands()
        .language_code("ru")
        .await
        .unwrap()
        .is_empty());
    let err = bot
        .set_my_commands([BotCommand::new("Bad-Name", "x")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == description::BOT_COMMAND_INVALID),
        "{err:?}"
    );

    emulator.push_text(&owner(), ChatSpec::private(OWNER), "stale");
    bot.delete_webhook().await.expect("deleteWebhook");
    assert_eq!(emulator.pending_updates().len(), 1);
    bot.delete_webhook()
        .drop_pending_updates(true)
        .await
        .expect("deleteWebhook");
    assert!(emulator.pending_updates().is_empty());
}

#[tokio::test]
async fn a_webhook_shows_in_get_webhook_info_and_stops_get_updates_until_deleted() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let info = bot.get_webhook_info().await.expect("getWebhookInfo");
    assert_eq!(info.url, None);
    bot.set_webhook("https://example.org/hook".parse().unwrap())
        .await
        .expect("setWebhook");
    let info = bot.get_webhook_info().await.expect("getWebhookInfo");
    assert_eq!(info.url.unwrap().as_str(), "https://example.org/hook");
    let err = bot.get_updates().await.unwrap_err();
    assert!(
        matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == description::WEBHOOK_ACTIVE),
        "{err:?}"
    );
    bot.delete_webhook().await.expect("deleteWebhook");
    assert_eq!(bot.get_webhook_info().await.unwrap().url, None);
    bot.get_updates()
        .await
        .expect("getUpdates after deleteWebhook");
    emulator.set_webhook("https://example.org/other");
    assert!(bot.get_updates().await.is_err());
}

#[tokio::test]
async fn wait_until_reports_what_it_waited_for() {
    let emulator = start().await;
    bot(&emulator).get_me().await.unwrap();
    let err = emulator
        .wait_until("a card is sent", Duration::from_millis(100), |e| {
            !e.calls_to("sendmessage").is_empty()
        })
        .await
        .unwrap_err();
    assert!(
        err.contains("a card is sent") && err.contains("getme → ok"),
        "{err}"
    );
}

#[test]
fn thread_mode_serves_sync_callers_and_wait_until_blocking_sees_their_calls() {
    let (emulator, thread) = Emulator::start_in_thread(TOKEN).expect("emulator thread");
    let addr = emulator.addr();
    let caller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        raw_blocking(
            addr,
            "POST",
            &format!("/bot{TOKEN}/sendMessage"),
            Some("application/json"),
            br#"{"chat_id":42,"text":"from a sync caller"}"#,
        )
    });
    emulator
        .wait_until_blocking("the message is stored", Duration::from_secs(5), |e| {
            e.messages(OWNER)
                .iter()
                .any(|m| m.text.as_deref() == Some("from a sync caller"))
        })
        .unwrap();
    let (status, _) = caller.join().unwrap();
    assert_eq!(status, 200);

    let err = emulator
        .wait_until_blocking("never", Duration::from_millis(100), |_| false)
        .unwrap_err();
    assert!(
        err.contains("never") && err.contains("sendmessage"),
        "{err}"
    );

    thread.stop();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still listening"
    );
}

#[tokio::test]
async fn a_poller_offset_moves_assigned_update_ids_above_it() {
    // A bot restarted against a fresh emulator has confirmed ids this one never gave out.
    let emulator = start().await;
    let bot = bot(&emulator);
    assert_eq!(emulator.polls(), 0);
    assert!(bot.get_updates().offset(40).await.unwrap().is_empty());
    assert_eq!(emulator.polls(), 1);
    let id = emulator.push_text(&owner(), ChatSpec::private(OWNER), "/pending");
    assert_eq!(id, 40);
    let ids: Vec<u32> = bot
        .get_updates()
        .offset(40)
        .await
        .unwrap()
        .iter()
        .map(|u| u.id.0)
        .collect();
    assert_eq!(ids, [40]);
}

#[tokio::test]
async fn only_a_button_the_message_carries_can_be_pressed() {
    let emulator = start().await;
    let bot = bot(&emulator);
    let chat = ChatSpec::private(OWNER);
    let card = bot
        .send_message(ChatId(OWNER), "Card")
        .reply_markup(keyboard("y:1", "n:1"))
        .await
        .unwrap();
    let plain = bot.send_message(ChatId(OWNER), "Plain").await.unwrap();
    let (card, plain) = (message_id(&card), message_id(&plain));

    assert_eq!(
        emulator.press_button(&owner(), chat, card, "y:2"),
        Err(PressError::NoButton { message_id: card })
    );
    assert_eq!(
        emulator.press_button(&owner(), chat, plain, "y:1"),
        Err(PressError::NoButton { message_id: plain })
    );
    assert_eq!(
        emulator.press_button(&owner(), ChatSpec::private(7), card, "y:1"),
        Err(PressError::NoMessage {
            chat_id: 7,
            message_id: card
        })
    );
    assert!(emulator.pending_updates().is_empty());

    let (update_id, query_id) = emulator.press_button(&owner(), chat, card, "n:1").unwrap();
    let updates = bot.get_updates().await.unwrap();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].id.0 as i64, update_id);
    let UpdateKind::CallbackQuery(query) = &updates[0].kind else {
        panic!("not a callback query: {:?}", updates[0].kind);
    };
    assert_eq!(query.id.0, query_id);
    assert_eq!(query.data.as_deref(), Some("n:1"));
    assert_eq!(query.from.id.0 as i64, OWNER);
    bot.answer_callback_query(query.id.clone()).await.unwrap();
}

#[tokio::test]
async fn file_bytes_are_kept_only_when_asked() {
    for keep in [false, true] {
        let mut config = Config::new(TOKEN);
        config.keep_file_bytes = keep;
        let emulator = Emulator::start_with(config).await.unwrap();
        let sent = bot(&emulator)
            .send_photo(
                ChatId(OWNER),
                InputFile::memory(vec![4, 5, 6, 7]).file_name("p.png"),
            )
            .await
            .unwrap();
        let file_id = sent.photo().unwrap().last().unwrap().file.id.0.clone();
        let kept = emulator.file_bytes(&file_id);
        if !keep {
            assert_eq!(kept, None);
            continue;
        }
        let (info, bytes) = kept.expect("kept");
        assert_eq!(&bytes[..], [4, 5, 6, 7]);
        assert_eq!((info.name.as_str(), info.bytes), ("p.png", 4));
        assert_eq!(emulator.file_bytes("no-such-file"), None);
    }
}

#[tokio::test(start_paused = true)]
async fn changed_since_wakes_on_a_change_and_otherwise_times_out() {
    let emulator = start().await;
    let seen = emulator.version();
    let waiter = tokio::spawn({
        let emulator = emulator.clone();
        async move { emulator.changed_since(seen, Duration::from_secs(60)).await }
    });
    tokio::task::yield_now().await;
    emulator.add_user(&owner());
    emulator.push_text(&owner(), ChatSpec::private(OWNER), "hello");
    let now = waiter.await.unwrap();
    assert!(now > seen, "{now} > {seen}");

    // Nothing changes: the wait ends at its timeout (on the paused clock) with the same version.
    let still = emulator.changed_since(now, Duration::from_secs(25)).await;
    assert_eq!(still, emulator.version());
    assert_eq!(still, now);
}
