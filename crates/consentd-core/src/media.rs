//! Whether an attachment's bytes are the media type its ask declares, by their magic bytes.
//!
//! The card lists each attachment with its declared media type, and the sender chooses from
//! that type how Telegram shows it (a photo for PNG and JPEG, a document otherwise); a viewer
//! the owner or the command's reader opens it with picks its program by that type too. An ELF
//! declared `image/png` would be shown as a photo that does not draw and handed to the command
//! as an image. So at intake, for the types the card shows as media and the documents a viewer
//! opens by type — `image/*`, `video/*`, `audio/*` and `application/pdf` — the bytes must carry
//! the declared type's signature, as the `infer` crate knows them.
//!
//! The rule and its limits:
//! - A declared type is matched without regard to case, and a few common names of a type that
//!   `infer` calls otherwise (`image/jpg`, `audio/wav`, `audio/mp4`, …) are read as that type
//!   ([`ALIASES`]).
//! - `image/svg+xml` has no signature: it is text, so its bytes must be UTF-8 (a byte order mark
//!   allowed) with no NUL byte, and start, after any white space, with `<?xml`, `<!--`,
//!   `<!DOCTYPE` or `<svg`. This keeps a binary out; what the text says is not checked.
//! - Any other declared type in scope that `infer` has no signature for (`image/x-thing`,
//!   `video/x-foo`) is refused: a type that cannot be checked would let any bytes through under
//!   a media type's name. The session sends such a file as `application/octet-stream`.
//! - Types outside the scope (`text/plain`, `application/zip`, `application/octet-stream`) are
//!   not checked; the card shows them as files.
//! - A signature is the start of a file, not its whole: a file that begins like a PNG and goes
//!   on as something else passes. This stops a mislabelled file, not a crafted polyglot.
//! - `infer`'s signatures decide. A rare variant they miss (an MP3 with neither an ID3 tag nor
//!   one of the frame headers `infer` lists, say) is refused; the session can send such a file
//!   as `application/octet-stream`, and the card then says so.

use crate::reason::{Reason, Refusal};

/// Declared names that mean a type `infer` knows under another name, each with the `infer`
/// types its bytes may have. A declared type not listed here stands for itself.
const ALIASES: &[(&str, &[&str])] = &[
    ("image/jpg", &["image/jpeg"]),
    ("image/pjpeg", &["image/jpeg"]),
    ("image/x-png", &["image/png"]),
    ("image/x-icon", &["image/vnd.microsoft.icon"]),
    ("image/x-ms-bmp", &["image/bmp"]),
    // `infer` calls HEIF with HEIC brands image/heif; Apple's photos are declared image/heic.
    ("image/heic", &["image/heif"]),
    ("audio/mp3", &["audio/mpeg"]),
    ("audio/wav", &["audio/x-wav"]),
    ("audio/wave", &["audio/x-wav"]),
    ("audio/vnd.wave", &["audio/x-wav"]),
    ("audio/flac", &["audio/x-flac"]),
    ("audio/aiff", &["audio/x-aiff"]),
    ("audio/mid", &["audio/midi"]),
    ("audio/x-midi", &["audio/midi"]),
    // An .m4a is an MP4 container: with the M4A brand `infer` says audio/m4a, with a
    // general MP4 brand (isom, mp42) video/mp4.
    ("audio/mp4", &["audio/m4a", "video/mp4"]),
    ("audio/x-m4a", &["audio/m4a", "video/mp4"]),
    ("audio/m4a", &["audio/m4a", "video/mp4"]),
    // Python's mimetypes (the Python client's guess) names an .m4v video/mp4.
    ("video/mp4", &["video/mp4", "video/x-m4v"]),
    ("audio/webm", &["video/webm"]),
    ("video/avi", &["video/x-msvideo"]),
    ("video/msvideo", &["video/x-msvideo"]),
];

/// The type SVG is declared as: text, held to [`svg_problem`] rather than a signature.
const SVG: &str = "image/svg+xml";

/// How the starts of an SVG's text may go, after any white space (compared without regard to
/// case: `<!doctype` is common in the wild).
const SVG_STARTS: &[&str] = &["<?xml", "<!--", "<!doctype", "<svg"];

