//! Standard Webhooks signatures: signing and verifying `id.timestamp.body` with HMAC-SHA256.
//!
//! A secret is `whsec_` followed by base64 key bytes. A signature header is a space-separated
//! list of `v1,<base64 MAC>` entries, so a sender can sign with an old and a new secret while a
//! key rotates; a receiver holding several secrets accepts a request that any entry matches under
//! any of them. Every `webhook-signature` line of a request counts (a proxy may split one list
//! over several). Verification works on the raw body bytes, checks the timestamp against a
//! tolerance in both directions, and compares MACs in constant time (`hmac`'s `verify_slice`).
//! The checks that need no body ([`Verifier::check_headers`]) can run before the body is read.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The header carrying the message id, stable across attempts.
pub const HEADER_ID: &str = "webhook-id";
/// The header carrying the attempt's Unix timestamp in seconds.
pub const HEADER_TIMESTAMP: &str = "webhook-timestamp";
/// The header carrying the signatures.
pub const HEADER_SIGNATURE: &str = "webhook-signature";
/// How far a timestamp may be from the receiver's clock, either way, in seconds.
pub const DEFAULT_TOLERANCE_S: i64 = 300;

const SECRET_PREFIX: &str = "whsec_";

/// A signing secret's key bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)") // never print key material
    }
}

/// A secret that is not `whsec_<base64>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The `whsec_` prefix is missing.
    #[error("a signing secret starts with `whsec_`")]
    MissingPrefix,
    /// The rest is not base64.
    #[error("the part after `whsec_` is not valid base64")]
    NotBase64,
    /// No key bytes.
    #[error("the secret's key is empty")]
    Empty,
}

impl FromStr for Secret {
    type Err = SecretError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let b64 = s.trim().strip_prefix(SECRET_PREFIX).ok_or(SecretError::MissingPrefix)?;
        let key = STANDARD.decode(b64).map_err(|_| SecretError::NotBase64)?;
        if key.is_empty() {
            return Err(SecretError::Empty);
        }
        Ok(Self(key))
    }
}

impl Secret {
    /// A secret from raw key bytes.
    pub fn from_bytes(key: impl Into<Vec<u8>>) -> Self {
        Self(key.into())
    }

    /// The secret in its `whsec_<base64>` form.
    pub fn to_whsec(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }

    fn mac(&self, id: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
        // HMAC takes keys of any length, so this cannot fail.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `v1,<base64>` signature of `id.timestamp.body`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(id, &timestamp.to_string(), body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(tag))
    }

    /// The three Standard Webhooks headers of one attempt: `webhook-id`, `webhook-timestamp` and
    /// `webhook-signature`.
    pub fn headers(&self, id: &str, timestamp: i64, body: &[u8]) -> [(&'static str, String); 3] {
        [
            (HEADER_ID, id.to_string()),
            (HEADER_TIMESTAMP, timestamp.to_string()),
            (HEADER_SIGNATURE, self.sign(id, timestamp, body)),
        ]
    }
}

/// Why a request's signature was refused. Each is a 400 at the receiver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A required header is absent or empty.
    #[error("missing header `{0}`")]
    MissingHeader(&'static str),
    /// A header that must appear once appears several times.
    #[error("header `{0}` appears more than once")]
    RepeatedHeader(&'static str),
    /// The timestamp is not a whole number of seconds.
    #[error("`webhook-timestamp` is not a Unix time in seconds")]
    BadTimestamp,
    /// The timestamp is older than the tolerance allows.
    #[error("timestamp too old: {age_s} s behind the receiver's clock (tolerance {tolerance_s} s)")]
    TooOld {
        /// How far behind, in seconds.
        age_s: i64,
        /// The tolerance.
        tolerance_s: i64,
    },
    /// The timestamp is further in the future than the tolerance allows.
    #[error("timestamp too new: {ahead_s} s ahead of the receiver's clock (tolerance {tolerance_s} s)")]
    TooNew {
        /// How far ahead, in seconds.
        ahead_s: i64,
        /// The tolerance.
        tolerance_s: i64,
    },
    /// The header has no `v1,<value>` entry at all.
    #[error("`webhook-signature` has no `v1,<base64>` entry")]
    NoSignature,
    /// Some `v1` entries are present but none matches under any secret.
    #[error("no signature matches")]
    Mismatch,
}

/// The three Standard Webhooks headers of a request, as received.
#[derive(Debug, Clone, Default)]
pub struct SignedHeaders<'a> {
    /// `webhook-id`.
    pub id: Option<&'a str>,
    /// `webhook-timestamp`.
    pub timestamp: Option<&'a str>,
    /// Every `webhook-signature` line, in order.
    pub signatures: Vec<&'a str>,
}

/// Checks requests against one or more secrets.
#[derive(Debug, Clone)]
pub struct Verifier {
    secrets: Vec<Secret>,
    tolerance_s: i64,
}

impl Verifier {
    /// A verifier accepting any of `secrets` with the standard 300 s tolerance.
    pub fn new(secrets: Vec<Secret>) -> Self {
        Self { secrets, tolerance_s: DEFAULT_TOLERANCE_S }
    }

