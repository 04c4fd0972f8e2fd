//! The store's SQL under one path, run synchronously by the one thread that owns the database.
//!
//! The parts live in modules of their own and depend only downwards: `base` (the [`Db`], its
//! transactions and journal lines, the guarded state step), `mandate_rows` and `records`
//! (reading), `outbox` and `drawn` (what is queued for and drawn in Telegram), `ask` (an ask and
//! its refusals), `mandates` (a mandate's request, Stop and end) and `decide` (a record's
//! transitions, the owner's yes and no). This module names what code outside the store uses.

pub use super::ask::{AskOutcome, AskPolicy, NewAsk};
pub use super::base::{
    new_record_id, parse_time, timestamp, Db, Effects, EventName, JournalEvent, OpenReport,
    StateChange,
};
pub use super::records::{Asked, Record, Subject};
