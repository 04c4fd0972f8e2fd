//! Look-alike targets (UTS #39; docs/CONTRACT-NOTES.md, "Look-alike targets"): a target whose
//! letters mix scripts or carry marks a
//! reader cannot see, or whose confusable skeleton (with or without its nonspacing marks) is that
//! of a target the owner approved while the two strings differ. The card marks each with a
//! warning line, and so it does a field's value that is one word (an address, a URL, a handle); a
//! mandate request naming two look-alike targets is refused.
//!
//! Pure: the targets the owner approved come in as a value ([`KnownTargets`], gathered by the
//! store) and the warnings go out as values ([`Warning`]), which [`crate::card`] draws in the
//! owner's language. The data is `unicode-security`'s (confusables, identifier status) and
//! `unicode-script`'s, both Unicode 18.0 like the rest of the Unicode policy (docs/adr/0002).

use icu_properties::props::{
    DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup, SoftDotted,
};
use icu_properties::{
    CodePointMapData, CodePointMapDataBorrowed, CodePointSetData, CodePointSetDataBorrowed,
};
use unicode_normalization::UnicodeNormalization;
use unicode_script::{Script, ScriptExtension, UnicodeScript};
use unicode_security::{RestrictionLevel, RestrictionLevelDetection};

use crate::reason::MAX_TARGET_CHARS;

const GENERAL_CATEGORY: CodePointMapDataBorrowed<'static, GeneralCategory> =
    CodePointMapData::<GeneralCategory>::new();
const SOFT_DOTTED: CodePointSetDataBorrowed<'static> = CodePointSetData::new::<SoftDotted>();
const DEFAULT_IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();

/// The dotless i and j, plain and mathematical: a dot above one of them draws an i or a j.
const DOTLESS: [char; 4] = ['\u{131}', '\u{237}', '\u{1D6A4}', '\u{1D6A5}'];

/// A field's value is compared with the known targets whose length is within a factor of two,
/// and 16 characters, of its own ([`comparable`]): one string more than twice as long as the
/// other could pass for it only through invisible characters and marks. The bound is what lets
/// the card keep room for a look-alike line under every one-word field without doubling it.
const COMPARABLE_SLACK: usize = 16;

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
    /// The skeleton of the target without its nonspacing marks ([`bare_skeleton`]).
    bare: String,
    chars: usize,
}

impl Known {
    fn new(target: String) -> Known {
        Known {
            skeleton: skeleton(&target),
            bare: bare_skeleton(&target),
            chars: target.chars().count(),
            target,
        }
    }
}

