//! Look-alike targets (UTS #39, SPEC §6): a target whose letters mix scripts, or whose confusable
//! skeleton is that of a target the owner approved while the two strings differ. The card marks
//! each with a warning line; a mandate request naming two look-alike targets is refused.
//!
//! Pure: the targets the owner approved come in as a value ([`KnownTargets`], gathered by the
//! store) and the warnings go out as values ([`Warning`]), which [`crate::card`] draws in the
//! owner's language. The data is `unicode-security`'s (confusables, identifier status) and
//! `unicode-script`'s, both Unicode 18.0 like the rest of the Unicode policy (docs/adr/0002).

use icu_properties::props::{GeneralCategory, GeneralCategoryGroup};
use icu_properties::{CodePointMapData, CodePointMapDataBorrowed};
use unicode_script::Script;
use unicode_security::{RestrictionLevel, RestrictionLevelDetection};

use crate::refusal::MAX_TARGET_CHARS;

const GENERAL_CATEGORY: CodePointMapDataBorrowed<'static, GeneralCategory> =
    CodePointMapData::<GeneralCategory>::new();

/// How long a target the owner approved stays known, in days.
pub const KNOWN_DAYS: i64 = 30;

/// The character whose description ([`describe`]) is the longest of all; a test checks it
/// against every scalar value. The card keeps room for a look-alike line by it.
const LONGEST_DESCRIBED: char = '\u{1FBA8}';

/// The targets a new target is compared with: those of mandates and of asks the owner approved
/// recently (the store decides which, see `Db::known_targets`). Sorted and without repeats, so
/// the same set always names the same look-alike first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownTargets {
    known: Vec<Known>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    target: String,
    skeleton: String,
}

impl KnownTargets {
    pub fn new<S: Into<String>>(targets: impl IntoIterator<Item = S>) -> Self {
        let mut targets: Vec<String> = targets.into_iter().map(Into::into).collect();
        targets.sort_unstable();
        targets.dedup();
        let known = targets
            .into_iter()
            .map(|target| Known {
                skeleton: skeleton(&target),
                target,
            })
            .collect();
        KnownTargets { known }
    }

    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.known.iter().map(|known| known.target.as_str())
    }
}

/// Why a target is marked on a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// Its letters are below UTS #39's "highly restrictive" level: scripts mixed in a way no
    /// single writing system uses (Latin with Cyrillic, say), or letters that are not for
    /// identifiers at all (fullwidth, mathematical).
    MixedScripts {
        /// The Script property of its letters, in order of first use; `Common` alone when none
        /// has a script of its own (mathematical letters).
        scripts: Vec<Script>,
        /// Every non-ASCII code point of the whole target, once each, in order of first use.
        code_points: Vec<char>,
    },
    /// Its skeleton is that of `known`, a target the owner approved, and the strings differ.
    LooksLike {
        known: String,
        difference: Difference,
    },
}

/// Where two strings first differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Difference {
    /// 1-based, in characters (Unicode scalar values), as the refusal messages count.
    pub position: usize,
    /// This string's character there; `None` where it has already ended.
    pub ours: Option<char>,
    /// The other string's character there; `None` where it has already ended.
    pub theirs: Option<char>,
}

/// Every warning for `target`: mixed scripts first, then the first known target it looks like.
pub fn warnings(target: &str, known: &KnownTargets) -> Vec<Warning> {
    mixed_scripts(target)
        .into_iter()
        .chain(looks_like(target, known))
        .collect()
}

/// The warnings of each target, in order (a mandate card's lines).
pub fn warnings_each(targets: &[String], known: &KnownTargets) -> Vec<Vec<Warning>> {
    targets
        .iter()
        .map(|target| warnings(target, known))
        .collect()
}

/// The mixed-script warning, if `target`'s letters are below "highly restrictive".
///
/// Only letters, marks and numbers count, after a leading `@` or `#` or a URL's `scheme://`:
/// punctuation and symbols (the `_`, `.` and `/` of handles and URLs, an emoji) belong to no
/// script and are not identifier characters, so the crate would call any URL path
/// "unrestricted". The scheme is left out so that a Cyrillic or Greek domain is judged as the
/// one script it is.
pub fn mixed_scripts(target: &str) -> Option<Warning> {
    let letters: String = after_prefix(target)
        .chars()
        .filter(|&c| is_letter_like(c))
        .collect();
    if letters.as_str().detect_restriction_level() <= RestrictionLevel::HighlyRestrictive {
        return None;
    }
    let mut scripts = Vec::new();
    for script in letters.chars().map(Script::from) {
        if !matches!(script, Script::Common | Script::Inherited) && !scripts.contains(&script) {
            scripts.push(script);
        }
    }
    if scripts.is_empty() {
        scripts.push(Script::Common);
    }
    let mut code_points = Vec::new();
    for c in target.chars().filter(|c| !c.is_ascii()) {
        if !code_points.contains(&c) {
            code_points.push(c);
        }
    }
    Some(Warning::MixedScripts {
        scripts,
        code_points,
    })
}

