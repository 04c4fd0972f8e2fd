//! An ask's journey from a request frame to a stored record or a refusal, and the `status` and
//! `list` reads; `waiting.rs`, a waiting connection's later lines. Knows nothing of sockets:
//! [`crate::server`] moves the bytes.

pub(crate) mod disk;
mod waiting;

pub(crate) use waiting::{Next, SPACING};

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use chrono::{DateTime, Utc};

use crate::consent::Wake;
use consentd_core::action::Action;
use consentd_core::card::mandate::MandateView;
use consentd_core::card::{self, AttachmentView, CardView};
use consentd_core::clock::Clock;
use consentd_core::config::Config;
use consentd_core::deadline::Now;
use consentd_core::lookalike::{self, KnownTargets};
use consentd_core::mandate::MandateRequest;
use consentd_core::protocol::{
    self, ListResponse, RecordSummary, Request, Response, StatusResponse,
};
use consentd_core::refusal::{self, Reason, Refusal};
use consentd_core::waiting::Waiting;
use consentd_store::{
    AskOutcome, AskPolicy, NewAsk, NewMandate, Peer, Record, RecordState, Store, StoreError,
    Withdrawal,
};

/// Records in one `list` page.
pub(crate) const LIST_PAGE: usize = 100;

/// How often a final line held back for a No's reason looks at the clock again, besides waking
/// when the record changes: the wait ends by the daemon's clock, which a test may move.
const REASON_RECHECK: Duration = Duration::from_millis(500);

/// The first answer to a request: final, or a first line and a record to wait on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Final(String),
    Wait {
        first: String,
        id: String,
        summary: bool,
        /// Why the record waits, as the first line says.
        waiting: Option<consentd_core::waiting::Waiting>,
    },
}

/// Everything a request needs; shared by all connections.
#[derive(Debug, Clone)]
pub(crate) struct Intake {
    pub config: Arc<Config>,
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    /// The owner once known (cards go to their chat) and their category switches.
    pub owner: crate::owner::SharedOwner,
    /// To check that the card can be drawn before the ask is stored.
    pub locales: Arc<consentd_core::locale::Locales>,
    /// Asks a mandate covered (to run, or to be told of), and withdrawals, for the consent loop
    /// (only [`Wake::Covered`] and [`Wake::Withdraw`] come this way).
    pub handoff: mpsc::UnboundedSender<Wake>,
    /// Whether Telegram reaches the owner, for a waiting session's `waiting`.
    pub reach: crate::unreachable::Reach,
}

impl Intake {
    /// A request's own `origin` may not pass for a labelled socket's on a card.
    fn origin_fits(&self, origin: Option<&str>) -> Result<(), Refusal> {
        let labels = self.config.listen.iter().map(|l| l.origin.as_str());
        refusal::check_origin_against_labels(origin, labels)
    }

    /// Answers one request frame from a peer.
    pub(crate) async fn handle(&self, peer: &Peer, frame: &[u8]) -> Result<Reply, StoreError> {
        match protocol::parse_request(frame) {
            Err(rejection) if rejection.ask => {
                self.refuse_ask(peer, rejection.kind, rejection.refusal)
                    .await
            }
            Err(rejection) => Ok(Reply::Final(
                Response::refused(None, &rejection.refusal).to_line(),
            )),
            Ok(Request::Ask(ask)) => self.ask(peer, ask).await,
            Ok(Request::Mandate(ask)) => self.mandate(peer, ask).await,
            Ok(Request::Status { id, wait }) => self.status(peer, id, wait).await,
            Ok(Request::List { cursor }) => self.list(peer, cursor).await,
            Ok(Request::Kinds) => Ok(Reply::Final(protocol::to_line(
                &consentd_core::kinds::kinds_response(
                    &self.config.categories,
                    |kind| self.category_enabled(kind),
                    &self.config.limits,
                ),
            ))),
            Ok(Request::Withdraw { id }) => self.withdraw(peer, id).await,
            Ok(Request::Rule(query)) => self.rule(peer, query).await,
        }
    }