impl KnownTargets {
    pub fn new<S: Into<String>>(targets: impl IntoIterator<Item = S>) -> Self {
        let mut targets: Vec<String> = targets.into_iter().map(Into::into).collect();
        targets.sort_unstable();
        targets.dedup();
        let known = targets.into_iter().map(Known::new).collect();
        KnownTargets { known }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.known.len()
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
    /// identifiers at all (fullwidth, mathematical); or Latin letters beside a letter of any
    /// other script (Han too); or a nonspacing mark a reader may not see (UTS #39 §5.4: on a
    /// soft-dotted or dotless i or j, on something that is not a letter, the same mark twice).
    MixedScripts {
        /// The Script property of its letters, in order of first use (a letter of no script of
        /// its own, such as U+30FC, by its Script_Extensions); `Common` alone when none has a
        /// script (mathematical letters).
        scripts: Vec<Script>,
        /// Every non-ASCII code point of the whole target, once each, in order of first use.
        code_points: Vec<char>,
    },
    /// Its skeleton, or its skeleton without nonspacing marks, is that of `known`, a target the
    /// owner approved, and the strings differ.
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

/// The mixed-script warning, if `target`'s letters are below "highly restrictive", mix Latin
/// with another script, carry a mark a reader may not see (`hidden_marks`), or hold a
/// punctuation mark or symbol that draws as an ASCII one (`imitates_ascii_punctuation`).
///
/// Only letters, marks and numbers count for the scripts, after a leading `@` or `#` or a URL's
/// `scheme://`: punctuation and symbols (the `_`, `.` and `/` of handles and URLs, an emoji)
/// belong to no script and are not identifier characters, so the crate would call any URL path
/// "unrestricted". The scheme is left out so that a Cyrillic or Greek domain is judged as the
/// one script it is. The marks are judged on the whole target.
pub fn mixed_scripts(target: &str) -> Option<Warning> {
    let letters: String = after_prefix(target)
        .chars()
        .filter(|&c| is_letter_like(c))
        .collect();
    let mixed = letters.as_str().detect_restriction_level() > RestrictionLevel::HighlyRestrictive
        || latin_beside_another_script(&letters)
        || hidden_marks(target)
        || target.chars().any(imitates_ascii_punctuation);
    if !mixed {
        return None;
    }
    let mut code_points = Vec::new();
    for c in target.chars().filter(|c| !c.is_ascii()) {
        if !code_points.contains(&c) {
            code_points.push(c);
        }
    }
    Some(Warning::MixedScripts {
        scripts: scripts_of(&letters),
        code_points,
    })
}

/// The scripts of `letters`, in order of first use: each one's Script, or for a letter or
/// number of no script of its own (Common, Inherited) whose Script_Extensions name scripts
/// (U+30FC, Hiragana and Katakana) those, unless it shares one with a script already named.
/// `Common` alone when none has a script.
fn scripts_of(letters: &str) -> Vec<Script> {
    let mut scripts: Vec<Script> = Vec::new();
    for c in letters.chars() {
        let script = c.script();
        if !matches!(script, Script::Common | Script::Inherited) {
            if !scripts.contains(&script) {
                scripts.push(script);
            }
            continue;
        }
        let extension = c.script_extension();
        let named = scripts.iter().any(|&s| extension.contains_script(s));
        if has_scripts(extension) && !is_mark(c) && !named {
            scripts.extend(extension.iter());
        }
    }
    if scripts.is_empty() {
        scripts.push(Script::Common);
    }
    scripts
}

/// consentd's departure from "highly restrictive" (docs/adr/0002): Latin letters beside a
/// letter or number of any other script are mixed, Han, Hiragana, Katakana, Hangul and Bopomofo
/// included, so `@mi丨a_news` (U+4E28) is marked. Judged by Script_Extensions, so a letter of no
/// script of its own that belongs with Kana (U+30FC) counts as theirs; marks are left to the
/// restriction level and [`hidden_marks`]. CJK without Latin stays as UTS #39 has it.
fn latin_beside_another_script(letters: &str) -> bool {
    let (mut latin, mut other) = (false, false);
    for c in letters.chars().filter(|&c| !is_mark(c)) {
        let extension = c.script_extension();
        if !has_scripts(extension) {
            continue;
        }
        if extension.contains_script(Script::Latin) {
            latin = true;
        } else {
            other = true;
        }
    }
    latin && other
}

/// Whether a Script_Extensions value names scripts (not Common, Inherited or Unknown).
fn has_scripts(extension: ScriptExtension) -> bool {
    !(extension.is_common() || extension.is_inherited() || extension.is_empty())
}

/// UTS #39 §5.4's optional checks: a nonspacing mark a reader may not see.
///
/// - On a soft-dotted letter (i, j, į, …) or a dotless i or j: `i` + U+0307 and `ı` + U+0307
///   draw as `i`.
/// - On something that is not a letter (`_`, `.`, `@`, a digit, or nothing at the start), where
///   it draws over or under punctuation: `_` + U+0331 draws as `_`.
/// - The same mark twice on one letter, which draws as one.
///
/// The first two are judged on the string as asked, which the gate keeps in NFC, so a
/// precomposed `í`, `ï` or `≠` is one character and passes; the third in NFD, so `é` + U+0301
/// is the acute twice. Marks that are default-ignorable (variation selectors, the grapheme
/// joiner) are left to the gate: they draw nothing and the skeleton drops them.
pub(crate) fn hidden_marks(s: &str) -> bool {
    let drawn = |c: &char| !DEFAULT_IGNORABLE.contains(*c);
    let mut base: Option<char> = None;
    for c in s.chars().filter(drawn) {
        if is_nonspacing(c) {
            let Some(base) = base else { return true };
            let dotted = SOFT_DOTTED.contains(base) || DOTLESS.contains(&base);
            if dotted || !GeneralCategoryGroup::Letter.contains(GENERAL_CATEGORY.get(base)) {
                return true;
            }
        } else if !is_mark(c) {
            base = Some(c);
        }
    }
    let mut marks: Vec<char> = Vec::new();
    for c in s.nfd().filter(drawn) {
        if is_nonspacing(c) {
            if marks.contains(&c) {
                return true;
            }
            marks.push(c);
        } else if !is_mark(c) {
            marks.clear();
        }
    }
    false
}

/// The look-alike warning: the first known target (in sorted order) with `target`'s skeleton,
/// or with its skeleton once nonspacing marks are removed, that is not `target` itself.
pub fn looks_like(target: &str, known: &KnownTargets) -> Option<Warning> {
    looks_like_among(target, known.known.iter())
}

fn looks_like_among<'a>(
    target: &str,
    mut known: impl Iterator<Item = &'a Known>,
) -> Option<Warning> {
    let (ours, bare) = (skeleton(target), bare_skeleton(target));
    known.find_map(|known| {
        if known.skeleton != ours && known.bare != bare {
            return None;
        }
        Some(Warning::LooksLike {
            difference: first_difference(target, &known.target)?,
            known: known.target.clone(),
        })
    })
}

/// Whether a field's value is one the card checks as it checks a target: one word, with no
/// white space in it (an address, a URL, a handle, a number). A value with a space is free
/// text and is shown without warnings.
pub fn is_identifier_like(value: &str) -> bool {
    !value.is_empty() && !value.chars().any(char::is_whitespace)
}

/// Whether a field's value of `value_chars` characters is compared with a known target of
/// `known_chars`: neither is more than twice as long as the other and 16 characters more.
pub(crate) fn comparable(value_chars: usize, known_chars: usize) -> bool {
    known_chars <= 2 * value_chars + COMPARABLE_SLACK
        && value_chars <= 2 * known_chars + COMPARABLE_SLACK
}

/// The longest known target, in characters, that a field's `value` can be compared with (at
/// most [`MAX_TARGET_CHARS`]); `None` when the value is too long to be compared with any.
pub(crate) fn comparable_chars(value: &str) -> Option<usize> {
    let chars = value.chars().count();
    let longest = (2 * chars + COMPARABLE_SLACK).min(MAX_TARGET_CHARS);
    // A shorter known target is even further from a value too long for this one.
    comparable(chars, longest).then_some(longest)
}

/// A field value's warnings, as a target's: none for free text (a value with white space);
/// for one word, mixed scripts, then the first known target of a [`comparable`] length it
/// looks like.
pub(crate) fn value_warnings(value: &str, known: &KnownTargets) -> Vec<Warning> {
    if !is_identifier_like(value) {
        return Vec::new();
    }
    let chars = value.chars().count();
    let comparable = known
        .known
        .iter()
        .filter(|known| comparable(chars, known.chars));
    mixed_scripts(value)
        .into_iter()
        .chain(looks_like_among(value, comparable))
        .collect()
}

/// The warnings of each value of `fields`, in their order (a card's lines under its fields).
pub fn field_warnings<'a>(
    fields: impl IntoIterator<Item = &'a String>,
    known: &KnownTargets,
) -> Vec<Vec<Warning>> {
    fields
        .into_iter()
        .map(|value| value_warnings(value, known))
        .collect()
}