/// The look-alike warning: the first known target (in sorted order) with `target`'s skeleton
/// that is not `target` itself.
pub fn looks_like(target: &str, known: &KnownTargets) -> Option<Warning> {
    let ours = skeleton(target);
    known
        .known
        .iter()
        .filter(|known| known.skeleton == ours && known.target != target)
        .find_map(|known| {
            Some(Warning::LooksLike {
                difference: first_difference(target, &known.target)?,
                known: known.target.clone(),
            })
        })
}

/// The first two of `targets` that look alike (one skeleton, different strings), with where
/// they differ; `None` when no two do.
pub fn confusable_pair(targets: &[String]) -> Option<(usize, usize, Difference)> {
    let skeletons: Vec<String> = targets.iter().map(|target| skeleton(target)).collect();
    (0..targets.len()).find_map(|second| {
        (0..second).find_map(|first| {
            if skeletons[first] != skeletons[second] {
                return None;
            }
            let difference = first_difference(&targets[first], &targets[second])?;
            Some((first, second, difference))
        })
    })
}

/// The refusal message for a mandate request naming two look-alike targets (SPEC §7: the owner
/// could not tell from its card which of the two a Grant opens), or `None`.
pub fn mandate_targets_refusal(targets: &[String]) -> Option<String> {
    let (first, second, difference) = confusable_pair(targets)?;
    let side = |c: Option<char>| c.map_or_else(|| "its end".to_owned(), describe);
    Some(format!(
        "targets[{first}] {:?} and targets[{second}] {:?} look alike (one UTS #39 skeleton) \
         but differ at char {}: {} in the first, {} in the second",
        targets[first],
        targets[second],
        difference.position,
        side(difference.ours),
        side(difference.theirs),
    ))
}

/// Where `ours` and `theirs` first differ; `None` when they are equal.
pub fn first_difference(ours: &str, theirs: &str) -> Option<Difference> {
    let mut a = ours.chars();
    let mut b = theirs.chars();
    let mut position = 1;
    loop {
        match (a.next(), b.next()) {
            (None, None) => return None,
            (x, y) if x == y => position += 1,
            (x, y) => {
                return Some(Difference {
                    position,
                    ours: x,
                    theirs: y,
                })
            }
        }
    }
}

/// "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I": the code point and its name (just
/// the code point for one the name table, Unicode 17.0, does not know yet).
pub fn describe(c: char) -> String {
    match unicode_names2::name(c) {
        Some(name) => format!("U+{:04X} {name}", u32::from(c)),
        None => format!("U+{:04X}", u32::from(c)),
    }
}

/// The widest look-alike warning any target could draw, by both of Telegram's counts: a known
/// target of the longest length in characters of two UTF-16 units each, and the longest
/// descriptions. The card keeps room for it before the known targets are read.
pub(crate) fn widest_looks_like() -> Warning {
    Warning::LooksLike {
        known: "\u{1F600}".repeat(MAX_TARGET_CHARS),
        difference: Difference {
            position: MAX_TARGET_CHARS + 1,
            ours: Some(LONGEST_DESCRIBED),
            theirs: Some(LONGEST_DESCRIBED),
        },
    }
}

/// UTS #39's skeleton: NFD, confusables mapped to their prototypes, NFD again.
fn skeleton(s: &str) -> String {
    unicode_security::skeleton(s).collect()
}

/// `target` without a leading `@` or `#`, or without a URL's `scheme://`.
fn after_prefix(target: &str) -> &str {
    if let Some(rest) = target.strip_prefix(['@', '#']) {
        return rest;
    }
    match target.split_once("://") {
        Some((scheme, rest)) if is_scheme(scheme) => rest,
        _ => target,
    }
}

/// RFC 3986: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn is_letter_like(c: char) -> bool {
    let category = GENERAL_CATEGORY.get(c);
    GeneralCategoryGroup::Letter.contains(category)
        || GeneralCategoryGroup::Mark.contains(category)
        || GeneralCategoryGroup::Number.contains(category)
}

#[cfg(test)]
mod tests;
