//! Key material: the shared secrets the HMAC schemes sign with, and the private keys of the two
//! asymmetric ones (SendGrid's ECDSA P-256, Discord's Ed25519), read from base64 of their PKCS#8
//! DER encoding and shown, for the receiver's side, in the form each provider's dashboard shows.
//!
//! ring does the signing: it is already in the tree (rustls), reads PKCS#8 (v1, as OpenSSL and
//! Python's `cryptography` write it, and v2, as ring writes it) and makes ASN.1 DER ECDSA
//! signatures, the form SendGrid's library verifies.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};

/// The kind of key a scheme signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A shared secret (an HMAC key, or GitLab's token).
    Shared,
    /// An ECDSA P-256 private key (SendGrid).
    EcdsaP256,
    /// An Ed25519 private key (Discord).
    Ed25519,
}

impl KeyKind {
    /// The key as messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Shared => "a shared secret",
            Self::EcdsaP256 => "an ECDSA P-256 private key (base64 of its PKCS#8 DER encoding)",
            Self::Ed25519 => "an Ed25519 private key (base64 of its PKCS#8 DER encoding)",
        }
    }
}

/// One key a signer holds.
#[derive(Clone)]
pub(super) enum Key {
    /// HMAC key bytes, or a token sent as it is.
    Shared(Vec<u8>),
    /// SendGrid's.
    Ecdsa(Arc<EcdsaKeyPair>),
    /// Discord's.
    Ed25519(Arc<Ed25519KeyPair>),
}

/// Key material that is not a key of the kind asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not {}", .0.describe())]
pub struct WrongKind(pub KeyKind);

impl Key {
    /// The private key `text` (base64 of PKCS#8 DER) as a key of `kind`.
    pub(super) fn private(kind: KeyKind, text: &str) -> Result<Self, WrongKind> {
        let der = || STANDARD.decode(text.trim()).map_err(|_| WrongKind(kind));
        match kind {
            KeyKind::Shared => Ok(Self::Shared(text.as_bytes().to_vec())),
            KeyKind::EcdsaP256 => {
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &der()?, &SystemRandom::new())
                    .map(|k| Self::Ecdsa(Arc::new(k)))
                    .map_err(|_| WrongKind(kind))
            }
            KeyKind::Ed25519 => Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der()?)
                .map(|k| Self::Ed25519(Arc::new(k)))
                .map_err(|_| WrongKind(kind)),
        }
    }

    /// A key of `kind` no receiver holds: a fixed secret, or a pair made now.
    pub(super) fn stranger(kind: KeyKind) -> Self {
        match kind {
            KeyKind::Shared => Self::Shared(b"hookbench-a-secret-no-receiver-holds".to_vec()),
            _ => {
                let pair = generate(kind).expect("the system's random source makes a key pair");
                Self::private(kind, &pair.private).expect("a key pair ring made reads back")
            }
        }
    }

    /// The shared secret's bytes (empty for an asymmetric key).
    pub(super) fn shared(&self) -> &[u8] {
        match self {
            Self::Shared(k) => k,
            _ => &[],
        }
    }

    /// The signature over `message`: ECDSA in ASN.1 DER, Ed25519's 64 bytes; empty for a shared
    /// secret (the HMAC schemes compute their own).
    pub(super) fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self {
            Self::Shared(_) => Vec::new(),
            Self::Ecdsa(k) => k
                .sign(&SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .expect("ECDSA signing needs only the system's random source"),
            Self::Ed25519(k) => k.sign(message).as_ref().to_vec(),
        }
    }

    /// The public key in the form the provider's dashboard shows it: SendGrid's base64 of the
    /// DER SubjectPublicKeyInfo, Discord's hex of the raw 32 bytes (`None` for a shared secret).
    pub(super) fn public(&self) -> Option<String> {
        match self {
            Self::Shared(_) => None,
            Self::Ecdsa(k) => {
                let mut spki = P256_SPKI_PREFIX.to_vec();
                spki.extend_from_slice(k.public_key().as_ref());
                Some(STANDARD.encode(spki))
            }
            Self::Ed25519(k) => Some(hex::encode(k.public_key().as_ref())),
        }
    }
}

/// The DER of a P-256 SubjectPublicKeyInfo up to its 65-byte uncompressed point (RFC 5480:
/// SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING }). ring gives the point alone;
/// what precedes it is the same for every P-256 key.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
    0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A key pair as `hookbench keys` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPairText {
    /// Base64 of the private key's PKCS#8 DER (what `--secret` takes).
    pub private: String,
    /// The public key as the provider's dashboard shows it.
    pub public: String,
}

/// A new key pair of `kind` (`None` for a shared secret, which has no pair).
pub fn generate(kind: KeyKind) -> Option<KeyPairText> {
    let rng = SystemRandom::new();
    let der = match kind {
        KeyKind::Shared => return None,
        KeyKind::EcdsaP256 => EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).ok()?,
        KeyKind::Ed25519 => Ed25519KeyPair::generate_pkcs8(&rng).ok()?,
    };
    let private = STANDARD.encode(der.as_ref());
    let public = Key::private(kind, &private).ok()?.public()?;
    Some(KeyPairText { private, public })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_ASN1, ED25519, UnparsedPublicKey};

    #[test]
    fn a_made_pair_signs_what_its_public_key_verifies() {
        let ecdsa = generate(KeyKind::EcdsaP256).expect("a pair");
        let key = Key::private(KeyKind::EcdsaP256, &ecdsa.private).expect("reads back");
        let spki = STANDARD.decode(&ecdsa.public).expect("base64");
        assert_eq!(spki.len(), 91, "a P-256 SubjectPublicKeyInfo");
        let point = &spki[P256_SPKI_PREFIX.len()..];
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point)
            .verify(b"m", &key.sign(b"m"))
            .expect("verifies");
        assert!(
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point).verify(b"n", &key.sign(b"m")).is_err()
        );

        let ed = generate(KeyKind::Ed25519).expect("a pair");
        let key = Key::private(KeyKind::Ed25519, &ed.private).expect("reads back");
        let raw = hex::decode(&ed.public).expect("hex");
        assert_eq!(raw.len(), 32);
        UnparsedPublicKey::new(&ED25519, &raw).verify(b"m", &key.sign(b"m")).expect("verifies");
    }

    #[test]
    fn a_key_of_the_other_kind_is_refused() {
        let ed = generate(KeyKind::Ed25519).expect("a pair");
        let ecdsa = generate(KeyKind::EcdsaP256).expect("a pair");
        assert_eq!(Key::private(KeyKind::EcdsaP256, &ed.private).err(), Some(WrongKind(KeyKind::EcdsaP256)));
        assert_eq!(Key::private(KeyKind::Ed25519, &ecdsa.private).err(), Some(WrongKind(KeyKind::Ed25519)));
        assert!(Key::private(KeyKind::Ed25519, "not base64!").is_err());
        assert!(Key::private(KeyKind::Ed25519, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    }
}