/// How two targets look alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alike {
    /// One UTS #39 skeleton.
    Skeleton,
    /// One skeleton once their nonspacing marks are removed (and not before).
    WithoutMarks,
}

/// Two of a mandate's targets that look alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pair {
    pub(crate) first: usize,
    pub(crate) second: usize,
    pub(crate) alike: Alike,
    pub(crate) difference: Difference,
}

/// The first two of `targets` that look alike (one skeleton, with or without their nonspacing
/// marks, and different strings), with where they differ; `None` when no two do.
pub(crate) fn confusable_pair(targets: &[String]) -> Option<Pair> {
    let skeletons: Vec<(String, String)> = targets
        .iter()
        .map(|target| (skeleton(target), bare_skeleton(target)))
        .collect();
    (0..targets.len()).find_map(|second| {
        (0..second).find_map(|first| {
            let (a, b) = (&skeletons[first], &skeletons[second]);
            let alike = if a.0 == b.0 {
                Alike::Skeleton
            } else if a.1 == b.1 {
                Alike::WithoutMarks
            } else {
                return None;
            };
            let difference = first_difference(&targets[first], &targets[second])?;
            Some(Pair {
                first,
                second,
                alike,
                difference,
            })
        })
    })
}

/// The refusal message for a mandate request naming two look-alike targets (docs/CONTRACT-NOTES.md,
/// "Look-alike targets": the owner
/// could not tell from its card which of the two a Grant opens), or `None`.
pub(crate) fn mandate_targets_refusal(targets: &[String]) -> Option<String> {
    let pair = confusable_pair(targets)?;
    let side = |c: Option<char>| c.map_or_else(|| "its end".to_owned(), describe);
    let how = match pair.alike {
        Alike::Skeleton => "one UTS #39 skeleton",
        Alike::WithoutMarks => "one UTS #39 skeleton without their nonspacing marks",
    };
    Some(format!(
        "targets[{}] {:?} and targets[{}] {:?} look alike ({how}) but differ at char {}: {} in \
         the first, {} in the second",
        pair.first,
        targets[pair.first],
        pair.second,
        targets[pair.second],
        pair.difference.position,
        side(pair.difference.ours),
        side(pair.difference.theirs),
    ))
}

