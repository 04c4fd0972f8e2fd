//! The page's secret: 32 random bytes, written as 64 hex digits into the page's address
//! (`http://127.0.0.1:P/s/<token>/`, printed as the banner's `page:` line). Every request but
//! the Host check's refusal must carry it, so a local process that can reach the port but has
//! not been shown the address (another user's, a web page in the browser) can neither read the
//! chat nor press its buttons. It lives in the path rather than a query so the page's own
//! requests, made relative to its address, carry it without the page knowing it.

use subtle::ConstantTimeEq;

/// The prefix every path of the page starts with, before the token.
pub(super) const PREFIX: &str = "/s/";

/// A page's secret token.
#[derive(Clone)]
pub(super) struct PageToken(String);

impl std::fmt::Debug for PageToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageToken(…)")
    }
}

impl PageToken {
    /// A new token from the operating system's random source.
    pub(super) fn generate() -> Result<PageToken, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(PageToken(hex::encode(bytes)))
    }

    /// The page's address on `host` (`127.0.0.1:P`), ending in `/`.
    pub(super) fn url(&self, host: impl std::fmt::Display) -> String {
        format!("http://{host}{PREFIX}{}/", self.0)
    }

    /// Whether `path` is under this token's prefix: `/s/<token>` followed by nothing or a `/`.
    /// The token is compared in constant time, so it cannot be learnt from response times.
    pub(super) fn admits(&self, path: &str) -> bool {
        let Some(rest) = path.strip_prefix(PREFIX) else {
            return false;
        };
        let given = rest.split('/').next().unwrap_or_default();
        bool::from(given.as_bytes().ct_eq(self.0.as_bytes()))
    }

    #[cfg(test)]
    pub(super) fn from_hex(hex: &str) -> PageToken {
        PageToken(hex.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_64_hex_digits_and_new_each_time() {
        let (a, b) = (
            PageToken::generate().unwrap(),
            PageToken::generate().unwrap(),
        );
        assert_eq!(a.0.len(), 64);
        assert!(a.0.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a.0, b.0);
        assert_eq!(
            a.url("127.0.0.1:9"),
            format!("http://127.0.0.1:9/s/{}/", a.0)
        );
    }

    #[test]
    fn only_paths_under_the_token_are_admitted() {
        let token = PageToken::from_hex(&"ab".repeat(32));
        let own = "ab".repeat(32);
        let cases = [
            (format!("/s/{own}/"), true),
            (format!("/s/{own}"), true),
            (format!("/s/{own}/api/press"), true),
            (format!("/s/{own}/api/file/x"), true),
            ("/".to_owned(), false),
            ("/api/press".to_owned(), false),
            ("/s/".to_owned(), false),
            ("/s//api/press".to_owned(), false),
            (format!("/s/{}/api/press", "cd".repeat(32)), false),
            (format!("/s/{}/api/press", &own[..63]), false),
            (format!("/s/{own}0/api/press"), false),
            (format!("/s/{}/api/press", own.to_uppercase()), false),
            (format!("/x/{own}/api/press"), false),
            (format!("/api/press/s/{own}/"), false),
        ];
        for (path, admitted) in cases {
            assert_eq!(token.admits(&path), admitted, "{path}");
        }
    }
}