    /// A hook's question: does a saved exact rule answer this call? Only for a kind a rule may
    /// answer now (approval-only, on, not destructive: a rule saved before its category became
    /// destructive answers nothing); a match is counted and journaled `rule_used` in one
    /// transaction. Nothing is recorded for a refused or unanswered question.
    async fn rule(&self, peer: &Peer, query: protocol::RuleQuery) -> Result<Reply, StoreError> {
        let refused =
            |refusal: &Refusal| Ok(Reply::Final(Response::refused(None, refusal).to_line()));
        let Some(category) = self.config.categories.get(&query.kind) else {
            let refusal = Refusal::new(
                Reason::UnknownKind,
                format!("no category {} is configured", protocol::quote(&query.kind)),
            );
            return refused(&refusal);
        };
        if let Err(refusal) = consentd_core::exact::check_hook(&query.call) {
            return refused(&refusal);
        }
        let answerable =
            consentd_core::exact::rule_may_answer(category, self.category_enabled(&query.kind));
        let rule = if answerable {
            let now = self.clock.now();
            self.store.use_rule(peer.uid, query, now).await?
        } else {
            None
        };
        Ok(Reply::Final(protocol::to_line(
            &protocol::RuleResponse::of(rule),
        )))
    }

    /// Whether `kind` is on (`OwnerState::category_enabled`).
    fn category_enabled(&self, kind: &str) -> bool {
        self.owner.category_enabled(&self.config, kind)
    }

    async fn ask(&self, peer: &Peer, ask: protocol::AskRequest) -> Result<Reply, StoreError> {
        // One reading of both clocks: the ask's own ttl and a mandate's day run from it on each.
        let reading = Now::read(self.clock.as_ref());
        let now = reading.wall;
        let category = self.config.categories.get(&ask.kind);
        let enabled = self.category_enabled(&ask.kind);
        let categories = &self.config.categories;
        let action = match refusal::check_ask(&ask, categories, enabled, &self.config.limits)
            .and_then(|action| self.origin_fits(ask.origin.as_deref()).map(|()| action))
        {
            Ok(action) => action,
            Err(refusal) => return self.refuse_ask(peer, Some(ask.kind), refusal).await,
        };
        if let Err(refusal) = self.card_fits(&action, &ask, peer, now) {
            return self.refuse_ask(peer, Some(ask.kind), refusal).await;
        }
        // The ask's own attachments count against the floor: they are written with its record.
        let needs: u64 = action.attachments.iter().map(|a| a.data.len() as u64).sum();
        // Held until the ask is stored (its bytes then on the disk) or failed.
        let _room = match self.disk_reservation(needs).await {
            Ok(room) => room,
            Err(refusal) => return Ok(Reply::Final(Response::refused(None, &refusal).to_line())),
        };
        let new = NewAsk {
            peer: peer.clone(),
            digest: action.digest().to_hex(),
            action,
            idempotency_key: ask.idempotency_key.clone(),
            urgent: ask.urgent,
            ttl: ask.ttl.map(Duration::from_secs),
            monotonic: reading.monotonic,
            agent_runs: category
                .is_some_and(|category| category.mode == consentd_core::config::Mode::Approve),
            hook: ask.hook.clone(),
        };
        let mandates_cover = category.is_some_and(|category| {
            category.mandate_ok && category.class != consentd_core::config::Class::Destructive
        });
        let policy = AskPolicy {
            mandates_cover,
            ..self.policy()
        };
        let outcome = self.store.ask(new, policy, now).await?;
        self.answer(outcome, ask.wait).await
    }

    /// A mandate request: the gate, then the store (which queues its card).
    async fn mandate(&self, peer: &Peer, ask: protocol::MandateAsk) -> Result<Reply, StoreError> {
        let Now {
            wall: now,
            monotonic,
        } = Now::read(self.clock.as_ref());
        let categories = &self.config.categories;
        let enabled = self.category_enabled(&ask.kind);
        let request = match refusal::check_mandate(&ask, categories, enabled, &self.config.limits)
            .and_then(|request| self.origin_fits(ask.origin.as_deref()).map(|()| request))
        {
            Ok(request) => request,
            Err(refusal) => return self.refuse_ask(peer, Some(ask.kind), refusal).await,
        };
        // Checked against the targets known now. Its card is drawn against those known when it
        // is shown (`known_targets_for`), which may be more for a card held until morning: one
        // that no longer fits then is not sent, and the request ends expired (`Drawer::draw`).
        let known = self.store.known_targets(now).await?;
        if let Err(refusal) = self.mandate_card_fits(&request, &known, peer, now) {
            return self.refuse_ask(peer, Some(ask.kind), refusal).await;
        }
        if let Some(refusal) = self.disk_refusal().await {
            return Ok(Reply::Final(Response::refused(None, &refusal).to_line()));
        }
        let new = NewMandate {
            peer: peer.clone(),
            digest: request.digest().to_hex(),
            request,
            monotonic: Some(monotonic),
        };
        let policy = self.policy();
        let outcome = self.store.ask_mandate(new, policy, now).await?;
        self.answer(outcome, ask.wait).await
    }