    /// The same verifier with another tolerance, in seconds.
    pub fn with_tolerance(mut self, tolerance_s: i64) -> Self {
        self.tolerance_s = tolerance_s;
        self
    }

    /// The checks that need no body: every header present, the timestamp within the tolerance of
    /// `now`. Returns the message id and the timestamp as sent.
    pub fn check_headers<'a>(
        &self,
        headers: &SignedHeaders<'a>,
        now: i64,
    ) -> Result<(&'a str, &'a str), VerifyError> {
        let present =
            |v: Option<&'a str>, name| v.filter(|s| !s.is_empty()).ok_or(VerifyError::MissingHeader(name));
        let id = present(headers.id, HEADER_ID)?;
        let timestamp = present(headers.timestamp, HEADER_TIMESTAMP)?;
        if headers.signatures.iter().all(|s| s.is_empty()) {
            return Err(VerifyError::MissingHeader(HEADER_SIGNATURE));
        }
        let ts: i64 = timestamp.trim().parse().map_err(|_| VerifyError::BadTimestamp)?;
        let tolerance_s = self.tolerance_s;
        if now.saturating_sub(ts) > tolerance_s {
            return Err(VerifyError::TooOld { age_s: now.saturating_sub(ts), tolerance_s });
        }
        if ts.saturating_sub(now) > tolerance_s {
            return Err(VerifyError::TooNew { ahead_s: ts.saturating_sub(now), tolerance_s });
        }
        Ok((id, timestamp))
    }