/// Where `ours` and `theirs` first differ; `None` when they are equal.
pub(crate) fn first_difference(ours: &str, theirs: &str) -> Option<Difference> {
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
pub(crate) fn describe(c: char) -> String {
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

/// The widest look-alike warning a field's `value` could draw: a known target of
/// [`comparable_chars`] characters of two UTF-16 units each, and the longest descriptions;
/// `None` for a value too long to be compared with any known target.
pub(crate) fn widest_value_looks_like(value: &str) -> Option<Warning> {
    let chars = comparable_chars(value)?;
    Some(Warning::LooksLike {
        known: "\u{1F600}".repeat(chars),
        difference: Difference {
            position: chars + 1,
            ours: Some(LONGEST_DESCRIBED),
            theirs: Some(LONGEST_DESCRIBED),
        },
    })
}

/// Whether `value` (a request's own `origin`) could pass for the labelled socket's `label` on a
/// card: it looks like the label (its skeleton, with or without nonspacing marks, case aside), or
/// begins with it. The label is the one part of "where from" the session cannot choose, and a
/// card shows it first: nothing the session writes may read as one there.
pub fn passes_for_label(value: &str, label: &str) -> bool {
    let fold = |s: &str| bare_skeleton(&s.to_lowercase()).to_lowercase();
    fold(value).starts_with(&fold(label))
}

/// What the card puts between a labelled socket's origin and a request's own.
pub const ORIGIN_SEPARATOR: &str = "·";

/// UTS #39's skeleton: NFD, confusables mapped to their prototypes, NFD again.
fn skeleton(s: &str) -> String {
    unicode_security::skeleton(s).collect()
}

/// The skeleton of `s` without its nonspacing marks: NFD, every General_Category Mn removed,
/// then the skeleton. `@mı̇la_news` (U+0131 U+0307), `@mi̇la_news` and `@mila_̱news` all come to
/// `@mila_news`'s, which their plain skeletons do not.
fn bare_skeleton(s: &str) -> String {
    let bare: String = s.nfd().filter(|&c| !is_nonspacing_category(c)).collect();
    skeleton(&bare)
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

fn is_nonspacing_category(c: char) -> bool {
    GENERAL_CATEGORY.get(c) == GeneralCategory::NonspacingMark
}

/// A nonspacing mark that draws something (not a default-ignorable one).
fn is_nonspacing(c: char) -> bool {
    is_nonspacing_category(c) && !DEFAULT_IGNORABLE.contains(c)
}

fn is_mark(c: char) -> bool {
    GeneralCategoryGroup::Mark.contains(GENERAL_CATEGORY.get(c))
}

/// A letter, mark or number that draws something: a variation selector (Mn, default-ignorable)
/// is left out, as punctuation is.
/// A punctuation mark or symbol outside ASCII whose confusable skeleton is ASCII: it draws as
/// the `_`, `.`, `/`, `-` or letter of a handle or URL it imitates (U+FF3F FULLWIDTH LOW LINE,
/// U+2024 ONE DOT LEADER, U+2215 DIVISION SLASH, U+212E ESTIMATED SYMBOL). The scripts leave
/// punctuation and symbols out, so these are judged here. An emoji's skeleton is itself.
fn imitates_ascii_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    let category = GENERAL_CATEGORY.get(c);
    let punctuation_or_symbol = GeneralCategoryGroup::Punctuation.contains(category)
        || GeneralCategoryGroup::Symbol.contains(category);
    punctuation_or_symbol
        && unicode_security::skeleton(c.encode_utf8(&mut [0; 4])).all(|s| s.is_ascii())
}

fn is_letter_like(c: char) -> bool {
    if DEFAULT_IGNORABLE.contains(c) {
        return false;
    }
    let category = GENERAL_CATEGORY.get(c);
    GeneralCategoryGroup::Letter.contains(category)
        || GeneralCategoryGroup::Mark.contains(category)
        || GeneralCategoryGroup::Number.contains(category)
}

#[cfg(test)]
mod tests;
