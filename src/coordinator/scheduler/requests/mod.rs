//! The scheduler's requests, a file each: its payload, what it answers, and its handler.
//! The services reach them through [`SchedulerHandle`](super::handle::SchedulerHandle)'s
//! methods; the actor takes them from its mailbox one at a time, as [`Mail`].
//!
//! A new request is a file here (a struct, its [`Request`] impl, the handler) and a method
//! on the handle.

use super::Scheduler;
use crate::coordinator::state::replies::CommandError;
use armada_proto::ids::SessionId;
use std::time::Instant;
use tokio::sync::oneshot;

pub mod cancel;
pub mod complete;
pub mod declare;
pub mod delete;
pub mod fail;
pub mod heartbeat;
pub mod jobs;
pub mod judged;
pub mod lease;
pub mod list;
pub mod part_of;
pub mod part_written;
pub mod refused;
pub mod register;
pub mod release;
pub mod remove_family;
pub mod status;
pub mod submit;
pub mod summarized;
pub mod summary;
pub mod sweep_keys;
pub mod watch;
pub mod workers;

/// How the scheduler answers a request.
pub(in crate::coordinator) type Reply<T> = oneshot::Sender<Result<T, CommandError>>;

/// A request to the scheduler.
pub(in crate::coordinator::scheduler) trait Request: Send + 'static {
    /// What it answers (`()`: nothing, or answers of its own inside it).
    type Answer: Send + 'static;

    /// The worker session a worker's request names: the scheduler notes it was heard
    /// from. Every request says (no default), so that a new worker request cannot forget.
    fn session(&self) -> Option<&SessionId>;

    /// Carry it out at `now` (the clock read once, by the actor) and answer on `reply`.
    fn handle(self, scheduler: &mut Scheduler, now: Instant, reply: Reply<Self::Answer>);
}

/// A request with the channel its answer goes back on.
pub(in crate::coordinator::scheduler) struct Envelope<R: Request> {
    pub(in crate::coordinator::scheduler) request: R,
    pub(in crate::coordinator::scheduler) reply: Reply<R::Answer>,
}

/// A request in the mailbox, whatever it is.
pub(in crate::coordinator::scheduler) trait Command: Send {
    fn session(&self) -> Option<&SessionId>;
    fn handle(self: Box<Self>, scheduler: &mut Scheduler, now: Instant);
}

impl<R: Request> Command for Envelope<R> {
    fn session(&self) -> Option<&SessionId> {
        self.request.session()
    }

    fn handle(self: Box<Self>, scheduler: &mut Scheduler, now: Instant) {
        let Envelope { request, reply } = *self;
        request.handle(scheduler, now, reply);
    }
}

/// What the scheduler's mailbox carries.
pub(in crate::coordinator::scheduler) type Mail = Box<dyn Command>;

/// A request and its reply channel as mail.
pub(in crate::coordinator::scheduler) fn mail<R: Request>(request: R, reply: Reply<R::Answer>) -> Mail {
    Box::new(Envelope { request, reply })
}

/// A request that answers nothing, as mail.
pub(in crate::coordinator::scheduler) fn tell<R: Request<Answer = ()>>(request: R) -> Mail {
    mail(request, oneshot::channel().0)
}