    /// Verifies `body` as received at Unix time `now`; returns the message id.
    pub fn verify<'a>(
        &self,
        headers: &SignedHeaders<'a>,
        body: &[u8],
        now: i64,
    ) -> Result<&'a str, VerifyError> {
        let (id, timestamp) = self.check_headers(headers, now)?;
        let candidates: Vec<Vec<u8>> = headers
            .signatures
            .iter()
            .flat_map(|line| line.split(' '))
            .filter_map(|entry| entry.split_once(','))
            .filter(|(version, value)| *version == "v1" && !value.is_empty())
            .filter_map(|(_, value)| STANDARD.decode(value).ok())
            .collect();
        if candidates.is_empty() {
            return Err(VerifyError::NoSignature);
        }
        for secret in &self.secrets {
            let mac = secret.mac(id, timestamp, body);
            if candidates.iter().any(|c| mac.clone().verify_slice(c).is_ok()) {
                return Ok(id);
            }
        }
        Err(VerifyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    const ID1: &str = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk";
    const TS1: i64 = 1_649_367_553;
    const BODY1: &str = r#"{"email":"test@example.com","username":"test_user"}"#;
    const SIG1: &str = "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=";

    const S2: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID2: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS2: i64 = 1_614_265_330;
    const BODY2: &str = r#"{"test": 2432232314}"#;
    const SIG2: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn secret(s: &str) -> Secret {
        s.parse().expect("valid secret")
    }

    fn headers<'a>(id: &'a str, ts: &'a str, sig: &'a str) -> SignedHeaders<'a> {
        SignedHeaders { id: Some(id), timestamp: Some(ts), signatures: vec![sig] }
    }

    fn check(verifier: &Verifier, sig: &str, now: i64) -> Result<(), VerifyError> {
        let ts = TS1.to_string();
        verifier.verify(&headers(ID1, &ts, sig), BODY1.as_bytes(), now).map(|_| ())
    }

    #[test]
    fn signs_the_public_vectors() {
        assert_eq!(secret(S1).sign(ID1, TS1, BODY1.as_bytes()), SIG1);
        assert_eq!(secret(S2).sign(ID2, TS2, BODY2.as_bytes()), SIG2);
    }

    #[test]
    fn verifies_the_public_vectors() {
        let v1 = Verifier::new(vec![secret(S1)]);
        assert_eq!(v1.verify(&headers(ID1, &TS1.to_string(), SIG1), BODY1.as_bytes(), TS1), Ok(ID1));
        let v2 = Verifier::new(vec![secret(S2)]);
        assert_eq!(v2.verify(&headers(ID2, &TS2.to_string(), SIG2), BODY2.as_bytes(), TS2), Ok(ID2));
    }

    #[test]
    fn accepts_at_the_edge_of_the_tolerance() {
        let v = Verifier::new(vec![secret(S1)]);
        assert_eq!(check(&v, SIG1, TS1 + 300), Ok(()));
        assert_eq!(check(&v, SIG1, TS1 - 300), Ok(()));
    }

    #[test]
    fn refuses_timestamps_301_seconds_old_or_ahead() {
        let v = Verifier::new(vec![secret(S1)]);
        assert_eq!(check(&v, SIG1, TS1 + 301), Err(VerifyError::TooOld { age_s: 301, tolerance_s: 300 }));
        assert_eq!(check(&v, SIG1, TS1 - 301), Err(VerifyError::TooNew { ahead_s: 301, tolerance_s: 300 }));
    }

    #[test]
    fn refuses_a_changed_signature() {
        let v = Verifier::new(vec![secret(S1)]);
        let changed = SIG1.replace("tZ1I4", "tZ1I5");
        assert_eq!(check(&v, &changed, TS1), Err(VerifyError::Mismatch));
        // A body changed by one byte is refused too: the MAC is over the raw bytes.
        let ts = TS1.to_string();
        let body = BODY1.replace("test_user", "test_usex");
        assert_eq!(v.verify(&headers(ID1, &ts, SIG1), body.as_bytes(), TS1), Err(VerifyError::Mismatch));
    }

    #[test]
    fn refuses_a_bare_v1_and_other_versions() {
        let v = Verifier::new(vec![secret(S1)]);
        assert_eq!(check(&v, "v1,", TS1), Err(VerifyError::NoSignature));
        let other_version = SIG1.replace("v1,", "v2,");
        assert_eq!(check(&v, &other_version, TS1), Err(VerifyError::NoSignature));
    }

    #[test]
    fn refuses_missing_headers() {
        let v = Verifier::new(vec![secret(S1)]);
        let ts = TS1.to_string();
        let body = BODY1.as_bytes();
        let mut h = headers(ID1, &ts, SIG1);
        h.id = None;
        assert_eq!(v.verify(&h, body, TS1), Err(VerifyError::MissingHeader(HEADER_ID)));
        let mut h = headers(ID1, &ts, SIG1);
        h.timestamp = None;
        assert_eq!(v.verify(&h, body, TS1), Err(VerifyError::MissingHeader(HEADER_TIMESTAMP)));
        let mut h = headers(ID1, &ts, SIG1);
        h.signatures = vec![""];
        assert_eq!(v.verify(&h, body, TS1), Err(VerifyError::MissingHeader(HEADER_SIGNATURE)));
        h.signatures = vec![];
        assert_eq!(v.verify(&h, body, TS1), Err(VerifyError::MissingHeader(HEADER_SIGNATURE)));
        assert_eq!(v.verify(&headers(ID1, "soon", SIG1), body, TS1), Err(VerifyError::BadTimestamp));
    }

    #[test]
    fn refuses_a_wrong_secret() {
        let v = Verifier::new(vec![secret(S2)]);
        assert_eq!(check(&v, SIG1, TS1), Err(VerifyError::Mismatch));
    }

    #[test]
    fn rotation_any_entry_under_any_secret() {
        // The header lists an unknown signature first; the receiver holds an old and a new secret.
        let v = Verifier::new(vec![secret(S2), secret(S1)]);
        let header = format!("v1,bm90IHRoaXMgb25l {SIG1}");
        assert_eq!(check(&v, &header, TS1), Ok(()));
    }

    #[test]
    fn every_signature_line_counts() {
        let v = Verifier::new(vec![secret(S1)]);
        let ts = TS1.to_string();
        let mut h = headers(ID1, &ts, "v1,bm90IHRoaXMgb25l");
        h.signatures.push(SIG1);
        assert_eq!(v.verify(&h, BODY1.as_bytes(), TS1), Ok(ID1));
        h.signatures = vec!["v1,bm90IHRoaXMgb25l", "v2,x v1,AAAA"];
        assert_eq!(v.verify(&h, BODY1.as_bytes(), TS1), Err(VerifyError::Mismatch));
    }

    #[test]
    fn secrets_must_be_whsec_base64() {
        assert_eq!("C2FVsBQIhrsc".parse::<Secret>(), Err(SecretError::MissingPrefix));
        assert_eq!("whsec_!!!".parse::<Secret>(), Err(SecretError::NotBase64));
        assert_eq!("whsec_".parse::<Secret>(), Err(SecretError::Empty));
        assert_eq!(secret(S1).to_whsec(), S1);
    }
}
