//! The refusal gate (docs/PROTOCOL.md, "Refusals"): everything refused before a card is drawn.
//!
//! A pure function of the ask, the configured categories, its category's switch and the limits. It answers either an [`Action`] the
//! owner can see in full, or a [`Refusal`] with its stable reason code and an English message that
//! says exactly what and where. The Unicode half lives in [`visible`], with the spacing rules in
//! `layout`, the combining marks stacked on one character in `marks` and the registered
//! variation sequences in `sequences`.

mod clusters;
mod layout;
mod marks;
mod sequences;
pub mod visible;

use std::collections::BTreeMap;

use base64::Engine as _;

use crate::action::{Action, Attachment};
use crate::config::{self, Category, Cost, Limits, Presence};
use crate::mandate::{self, Ceilings, KindRules, MandateRequest};
use crate::protocol::{quote, AskRequest, MandateAsk, MIN_TTL_SECONDS};
use visible::FieldRef;

pub use crate::reason::{Reason, Refusal, MAX_TARGET_CHARS};
pub(crate) use crate::reason::{
    MAX_ATTACHMENT_NAME_BYTES, MAX_FIELD_CHARS, MAX_IDEMPOTENCY_KEY_CHARS, MAX_ORIGIN_CHARS,
};

impl From<visible::Unshowable> for Refusal {
    fn from(refusal: visible::Unshowable) -> Self {
        let reason = match refusal.reason_code() {
            "not_nfc" => Reason::NotNfc,
            _ => Reason::InvisibleCharacter,
        };
        Refusal::new(reason, refusal.message())
    }
}

/// The most targets one mandate may name: each is a line on its card.
pub const MAX_MANDATE_TARGETS: usize = 20;

/// Checks a mandate request (docs/PROTOCOL.md, "Mandates"): a known kind whose category is on,
/// targets and a reason the
/// owner can see, then the terms against the ceilings and the kind — named targets only where it
/// has a target, a money term only where it can cost (`mandate_terms`, naming the term). A money
/// term of zero for a kind that never costs comes back as none: it is the same request.
pub fn check_mandate(
    ask: &MandateAsk,
    categories: &BTreeMap<String, Category>,
    enabled: bool,
    limits: &Limits,
) -> Result<MandateRequest, Refusal> {
    let category = usable_category(&ask.kind, categories, enabled)?;
    if ask.targets.len() > MAX_MANDATE_TARGETS {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "{} targets; a mandate names at most {MAX_MANDATE_TARGETS}",
                ask.targets.len()
            ),
        ));
    }
    for (index, target) in ask.targets.iter().enumerate() {
        let place = format!("targets[{index}]");
        check_size(&place, Some(target), MAX_TARGET_CHARS)?;
        visible::check_value(target, FieldRef::Field(&place), false)?;
    }
    check_size("reason", ask.reason.as_deref(), MAX_FIELD_CHARS)?;
    if let Some(reason) = &ask.reason {
        visible::check_value(reason, FieldRef::Field("reason"), false)?;
    }
    check_origin(ask.origin.as_deref())?;
    let usd_per_day = ask
        .usd_per_day
        .as_deref()
        .map(config::parse_money)
        .transpose()
        .map_err(|error| Refusal::new(Reason::BadRequest, format!("usd_per_day: {error}")))?;
    let mut request = MandateRequest {
        kind: category.name.clone(),
        targets: ask.targets.clone(),
        // Beyond u32 is beyond every ceiling: saturating keeps the ceiling's own message.
        days: u32::try_from(ask.days).unwrap_or(u32::MAX),
        usd_per_day,
        actions_per_day: u32::try_from(ask.actions_per_day).unwrap_or(u32::MAX),
        reason: ask.reason.clone().filter(|reason| !reason.is_empty()),
        origin: ask.origin.clone(),
    };
    let rules = KindRules::of(category);
    let ceilings = Ceilings::of(limits);
    mandate::check_terms(&request, &rules, &ceilings)
        .map_err(|refusal| Refusal::new(Reason::MandateTerms, refusal.message))?;
    if let Some(message) = crate::lookalike::mandate_targets_refusal(&request.targets) {
        return Err(Refusal::new(Reason::MandateTerms, message));
    }
    // "0.00" for a kind that never costs is the same request as no amount at all.
    request.usd_per_day = mandate::money_term(request.usd_per_day);
    Ok(request)
}

