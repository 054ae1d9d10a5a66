//! Who may call what. A coordinator without tokens is open to anyone who reaches it. With
//! tokens, every gRPC call carries one (`authorization: Bearer <token>`), and its role
//! decides what the call may do:
//! - `admin` (`--token`, and `armada run`'s own): everything, as a single token always did;
//! - `client`: the `Sweeps` service (submit, watch, status, cancel, delete, fetch, declare);
//! - `worker`: the `Workers` service, limited, when the token names families, to
//!   registering for (and declaring) only those: a session runs only the families it
//!   registered, so such a worker can never lease, upload or commit a job of another;
//! - `viewer`: the dashboard (its pages and read-only API), nothing of gRPC;
//! - `scrape`: `/metrics`, for Prometheus, nothing else.
//!
//! The dashboard is closed whenever any token is configured: `admin` opens all of it,
//! `viewer` and `client` its pages and API, `scrape` its `/metrics`.

use armada_proto::auth::same_secret;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tonic::{Request, Status};

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Client,
    Worker,
    Viewer,
    Scrape,
}

/// What a request to the dashboard's HTTP port asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DashboardPart {
    /// The pages and their API.
    Pages,
    /// `/metrics`.
    Metrics,
}

impl Role {
    /// Whether a token of this role opens `part` of the dashboard.
    pub fn opens(&self, part: DashboardPart) -> bool {
        match part {
            DashboardPart::Pages => matches!(self, Role::Admin | Role::Client | Role::Viewer),
            DashboardPart::Metrics => matches!(self, Role::Admin | Role::Scrape),
        }
    }
}

/// One token of a `--tokens` file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// What trajectories' provenance calls it (`tokens[i]` when absent).
    #[serde(default)]
    pub name: Option<String>,
    pub secret: String,
    pub role: Role,
    /// A worker token's families (any, when absent).
    pub families: Option<BTreeSet<String>>,
}

/// The label of the single `--token` in provenance.
pub const ADMIN_TOKEN_LABEL: &str = "--token";
/// The label of a call on a coordinator without tokens.
pub const NO_TOKEN_LABEL: &str = "none";

/// The shortest secret a tokens file may hold: a guessable token guards nothing.
const MIN_SECRET_LEN: usize = 16;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    tokens: Vec<TokenEntry>,
}

/// Why a tokens file was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    #[error("reading {}: {cause}", .path.display())]
    Read { path: PathBuf, cause: std::io::Error },
    /// Not TOML of the tokens' shape, or a token that breaks a rule; `why` names the field.
    #[error("{}: {why}", .path.display())]
    Invalid { path: PathBuf, why: String },
}

/// Read a tokens file (TOML: `[[tokens]]` tables of `secret`, `role`, `families`).
pub fn read_tokens(path: &Path) -> Result<Vec<TokenEntry>, TokensError> {
    let text = std::fs::read_to_string(path).map_err(|cause| TokensError::Read { path: path.into(), cause })?;
    parse_tokens(&text).map_err(|why| TokensError::Invalid { path: path.into(), why })
}

fn parse_tokens(text: &str) -> Result<Vec<TokenEntry>, String> {
    let mut file: TokensFile = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    for (i, t) in file.tokens.iter_mut().enumerate() {
        let name = t.name.get_or_insert_with(|| format!("tokens[{i}]"));
        if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
            return Err(format!("tokens[{i}].name: use 1 to 64 characters, none of them control characters"));
        }
    }
    for (i, t) in file.tokens.iter().enumerate() {
        if file.tokens[..i].iter().any(|u| u.name == t.name) {
            return Err(format!("tokens[{i}].name: `{}` names two tokens", t.name.as_deref().unwrap_or_default()));
        }
        if t.secret.len() < MIN_SECRET_LEN || !t.secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "tokens[{i}].secret: use at least {MIN_SECRET_LEN} printable ASCII characters without spaces"
            ));
        }
        if t.families.is_some() && t.role != Role::Worker {
            return Err(format!("tokens[{i}].families: only a worker token is limited to families"));
        }
        if file.tokens[..i].iter().any(|u| u.secret == t.secret) {
            return Err(format!("tokens[{i}].secret: the same secret twice"));
        }
    }
    Ok(file.tokens)
}

/// What a call's token allows a worker to run: put into the call's extensions by
/// [`Gate`], read by Register.
#[derive(Clone, Debug, Default)]
pub struct Grant {
    /// The families it may register for and declare (any, when `None`).
    pub families: Option<Arc<BTreeSet<String>>>,
    /// The label of the token the call came with (`None`: a coordinator without tokens).
    pub token: Option<Arc<str>>,
    /// It is an admin token's.
    pub admin: bool,
}

