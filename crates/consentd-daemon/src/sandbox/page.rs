//! The sandbox's chat page: one embedded HTML file and a small JSON API over the emulator's
//! chat with the owner, on 127.0.0.1 only, every path under the page's secret token
//! (`/s/<token>/`, see `token.rs`); the paths below are relative to it.
//!
//! - `GET /` — the page (`page.html`, vanilla JS, no external resources).
//! - `GET /api/chat[?after=VERSION]` — the chat as the owner sees it; with `after`, a long poll
//!   that answers once the emulator's state has moved past that version.
//! - `POST /api/press` `{"message_id","data"}` — the owner taps a button the message carries:
//!   a real `callback_query` update, from the owner, in the owner's private chat.
//! - `POST /api/send` `{"text"}` — the owner writes to the bot (`/pending`, `/help`, …).
//! - `GET /api/file/{file_id}` — a photo's or document's bytes.
//! - `GET /favicon.svg` — the page's icon, embedded like the page.
//!
//! Anything on the machine can reach a loopback port, a web page in the owner's browser among
//! them. So every request must carry the token (refused 403 without it: only who was shown the
//! `page:` line can read the chat or press), name this page's own host (a DNS-rebinding page names its own),
//! a `POST` must carry JSON (a cross-site form cannot, and a cross-site `fetch` with JSON
//! needs a CORS preflight this server never grants) and, when the browser sends an `Origin`,
//! come from this page. The page itself runs under a CSP with a per-response nonce, and
//! uploaded files are served so that they can never run as part of it.
//!
//! The page's own words (sound, edited, parts, the hint, the empty chat) are a small en/ru/pt
//! table in a JSON block of `page.html`, not in `locales/`: they are the emulated Telegram
//! client's, not the bot's, and `locales/` holds only what the bot may say. The tests below hold
//! that table to the same keys and placeholders in each language.

use std::net::TcpListener;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::token::PageToken;
use crate::owner::SharedOwner;
use consentd_core::locale::Language;
use consentd_emulator::{
    Button, CallbackAnswer, ChatMessage, ChatSpec, ContentKind, Emulator, UserSpec,
};

/// The page, with `__NONCE__` where each response's CSP nonce goes.
const PAGE: &str = include_str!("page.html");
/// The page's icon: a white check on the avatar's blue.
const FAVICON: &str = include_str!("favicon.svg");
/// How long `GET /api/chat?after=` waits for a change before answering anyway.
const LONG_POLL: Duration = Duration::from_secs(25);
/// The longest message a Telegram client lets one write (UTF-16 code units).
const TEXT_LIMIT: usize = 4096;
/// Callback answers the chat keeps for the page's toasts.
const ANSWERS_KEPT: usize = 20;

/// What the page's handlers share.
#[derive(Debug, Clone)]
pub(super) struct Page {
    pub emulator: Emulator,
    pub owner: UserSpec,
    /// The port the page is served on, for the Host and Origin checks.
    pub port: u16,
    /// The secret every path starts with.
    pub token: PageToken,
    /// A ready `consentd ask` line, shown while the chat is empty.
    pub try_line: String,
    /// Ends long polls at once when the sandbox stops.
    pub shutdown: CancellationToken,
    /// The owner as the daemon knows them, for the language they read the chat in.
    pub daemon_owner: SharedOwner,
    /// Their language until the daemon has read its store (the config's).
    pub language: Language,
    /// Each category's card title in every language (alone, and under the URGENT line), with
    /// its class: how the page knows a destructive card from its first lines.
    pub titles: Arc<BTreeMap<String, &'static str>>,
}

impl Page {
    fn chat(&self) -> ChatSpec {
        ChatSpec::private(self.owner.id)
    }

