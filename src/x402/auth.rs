//! Coinbase CDP facilitator authentication: a fresh, short-lived JWT per HTTP request, bound
//! to that request's method and URL (what `@coinbase/x402` does).
//!
//! Secrets come in the two forms CDP issues:
//! * an EC P-256 key in PEM (SEC1 `EC PRIVATE KEY` or PKCS#8 `PRIVATE KEY`) → ES256;
//! * base64 of 64 bytes (Ed25519 seed ‖ public key) → EdDSA.
//!
//! Signing uses `ring` (already built as rustls's crypto provider), so no extra crypto crate.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::json;

use super::matching::hex;

/// Lifetime of one token. CDP rejects longer-lived ones; 120 s is what the SDK uses.
pub const JWT_LIFETIME_SECS: u64 = 120;

/// Why a CDP key could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    // The variables holding the key are the config's to name (each facilitator may read its own).
    #[error("the CDP API key id is empty")]
    EmptyKeyId,
    #[error("the CDP API key secret is not usable: {0}")]
    BadSecret(String),
    #[error("signing the CDP token failed")]
    Sign,
}

enum Key {
    Es256(EcdsaKeyPair),
    EdDsa(Ed25519KeyPair),
}

/// A parsed CDP API key that mints per-request tokens.
pub struct CdpSigner {
    key_id: String,
    key: Key,
    rng: SystemRandom,
}

impl std::fmt::Debug for CdpSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CdpSigner")
            .field("key_id", &self.key_id)
            .field("alg", &self.algorithm())
            .finish_non_exhaustive()
    }
}

impl CdpSigner {
    /// Parses the key secret (PEM or base64 Ed25519, see the module doc). Literal `\n`
    /// sequences are turned into newlines, because PEM keys pasted into environment
    /// variables often arrive that way.
    pub fn new(key_id: &str, key_secret: &str) -> Result<Self, AuthError> {
        let key_id = key_id.trim();
        if key_id.is_empty() {
            return Err(AuthError::EmptyKeyId);
        }
        let secret = key_secret.trim().replace("\\n", "\n");
        let rng = SystemRandom::new();
        let key = if secret.starts_with("-----BEGIN") {
            parse_pem(&secret, &rng)?
        } else {
            parse_ed25519_b64(&secret)?
        };
        Ok(CdpSigner {
            key_id: key_id.to_string(),
            key,
            rng,
        })
    }