impl Grant {
    /// The token's label for provenance.
    pub fn token_label(&self) -> &str {
        self.token.as_deref().unwrap_or(NO_TOKEN_LABEL)
    }

    /// What only an admin may do (remove a declaration; declare beyond the per-token
    /// quota): an admin token, or anyone on a coordinator without tokens.
    pub fn is_admin(&self) -> bool {
        self.admin || self.token.is_none()
    }
}

impl Grant {
    /// Refuse a family the token does not cover: PERMISSION_DENIED naming the field.
    pub fn check(&self, family: &str, field: &str) -> Result<(), Status> {
        match &self.families {
            Some(allowed) if !allowed.contains(family) => Err(Status::permission_denied(format!(
                "{field}: this worker's token runs only the families {}, not `{family}`",
                allowed.iter().cloned().collect::<Vec<_>>().join(", ")
            ))),
            _ => Ok(()),
        }
    }
}

/// The coordinator's tokens; none: open.
#[derive(Debug, Default)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
}

impl Tokens {
    /// `admin` (the `--token`) and the entries of a tokens file.
    pub fn new(admin: Option<&str>, mut entries: Vec<TokenEntry>) -> Tokens {
        if let Some(secret) = admin.filter(|t| !t.is_empty()) {
            let name = Some(ADMIN_TOKEN_LABEL.to_string());
            entries.push(TokenEntry { name, secret: secret.to_string(), role: Role::Admin, families: None });
        }
        Tokens { entries }
    }

    fn find(&self, bearer: Option<&str>) -> Option<&TokenEntry> {
        self.entry(bearer?.strip_prefix("Bearer ")?)
    }

    /// The entry whose secret is `given`.
    pub fn entry(&self, given: &str) -> Option<&TokenEntry> {
        // Every entry is compared, so that how long a refusal takes says nothing of which.
        self.entries.iter().fold(None, |found, e| if same_secret(given, &e.secret) { Some(e) } else { found })
    }

