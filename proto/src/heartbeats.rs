//! Where a session's heartbeats go: on a connection of their own, which the coordinator
//! serves on a thread of its own (see [`crate::connect::HEARTBEAT_PREFIX`]), as long as
//! that connection answers; else with the session's other calls.

use crate::auth::BearerToken;
use crate::v1 as pb;
use crate::v1::workers_client::WorkersClient;
use std::time::Duration;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tracing::info;

pub type Client = WorkersClient<InterceptedService<Channel, BearerToken>>;

/// A session's heartbeat ticks: every `interval`, the first after `phase` (in [0, 1)) of
/// it. Sessions started together (a job array's workers, a simulation's sessions) each
/// draw their own phase, so that their heartbeats do not reach the coordinator together.
pub fn ticks(interval: Duration, phase: f64) -> tokio::time::Interval {
    let first = interval.mul_f64(phase.clamp(0.0, 1.0));
    tokio::time::interval_at(tokio::time::Instant::now() + first, interval)
}

/// A phase in [0, 1) that differs from process to process (std's randomly keyed hasher).
pub fn random_phase() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A session's heartbeat sender.
pub struct Heartbeats {
    /// The heartbeat channel, until it fails where the session's other channel answers.
    own: Option<Client>,
    /// The longest a heartbeat waits on its own channel before it goes on the other one.
    patience: Duration,
    /// Whether one was answered on its own channel yet (said once in the log).
    answered_on_own: bool,
}

impl Heartbeats {
    /// Heartbeats for a session of the coordinator at `url`, sent every `interval`.
    pub fn new(url: &str, ca: Option<&std::path::Path>, token: &BearerToken, interval: Duration) -> Self {
        // The URL was checked when the session's channel was made: an error here leaves
        // the heartbeats on that channel.
        let own =
            crate::connect::heartbeat_channel(url, ca).ok().map(|c| WorkersClient::with_interceptor(c, token.clone()));
        Heartbeats { own, patience: interval, answered_on_own: false }
    }

    /// Whether heartbeats still go on their own connection.
    pub fn on_own_connection(&self) -> bool {
        self.own.is_some()
    }

    /// Send one heartbeat: on its own connection, or, if that fails or does not answer in
    /// time, on `shared` (and there from then on, if `shared` answers).
    pub async fn send(
        &mut self,
        shared: &mut Client,
        request: pb::HeartbeatRequest,
    ) -> Result<pb::HeartbeatResponse, tonic::Status> {
        let Some(own) = &mut self.own else {
            return shared.heartbeat(request).await.map(|r| r.into_inner());
        };
        let why = match tokio::time::timeout(self.patience, own.heartbeat(request.clone())).await {
            Ok(Ok(reply)) => {
                if !std::mem::replace(&mut self.answered_on_own, true) {
                    info!("heartbeats go on a connection of their own");
                }
                return Ok(reply.into_inner());
            }
            Ok(Err(status)) => status.message().to_string(),
            Err(_) => format!("no answer within {:?}", self.patience),
        };
        // The same request on the other channel: an error there is the session's (the
        // coordinator is gone, or forgot the session), not the heartbeat connection's.
        let reply = shared.heartbeat(request).await?.into_inner();
        info!("heartbeats go with the other calls from now on: their own connection failed ({why})");
        self.own = None;
        Ok(reply)
    }
}