    fn policy(&self) -> AskPolicy {
        let owner = self.owner.owner();
        AskPolicy {
            owner_known: owner.is_some(),
            card_chat: owner.map(|owner| owner.id),
            decline_memory: self.config.limits.decline_memory,
            max_pending: self.config.limits.max_pending,
            max_pending_per_uid: self.config.limits.max_pending_per_uid,
            attachment_bytes_per_uid: self.config.limits.attachment_bytes_per_uid,
            tz: self.config.owner.timezone,
            mandates_cover: false,
            mandate_day: consentd_core::mandate::Usage {
                actions: self.config.limits.mandate_max_actions_per_day,
                usd: self.config.limits.mandate_max_usd_per_day,
            },
        }
    }

    /// The answer to an ask or a mandate request the store has taken.
    async fn answer(&self, outcome: AskOutcome, wait: bool) -> Result<Reply, StoreError> {
        let record = match outcome {
            AskOutcome::Refused { id, refusal } => {
                return Ok(Reply::Final(Response::refused(id, &refusal).to_line()))
            }
            AskOutcome::Covered(record) => {
                // The claim is durable; if the loop is gone the daemon is stopping, and the
                // record becomes outcome_unknown at the next start rather than running twice.
                if self
                    .handoff
                    .send(Wake::Covered(Box::new(record.clone())))
                    .is_err()
                {
                    tracing::warn!(id = %record.id, "a covered ask could not be handed to the loop");
                }
                record
            }
            AskOutcome::Created(record)
            | AskOutcome::Joined(record)
            | AskOutcome::Existing(record) => record,
        };
        if self.settled(&record) {
            return Ok(Reply::Final(outcome_line(&record, None)));
        }
        let waiting = self.waiting_of(&record).await?;
        let first = outcome_line(&record, waiting.clone());
        if !wait {
            return Ok(Reply::Final(first));
        }
        Ok(Reply::Wait {
            first,
            id: record.id,
            summary: false,
            waiting,
        })
    }

    /// A card must be one message even with its text moved to numbered parts: its target and
    /// fields alone may not fill it. Checked in the owner's language before anything is stored,
    /// with the mixed-script warnings of the target and of the one-word field values; room for
    /// their look-alike lines is kept by [`card::check_card`] (the known targets are read
    /// only when the card is shown); the card itself is drawn only when it is sent.
    fn card_fits(
        &self,
        action: &Action,
        ask: &protocol::AskRequest,
        peer: &Peer,
        now: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        let lang = self.language();
        let Some(category) = self.config.categories.get(&action.kind) else {
            return Ok(());
        };
        let facts = action.attachment_facts();
        // Measured with the socket's label, as the drawer will draw it.
        let origin = card::shown_origin(peer.listener.as_deref(), action.origin.as_deref());
        let shown = card::ActionShown {
            record_id: card::UNNUMBERED_RECORD,
            kind: &action.kind,
            category: Some(category),
            target: action.target.as_deref(),
            text: action.text.as_deref(),
            fields: &action.fields,
            attachments: facts.iter().map(AttachmentView::from).collect(),
            cost_usd: action.cost_usd,
            urgent: ask.urgent,
            origin: origin.as_deref(),
            agent_runs: category.mode == consentd_core::config::Mode::Approve,
            hook: ask.hook.as_ref().map(|call| card::HookView {
                call,
                always: consentd_core::exact::offers_always(category, Some(call)),
            }),
            lang,
            tz: self.config.owner.timezone,
        };
        // No known targets yet: the mixed-script lines are exact, and the card's limits keep
        // room for look-alike lines.
        let derived = shown.derive(&KnownTargets::default());
        let view = CardView::for_action(&shown, &derived, now);
        card::check_card(&view, &self.locales, lang).map_err(|error| {
            Refusal::new(
                Reason::TooLarge,
                format!("the card would not fit one Telegram message: {error}"),
            )
        })
    }