/// How a declared (lower-case) type's bytes are held to it.
#[derive(Debug, PartialEq, Eq)]
enum Rule<'a> {
    /// Out of scope: the card shows the file as a file.
    Unchecked,
    /// The bytes must carry the signature of one of these `infer` types.
    Signature(Vec<&'a str>),
    /// SVG text ([`svg_problem`]).
    Svg,
    /// In scope, but nothing to hold the bytes to: refused.
    Unknown,
}

/// Checks that `bytes` are the media type `declared` (already a well-formed `type/subtype`) at
/// `place` (`attachments[0]`). See the module documentation for the scope and its limits.
pub(crate) fn check(place: &str, declared: &str, bytes: &[u8]) -> Result<(), Refusal> {
    let lower = declared.to_ascii_lowercase();
    let found = match rule(&lower) {
        Rule::Unchecked => return Ok(()),
        Rule::Signature(accepted) if accepted.iter().any(|t| infer::is_mime(bytes, t)) => {
            return Ok(())
        }
        Rule::Signature(_) => match infer::get(bytes) {
            Some(kind) => format!("they look like {}", kind.mime_type()),
            None => "they match no known signature".to_owned(),
        },
        Rule::Svg => match svg_problem(bytes) {
            None => return Ok(()),
            Some(problem) => problem.to_owned(),
        },
        Rule::Unknown => {
            return Err(Refusal::new(
                Reason::BadRequest,
                format!(
                    "{place} is declared {declared}, a media type whose bytes consentd cannot \
                     check; if it is not one of the known image, video or audio types, send it \
                     as application/octet-stream"
                ),
            ))
        }
    };
    Err(Refusal::new(
        Reason::BadRequest,
        format!(
            "{place} is declared {declared}, but its bytes are not {} ({found})",
            short_name(&lower)
        ),
    ))
}

/// The rule for a declared (lower-case) type.
fn rule(declared: &str) -> Rule<'_> {
    let in_scope = declared == "application/pdf"
        || ["image/", "video/", "audio/"]
            .iter()
            .any(|top| declared.starts_with(top));
    if !in_scope {
        return Rule::Unchecked;
    }
    if declared == SVG {
        return Rule::Svg;
    }
    match ALIASES.iter().find(|(name, _)| *name == declared) {
        Some((_, types)) => Rule::Signature(types.to_vec()),
        None if infer::is_mime_supported(declared) => Rule::Signature(vec![declared]),
        None => Rule::Unknown,
    }
}

/// Why `bytes` are not SVG text, if they are not: UTF-8 (after an optional byte order mark)
/// with no NUL byte, starting, after any white space, as [`SVG_STARTS`] says.
fn svg_problem(bytes: &[u8]) -> Option<&'static str> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some("they are not UTF-8 text");
    };
    if text.contains('\0') {
        return Some("they hold a NUL byte");
    }
    let start = text.trim_start().as_bytes();
    let starts_well = SVG_STARTS.iter().any(|prefix| {
        start
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
    });
    (!starts_well).then_some("the text does not start with <svg, <?xml, <!-- or <!DOCTYPE")
}