    fn host_allowed(&self, host: &str) -> bool {
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// The language the owner reads the chat in: the page's own words follow it.
    fn language(&self) -> Language {
        let owner = self.daemon_owner.owner();
        owner.map_or(self.language, |owner| owner.language)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        origin
            .strip_prefix("http://")
            .is_some_and(|host| self.host_allowed(host))
    }
}

/// Why the page refused a request.
#[derive(Debug, thiserror::Error)]
pub(super) enum PageError {
    #[error("this page answers only to 127.0.0.1:{0} or localhost:{0}")]
    WrongHost(u16),
    #[error("requests must come from the page itself")]
    CrossOrigin,
    #[error("this page answers only at the address printed as `page:`")]
    NoToken,
    #[error("{0}")]
    BadRequest(String),
    #[error(transparent)]
    Press(#[from] consentd_emulator::PressError),
    #[error("no such file")]
    NoFile,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = match self {
            PageError::WrongHost(_) => StatusCode::MISDIRECTED_REQUEST,
            PageError::CrossOrigin | PageError::NoToken => StatusCode::FORBIDDEN,
            PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
            PageError::Press(_) | PageError::NoFile => StatusCode::NOT_FOUND,
        };
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}

/// Serves the page on `listener` until the sandbox stops.
pub(super) async fn serve(page: Page, listener: TcpListener) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let shutdown = page.shutdown.clone();
    axum::serve(listener, router(page))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await?;
    Ok(())
}

pub(super) fn router(page: Page) -> Router {
    Router::new()
        .route("/s/{token}", get(to_page))
        .route("/s/{token}/", get(index))
        .route("/s/{token}/api/chat", get(chat))
        .route("/s/{token}/api/press", post(press))
        .route("/s/{token}/api/send", post(send))
        .route("/s/{token}/api/file/{file_id}", get(file))
        .route("/s/{token}/favicon.svg", get(favicon))
        .layer(axum::middleware::from_fn_with_state(page.clone(), guard))
        .with_state(page)
}

/// The Host, token and Origin checks of the module's header, before any handler (an unknown
/// path without the token is refused too, so the refusal says nothing of which paths exist).
async fn guard(State(page): State<Page>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok());
    if !host.is_some_and(|host| page.host_allowed(host)) {
        return PageError::WrongHost(page.port).into_response();
    }
    if !page.token.admits(request.uri().path()) {
        return PageError::NoToken.into_response();
    }
    if request.method() != Method::GET {
        let origin = headers
            .get(header::ORIGIN)
            .map(|value| value.to_str().unwrap_or_default());
        if origin.is_some_and(|origin| !page.origin_allowed(origin)) {
            return PageError::CrossOrigin.into_response();
        }
    }
    next.run(request).await
}

/// The address without its last `/`: the page's relative paths need it.
async fn to_page(request: Request) -> Response {
    let to = format!("{}/", request.uri().path());
    axum::response::Redirect::permanent(&to).into_response()
}

async fn index() -> Response {
    let mut nonce = [0u8; 16];
    if getrandom::fill(&mut nonce).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let nonce = hex::encode(nonce);
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    let mut response = PAGE.replace("__NONCE__", &nonce).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    no_store(headers);
    response
}

/// The icon as its own file rather than a `data:` URL in the page, so the page's CSP keeps
/// images to `'self'`; it runs nothing even when opened alone.
async fn favicon() -> Response {
    let mut response = FAVICON.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "image/svg+xml"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; sandbox",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    no_store(headers);
    response
}

