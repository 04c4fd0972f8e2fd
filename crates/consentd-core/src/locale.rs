//! The owner's languages and the Fluent messages the bot speaks in them (`owner.language`).
//!
//! The three locale files are compiled into the binary, so a running daemon can never miss one.
//! Each language gets one thread-safe `FluentBundle`, built once at start.
//!
//! Isolation marks are turned off: Fluent would otherwise wrap every placeable in U+2068/U+2069,
//! invisible characters that consentd itself refuses in an ask, and that would also count against
//! Telegram's message limits.

use std::fmt;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use unic_langid::LanguageIdentifier;

pub use crate::config::Language;

impl Language {
    /// The language for a Telegram `language_code` ("ru", "ru-RU", "pt-br", "en_US"): its primary
    /// subtag, case-insensitively. `None` for any other language.
    pub fn from_code(code: &str) -> Option<Language> {
        let primary = code.split(['-', '_']).next()?;
        Language::ALL
            .into_iter()
            .find(|lang| primary.eq_ignore_ascii_case(lang.as_str()))
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The locale file, compiled in.
    pub(crate) fn source(self) -> &'static str {
        match self {
            Language::En => include_str!("../../../locales/en/consentd.ftl"),
            Language::Ru => include_str!("../../../locales/ru/consentd.ftl"),
            Language::Pt => include_str!("../../../locales/pt/consentd.ftl"),
        }
    }
}

/// One argument of a message. Counts go in as numbers so that Fluent picks the plural form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FluentArg<'a> {
    Str(&'a str),
    Num(i64),
}

impl<'a> From<&'a str> for FluentArg<'a> {
    fn from(s: &'a str) -> Self {
        FluentArg::Str(s)
    }
}

impl<'a> From<&'a String> for FluentArg<'a> {
    fn from(s: &'a String) -> Self {
        FluentArg::Str(s)
    }
}

impl From<i64> for FluentArg<'_> {
    fn from(n: i64) -> Self {
        FluentArg::Num(n)
    }
}

impl From<u32> for FluentArg<'_> {
    fn from(n: u32) -> Self {
        FluentArg::Num(n.into())
    }
}

