//! The bearer token on both sides of the wire: a client interceptor that attaches it, and
//! the check a server applies to every request.

use tonic::metadata::{Ascii, MetadataValue};
use tonic::{Request, Status};

/// The environment variable both `armada serve` and the clients read the token from.
pub const TOKEN_ENV: &str = "ARMADA_TOKEN";

/// Attaches `authorization: Bearer <token>` to every request when a token is set.
#[derive(Clone, Debug, Default)]
pub struct BearerToken(Option<MetadataValue<Ascii>>);

impl BearerToken {
    /// `None` or an empty token: no header. A token that is not printable ASCII is refused.
    pub fn new(token: Option<&str>) -> anyhow::Result<Self> {
        match token.filter(|t| !t.is_empty()) {
            None => Ok(BearerToken(None)),
            Some(t) => Ok(BearerToken(Some(
                format!("Bearer {t}").parse().map_err(|_| anyhow::anyhow!("the token must be printable ASCII"))?,
            ))),
        }
    }
}

impl tonic::service::Interceptor for BearerToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The server side: with `expected` set, a request must carry exactly that bearer token.
#[derive(Clone, Debug, Default)]
pub struct RequireToken {
    expected: Option<String>,
}

impl RequireToken {
    pub fn new(token: Option<&str>) -> Self {
        RequireToken { expected: token.filter(|t| !t.is_empty()).map(|t| format!("Bearer {t}")) }
    }
}

impl tonic::service::Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else { return Ok(request) };
        let given = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
        if given.is_some_and(|g| same_secret(g, expected)) {
            Ok(request)
        } else {
            Err(Status::unauthenticated("missing or wrong token: send `authorization: Bearer <token>`"))
        }
    }
}

/// Whether `given` is `expected`, in time that does not depend on where they differ (a
/// token's content must not leak through how long a refusal takes).
pub fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len() && given.bytes().zip(expected.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn the_token_round_trips_and_anything_else_is_refused() {
        let mut client = BearerToken::new(Some("s3cret")).unwrap();
        let mut server = RequireToken::new(Some("s3cret"));
        let with = client.call(Request::new(())).unwrap();
        assert!(server.call(with).is_ok());
        let err = server.call(Request::new(())).unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        let wrong = BearerToken::new(Some("s3cres")).unwrap().call(Request::new(())).unwrap();
        assert_eq!(server.call(wrong).unwrap_err().code(), tonic::Code::Unauthenticated);
        // No token configured: everything passes.
        assert!(RequireToken::new(None).call(Request::new(())).is_ok());
        assert!(BearerToken::new(Some("bad\ntoken")).is_err());
    }
}