    /// No token is configured: everything is open to whoever reaches the ports.
    pub fn is_open(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The two services a token may open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    Sweeps,
    Workers,
}

/// The interceptor in front of one service: UNAUTHENTICATED without a known token,
/// PERMISSION_DENIED for a token whose role does not open this service.
#[derive(Clone, Debug)]
pub struct Gate {
    tokens: Arc<Tokens>,
    service: Service,
}

impl Gate {
    pub fn new(tokens: Arc<Tokens>, service: Service) -> Gate {
        Gate { tokens, service }
    }
}

impl tonic::service::Interceptor for Gate {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if self.tokens.entries.is_empty() {
            request.extensions_mut().insert(Grant::default());
            return Ok(request);
        }
        let bearer = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
        let Some(entry) = self.tokens.find(bearer) else {
            return Err(Status::unauthenticated("missing or wrong token: send `authorization: Bearer <token>`"));
        };
        let token = entry.name.as_deref().map(Arc::from);
        let grant = match (&entry.role, self.service) {
            (Role::Admin, _) => Grant { families: None, token, admin: true },
            (Role::Client, Service::Sweeps) => Grant { families: None, token, admin: false },
            (Role::Worker, Service::Workers) => {
                Grant { families: entry.families.clone().map(Arc::new), token, admin: false }
            }
            (Role::Client, Service::Workers) => {
                return Err(Status::permission_denied("this is a client token: it cannot act as a worker"))
            }
            (Role::Worker, Service::Sweeps) => {
                return Err(Status::permission_denied(
                    "this is a worker token: it cannot submit, watch, cancel, delete or fetch sweeps",
                ))
            }
            (Role::Viewer | Role::Scrape, _) => {
                return Err(Status::permission_denied(
                    "this is a dashboard token (viewer or scrape): it opens the dashboard's port only",
                ))
            }
        };
        request.extensions_mut().insert(grant);
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    fn call(gate: &mut Gate, token: Option<&str>) -> Result<Grant, tonic::Code> {
        let mut request = Request::new(());
        if let Some(t) = token {
            request.metadata_mut().insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        gate.call(request).map(|r| r.extensions().get::<Grant>().cloned().unwrap()).map_err(|e| e.code())
    }

    #[test]
    fn each_role_opens_its_service_only() {
        let file = r#"
[[tokens]]
secret = "client-secret-0123"
role = "client"
[[tokens]]
secret = "worker-secret-0123"
role = "worker"
families = ["mybo"]
"#;
        let tokens = Arc::new(Tokens::new(Some("admin-secret"), parse_tokens(file).unwrap()));
        let mut sweeps = Gate::new(tokens.clone(), Service::Sweeps);
        let mut workers = Gate::new(tokens, Service::Workers);
        assert!(call(&mut sweeps, Some("client-secret-0123")).is_ok());
        assert_eq!(call(&mut workers, Some("client-secret-0123")).unwrap_err(), tonic::Code::PermissionDenied);
        assert_eq!(call(&mut sweeps, Some("worker-secret-0123")).unwrap_err(), tonic::Code::PermissionDenied);
        let grant = call(&mut workers, Some("worker-secret-0123")).unwrap();
        assert!(grant.check("mybo", "families[0]").is_ok());
        let e = grant.check("lse", "families[1]").unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert_eq!(e.message(), "families[1]: this worker's token runs only the families mybo, not `lse`");
        for gate in [&mut sweeps, &mut workers] {
            assert!(call(gate, Some("admin-secret")).unwrap().families.is_none());
            assert_eq!(call(gate, Some("nope-nope-nope-nope")).unwrap_err(), tonic::Code::Unauthenticated);
            assert_eq!(call(gate, None).unwrap_err(), tonic::Code::Unauthenticated);
        }
        // No token at all: open, unlimited.
        let mut open = Gate::new(Arc::new(Tokens::new(None, vec![])), Service::Workers);
        assert!(call(&mut open, None).unwrap().families.is_none());
    }

    #[test]
    fn a_tokens_file_is_checked_field_by_field() {
        let bad = |text: &str| parse_tokens(text).unwrap_err();
        assert_eq!(
            bad("[[tokens]]\nsecret = \"short\"\nrole = \"client\"\n"),
            "tokens[0].secret: use at least 16 printable ASCII characters without spaces"
        );
        assert_eq!(
            bad("[[tokens]]\nsecret = \"0123456789abcdef\"\nrole = \"client\"\nfamilies = [\"x\"]\n"),
            "tokens[0].families: only a worker token is limited to families"
        );
        assert!(bad("[[tokens]]\nsecret = \"0123456789abcdef\"\nrole = \"root\"\n").contains("unknown variant `root`"));
        let twice = "[[tokens]]\nsecret = \"0123456789abcdef\"\nrole = \"client\"\n".repeat(2);
        assert_eq!(bad(&twice), "tokens[1].secret: the same secret twice");
        let named = |name: &str, secret: &str| {
            format!("[[tokens]]\nname = \"{name}\"\nsecret = \"{secret}\"\nrole = \"client\"\n")
        };
        assert_eq!(
            bad(&(named("lab", "0123456789abcdef") + &named("lab", "fedcba9876543210"))),
            "tokens[1].name: `lab` names two tokens"
        );
        assert_eq!(
            bad(&named("", "0123456789abcdef")),
            "tokens[0].name: use 1 to 64 characters, none of them control characters"
        );
        // A token without a name is called by its place in the file.
        assert_eq!(
            bad(&(named("tokens[1]", "0123456789abcdef")
                + "[[tokens]]\nsecret = \"fedcba9876543210\"\nrole = \"client\"\n")),
            "tokens[1].name: `tokens[1]` names two tokens"
        );
    }

    /// The token a call came with is labelled in its grant: the file's name, its place in
    /// the file, `--token` for the single admin token, `none` on an open coordinator.
    #[test]
    fn a_grant_carries_its_tokens_label() {
        let file = "[[tokens]]\nname = \"gpu-pool\"\nsecret = \"worker-secret-0123\"\nrole = \"worker\"\n\
                    [[tokens]]\nsecret = \"client-secret-0123\"\nrole = \"client\"\n";
        let tokens = Arc::new(Tokens::new(Some("admin-secret"), parse_tokens(file).unwrap()));
        let label = |service, token| {
            call(&mut Gate::new(tokens.clone(), service), Some(token)).unwrap().token_label().to_string()
        };
        assert_eq!(label(Service::Workers, "worker-secret-0123"), "gpu-pool");
        assert_eq!(label(Service::Sweeps, "client-secret-0123"), "tokens[1]");
        assert_eq!(label(Service::Workers, "admin-secret"), "--token");
        let mut open = Gate::new(Arc::new(Tokens::new(None, vec![])), Service::Workers);
        assert_eq!(call(&mut open, None).unwrap().token_label(), "none");
    }
}