/// The category of `kind`, if it exists and the owner has it on. An unknown kind's refusal lists
/// the kinds that are configured, so an agent that guessed a name learns the real ones at once.
fn usable_category<'a>(
    kind: &str,
    categories: &'a BTreeMap<String, Category>,
    enabled: bool,
) -> Result<&'a Category, Refusal> {
    let Some(category) = categories.get(kind).filter(|_| config::is_valid_kind(kind)) else {
        let kinds = if categories.is_empty() {
            "the config has no categories".to_owned()
        } else {
            let names: Vec<&str> = categories.keys().map(String::as_str).collect();
            format!("the kinds are: {}", names.join(", "))
        };
        return Err(Refusal::new(
            Reason::UnknownKind,
            format!("no category {} is configured; {kinds}", quote(kind)),
        ));
    };
    if !enabled {
        return Err(Refusal::new(
            Reason::CategoryOff,
            format!(
                "category {} is off; the owner can turn it on with /categories",
                category.name
            ),
        ));
    }
    Ok(category)
}

/// Checks an ask against its category (one of `categories`, the configured ones) and the
/// limits; `enabled` is the ask's category's switch as the owner last set it.
///
/// The gate's order is fixed, and the first failing step answers: the category, then what the
/// ask carries against what its category shows, then the sizes, then the Unicode policy, and
/// last the attachments, which are decoded only once everything cheaper has passed.
pub fn check_ask(
    ask: &AskRequest,
    categories: &BTreeMap<String, Category>,
    enabled: bool,
    limits: &Limits,
) -> Result<Action, Refusal> {
    let category = usable_category(&ask.kind, categories, enabled)?;
    let cost_usd = check_shape(ask, category, limits)?;
    check_ttl(ask.ttl, limits)?;
    check_sizes(ask, limits)?;
    check_visible(ask)?;
    check_origin(ask.origin.as_deref())?;
    if let Some(hook) = &ask.hook {
        crate::exact::check_hook_category(category)?;
        crate::exact::check_hook(hook)?;
    }
    let attachments = check_attachments(ask, limits)?;
    Ok(Action {
        kind: category.name.clone(),
        target: ask.target.clone(),
        text: ask.text.clone(),
        fields: ask.fields.clone(),
        cost_usd,
        attachments,
        origin: ask.origin.clone(),
    })
}

/// An ask's own `ttl`: whole seconds from [`MIN_TTL_SECONDS`] to the card's ttl. It may only
/// shorten the wait, so a caller with its own deadline never leaves a card nobody waits for.
pub fn check_ttl(ttl: Option<u64>, limits: &Limits) -> Result<(), Refusal> {
    let Some(ttl) = ttl else { return Ok(()) };
    let most = limits.card_ttl.as_secs();
    if (MIN_TTL_SECONDS..=most).contains(&ttl) {
        return Ok(());
    }
    Err(Refusal::new(
        Reason::BadRequest,
        format!(
            "ttl {ttl} is out of bounds: from {MIN_TTL_SECONDS} to {most} seconds \
             (limits.card_ttl)"
        ),
    ))
}

/// `origin`: one line of 1 to [`MAX_ORIGIN_CHARS`] characters that passes every visible-text
/// rule a field value meets, refused with the same reasons and naming `origin`.
pub fn check_origin(origin: Option<&str>) -> Result<(), Refusal> {
    let Some(origin) = origin else { return Ok(()) };
    if origin.is_empty() {
        return Err(Refusal::new(
            Reason::BadRequest,
            format!("origin is empty; give 1 to {MAX_ORIGIN_CHARS} characters or leave it out"),
        ));
    }
    check_size("origin", Some(origin), MAX_ORIGIN_CHARS)?;
    visible::check_value(origin, FieldRef::Field("origin"), false)?;
    Ok(())
}

/// A request's own `origin` against the labelled sockets' origins (`labels`): refused when it
/// could pass for one of them on a card ([`crate::lookalike::passes_for_label`]), on any socket,
/// the main one included, so that only an ask through a labelled socket reads as coming from it.
pub fn check_origin_against_labels<'a>(
    origin: Option<&str>,
    labels: impl IntoIterator<Item = &'a str>,
) -> Result<(), Refusal> {
    let Some(origin) = origin else { return Ok(()) };
    match labels
        .into_iter()
        .find(|label| crate::lookalike::passes_for_label(origin, label))
    {
        Some(label) => Err(Refusal::new(
            Reason::BadRequest,
            format!(
                "origin {} looks like, or begins with, the labelled socket origin {}: only an \
                 ask through that socket is shown as coming from it",
                crate::protocol::quote(origin),
                crate::protocol::quote(label)
            ),
        )),
        None => Ok(()),
    }
}