    /// `ES256` or `EdDSA`.
    pub fn algorithm(&self) -> &'static str {
        match self.key {
            Key::Es256(_) => "ES256",
            Key::EdDsa(_) => "EdDSA",
        }
    }

    /// Public key bytes (uncompressed SEC1 point for ES256, 32 bytes for EdDSA), so a test
    /// or an operator can check which key signs.
    pub fn public_key(&self) -> Vec<u8> {
        match &self.key {
            Key::Es256(k) => k.public_key().as_ref().to_vec(),
            Key::EdDsa(k) => k.public_key().as_ref().to_vec(),
        }
    }

    /// A token for one request: `uri` is `host[:port]/path` of the exact URL called
    /// (e.g. `api.cdp.coinbase.com/platform/v2/x402/verify`), `method` its HTTP method.
    pub fn token(&self, method: &str, uri: &str) -> Result<String, AuthError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.token_at(method, uri, now)
    }

    /// [`token`](Self::token) with an explicit clock (unix seconds).
    pub fn token_at(&self, method: &str, uri: &str, now: u64) -> Result<String, AuthError> {
        let mut nonce = [0u8; 16];
        self.rng.fill(&mut nonce).map_err(|_| AuthError::Sign)?;
        let header = json!({
            "alg": self.algorithm(),
            "kid": self.key_id,
            "typ": "JWT",
            "nonce": hex(&nonce),
        });
        let claims = json!({
            "sub": self.key_id,
            "iss": "cdp",
            "aud": ["cdp_service"],
            "nbf": now,
            "iat": now,
            "exp": now + JWT_LIFETIME_SECS,
            "uris": [format!("{} {}", method.to_ascii_uppercase(), uri)],
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = match &self.key {
            // ring's FIXED encoding is r ‖ s, which is exactly JWS's ES256 format.
            Key::Es256(k) => k
                .sign(&self.rng, signing_input.as_bytes())
                .map_err(|_| AuthError::Sign)?
                .as_ref()
                .to_vec(),
            Key::EdDsa(k) => k.sign(signing_input.as_bytes()).as_ref().to_vec(),
        };
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

fn bad(msg: impl Into<String>) -> AuthError {
    AuthError::BadSecret(msg.into())
}

fn parse_pem(pem: &str, rng: &SystemRandom) -> Result<Key, AuthError> {
    let mut label = None;
    let mut body = String::new();
    for line in pem.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("-----BEGIN ") {
            label = Some(rest.trim_end_matches('-').trim().to_string());
        } else if line.starts_with("-----END") {
            break;
        } else if label.is_some() {
            body.push_str(line);
        }
    }
    let der = STANDARD
        .decode(body.as_bytes())
        .map_err(|e| bad(format!("the PEM body is not base64 ({e})")))?;
    match label.as_deref() {
        Some("EC PRIVATE KEY") => sec1_to_key(&der, rng),
        Some("PRIVATE KEY") => pkcs8_to_key(&der, rng),
        other => Err(bad(format!(
            "expected an \"EC PRIVATE KEY\" or \"PRIVATE KEY\" PEM block, found {:?}",
            other.unwrap_or("none")
        ))),
    }
}

fn parse_ed25519_b64(secret: &str) -> Result<Key, AuthError> {
    let bytes = STANDARD.decode(secret.as_bytes()).map_err(|_| {
        bad("neither a PEM key nor base64; paste the secret exactly as CDP issued it")
    })?;
    if bytes.len() != 64 {
        return Err(bad(format!(
            "a base64 Ed25519 secret must decode to 64 bytes (seed + public key), got {}",
            bytes.len()
        )));
    }
    let pair = Ed25519KeyPair::from_seed_and_public_key(&bytes[..32], &bytes[32..])
        .map_err(|e| bad(format!("Ed25519 seed and public key do not match ({e})")))?;
    Ok(Key::EdDsa(pair))
}

/// PKCS#8: `SEQUENCE { INTEGER, SEQUENCE { OID alg, params }, OCTET STRING key, ... }`.
fn pkcs8_to_key(der: &[u8], rng: &SystemRandom) -> Result<Key, AuthError> {
    let mut outer = Der::new(der).sequence()?;
    outer.expect(0x02)?; // version
    let mut alg = outer.expect(0x30).map(Der::new)?;
    let oid = alg.expect(0x06)?;
    if oid == OID_ED25519 {
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
            .map_err(|e| bad(format!("Ed25519 PKCS#8 key rejected ({e})")))?;
        return Ok(Key::EdDsa(pair));
    }
    if oid != OID_EC_PUBLIC_KEY {
        return Err(bad("PKCS#8 key is neither EC nor Ed25519"));
    }
    if alg.expect(0x06)? != OID_P256 {
        return Err(bad("the EC key is not on P-256 (prime256v1)"));
    }
    let inner = outer.expect(0x04)?;
    sec1_to_key(inner, rng)
}

/// SEC1 `ECPrivateKey`: `SEQUENCE { INTEGER 1, OCTET STRING d, [0] params OPT, [1] pub OPT }`.
fn sec1_to_key(der: &[u8], rng: &SystemRandom) -> Result<Key, AuthError> {
    let mut seq = Der::new(der).sequence()?;
    seq.expect(0x02)?;
    let d = seq.expect(0x04)?;
    let mut public = None;
    while let Some((tag, value)) = seq.next()? {
        match tag {
            0xa0 if Der::new(value).expect(0x06)? != OID_P256 => {
                return Err(bad("the EC key is not on P-256 (prime256v1)"));
            }
            0xa1 => {
                let bits = Der::new(value).expect(0x03)?;
                // First byte of a BIT STRING is the unused-bit count (0 for a point).
                public = bits.split_first().map(|(_, p)| p.to_vec());
            }
            _ => {}
        }
    }
    let public = public.ok_or_else(|| {
        bad("the EC key has no public key part; export it with `openssl ec -in key.pem`")
    })?;
    if d.len() > 32 {
        return Err(bad("the EC private scalar is longer than 32 bytes"));
    }
    let mut scalar = [0u8; 32];
    scalar[32 - d.len()..].copy_from_slice(d);
    let pair = EcdsaKeyPair::from_private_key_and_public_key(
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &scalar,
        &public,
        rng,
    )
    .map_err(|e| bad(format!("P-256 key rejected ({e})")))?;
    Ok(Key::Es256(pair))
}

/// Just enough DER to walk the two key structures above.
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Der { rest: bytes }
    }

    fn next(&mut self) -> Result<Option<(u8, &'a [u8])>, AuthError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let truncated = || bad("the key's DER structure is truncated");
        let tag = self.rest[0];
        let first = *self.rest.get(1).ok_or_else(truncated)?;
        let (len, header) = if first < 0x80 {
            (first as usize, 2)
        } else {
            let n = (first & 0x7f) as usize;
            if n == 0 || n > 3 {
                return Err(bad("unsupported DER length in the key"));
            }
            let bytes = self.rest.get(2..2 + n).ok_or_else(truncated)?;
            (
                bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize),
                2 + n,
            )
        };
        let value = self.rest.get(header..header + len).ok_or_else(truncated)?;
        self.rest = &self.rest[header + len..];
        Ok(Some((tag, value)))
    }

    fn expect(&mut self, tag: u8) -> Result<&'a [u8], AuthError> {
        match self.next()? {
            Some((t, v)) if t == tag => Ok(v),
            Some((t, _)) => Err(bad(format!(
                "unexpected DER tag 0x{t:02x} in the key (wanted 0x{tag:02x})"
            ))),
            None => Err(bad("the key's DER structure ends early")),
        }
    }

    fn sequence(mut self) -> Result<Der<'a>, AuthError> {
        self.expect(0x30).map(Der::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED, ED25519};
    use serde_json::Value;

    fn pem(label: &str, der: &[u8]) -> String {
        let b64 = STANDARD.encode(der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            lines.join("\n")
        )
    }

    /// DER TLV with a short or one/two-byte long length.
    fn tlv(tag: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match value.len() {
            n if n < 0x80 => out.push(n as u8),
            n if n < 0x100 => out.extend([0x81, n as u8]),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend(value);
        out
    }

    /// A fresh P-256 key as ring's PKCS#8 document, its SEC1 ECPrivateKey and public point.
    fn p256() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pkcs8 = doc.as_ref().to_vec();
        let mut outer = Der::new(&pkcs8).sequence().unwrap();
        outer.expect(0x02).unwrap();
        outer.expect(0x30).unwrap();
        let sec1 = outer.expect(0x04).unwrap().to_vec();
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
                .unwrap();
        (pkcs8, sec1, pair.public_key().as_ref().to_vec())
    }

    fn parts(jwt: &str) -> (Value, Value, Vec<u8>, String) {
        let p: Vec<&str> = jwt.split('.').collect();
        assert_eq!(p.len(), 3, "{jwt}");
        let h = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p[0]).unwrap()).unwrap();
        let c = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p[1]).unwrap()).unwrap();
        let s = URL_SAFE_NO_PAD.decode(p[2]).unwrap();
        (h, c, s, format!("{}.{}", p[0], p[1]))
    }

    fn check_claims(header: &Value, claims: &Value, alg: &str, uri: &str, now: u64) {
        assert_eq!(header["alg"], alg);
        assert_eq!(header["kid"], "organizations/o/apiKeys/k");
        assert_eq!(header["typ"], "JWT");
        let nonce = header["nonce"].as_str().unwrap();
        assert_eq!(nonce.len(), 32);
        assert!(nonce.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(claims["sub"], "organizations/o/apiKeys/k");
        assert_eq!(claims["iss"], "cdp");
        assert_eq!(claims["aud"], json!(["cdp_service"]));
        assert_eq!(claims["nbf"], now);
        assert_eq!(claims["iat"], now);
        assert_eq!(claims["exp"], now + 120);
        assert_eq!(claims["uris"], json!([uri]));
    }

    const KID: &str = "organizations/o/apiKeys/k";
    const URI: &str = "api.cdp.coinbase.com/platform/v2/x402/verify";

    #[test]
    fn es256_from_sec1_and_pkcs8_verifies() {
        let (pkcs8, sec1, public) = p256();
        for secret in [pem("EC PRIVATE KEY", &sec1), pem("PRIVATE KEY", &pkcs8)] {
            // Also as an env var with literal "\n".
            for form in [secret.clone(), secret.replace('\n', "\\n")] {
                let signer = CdpSigner::new(KID, &form).unwrap();
                assert_eq!(signer.algorithm(), "ES256");
                assert_eq!(signer.public_key(), public);
                let jwt = signer.token_at("post", URI, 1_800_000_000).unwrap();
                let (h, c, sig, input) = parts(&jwt);
                check_claims(&h, &c, "ES256", &format!("POST {URI}"), 1_800_000_000);
                assert_eq!(sig.len(), 64);
                UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
                    .verify(input.as_bytes(), &sig)
                    .expect("ES256 signature verifies with the public key");
                // A tampered token does not verify.
                let mut other = input.clone().into_bytes();
                other[5] ^= 1;
                assert!(UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
                    .verify(&other, &sig)
                    .is_err());
            }
        }
    }

    #[test]
    fn sec1_with_curve_parameters_is_accepted() {
        // openssl writes SEC1 keys with [0] namedCurve; ring's generator does not.
        let (_, sec1, public) = p256();
        let mut seq = Der::new(&sec1).sequence().unwrap();
        let version = seq.expect(0x02).unwrap().to_vec();
        let d = seq.expect(0x04).unwrap().to_vec();
        let mut body = tlv(0x02, &version);
        body.extend(tlv(0x04, &d));
        body.extend(tlv(0xa0, &tlv(0x06, OID_P256)));
        let mut bits = vec![0u8];
        bits.extend(&public);
        body.extend(tlv(0xa1, &tlv(0x03, &bits)));
        let der = tlv(0x30, &body);
        let signer = CdpSigner::new(KID, &pem("EC PRIVATE KEY", &der)).unwrap();
        assert_eq!(signer.public_key(), public);

        // Without the public key part we cannot build the pair: say how to fix it.
        let mut body = tlv(0x02, &version);
        body.extend(tlv(0x04, &d));
        let err = CdpSigner::new(KID, &pem("EC PRIVATE KEY", &tlv(0x30, &body))).unwrap_err();
        assert!(err.to_string().contains("no public key"), "{err}");

        // Another curve is refused by name.
        let mut body = tlv(0x02, &version);
        body.extend(tlv(0x04, &d));
        body.extend(tlv(0xa0, &tlv(0x06, &[0x2b, 0x81, 0x04, 0x00, 0x22])));
        let err = CdpSigner::new(KID, &pem("EC PRIVATE KEY", &tlv(0x30, &body))).unwrap_err();
        assert!(err.to_string().contains("P-256"), "{err}");
    }

    #[test]
    fn eddsa_from_base64_secret_verifies() {
        let rng = SystemRandom::new();
        let mut seed = [0u8; 32];
        rng.fill(&mut seed).unwrap();
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
        let mut secret = seed.to_vec();
        secret.extend(pair.public_key().as_ref());
        let signer = CdpSigner::new(KID, &STANDARD.encode(&secret)).unwrap();
        assert_eq!(signer.algorithm(), "EdDSA");
        let jwt = signer
            .token_at("GET", "api.cdp.coinbase.com/platform/v2/x402/supported", 42)
            .unwrap();
        let (h, c, sig, input) = parts(&jwt);
        check_claims(
            &h,
            &c,
            "EdDSA",
            "GET api.cdp.coinbase.com/platform/v2/x402/supported",
            42,
        );
        UnparsedPublicKey::new(&ED25519, pair.public_key().as_ref())
            .verify(input.as_bytes(), &sig)
            .expect("EdDSA signature verifies");

        // Mismatched public half is caught at parse time, not at CDP.
        let mut wrong = secret.clone();
        wrong[40] ^= 1;
        assert!(CdpSigner::new(KID, &STANDARD.encode(&wrong)).is_err());
        assert!(CdpSigner::new(KID, &STANDARD.encode(&secret[..32])).is_err());
    }

    #[test]
    fn nonces_differ_and_bad_input_is_an_error() {
        let (_, sec1, _) = p256();
        let signer = CdpSigner::new(KID, &pem("EC PRIVATE KEY", &sec1)).unwrap();
        let a = parts(&signer.token_at("POST", URI, 1).unwrap()).0;
        let b = parts(&signer.token_at("POST", URI, 1).unwrap()).0;
        assert_ne!(a["nonce"], b["nonce"]);
        assert!(format!("{signer:?}").contains("ES256"));

        assert_eq!(CdpSigner::new(" ", "x").unwrap_err(), AuthError::EmptyKeyId);
        for secret in [
            "",
            "not base64 !!",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
            "-----BEGIN EC PRIVATE KEY-----\n!!!\n-----END EC PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----\nMAA=\n-----END EC PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nMIIBAAAA\n-----END PRIVATE KEY-----",
        ] {
            assert!(
                matches!(CdpSigner::new(KID, secret), Err(AuthError::BadSecret(_))),
                "{secret:?}"
            );
        }
        // Truncated real key.
        let half = &sec1[..sec1.len() / 2];
        assert!(CdpSigner::new(KID, &pem("EC PRIVATE KEY", half)).is_err());
    }
}
