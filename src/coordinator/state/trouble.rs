//! Writes the coordinator could not make: its store's, or a sweep's trajectory parts (a
//! full disk, a read-only mount, a file in the way). Each place's trouble is kept from its
//! first failure until a write there succeeds again, so that `armada status`, `watch`, the
//! dashboard and `/metrics` show what the logs say, and stop saying it once it is over.
//!
//! Shared (inside [`super::metrics::Metrics`]): the store reports its own writes, the
//! scheduler each part the committer wrote or could not write, and readers take snapshots.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// Where a write failed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// `armada.sqlite`: every sweep waits on it (no lease, no commit is recorded).
    Store,
    /// The trajectory parts of one sweep: its jobs wait; other sweeps go on.
    Parts(String),
    /// The store's periodic backups: nothing waits, but a damaged store has none newer.
    Backups,
}

impl Place {
    /// The kind of place, as `/metrics` labels it.
    pub fn kind(&self) -> &'static str {
        match self {
            Place::Store => "store",
            Place::Parts(_) => "parts",
            Place::Backups => "backups",
        }
    }

    /// Every kind, as [`Place::kind`] names them.
    pub const KINDS: [&'static str; 3] = ["store", "parts", "backups"];
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Store => f.write_str("the store (armada.sqlite)"),
            Place::Parts(sweep) => write!(f, "the trajectory parts of sweep {sweep}"),
            Place::Backups => f.write_str("the store's backups (armada.backups/)"),
        }
    }
}

/// Writes failing at one place, since the last one that succeeded there.
#[derive(Clone, Debug, PartialEq)]
pub struct Trouble {
    pub place: Place,
    /// The latest failure's error.
    pub error: String,
    /// The first failure since a write there last succeeded, and the latest.
    pub since: SystemTime,
    pub last: SystemTime,
    pub failures: u64,
}

/// The current troubles, and every failure counted.
#[derive(Debug, Default)]
pub struct WriteTroubles {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    current: BTreeMap<Place, Trouble>,
    /// Failed writes ever, by kind of place ([`Place::KINDS`]).
    failures: [u64; 3],
    last_failure: Option<SystemTime>,
    /// Places whose trouble began or ended since [`WriteTroubles::take_changes`].
    changed: Vec<Place>,
}

impl WriteTroubles {
    /// A write at `place` failed with `error`.
    pub fn failed(&self, place: Place, error: &str, now: SystemTime) {
        let mut s = self.lock();
        let kind = Place::KINDS.iter().position(|&k| k == place.kind()).expect("a kind of place");
        s.failures[kind] += 1;
        s.last_failure = Some(now);
        if let Some(trouble) = s.current.get_mut(&place) {
            trouble.error = error.to_string();
            trouble.last = now;
            trouble.failures += 1;
            return;
        }
        let trouble = Trouble { place: place.clone(), error: error.to_string(), since: now, last: now, failures: 1 };
        s.current.insert(place.clone(), trouble);
        s.changed.push(place);
    }

    /// A write at `place` succeeded: its trouble, if any, is over.
    pub fn succeeded(&self, place: &Place) {
        let mut s = self.lock();
        // The common case (no trouble anywhere) costs a lock and a lookup.
        if s.current.remove(place).is_some() {
            s.changed.push(place.clone());
        }
    }

    /// Whether writes at `place` fail now.
    pub fn failing(&self, place: &Place) -> bool {
        self.lock().current.contains_key(place)
    }

    /// Every place whose writes fail now, the store first, then parts by sweep.
    pub fn current(&self) -> Vec<Trouble> {
        self.lock().current.values().cloned().collect()
    }

    /// The troubles that hold up `sweep`: the store's and its parts'.
    pub fn affecting(&self, sweep: &str) -> Vec<Trouble> {
        let s = self.lock();
        let parts = Place::Parts(sweep.to_string());
        [Place::Store, parts].iter().filter_map(|p| s.current.get(p).cloned()).collect()
    }

    /// The failed writes counted so far, by kind of place, as [`Place::KINDS`] orders them.
    pub fn failures(&self) -> [(&'static str, u64); 3] {
        let s = self.lock();
        [0, 1, 2].map(|i| (Place::KINDS[i], s.failures[i]))
    }

    /// When a write last failed anywhere.
    pub fn last_failure(&self) -> Option<SystemTime> {
        self.lock().last_failure
    }

    /// The places whose trouble began or ended since the last call (each once, in order).
    pub fn take_changes(&self) -> Vec<Place> {
        let mut changed = std::mem::take(&mut self.lock().changed);
        changed.sort();
        changed.dedup();
        changed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    /// A place's trouble runs from its first failure to the next success there: counted,
    /// with the latest error, and neither a success elsewhere nor one before it ends it.
    #[test]
    fn a_trouble_lasts_from_the_first_failure_to_the_next_success_at_its_place() {
        let w = WriteTroubles::default();
        w.succeeded(&Place::Store);
        assert!(w.current().is_empty() && w.take_changes().is_empty());

        w.failed(Place::Parts("b".into()), "no space left on device", at(10));
        w.failed(Place::Store, "database or disk is full", at(11));
        w.failed(Place::Store, "disk I/O error", at(12));
        assert_eq!(w.take_changes(), vec![Place::Store, Place::Parts("b".into())]);
        assert!(w.take_changes().is_empty(), "each change is taken once");
        let store =
            Trouble { place: Place::Store, error: "disk I/O error".into(), since: at(11), last: at(12), failures: 2 };
        assert_eq!(w.current()[0], store);
        assert_eq!(w.affecting("a"), vec![store.clone()]);
        assert_eq!(w.affecting("b").len(), 2);
        assert_eq!(w.failures(), [("store", 2), ("parts", 1), ("backups", 0)]);
        assert_eq!(w.last_failure(), Some(at(12)));

        w.succeeded(&Place::Parts("a".into()));
        assert_eq!(w.current().len(), 2, "a success elsewhere ends nothing");
        w.succeeded(&Place::Store);
        assert_eq!(w.current(), vec![Trouble { place: Place::Parts("b".into()), ..w.current()[0].clone() }]);
        assert_eq!(w.affecting("a"), vec![]);
        assert_eq!(w.take_changes(), vec![Place::Store]);
        assert_eq!(w.failures(), [("store", 2), ("parts", 1), ("backups", 0)], "counters only go up");

        // A new failure after the end is a new trouble, counted from one.
        w.failed(Place::Store, "database or disk is full", at(20));
        assert_eq!((w.affecting("a")[0].since, w.affecting("a")[0].failures), (at(20), 1));
        assert_eq!(Place::Parts("b".into()).to_string(), "the trajectory parts of sweep b");
    }
}