/// What the ask carries against what its category shows: the target and text, the fields (each
/// shown, none empty), the cost (answered, as the action will carry it) and how many attachments.
fn check_shape(
    ask: &AskRequest,
    category: &Category,
    limits: &Limits,
) -> Result<Option<rust_decimal::Decimal>, Refusal> {
    let kind = &category.name;
    check_presence("target", ask.target.as_deref(), category.target, kind)?;
    check_presence("text", ask.text.as_deref(), category.text, kind)?;
    if let Some(name) = ask
        .fields
        .keys()
        .find(|name| !category.fields.contains(name))
    {
        let shown = if category.fields.is_empty() {
            "none".to_owned()
        } else {
            category.fields.join(", ")
        };
        return Err(Refusal::new(
            Reason::FieldNotShown,
            format!(
                "field {} is not shown by category {kind} (its fields: {shown})",
                quote(name)
            ),
        ));
    }
    if let Some((name, _)) = ask.fields.iter().find(|(_, value)| value.is_empty()) {
        return Err(Refusal::new(
            Reason::BadRequest,
            format!("field {name} is empty"),
        ));
    }
    let cost_usd = check_cost(ask.cost_usd.as_deref(), &category.cost, kind)?;
    let allowed_attachments = category.attachments.min(limits.max_attachments);
    if !ask.attachments.is_empty() && category.attachments == 0 {
        return Err(Refusal::new(
            Reason::FieldNotShown,
            format!("category {kind} takes no attachments"),
        ));
    }
    if ask.attachments.len() > allowed_attachments {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "{} attachments; category {kind} takes at most {allowed_attachments}",
                ask.attachments.len()
            ),
        ));
    }
    Ok(cost_usd)
}

/// Every text the card shows, and the idempotency key, within its length.
fn check_sizes(ask: &AskRequest, limits: &Limits) -> Result<(), Refusal> {
    check_size("text", ask.text.as_deref(), limits.max_text_chars)?;
    check_size("target", ask.target.as_deref(), MAX_TARGET_CHARS)?;
    for (name, value) in &ask.fields {
        check_size(&format!("field {name}"), Some(value), MAX_FIELD_CHARS)?;
    }
    check_size(
        "idempotency_key",
        ask.idempotency_key.as_deref(),
        MAX_IDEMPOTENCY_KEY_CHARS,
    )
}

/// The Unicode policy ([`visible`]) over everything the card shows, and the idempotency key.
fn check_visible(ask: &AskRequest) -> Result<(), Refusal> {
    if let Some(text) = &ask.text {
        visible::check_value(text, FieldRef::Text, true)?;
    }
    if let Some(target) = &ask.target {
        visible::check_value(target, FieldRef::Target, false)?;
    }
    for (name, value) in &ask.fields {
        visible::check_value(value, FieldRef::Field(name), false)?;
    }
    if let Some(key) = &ask.idempotency_key {
        visible::check_unshown_value(key, FieldRef::Field("idempotency_key"))?;
    }
    Ok(())
}