fn no_store(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

#[derive(Debug, Deserialize)]
struct ChatQuery {
    after: Option<u64>,
}

async fn chat(State(page): State<Page>, Query(query): Query<ChatQuery>) -> Response {
    if let Some(seen) = query.after {
        tokio::select! {
            _ = page.emulator.changed_since(seen, LONG_POLL) => {}
            () = page.shutdown.cancelled() => {}
        }
    }
    // The version is read before the messages, so a change between the two makes the next
    // long poll answer at once rather than be missed.
    let version = page.emulator.version();
    let view = ChatView {
        version,
        bot: BotView {
            name: page.emulator.config().bot_first_name.clone(),
            username: page.emulator.bot_username(),
        },
        owner: page.owner.first_name.clone(),
        language: page.language().as_str(),
        try_line: page.try_line.clone(),
        messages: messages_view(&page.emulator.messages(page.owner.id), &page.titles),
        answers: answers_view(&page.emulator.callback_answers()),
    };
    let mut response = Json(view).into_response();
    no_store(response.headers_mut());
    response
}

#[derive(Debug, Deserialize)]
struct PressRequest {
    message_id: i64,
    data: String,
}

async fn press(
    State(page): State<Page>,
    Json(request): Json<PressRequest>,
) -> Result<Json<serde_json::Value>, PageError> {
    let (update_id, query_id) =
        page.emulator
            .press_button(&page.owner, page.chat(), request.message_id, &request.data)?;
    Ok(Json(
        json!({ "update_id": update_id, "query_id": query_id }),
    ))
}

#[derive(Debug, Deserialize)]
struct SendRequest {
    text: String,
    /// The message of the chat the text replies to (the reason for a "No, and say why…" is a
    /// reply to its card).
    #[serde(default)]
    reply_to: Option<i64>,
}

async fn send(
    State(page): State<Page>,
    Json(request): Json<SendRequest>,
) -> Result<Json<serde_json::Value>, PageError> {
    let text = request.text.trim();
    if text.is_empty() {
        return Err(PageError::BadRequest("the message is empty".to_owned()));
    }
    if text.encode_utf16().count() > TEXT_LIMIT {
        return Err(PageError::BadRequest(format!(
            "the message is longer than {TEXT_LIMIT} characters"
        )));
    }
    let update_id = match request.reply_to {
        None => page.emulator.push_text(&page.owner, page.chat(), text),
        Some(message_id) => {
            if page.emulator.message(page.owner.id, message_id).is_none() {
                return Err(PageError::BadRequest(
                    "the message replied to is not in this chat".to_owned(),
                ));
            }
            page.emulator
                .push_reply(&page.owner, page.chat(), text, message_id)
        }
    };
    Ok(Json(json!({ "update_id": update_id })))
}

/// A file's bytes. Only PNG and JPEG are shown inline (the page previews those attachments);
/// anything else is a download, so an uploaded HTML or SVG file never runs as the page. The
/// CSP `sandbox` keeps even an opened image from running anything.
async fn file(
    State(page): State<Page>,
    Path((_token, file_id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    let (info, bytes) = page
        .emulator
        .file_bytes(&file_id)
        .ok_or(PageError::NoFile)?;
    let inline = matches!(info.media_type.as_str(), "image/png" | "image/jpeg");
    let mut response = Response::new(Body::from(bytes));
    let headers = response.headers_mut();
    let (content_type, disposition) = if inline {
        (info.media_type.clone(), "inline".to_owned())
    } else {
        (
            "application/octet-stream".to_owned(),
            format!(
                "attachment; filename*=UTF-8''{}",
                percent_encode(&info.name)
            ),
        )
    };
    for (name, value) in [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_DISPOSITION, disposition),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; sandbox".to_owned(),
        ),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    no_store(headers);
    Ok(response)
}

/// RFC 5987's `attr-char`s as they are, everything else as `%XX`.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// The chat as `GET /api/chat` answers it.
#[derive(Debug, Serialize)]
pub(super) struct ChatView {
    /// Pass it back as `after` to wait for the next change.
    pub version: u64,
    pub bot: BotView,
    pub owner: String,
    /// The owner's language (`en`, `ru`, `pt`), which the page's own words follow.
    pub language: &'static str,
    pub try_line: String,
    pub messages: Vec<MessageView>,
    pub answers: Vec<AnswerView>,
}

#[derive(Debug, Serialize)]
pub(super) struct BotView {
    pub name: String,
    pub username: String,
}

/// One message as the owner's Telegram client shows it: its latest revision, marked when
/// edited, with the earlier ones kept for a look.
#[derive(Debug, Serialize, PartialEq)]
pub(super) struct MessageView {
    pub id: i64,
    pub from_bot: bool,
    /// `text`, `photo` or `document`.
    pub kind: &'static str,
    /// Unix time.
    pub date: i64,
    pub text: Option<String>,
    /// The text's entities as Telegram keeps them (`type`, UTF-16 `offset` and `length`): the
    /// page quotes an action's text and sets values apart, as a Telegram client does.
    pub entities: Option<serde_json::Value>,
    pub caption: Option<String>,
    /// `[i/N]` parts of a long text: (i, N).
    pub part: Option<(u32, u32)>,
    /// Sent with `disable_notification` (no sound).
    pub silent: bool,
    /// Has or had buttons: a card, also after its outcome edit took them away.
    pub card: bool,
    /// A card that had buttons and has none now: answered, expired or otherwise ended.
    pub settled: bool,
    /// The lines a settled card's edits added (its outcome), as a UTF-16 `offset` and
    /// `length` in `text`, like an entity's.
    pub outcome: Option<Span>,
    /// A card's category class (`external`, `spend`, `destructive`), known by its title line.
    pub class: Option<&'static str>,
    pub edited: bool,
    /// The texts (or captions) the message had before its edits, oldest first.
    pub earlier: Vec<String>,
    /// The inline keyboard, row by row; a press sends a button's `callback_data`.
    pub buttons: Vec<Vec<ButtonView>>,
    pub file: Option<FileView>,
}

/// A stretch of a message's text in UTF-16 code units, as Telegram counts entities.
#[derive(Debug, Serialize, PartialEq, Eq, Clone, Copy)]
pub(super) struct Span {
    pub offset: usize,
    pub length: usize,
}

/// One inline button: what it says, its data, and what a press on it does (`yes`, `no`,
/// `grant`, … as its data names it; `None` for data that is not consentd's).
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(super) struct ButtonView {
    pub text: String,
    pub callback_data: Option<String>,
    pub action: Option<&'static str>,
}

impl From<Button> for ButtonView {
    fn from(button: Button) -> Self {
        let action = button
            .callback_data
            .as_deref()
            .and_then(|data| consentd_core::press::parse_callback(data).ok())
            .map(|callback| callback.action.as_str());
        ButtonView {
            text: button.text,
            callback_data: button.callback_data,
            action,
        }
    }
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub(super) struct FileView {
    pub id: String,
    pub name: String,
    pub media_type: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub(super) struct AnswerView {
    pub query_id: String,
    pub text: Option<String>,
}

/// The messages the owner sees, oldest first; deleted ones are gone, as in Telegram. `titles`
/// are the cards' title lines with their classes.
pub(super) fn messages_view(
    messages: &[ChatMessage],
    titles: &BTreeMap<String, &'static str>,
) -> Vec<MessageView> {
    messages
        .iter()
        .filter(|m| !m.deleted)
        .map(|m| message_view(m, titles))
        .collect()
}

fn message_view(m: &ChatMessage, titles: &BTreeMap<String, &'static str>) -> MessageView {
    let card = m.reply_markup.is_some() || m.history.iter().any(|r| r.reply_markup.is_some());
    let settled = card && m.reply_markup.is_none();
    let first = m.history.first().and_then(|r| r.text.as_deref());
    MessageView {
        id: m.message_id,
        from_bot: m.outgoing,
        kind: match m.kind {
            ContentKind::Text => "text",
            ContentKind::Photo => "photo",
            ContentKind::Document => "document",
        },
        date: m.date,
        text: m.text.clone(),
        entities: m.entities.clone(),
        caption: m.caption.clone(),
        part: m.text.as_deref().and_then(part_header),
        silent: m.disable_notification,
        card,
        settled,
        outcome: match (settled, first, m.text.as_deref()) {
            (true, Some(first), Some(now)) => added_lines(first, now),
            _ => None,
        },
        class: card
            .then(|| m.text.as_deref().and_then(|text| card_class(text, titles)))
            .flatten(),
        edited: m.edit_date.is_some(),
        earlier: m
            .history
            .iter()
            .filter_map(|r| r.text.clone().or_else(|| r.caption.clone()))
            .collect(),
        buttons: m
            .button_rows()
            .into_iter()
            .map(|row| row.into_iter().map(ButtonView::from).collect())
            .collect(),
        file: m.file.as_ref().map(|f| FileView {
            id: f.file_id.clone(),
            name: f.name.clone(),
            media_type: f.media_type.clone(),
            bytes: f.bytes,
            sha256: f.sha256.clone(),
        }),
    }
}

/// The first run of whole lines in `now` that `first` did not have, as a span of `now`: what
/// an outcome edit put in place of the deadline. `None` when the edit only took lines away.
fn added_lines(first: &str, now: &str) -> Option<Span> {
    let before: std::collections::BTreeSet<&str> = first.lines().collect();
    let (mut offset, mut start, mut end) = (0, None, None);
    for line in now.split('\n') {
        let units = line.encode_utf16().count();
        match (before.contains(line), start) {
            (false, None) => (start, end) = (Some(offset), Some(offset + units)),
            (false, Some(_)) => end = Some(offset + units),
            (true, Some(_)) => break,
            (true, None) => {}
        }
        offset += units + 1;
    }
    let offset = start?;
    Some(Span {
        offset,
        length: end? - offset,
    })
}

/// The class of the card that opens with a category's title (`titles` also holds each one
/// under its URGENT line).
fn card_class(text: &str, titles: &BTreeMap<String, &'static str>) -> Option<&'static str> {
    let mut lines = text.splitn(3, '\n');
    let first = lines.next()?;
    let class = titles.get(first).or_else(|| {
        let second = lines.next()?;
        titles.get(&format!("{first}\n{second}"))
    });
    class.copied()
}

/// `(i, N)` of a text that starts with the part header `[i/N]` and a newline, as `split` numbers a
/// long text's parts.
fn part_header(text: &str) -> Option<(u32, u32)> {
    let (header, _) = text.split_once('\n')?;
    let (i, n) = header
        .strip_prefix('[')?
        .strip_suffix(']')?
        .split_once('/')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(i) || !digits(n) {
        return None;
    }
    let (i, n) = (i.parse().ok()?, n.parse().ok()?);
    (1..=n).contains(&i).then_some((i, n))
}

/// The latest callback answers (what a client shows as a toast after a tap).
fn answers_view(answers: &[CallbackAnswer]) -> Vec<AnswerView> {
    let skip = answers.len().saturating_sub(ANSWERS_KEPT);
    answers
        .iter()
        .skip(skip)
        .map(|a| AnswerView {
            query_id: a.callback_query_id.clone(),
            text: a.text.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeSet;

    #[test]
    fn part_headers_are_read_only_when_well_formed() {
        assert_eq!(part_header("[1/3]\nHello"), Some((1, 3)));
        assert_eq!(part_header("[12/12]\n"), Some((12, 12)));
        for text in [
            "[0/3]\nx", "[4/3]\nx", "[1/3] x", "[a/3]\nx", "[/3]\nx", "1/3\nx",
        ] {
            assert_eq!(part_header(text), None, "{text:?}");
        }
    }

    #[test]
    fn file_names_are_percent_encoded_for_the_header() {
        assert_eq!(percent_encode("cover.png"), "cover.png");
        assert_eq!(percent_encode("a b\"\r\n.pdf"), "a%20b%22%0D%0A.pdf");
        assert_eq!(percent_encode("отчёт"), "%D0%BE%D1%82%D1%87%D1%91%D1%82");
    }

    /// A message as the emulator keeps it: `revisions` oldest first, the last one current, each
    /// a text and whether it carried a keyboard of `buttons`.
    fn message(revisions: &[(&str, bool)], buttons: &[(&str, &str)]) -> ChatMessage {
        let markup = |on: bool| {
            on.then(|| {
                let row: Vec<Value> = buttons
                    .iter()
                    .map(|(text, data)| json!({"text": text, "callback_data": data}))
                    .collect();
                json!({ "inline_keyboard": [row] })
            })
        };
        let (last, earlier) = revisions.split_last().unwrap();
        ChatMessage {
            chat_id: 1,
            message_id: 7,
            from_id: 2,
            outgoing: true,
            kind: ContentKind::Text,
            date: 0,
            text: Some(last.0.to_owned()),
            caption: None,
            parse_mode: None,
            entities: None,
            reply_markup: markup(last.1),
            disable_notification: false,
            protect_content: false,
            reply_to_message_id: None,
            file: None,
            forward_origin: None,
            edit_date: (!earlier.is_empty()).then_some(1),
            history: earlier
                .iter()
                .map(|(text, keyboard)| consentd_emulator::Revision {
                    text: Some((*text).to_owned()),
                    entities: None,
                    caption: None,
                    reply_markup: markup(*keyboard),
                    replaced_at: 1,
                    replaced_by: "editmessagetext".to_owned(),
                })
                .collect(),
            deleted: false,
        }
    }

    fn titles() -> BTreeMap<String, &'static str> {
        BTreeMap::from([
            ("Delete a post (destructive)".to_owned(), "destructive"),
            (
                "СРОЧНО\nУдалить пост (необратимое)".to_owned(),
                "destructive",
            ),
            ("Post to X (external)".to_owned(), "external"),
        ])
    }

    #[test]
    fn a_settled_card_is_marked_with_the_lines_its_edit_added() {
        let open = "Post to X (external)\nTarget: @x\nRecord: r_1\nAnswer by 14:35\n\nText:\nHi";
        let done = "Post to X (external)\nTarget: @x\nRecord: r_1\nOutcome: done. Decided by \
                    Ann.\nResult: ok\n\nText:\nHi";
        let key = consentd_core::press::PressKey::from_bytes([7; 32]);
        let yes = key.sign(
            consentd_core::press::PressAction::Yes,
            "r_0123456789abcdef0123",
            "d",
            1,
        );
        let views = messages_view(
            &[
                message(&[(open, true)], &[("Yes", &yes), ("No", "not consentd's")]),
                message(&[(open, true), (done, false)], &[]),
            ],
            &titles(),
        );
        let (waiting, settled) = (&views[0], &views[1]);
        assert!(waiting.card && !waiting.settled && waiting.outcome.is_none());
        assert_eq!(waiting.class, Some("external"));
        assert_eq!(waiting.buttons[0][0].action, Some("yes"));
        assert_eq!(waiting.buttons[0][1].action, None);
        assert!(settled.card && settled.settled);
        let span = settled.outcome.unwrap();
        let units: Vec<u16> = done.encode_utf16().collect();
        let marked = String::from_utf16(&units[span.offset..span.offset + span.length]).unwrap();
        assert_eq!(marked, "Outcome: done. Decided by Ann.\nResult: ok");
        // A message that never had buttons is no card, and settles nothing.
        let note = &messages_view(&[message(&[("Paired.", false)], &[])], &titles())[0];
        assert!(!note.card && !note.settled && note.class.is_none());
    }

    #[test]
    fn added_lines_count_utf16_units_and_take_the_first_run() {
        let span = |first, now| added_lines(first, now).map(|s| (s.offset, s.length));
        assert_eq!(span("a\nb", "a\nb"), None);
        assert_eq!(span("a\nb\nc", "a\nc"), None, "only taken away");
        assert_eq!(span("Цель 😀\nb", "Цель 😀\nИтог: ✓\nb"), Some((8, 7)));
        assert_eq!(span("a\nx\nb", "a\n1\n2\nb\n3"), Some((2, 3)));
    }

    #[test]
    fn a_destructive_card_is_known_by_its_title_in_any_language() {
        let class = |text| card_class(text, &titles());
        assert_eq!(
            class("Delete a post (destructive)\nTarget: x"),
            Some("destructive")
        );
        assert_eq!(
            class("СРОЧНО\nУдалить пост (необратимое)\nЦель: x"),
            Some("destructive")
        );
        assert_eq!(
            class("Удалить пост (необратимое)"),
            None,
            "not without its URGENT line"
        );
        assert_eq!(
            class("Target: x\nDelete a post (destructive)"),
            None,
            "only a title line"
        );
        assert_eq!(class("Something else"), None);
    }

    #[tokio::test]
    async fn the_chat_view_says_the_owners_language_as_the_daemon_has_it() {
        let emulator = Emulator::start("1:t").await.unwrap();
        let daemon_owner = SharedOwner::default();
        let page = Page {
            emulator: emulator.clone(),
            owner: UserSpec::new(5, "Ann"),
            port: 1,
            token: PageToken::from_hex("00"),
            try_line: String::new(),
            shutdown: CancellationToken::new(),
            daemon_owner: daemon_owner.clone(),
            language: Language::Pt,
            titles: Arc::default(),
        };
        let language = || async {
            let response = chat(State(page.clone()), Query(ChatQuery { after: None })).await;
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            serde_json::from_slice::<Value>(&body).unwrap()["language"].clone()
        };
        // Before the daemon has read its store: the config's.
        assert_eq!(language().await, "pt");
        let owner = crate::owner::Owner {
            id: 5,
            language: Language::Ru,
        };
        daemon_owner.set_owner(Some(owner));
        assert_eq!(language().await, "ru");
        emulator.shutdown();
    }

    #[tokio::test]
    async fn the_favicon_is_an_inert_svg() {
        let response = favicon().await;
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_TYPE], "image/svg+xml");
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'; sandbox"
        );
        assert!(FAVICON.starts_with("<svg") && !FAVICON.contains("<script"));
        // Relative: under the page's secret path, like everything the page asks for.
        assert!(PAGE.contains(r#"<link rel="icon" type="image/svg+xml" href="favicon.svg">"#));
    }

    /// The page's own words: `{"en": {key: text}, "ru": …, "pt": …}`.
    fn words() -> BTreeMap<String, BTreeMap<String, String>> {
        let start = PAGE
            .find(r#"<script type="application/json" id="words">"#)
            .unwrap();
        let json = &PAGE[start..];
        let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
        serde_json::from_str(json).expect("the page's words are JSON")
    }

    #[test]
    fn the_pages_words_are_there_in_every_language_with_the_same_placeholders() {
        let words = words();
        assert_eq!(
            words.keys().map(String::as_str).collect::<Vec<_>>(),
            Language::ALL
                .map(Language::as_str)
                .iter()
                .copied()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
        );
        let placeholders = |text: &str| -> BTreeSet<String> {
            text.split('{')
                .skip(1)
                .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned()))
                .collect()
        };
        let en = &words["en"];
        for (lang, table) in &words {
            assert_eq!(
                table.keys().collect::<Vec<_>>(),
                en.keys().collect::<Vec<_>>(),
                "{lang} has other words than en"
            );
            for (key, text) in table {
                assert!(!text.trim().is_empty(), "{lang} {key} is empty");
                assert_eq!(placeholders(text), placeholders(&en[key]), "{lang} {key}");
            }
        }
        // Every word the script asks for is in the table.
        for call in PAGE.split("say('").skip(1) {
            let key = &call[..call.find('\'').unwrap()];
            assert!(
                en.contains_key(key),
                "the page says {key}, which has no words"
            );
        }
    }

    #[test]
    fn the_page_has_no_external_resources_and_no_inner_html() {
        for forbidden in [
            "http://",
            "https://",
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!PAGE.contains(forbidden), "the page contains {forbidden}");
        }
        assert_eq!(PAGE.matches("nonce=\"__NONCE__\"").count(), 2);
    }
}
