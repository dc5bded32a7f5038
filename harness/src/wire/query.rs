//! What a delivery's URL carries after its path. Twilio signs a JSON body through its hash in the
//! URL (`?bodySHA256=<hex SHA-256 of the body>`, which its RequestValidator compares with the body
//! before the signature over the whole URL): the signer signs that URL and the transports post to
//! it, both from [`PathQuery::apply`], so the two cannot disagree.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

/// What follows a delivery's path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathQuery {
    /// Nothing is added: the URL as given.
    #[default]
    Plain,
    /// `bodySHA256=<hex>` of the body, after the URL's own query if it has one.
    BodySha256,
}

impl PathQuery {
    /// `path` (or a whole URL) as a delivery of `body` is posted to it.
    pub fn apply<'a>(self, path: &'a str, body: &[u8]) -> Cow<'a, str> {
        match self {
            Self::Plain => Cow::Borrowed(path),
            Self::BodySha256 => {
                let sep = if path.contains('?') { '&' } else { '?' };
                Cow::Owned(format!("{path}{sep}bodySHA256={}", hex::encode(Sha256::digest(body))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_hash_follows_the_path_or_its_query() {
        assert_eq!(PathQuery::Plain.apply("/hooks", b"{}"), "/hooks");
        // SHA-256 of `{}`.
        let h = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
        assert_eq!(PathQuery::BodySha256.apply("/hooks", b"{}"), format!("/hooks?bodySHA256={h}"));
        assert_eq!(PathQuery::BodySha256.apply("/hooks?a=1", b"{}"), format!("/hooks?a=1&bodySHA256={h}"));
    }
}