/// What a message calls a type: its subtype without `x-` or a `+` suffix, in capitals (`PNG`,
/// `PDF`, `WAV`, `SVG`).
fn short_name(declared: &str) -> String {
    let subtype = declared.split_once('/').map_or(declared, |(_, s)| s);
    let subtype = subtype.split_once('+').map_or(subtype, |(s, _)| s);
    subtype
        .strip_prefix("x-")
        .unwrap_or(subtype)
        .to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start of a 64-bit ELF executable (`infer` wants more than 52 bytes of it).
    fn elf() -> Vec<u8> {
        let mut bytes = b"\x7fELF\x02\x01\x01\x00".to_vec();
        bytes.resize(64, 0);
        bytes.extend_from_slice(b"\x02\x00\x3e\x00");
        bytes
    }

    /// The start of a WebM file: an EBML header naming its doc type (`infer` reads 257 bytes).
    fn webm() -> Vec<u8> {
        let mut bytes = b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm".to_vec();
        bytes.resize(300, 0);
        bytes
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01";
    const JPEG_JFIF: &[u8] = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01";
    const JPEG_EXIF: &[u8] = b"\xff\xd8\xff\xe1\x00\x16Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08";
    /// A JPEG with no APPn segment at all: straight to a quantisation table.
    const JPEG_RAW: &[u8] = b"\xff\xd8\xff\xdb\x00\x43\x00\x08\x06\x06\x07\x06\x05\x08";
    const GIF87A: &[u8] = b"GIF87a\x01\x00\x01\x00\x80\x00\x00";
    const GIF89A: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00";
    const WEBP: &[u8] = b"RIFF\x24\x00\x00\x00WEBPVP8L\x18\x00\x00\x00";
    const PDF: &[u8] = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n";
    /// A PDF with bytes before its header, which readers allow within the first 1024.
    const PDF_LATE_HEADER: &[u8] = b"\xef\xbb\xbf\n\n%PDF-1.4\n1 0 obj\n";
    const MP4: &[u8] = b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2mp41";
    const M4V: &[u8] = b"\x00\x00\x00\x20ftypM4V \x00\x00\x02\x00M4V M4A mp42";
    const M4A: &[u8] = b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00M4A mp42isom";
    const MP3_ID3: &[u8] = b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x64";
    const WAV: &[u8] = b"RIFF\x24\x08\x00\x00WAVEfmt \x10\x00\x00\x00";
    const OGG: &[u8] = b"OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00";
    const TEXT: &[u8] = b"just some plain text, no signature at all\n";

    fn refused(declared: &str, bytes: &[u8]) -> String {
        match check("attachments[0]", declared, bytes) {
            Err(refusal) => {
                assert_eq!(refusal.reason, Reason::BadRequest, "{declared}");
                refusal.message
            }
            Ok(()) => panic!("{declared}: accepted bytes that are not {declared}"),
        }
    }

    #[test]
    fn an_elf_declared_a_png_is_refused_in_these_words() {
        assert_eq!(
            refused("image/png", &elf()),
            "attachments[0] is declared image/png, but its bytes are not PNG \
             (they look like application/x-executable)"
        );
    }

    #[test]
    fn bytes_that_are_not_the_declared_type_are_refused() {
        const EXE: &str = "they look like application/x-executable";
        const NONE: &str = "they match no known signature";
        let elf = elf();
        // (declared, bytes, what the message says they are not, what it says they look like)
        let cases: &[(&str, &[u8], &str, &str)] = &[
            ("image/png", &elf, "PNG", EXE),
            ("image/jpeg", &elf, "JPEG", EXE),
            ("application/pdf", &elf, "PDF", EXE),
            ("image/jpeg", PNG, "JPEG", "they look like image/png"),
            ("image/gif", TEXT, "GIF", NONE),
            ("IMAGE/PNG", &elf, "PNG", EXE),
            ("image/jpg", &elf, "JPG", EXE),
            ("audio/wav", PNG, "WAV", "they look like image/png"),
            ("video/mp4", TEXT, "MP4", NONE),
            ("image/webp", GIF89A, "WEBP", "they look like image/gif"),
            ("application/pdf", PNG, "PDF", "they look like image/png"),
        ];
        for (declared, bytes, not, looks) in cases {
            assert_eq!(
                refused(declared, bytes),
                format!(
                    "attachments[0] is declared {declared}, but its bytes are not {not} ({looks})"
                ),
            );
        }
    }

    #[test]
    fn genuine_files_of_each_type_are_accepted() {
        let webm = webm();
        let cases: &[(&str, &[u8])] = &[
            ("image/png", PNG),
            ("image/jpeg", JPEG_JFIF),
            ("image/jpeg", JPEG_EXIF),
            ("image/jpeg", JPEG_RAW),
            ("image/jpg", JPEG_EXIF),
            ("Image/JPEG", JPEG_JFIF),
            ("image/gif", GIF87A),
            ("image/gif", GIF89A),
            ("image/webp", WEBP),
            ("application/pdf", PDF),
            ("application/pdf", PDF_LATE_HEADER),
            ("video/mp4", MP4),
            ("video/mp4", M4V),
            ("audio/mp4", M4A),
            ("audio/mp4", MP4),
            ("audio/mpeg", MP3_ID3),
            ("audio/wav", WAV),
            ("audio/x-wav", WAV),
            ("audio/ogg", OGG),
            ("audio/webm", &webm),
            ("video/webm", &webm),
        ];
        for (declared, bytes) in cases {
            assert_eq!(
                check("attachments[0]", declared, bytes),
                Ok(()),
                "{declared}"
            );
        }
    }

    #[test]
    fn types_out_of_scope_are_not_checked() {
        let elf = elf();
        for declared in [
            "text/plain",
            "application/x-thing",
            "application/octet-stream",
            "application/zip",
        ] {
            assert_eq!(
                check("attachments[0]", declared, &elf),
                Ok(()),
                "{declared}"
            );
            assert_eq!(
                check("attachments[0]", declared, TEXT),
                Ok(()),
                "{declared}"
            );
        }
    }

    #[test]
    fn a_media_type_infer_has_no_signature_for_is_refused() {
        let elf = elf();
        let cases: &[(&str, &[u8])] = &[
            ("image/x-icon2", &elf),
            ("image/x-thing", PNG),
            ("video/x-foo", &elf),
            ("VIDEO/X-FOO", MP4),
            ("audio/x-thing", TEXT),
        ];
        for (declared, bytes) in cases {
            assert_eq!(
                refused(declared, bytes),
                format!(
                    "attachments[0] is declared {declared}, a media type whose bytes consentd \
                     cannot check; if it is not one of the known image, video or audio types, \
                     send it as application/octet-stream"
                ),
            );
        }
    }

    #[test]
    fn an_svg_must_be_svg_text() {
        const NOT_TEXT: &str = "they are not UTF-8 text";
        const NUL: &str = "they hold a NUL byte";
        const START: &str = "the text does not start with <svg, <?xml, <!-- or <!DOCTYPE";
        let elf = elf();
        // (bytes, why they are not SVG)
        let refused_cases: &[(&[u8], &str)] = &[
            // An ELF's header is ASCII but for the NULs that follow.
            (&elf, NUL),
            (PNG, NOT_TEXT),
            (b"<svg>\xff</svg>", NOT_TEXT),
            (b"\xfe\xff\x00<\x00s\x00v\x00g", NOT_TEXT),
            (b"<svg>\0</svg>", NUL),
            (b"\0<svg/>", NUL),
            (TEXT, START),
            (b"", START),
            (b"  \n", START),
            (b"\xef\xbb\xbf", START),
            (b"#!/bin/sh\n<svg/>", START),
            (b"<html><svg/></html>", START),
        ];
        for (bytes, why) in refused_cases {
            assert_eq!(
                refused("image/svg+xml", bytes),
                format!(
                    "attachments[0] is declared image/svg+xml, but its bytes are not SVG ({why})"
                ),
                "{bytes:?}"
            );
        }
        let accepted_cases: &[&[u8]] = &[
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
            b"<?xml version=\"1.0\"?>\n<svg/>",
            b"<!-- a drawing -->\n<svg/>",
            b"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"x\"><svg/>",
            b"\xef\xbb\xbf<svg/>",
            b"\xef\xbb\xbf \r\n\t<svg>\xc3\xa9</svg>",
            b"<SVG/>",
        ];
        for bytes in accepted_cases {
            assert_eq!(
                check("attachments[0]", "Image/SVG+XML", bytes),
                Ok(()),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn every_alias_names_types_infer_knows() {
        for (name, types) in ALIASES {
            assert_eq!(*name, name.to_ascii_lowercase(), "aliases are lower case");
            assert!(!types.is_empty(), "{name}");
            for t in *types {
                assert!(infer::is_mime_supported(t), "{name} → {t}");
            }
        }
    }

    #[test]
    fn the_place_is_named() {
        let Err(refusal) = check("attachments[3]", "image/png", TEXT) else {
            panic!("accepted")
        };
        assert!(
            refusal.message.starts_with("attachments[3] "),
            "{refusal:?}"
        );
    }
}
