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
//! - A declared type in scope that `infer` does not know (`image/svg+xml`, `image/x-thing`) is
//!   not checked: there is no signature to hold it to. Types outside the scope (`text/plain`,
//!   `application/zip`, `application/octet-stream`) are not checked either; the card shows them
//!   as files.
//! - A signature is the start of a file, not its whole: a file that begins like a PNG and goes
//!   on as something else passes. This stops a mislabelled file, not a crafted polyglot.
//! - `infer`'s signatures decide. A rare variant they miss (an MP3 with neither an ID3 tag nor
//!   one of the frame headers `infer` lists, say) is refused; the session can send such a file
//!   as `application/octet-stream`, and the card then says so.

use crate::refusal::{Reason, Refusal};

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
    ("video/avi", &["video/x-msvideo"]),
    ("video/msvideo", &["video/x-msvideo"]),
];

/// Checks that `bytes` are the media type `declared` (already a well-formed `type/subtype`) at
/// `place` (`attachments[0]`). See the module documentation for the scope and its limits.
pub(crate) fn check(place: &str, declared: &str, bytes: &[u8]) -> Result<(), Refusal> {
    let lower = declared.to_ascii_lowercase();
    let accepted = accepted_types(&lower);
    if accepted.is_empty() || accepted.iter().any(|t| infer::is_mime(bytes, t)) {
        return Ok(());
    }
    let found = match infer::get(bytes) {
        Some(kind) => format!("they look like {}", kind.mime_type()),
        None => "they match no known signature".to_owned(),
    };
    Err(Refusal::new(
        Reason::BadRequest,
        format!(
            "{place} is declared {declared}, but its bytes are not {} ({found})",
            short_name(&lower)
        ),
    ))
}

/// The `infer` types whose signatures a declared (lower-case) type's bytes must carry; empty
/// when the type is out of scope or `infer` has no signature for it.
fn accepted_types(declared: &str) -> Vec<&str> {
    let in_scope = declared == "application/pdf"
        || ["image/", "video/", "audio/"]
            .iter()
            .any(|top| declared.starts_with(top));
    if !in_scope {
        return Vec::new();
    }
    match ALIASES.iter().find(|(name, _)| *name == declared) {
        Some((_, types)) => types.to_vec(),
        None if infer::is_mime_supported(declared) => vec![declared],
        None => Vec::new(),
    }
}

/// What a message calls a type: its subtype without `x-`, in capitals (`PNG`, `PDF`, `WAV`).
fn short_name(declared: &str) -> String {
    let subtype = declared.split_once('/').map_or(declared, |(_, s)| s);
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
    fn types_without_a_signature_or_out_of_scope_are_not_checked() {
        let elf = elf();
        for declared in [
            "text/plain",
            "application/x-thing",
            "application/octet-stream",
            "application/zip",
            "image/svg+xml",
            "image/x-thing",
            "video/x-thing",
            "audio/x-thing",
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
