//! A Standard Webhooks secret as a provider shows it, `whsec_<base64>`, checked: what a bench
//! gives the receivers it starts (through their environment) and signs its deliveries with. The
//! receivers parse the same form themselves; a test in `serve.rs` holds the two to the same
//! answers and the same words.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The prefix every such secret starts with.
const PREFIX: &str = "whsec_";

/// A `whsec_<base64>` secret whose key is valid, non-empty base64.
#[derive(Clone, PartialEq, Eq)]
pub struct Whsec(String);

/// Why a string is not a `whsec_` secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotWhsec {
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

impl Whsec {
    /// The secret whose key is `key`.
    pub fn from_key(key: &[u8]) -> Self {
        Self(format!("{PREFIX}{}", STANDARD.encode(key)))
    }

    /// The secret as the provider shows it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Whsec {
    type Err = NotWhsec;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let b64 = s.strip_prefix(PREFIX).ok_or(NotWhsec::MissingPrefix)?;
        let key = STANDARD.decode(b64).map_err(|_| NotWhsec::NotBase64)?;
        if key.is_empty() {
            return Err(NotWhsec::Empty);
        }
        Ok(Self(s.to_string()))
    }
}

impl fmt::Debug for Whsec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.write_str("Whsec(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_reads_back_and_what_is_not_one_is_refused_saying_why() {
        let s = Whsec::from_key(b"key");
        assert_eq!(s.as_str().parse::<Whsec>(), Ok(s.clone()));
        assert_eq!(format!("{s:?}"), "Whsec(..)", "no key material printed");
        assert_eq!("key".parse::<Whsec>(), Err(NotWhsec::MissingPrefix));
        assert_eq!("whsec_!!".parse::<Whsec>(), Err(NotWhsec::NotBase64));
        assert_eq!("whsec_".parse::<Whsec>(), Err(NotWhsec::Empty));
    }
}
