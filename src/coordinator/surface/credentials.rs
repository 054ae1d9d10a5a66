//! Worker session credentials bound to the token that registered them. The scheduler mints
//! a session's secret; the credential a worker holds is that secret sealed with the label
//! of the token it registered with, under a key of this coordinator's life:
//! `<secret>.<life>.<tag>`, where `life` proves this coordinator minted it and `tag` binds it
//! to the token. A call naming a session is then checked without any state: a credential of
//! another life (the coordinator restarted) is an unknown session, one presented with
//! another token is refused, so a session stolen from one worker group is of no use under
//! another group's token.

use armada_proto::ids::SessionId;
use tonic::Status;

/// Hex digits of each seal.
const LIFE_DIGITS: usize = 8;
const TAG_DIGITS: usize = 16;

pub struct Sealer {
    key: [u8; 32],
}

impl Sealer {
    /// A sealer with a key of its own (random: credentials do not outlive the process).
    pub fn new() -> Sealer {
        let secret = crate::secret::random_secret() + &crate::secret::random_secret();
        Sealer { key: *blake3::hash(secret.as_bytes()).as_bytes() }
    }

    fn mac(&self, parts: &[&str], digits: usize) -> String {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        for part in parts {
            // Length-prefixed, so that no two lists of parts hash alike.
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        hasher.finalize().to_hex()[..digits].to_string()
    }

    /// The credential of session `secret` registered under the token labelled `token`.
    pub fn seal(&self, secret: &str, token: &str) -> String {
        format!(
            "{secret}.{}.{}",
            self.mac(&["life", secret], LIFE_DIGITS),
            self.mac(&["token", secret, token], TAG_DIGITS)
        )
    }

    /// The session secret of `credential` presented with the token labelled `token`:
    /// NOT_FOUND when this coordinator did not mint it (it restarted: register again),
    /// PERMISSION_DENIED when another token registered it.
    pub fn open(&self, credential: &str, token: &str) -> Result<SessionId, Status> {
        let mut parts = credential.rsplitn(3, '.');
        let (tag, life, secret) = (parts.next(), parts.next(), parts.next());
        let (Some(tag), Some(life), Some(secret)) = (tag, life, secret) else {
            return Err(unknown());
        };
        if !armada_proto::auth::same_secret(life, &self.mac(&["life", secret], LIFE_DIGITS)) {
            return Err(unknown());
        }
        if !armada_proto::auth::same_secret(tag, &self.mac(&["token", secret, token], TAG_DIGITS)) {
            return Err(Status::permission_denied(
                "session: registered with another token; a worker session is used with the token that registered it",
            ));
        }
        Ok(SessionId::new(secret))
    }
}

impl Default for Sealer {
    fn default() -> Self {
        Sealer::new()
    }
}

/// As the scheduler says of a session it does not know, so that a worker registers again.
fn unknown() -> Status {
    Status::not_found("session: not registered here (the coordinator restarted?); register again")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_opens_only_with_its_token_and_only_on_its_coordinator() {
        let sealer = Sealer::new();
        let credential = sealer.seal("0123abcd", "gpu-pool");
        assert_eq!(sealer.open(&credential, "gpu-pool").unwrap(), "0123abcd".into());
        let stolen = sealer.open(&credential, "cpu-pool").unwrap_err();
        assert_eq!(stolen.code(), tonic::Code::PermissionDenied);
        assert!(stolen.message().starts_with("session: registered with another token"), "{}", stolen.message());
        // Another coordinator's (or an earlier life's) credential, a forged one, a bare secret.
        let restarted = Sealer::new().open(&credential, "gpu-pool").unwrap_err();
        assert_eq!(restarted.code(), tonic::Code::NotFound);
        assert!(restarted.message().contains("register again"));
        let (secret, rest) = credential.split_once('.').unwrap();
        let forged = format!("{secret}x.{rest}");
        for bad in [forged.as_str(), "0123abcd", "", "a.b", "..."] {
            assert_eq!(sealer.open(bad, "gpu-pool").unwrap_err().code(), tonic::Code::NotFound, "{bad:?}");
        }
        // The tag binds the exact label: no prefix or suffix of it opens the credential.
        for other in ["gpu-poo", "gpu-pool ", "", "none"] {
            assert_eq!(sealer.open(&credential, other).unwrap_err().code(), tonic::Code::PermissionDenied, "{other:?}");
        }
    }
}