    /// The mandate card must be one message: many long targets, their warnings and a long reason
    /// may not fit.
    fn mandate_card_fits(
        &self,
        request: &MandateRequest,
        known: &KnownTargets,
        peer: &Peer,
        now: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        // Measured with the socket's label, as the drawer will draw it.
        let origin = card::shown_origin(peer.listener.as_deref(), request.origin.as_deref());
        let lang = self.language();
        let Some(category) = self.config.categories.get(&request.kind) else {
            return Ok(());
        };
        let view = MandateView {
            record_id: "r_00000000000000000000",
            label: category.label(lang),
            class: category.class.as_str(),
            targets: &request.targets,
            target_warnings: &lookalike::warnings_each(&request.targets, known),
            ends_at: consentd_core::mandate::ends_at(now, request.days),
            usd_per_day: request.usd_per_day,
            actions_per_day: request.actions_per_day,
            reason: request.reason.as_deref(),
            tz: self.config.owner.timezone,
            origin: origin.as_deref(),
            suggested_after: None,
            raised_today: None,
        };
        card::mandate::try_render_mandate_card(&view, now, &self.locales, lang, now)
            .map(|_| ())
            .map_err(|error| {
                Refusal::new(
                    Reason::TooLarge,
                    format!("the mandate card would not fit one Telegram message: {error}"),
                )
            })
    }

    fn language(&self) -> consentd_core::locale::Language {
        self.owner.language(&self.config)
    }

    /// Records and journals a refused ask, or counts it as the peer's refusal budget says, and
    /// answers it with its own reason and message.
    async fn refuse_ask(
        &self,
        peer: &Peer,
        kind: Option<String>,
        refusal: Refusal,
    ) -> Result<Reply, StoreError> {
        let now = self.clock.now();
        let stored = refusal.clone();
        let id = self.store.refuse(peer.clone(), kind, stored, now).await?;
        Ok(Reply::Final(Response::refused(id, &refusal).to_line()))
    }

    async fn status(&self, peer: &Peer, id: String, wait: bool) -> Result<Reply, StoreError> {
        let lookup = id.clone();
        let record = self.store.record(&lookup).await?;
        let Some(record) = record.filter(|record| record.peer() == *peer) else {
            let refusal = Refusal::new(
                Reason::BadRequest,
                format!("no record {} for this peer", protocol::quote(&id)),
            );
            return Ok(Reply::Final(Response::refused(None, &refusal).to_line()));
        };
        let waiting = self.waiting_of(&record).await?;
        let line = summary_line(&record, waiting.clone());
        if self.settled(&record) || !wait {
            return Ok(Reply::Final(line));
        }
        Ok(Reply::Wait {
            first: line,
            id: record.id,
            summary: true,
            waiting,
        })
    }

    /// A session takes back its own open ask. The consent loop does it, since a shown card is
    /// edited in the same transaction; the answer is final at once.
    async fn withdraw(&self, peer: &Peer, id: String) -> Result<Reply, StoreError> {
        let (reply, answer) = oneshot::channel();
        let asked = Wake::Withdraw {
            id: id.clone(),
            peer: peer.clone(),
            reply,
        };
        self.handoff.send(asked).map_err(|_| StoreError::Stopped)?;
        let withdrawal = answer.await.map_err(|_| StoreError::Stopped)??;
        let line = match withdrawal {
            Withdrawal::NoRecord => {
                let refusal = Refusal::new(
                    Reason::BadRequest,
                    format!("no record {} for this peer", protocol::quote(&id)),
                );
                Response::refused(None, &refusal).to_line()
            }
            Withdrawal::Withdrawn(record) | Withdrawal::AlreadyWithdrawn(record) => Response {
                v: protocol::VERSION,
                id: Some(record.id),
                status: RecordState::Withdrawn.as_str().to_owned(),
                reason: None,
                message: None,
                result: None,
                waiting: None,
            }
            .to_line(),
            Withdrawal::NotWithdrawable(record) => {
                let why = match record.state {
                    RecordState::Granted | RecordState::Running => {
                        "a granted or running action cannot be withdrawn"
                    }
                    _ => "it has ended and cannot be withdrawn",
                };
                let refusal = Refusal::new(
                    Reason::NotWithdrawable,
                    format!("{} is {}: {why}", record.id, record.state),
                );
                Response::refused(Some(record.id), &refusal).to_line()
            }
        };
        Ok(Reply::Final(line))
    }