impl From<u64> for FluentArg<'_> {
    fn from(n: u64) -> Self {
        FluentArg::Num(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<usize> for FluentArg<'_> {
    fn from(n: usize) -> Self {
        FluentArg::Num(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl<'a> From<FluentArg<'a>> for FluentValue<'a> {
    fn from(arg: FluentArg<'a>) -> Self {
        match arg {
            FluentArg::Str(s) => FluentValue::from(s),
            FluentArg::Num(n) => FluentValue::from(n),
        }
    }
}

/// A locale file that does not load. The files are compiled in, so this is a build defect; the
/// tests load every file.
#[derive(Debug, thiserror::Error)]
pub enum LocaleError {
    #[error("locales/{lang}/consentd.ftl does not parse: {errors}")]
    Parse { lang: Language, errors: String },
    #[error("locales/{lang}/consentd.ftl defines a message twice: {errors}")]
    Duplicate { lang: Language, errors: String },
}

/// The messages in every language.
pub struct Locales {
    /// Indexed by [`Language::index`].
    bundles: Vec<FluentBundle<FluentResource>>,
}

impl fmt::Debug for Locales {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locales")
            .field("languages", &Language::ALL)
            .finish()
    }
}

impl Locales {
    /// Loads the compiled-in locale files.
    pub fn new() -> Result<Locales, LocaleError> {
        Locales::from_sources(Language::ALL.map(|lang| (lang, lang.source())))
    }

    /// Loads the given sources, one per language in [`Language::ALL`] order.
    pub(crate) fn from_sources(sources: [(Language, &str); 3]) -> Result<Locales, LocaleError> {
        let mut bundles = Vec::with_capacity(sources.len());
        for (i, (lang, source)) in sources.into_iter().enumerate() {
            debug_assert_eq!(lang.index(), i);
            let resource = FluentResource::try_new(source.to_owned()).map_err(|(_, errors)| {
                LocaleError::Parse {
                    lang,
                    errors: format!("{errors:?}"),
                }
            })?;
            let langid: LanguageIdentifier = lang
                .as_str()
                .parse()
                .expect("en, ru and pt are valid language identifiers");
            let mut bundle = FluentBundle::new_concurrent(vec![langid]);
            bundle.set_use_isolating(false);
            bundle
                .add_resource(resource)
                .map_err(|errors| LocaleError::Duplicate {
                    lang,
                    errors: format!("{errors:?}"),
                })?;
            bundles.push(bundle);
        }
        Ok(Locales { bundles })
    }

    #[cfg(test)]
    /// Whether `lang`'s own file has the message `id` (no fallback).
    pub(crate) fn has(&self, lang: Language, id: &str) -> bool {
        self.bundles[lang.index()].has_message(id)
    }

    /// The message `id` in `lang` with `args`. A message missing in `lang` comes from English; one
    /// missing in English too is shown as its id, so a slip shows up as a visible id instead of
    /// an empty message (the tests keep every id present everywhere).
    pub fn t(&self, lang: Language, id: &str, args: &[(&str, FluentArg)]) -> String {
        self.format(lang, id, args)
            .or_else(|| self.format(Language::En, id, args))
            .unwrap_or_else(|| id.to_owned())
    }

    /// The message `id` with `args`, and with `values` — strings the bot shows but did not write
    /// (a target, a field, a result, a name) — set apart as code spans wherever the sentence puts
    /// them.
    pub(crate) fn styled(
        &self,
        lang: Language,
        id: &str,
        args: &[(&str, FluentArg)],
        values: &[(&str, &str)],
    ) -> crate::styled::Styled {
        let marks: Vec<String> = (0..values.len()).map(crate::styled::mark).collect();
        let mut all: Vec<(&str, FluentArg)> = args.to_vec();
        all.extend(
            values
                .iter()
                .zip(&marks)
                .map(|((name, _), mark)| (*name, FluentArg::Str(mark))),
        );
        let template = self.t(lang, id, &all);
        let values: Vec<&str> = values.iter().map(|(_, value)| *value).collect();
        crate::styled::Styled::fill(&template, &values)
    }

    /// The message in exactly `lang`, with the errors Fluent reported while formatting it.
    pub(crate) fn format_checked(
        &self,
        lang: Language,
        id: &str,
        args: &[(&str, FluentArg)],
    ) -> Option<(String, Vec<fluent_bundle::FluentError>)> {
        let bundle = &self.bundles[lang.index()];
        let pattern = bundle.get_message(id)?.value()?;
        let mut fluent_args = FluentArgs::with_capacity(args.len());
        for (name, value) in args {
            fluent_args.set(*name, FluentValue::from(*value));
        }
        let mut errors = Vec::new();
        let text = bundle.format_pattern(pattern, Some(&fluent_args), &mut errors);
        Some((text.into_owned(), errors))
    }

    fn format(&self, lang: Language, id: &str, args: &[(&str, FluentArg)]) -> Option<String> {
        // A formatting error (a missing argument) still yields text with the placeable's name in
        // it, which is more useful to the owner than nothing; the tests keep such errors out.
        self.format_checked(lang, id, args).map(|(text, _)| text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluent_syntax::ast;
    use std::collections::{BTreeMap, BTreeSet};

    fn locales() -> Locales {
        Locales::new().expect("the locale files load")
    }

    /// What one message or term of a locale file holds, for the tests.
    #[derive(Debug, Default, PartialEq)]
    struct Entry {
        /// Every variable it uses anywhere: selectors, variants, nested placeables, arguments.
        vars: BTreeSet<String>,
        /// Each select expression over a variable: the variable and the variants' keys.
        selects: Vec<(String, BTreeSet<String>)>,
    }

    /// Each message id in `source` (and each term, as `-name`) with what it holds.
    fn entries(source: &str) -> BTreeMap<String, Entry> {
        let resource = fluent_syntax::parser::parse(source).expect("the locale file parses");
        let mut out = BTreeMap::new();
        for entry in &resource.body {
            let (id, value, attributes) = match entry {
                ast::Entry::Message(m) => (m.id.name.to_owned(), m.value.as_ref(), &m.attributes),
                ast::Entry::Term(t) => (format!("-{}", t.id.name), Some(&t.value), &t.attributes),
                ast::Entry::Junk { content } => panic!("junk in a locale file: {content}"),
                _ => continue,
            };
            let mut held = Entry::default();
            for pattern in value.into_iter().chain(attributes.iter().map(|a| &a.value)) {
                pattern_vars(pattern, &mut held);
            }
            let previous = out.insert(id.clone(), held);
            assert!(previous.is_none(), "{id} defined twice");
        }
        out
    }

    /// The messages of `source` (no terms) with the set of variables each one uses.
    fn messages(source: &str) -> BTreeMap<String, BTreeSet<String>> {
        entries(source)
            .into_iter()
            .filter(|(id, _)| !id.starts_with('-'))
            .map(|(id, entry)| (id, entry.vars))
            .collect()
    }

    fn pattern_vars(pattern: &ast::Pattern<&str>, held: &mut Entry) {
        for element in &pattern.elements {
            if let ast::PatternElement::Placeable { expression } = element {
                expression_vars(expression, held);
            }
        }
    }

    fn expression_vars(expression: &ast::Expression<&str>, held: &mut Entry) {
        match expression {
            ast::Expression::Select { selector, variants } => {
                if let ast::InlineExpression::VariableReference { id } = selector {
                    let keys = variants
                        .iter()
                        .map(|variant| match &variant.key {
                            ast::VariantKey::Identifier { name } => (*name).to_owned(),
                            ast::VariantKey::NumberLiteral { value } => (*value).to_owned(),
                        })
                        .collect();
                    held.selects.push((id.name.to_owned(), keys));
                }
                inline_vars(selector, held);
                for variant in variants {
                    pattern_vars(&variant.value, held);
                }
            }
            ast::Expression::Inline(inline) => inline_vars(inline, held),
        }
    }

    fn inline_vars(inline: &ast::InlineExpression<&str>, held: &mut Entry) {
        match inline {
            ast::InlineExpression::VariableReference { id } => {
                held.vars.insert(id.name.to_owned());
            }
            ast::InlineExpression::Placeable { expression } => expression_vars(expression, held),
            ast::InlineExpression::FunctionReference { arguments, .. }
            | ast::InlineExpression::TermReference {
                arguments: Some(arguments),
                ..
            } => call_vars(arguments, held),
            _ => {}
        }
    }

    fn call_vars(arguments: &ast::CallArguments<&str>, held: &mut Entry) {
        for positional in &arguments.positional {
            inline_vars(positional, held);
        }
        for named in &arguments.named {
            inline_vars(&named.value, held);
        }
    }

    #[test]
    fn every_locale_has_the_same_messages_with_the_same_variables() {
        let en = entries(Language::En.source());
        assert!(en.len() > 20);
        for lang in [Language::Ru, Language::Pt] {
            let other = entries(lang.source());
            let en_ids: BTreeSet<_> = en.keys().collect();
            let ids: BTreeSet<_> = other.keys().collect();
            assert_eq!(
                en_ids.symmetric_difference(&ids).collect::<Vec<_>>(),
                Vec::<&&String>::new(),
                "{lang} and en differ in message (or term) ids"
            );
            for (id, entry) in &en {
                assert_eq!(
                    other[id].vars, entry.vars,
                    "{lang} {id} uses other variables than en"
                );
            }
        }
    }

    /// The plural category Fluent gives `n` in `lang`, asked of Fluent itself.
    fn plural_category(lang: Language, n: i64) -> String {
        let probe = "probe = { $n ->\n [zero] zero\n [one] one\n [two] two\n [few] few\n \
                     [many] many\n *[other] other\n }\n";
        let mut sources = Language::ALL.map(|l| (l, "probe = x\n"));
        sources[lang.index()].1 = probe;
        let locales = Locales::from_sources(sources).unwrap();
        locales.t(lang, "probe", &[("n", n.into())])
    }

    #[test]
    fn every_plural_has_a_variant_for_each_form_its_language_uses() {
        const CATEGORIES: [&str; 6] = ["zero", "one", "two", "few", "many", "other"];
        // The probe answers as NOTES.md's CLDR facts say.
        assert_eq!(plural_category(Language::En, 0), "other");
        assert_eq!(plural_category(Language::Ru, 22), "few");
        assert_eq!(plural_category(Language::Ru, 11), "many");
        assert_eq!(plural_category(Language::Pt, 0), "one");
        for lang in Language::ALL {
            let forms: Vec<(i64, String)> =
                (0..=200).map(|n| (n, plural_category(lang, n))).collect();
            let used: BTreeSet<&str> = forms.iter().map(|(_, form)| form.as_str()).collect();
            for (id, entry) in entries(lang.source()) {
                for (var, keys) in &entry.selects {
                    // "other" alone is also any select's catch-all ($why's).
                    if !keys
                        .iter()
                        .any(|key| CATEGORIES[..5].contains(&key.as_str()))
                    {
                        continue; // Not a plural: [yes]/[no], a reason code, a month.
                    }
                    for (n, form) in &forms {
                        assert!(
                            keys.contains(form) || keys.contains(&n.to_string()),
                            "{lang} {id}: ${var} = {n} is \"{form}\", which has no variant"
                        );
                    }
                    // A category the language never gives a whole number is dead text
                    // ([few] in pt); "other" is the usual catch-all and may stay.
                    for key in keys.iter().filter(|k| CATEGORIES.contains(&k.as_str())) {
                        assert!(
                            used.contains(key.as_str()) || key == "other",
                            "{lang} {id}: [{key}] never applies to a count in {lang}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_amount_of_dollars_is_written_as_its_language_writes_money() {
        // The code writes the number (`card::usd`); each locale puts the sign where its
        // language does, with a no-break space where there is a space.
        let locales = locales();
        for lang in Language::ALL {
            let money = |number: &str| match lang {
                Language::En => format!("${number}"),
                Language::Ru => format!("{number}\u{a0}$"),
                Language::Pt => format!("US$\u{a0}{number}"),
            };
            for (id, vars) in messages(lang.source()) {
                // Each amount its own number, so that each one's sign is checked.
                let numbers: Vec<String> =
                    (1..=vars.len()).map(|i| format!("{i}{i},{i}{i}")).collect();
                let args: Vec<(&str, FluentArg)> = vars
                    .iter()
                    .zip(&numbers)
                    .map(|(var, number)| match var.starts_with("usd") {
                        true => (var.as_str(), FluentArg::Str(number)),
                        false => (var.as_str(), FluentArg::Num(1)),
                    })
                    .collect();
                let text = locales.t(lang, &id, &args);
                let mut amounts = 0;
                for (var, number) in vars.iter().zip(&numbers) {
                    if var.starts_with("usd") {
                        amounts += 1;
                        assert!(
                            text.contains(&money(number)),
                            "{lang} {id}: ${var} in {text:?}"
                        );
                    }
                }
                assert_eq!(text.matches('$').count(), amounts, "{lang} {id}: {text:?}");
            }
        }
    }

    #[test]
    fn standing_permissions_are_named_for_a_term_not_for_ever() {
        // They last at most 7 days (`mandate_max_days`, docs/CONFIG.md): "permanent" in ru or pt
        // promised the owner more.
        let locales = locales();
        for (lang, never) in [(Language::Ru, "постоянн"), (Language::Pt, "permanente")] {
            for (id, vars) in messages(lang.source()) {
                let args: Vec<(&str, FluentArg)> = vars
                    .iter()
                    .map(|v| (v.as_str(), FluentArg::Num(1)))
                    .collect();
                let text = locales.t(lang, &id, &args).to_lowercase();
                assert!(!text.contains(never), "{lang} {id}: {text}");
            }
        }
        let title = |lang| {
            locales.t(
                lang,
                "mandate-title",
                &[("label", "X".into()), ("class", "c".into())],
            )
        };
        assert_eq!(title(Language::Ru), "Временное разрешение: X (c)");
        assert_eq!(title(Language::Pt), "Permissão temporária: X (c)");
    }

    #[test]
    fn every_message_renders_for_every_number() {
        let locales = locales();
        let en = messages(Language::En.source());
        for lang in Language::ALL {
            for (id, vars) in &en {
                for n in [0, 1, 2, 5, 11, 21, 101] {
                    let args: Vec<(&str, FluentArg)> = vars
                        .iter()
                        .map(|v| (v.as_str(), FluentArg::Num(n)))
                        .collect();
                    let (text, errors) = locales
                        .format_checked(lang, id, &args)
                        .unwrap_or_else(|| panic!("{lang} has no value for {id}"));
                    assert!(errors.is_empty(), "{lang} {id} n={n}: {errors:?}");
                    assert!(!text.trim().is_empty(), "{lang} {id} is empty");
                    assert!(
                        !text.contains(['\u{2068}', '\u{2069}']),
                        "{lang} {id} has isolation marks"
                    );
                }
            }
        }
    }

    #[test]
    fn russian_plurals() {
        let locales = locales();
        let bytes = |n: i64| locales.t(Language::Ru, "size-bytes", &[("n", n.into())]);
        let expected = [
            (1, "1 байт"),
            (2, "2 байта"),
            (5, "5 байт"),
            (11, "11 байт"),
            (21, "21 байт"),
            (22, "22 байта"),
            (25, "25 байт"),
        ];
        for (n, want) in expected {
            assert_eq!(bytes(n), want);
        }
        let waiting = |n: i64| locales.t(Language::Ru, "pending-count", &[("count", n.into())]);
        assert_eq!(waiting(1), "1 запрос ждёт ответа:");
        assert_eq!(waiting(2), "2 запроса ждут ответа:");
        assert_eq!(waiting(5), "5 запросов ждут ответа:");
        assert_eq!(waiting(11), "11 запросов ждут ответа:");
        assert_eq!(waiting(21), "21 запрос ждёт ответа:");
        assert_eq!(waiting(22), "22 запроса ждут ответа:");
        assert_eq!(waiting(25), "25 запросов ждут ответа:");
    }

    #[test]
    fn portuguese_plurals() {
        let locales = locales();
        let bytes = |n: i64| locales.t(Language::Pt, "size-bytes", &[("n", n.into())]);
        // CLDR "pt" (Brazil): 0 and 1 are "one".
        assert_eq!(bytes(0), "0 byte");
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(2), "2 bytes");
    }

    #[test]
    fn english_plurals() {
        let locales = locales();
        let bytes = |n: i64| locales.t(Language::En, "size-bytes", &[("n", n.into())]);
        assert_eq!(bytes(0), "0 bytes");
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(2), "2 bytes");
    }

    #[test]
    fn missing_messages_fall_back_to_english_then_the_id() {
        let locales = Locales::from_sources([
            (
                Language::En,
                "hello = Hello, { $name }!\nonly-en = Only here\n",
            ),
            (Language::Ru, "hello = Привет, { $name }!\n"),
            (Language::Pt, "hello = Olá, { $name }!\n"),
        ])
        .unwrap();
        let name = [("name", FluentArg::Str("Mila"))];
        assert_eq!(locales.t(Language::Ru, "hello", &name), "Привет, Mila!");
        assert_eq!(locales.t(Language::Pt, "only-en", &[]), "Only here");
        assert_eq!(locales.t(Language::Pt, "nowhere", &[]), "nowhere");
        assert!(!locales.has(Language::Ru, "only-en"));
    }

    #[test]
    fn a_broken_file_is_an_error() {
        let err = Locales::from_sources([
            (Language::En, "ok = fine\n"),
            (Language::Ru, "broken = { $\n"),
            (Language::Pt, "ok = bem\n"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("locales/ru/"), "{err}");
        let err = Locales::from_sources([
            (Language::En, "ok = fine\nok = twice\n"),
            (Language::Ru, "ok = да\n"),
            (Language::Pt, "ok = bem\n"),
        ])
        .unwrap_err();
        assert!(
            matches!(
                err,
                LocaleError::Duplicate {
                    lang: Language::En,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn language_codes() {
        assert_eq!(Language::from_code("ru-RU"), Some(Language::Ru));
        assert_eq!(Language::from_code("pt-br"), Some(Language::Pt));
        assert_eq!(Language::from_code("en_US"), Some(Language::En));
        assert_eq!(Language::from_code("EN"), Some(Language::En));
        assert_eq!(Language::from_code("de"), None);
        assert_eq!(Language::from_code("english"), None);
        assert_eq!(Language::from_code(""), None);
        for lang in Language::ALL {
            assert_eq!(Language::from_code(lang.as_str()), Some(lang));
        }
    }

    #[test]
    fn locales_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Locales>();
    }
}