/// Each attachment in order: its name and media type, its size, its bytes (decoded only when
/// the encoded length fits) and a name no earlier attachment has.
fn check_attachments(ask: &AskRequest, limits: &Limits) -> Result<Vec<Attachment>, Refusal> {
    let mut attachments = Vec::with_capacity(ask.attachments.len());
    for (index, attachment) in ask.attachments.iter().enumerate() {
        let place = format!("attachments[{index}]");
        check_attachment_name(&place, &attachment.name)?;
        check_media_type(&place, &attachment.media_type)?;
        // Refuse by the encoded length first, so an oversized file is never decoded.
        let decoded_upper_bound = attachment.data_b64.len() as u64 / 4 * 3;
        if decoded_upper_bound > limits.max_attachment_bytes + 2 {
            return Err(too_large_attachment(&place, decoded_upper_bound, limits));
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(attachment.data_b64.as_bytes())
            .map_err(|error| {
                Refusal::new(
                    Reason::BadRequest,
                    format!("{place}.data_b64 is not valid base64: {error}"),
                )
            })?;
        if data.len() as u64 > limits.max_attachment_bytes {
            return Err(too_large_attachment(&place, data.len() as u64, limits));
        }
        // Telegram refuses an empty file, and the owner would be shown nothing.
        if data.is_empty() {
            return Err(Refusal::new(
                Reason::BadRequest,
                format!("{place} is empty"),
            ));
        }
        crate::media::check(&place, &attachment.media_type, &data)?;
        // The command gets the copies under their names: one name cannot hold two files.
        if let Some(first) = ask.attachments[..index]
            .iter()
            .position(|earlier| earlier.name == attachment.name)
        {
            return Err(Refusal::new(
                Reason::BadRequest,
                format!(
                    "{place}.name {} is also the name of attachments[{first}]",
                    quote(&attachment.name)
                ),
            ));
        }
        attachments.push(Attachment::new(
            attachment.name.clone(),
            attachment.media_type.clone(),
            data,
        ));
    }
    Ok(attachments)
}

fn check_presence(
    what: &str,
    value: Option<&str>,
    presence: Presence,
    kind: &str,
) -> Result<(), Refusal> {
    match (value, presence) {
        (Some(_), Presence::None) => Err(Refusal::new(
            Reason::FieldNotShown,
            format!("category {kind} takes no {what}"),
        )),
        (None, Presence::Required) => Err(Refusal::new(
            Reason::FieldNotShown,
            format!("category {kind} requires a {what}"),
        )),
        (Some(""), _) => Err(Refusal::new(Reason::BadRequest, format!("{what} is empty"))),
        _ => Ok(()),
    }
}

fn check_cost(
    cost: Option<&str>,
    rule: &Cost,
    kind: &str,
) -> Result<Option<rust_decimal::Decimal>, Refusal> {
    match (cost, rule) {
        (None, Cost::None) => Ok(None),
        (Some(_), Cost::None) => Err(Refusal::new(
            Reason::FieldNotShown,
            format!("category {kind} has no cost; cost_usd is not taken"),
        )),
        (Some(_), Cost::Fixed(fixed)) => Err(Refusal::new(
            Reason::FieldNotShown,
            format!(
                "category {kind} has a fixed cost of ${}; cost_usd is not taken",
                crate::action::format_usd(*fixed)
            ),
        )),
        (None, Cost::Fixed(fixed)) => Ok(Some(*fixed)),
        (None, Cost::Request) => Err(Refusal::new(
            Reason::FieldNotShown,
            format!("category {kind} requires cost_usd"),
        )),
        (Some(given), Cost::Request) => config::parse_money(given)
            .map(Some)
            .map_err(|error| Refusal::new(Reason::BadRequest, format!("cost_usd: {error}"))),
    }
}

fn check_size(what: &str, value: Option<&str>, max_chars: usize) -> Result<(), Refusal> {
    let Some(value) = value else { return Ok(()) };
    // Count lazily: a million-character value stops being counted at the limit.
    if value.len() > max_chars && value.chars().nth(max_chars).is_some() {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "{what} has {} characters; at most {max_chars} are allowed",
                value.chars().count()
            ),
        ));
    }
    Ok(())
}

fn check_attachment_name(place: &str, name: &str) -> Result<(), Refusal> {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name.len() > MAX_ATTACHMENT_NAME_BYTES {
        Some("is longer than 255 bytes")
    } else if name.contains('/') || name == "." || name == ".." {
        Some("must be a plain file name (no '/', not . or ..)")
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(Refusal::new(
            Reason::BadRequest,
            format!("{place}.name {problem}"),
        ));
    }
    let field = format!("{place}.name");
    visible::check_value(name, FieldRef::Field(&field), false)?;
    Ok(())
}

fn check_media_type(place: &str, media_type: &str) -> Result<(), Refusal> {
    fn is_token(part: &str) -> bool {
        !part.is_empty()
            && part.len() <= 127
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    }
    match media_type.split_once('/') {
        Some((kind, subtype)) if is_token(kind) && is_token(subtype) => Ok(()),
        _ => Err(Refusal::new(
            Reason::BadRequest,
            format!(
                "{place}.media_type {} is not a media type like image/png",
                quote(media_type)
            ),
        )),
    }
}

fn too_large_attachment(place: &str, bytes: u64, limits: &Limits) -> Refusal {
    Refusal::new(
        Reason::TooLarge,
        format!(
            "{place} is about {bytes} bytes; at most {} are allowed",
            limits.max_attachment_bytes
        ),
    )
}

#[cfg(test)]
mod emoji_tests;
#[cfg(test)]
mod tests;