    async fn list(&self, peer: &Peer, cursor: Option<String>) -> Result<Reply, StoreError> {
        let before = match cursor.as_deref().map(parse_cursor) {
            None => None,
            Some(Some(seq)) => Some(seq),
            Some(None) => {
                let refusal = Refusal::new(
                    Reason::BadRequest,
                    format!(
                        "cursor {} is not one this daemon gave out",
                        protocol::quote(cursor.as_deref().unwrap_or_default())
                    ),
                );
                return Ok(Reply::Final(Response::refused(None, &refusal).to_line()));
            }
        };
        let (records, next) = self.store.list(peer.clone(), before, LIST_PAGE).await?;
        let summaries: Vec<RecordSummary> = records.iter().map(|r| summary(r, None)).collect();
        Ok(Reply::Final(protocol::to_line(&ListResponse {
            v: protocol::VERSION,
            records: &summaries,
            next_cursor: next.map(|seq| format!("c{seq}")),
        })))
    }

    /// Whether a record's answer to the session is complete: it is final, and not a "No, and
    /// say why…" whose reason may still come (the owner's reply before its `reason_until`).
    fn settled(&self, record: &Record) -> bool {
        record.is_final() && self.reason_wait_left(record).is_none()
    }

    /// How much longer a declined record's final line waits for the owner's reason, by the
    /// daemon's clock; `None` when it waits no more (a plain No, a reason came, the wait is
    /// over).
    fn reason_wait_left(&self, record: &Record) -> Option<Duration> {
        let asked = record.asked_part()?;
        if record.state != RecordState::Declined || asked.decline_reason.is_some() {
            return None;
        }
        (asked.reason_until? - self.clock.now()).to_std().ok()
    }
}

fn parse_cursor(cursor: &str) -> Option<i64> {
    cursor
        .strip_prefix('c')?
        .parse()
        .ok()
        .filter(|seq| *seq > 0)
}

/// The ask's answer for a record: its id, its state, what the state carries, and why it waits
/// while it does.
pub(crate) fn outcome_line(record: &Record, waiting: Option<Waiting>) -> String {
    Response {
        v: protocol::VERSION,
        id: Some(record.id.clone()),
        status: record.state.as_str().to_owned(),
        reason: record.reason.clone(),
        message: message_of(record),
        result: record
            .action()
            .and_then(|action| action.result.clone())
            .filter(|_| record.state == RecordState::Executed),
        waiting,
    }
    .to_line()
}

/// A record's `message`: what its state carries, or for a No the owner's reason.
fn message_of(record: &Record) -> Option<String> {
    record.message.clone().or_else(|| {
        record
            .asked_part()
            .and_then(|asked| asked.decline_reason.clone())
    })
}

pub(crate) fn summary(record: &Record, waiting: Option<Waiting>) -> RecordSummary {
    RecordSummary {
        id: record.id.clone(),
        kind: record.kind().map(str::to_owned),
        status: record.state.as_str().to_owned(),
        is_final: record.is_final(),
        reason: record.reason.clone(),
        message: message_of(record),
        result: record.action().and_then(|action| action.result.clone()),
        created_at: consentd_store::time::timestamp(record.created_at),
        decided_at: record
            .asked_part()
            .and_then(|asked| asked.decided_at)
            .map(consentd_store::time::timestamp),
        finished_at: record.finished_at.map(consentd_store::time::timestamp),
        waiting,
    }
}

fn summary_line(record: &Record, waiting: Option<Waiting>) -> String {
    protocol::to_line(&StatusResponse {
        v: protocol::VERSION,
        record: &summary(record, waiting),
    })
}
