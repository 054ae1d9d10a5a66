//! What the store keeps, as plain data the state machines read and make: a job's state, how
//! an attempt ended, a job's spec template (the store's encoding of it) and a stored job.
//! The store (`durable::store`) writes and reads them; nothing here does I/O.

use armada_core::JobSpec;
use armada_proto::ids::SweepId;
use armada_proto::v1 as pb;
use armada_proto::wire;
use prost::Message;

/// A job's state as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state [`Self::as_str`] names, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }
}

/// How an attempt ended, as stored and as counted by `/metrics`
/// (`armada_attempts_ended_total{outcome=...}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// Its trajectory became the job's.
    Committed,
    /// The worker reported a failure, or its lease expired.
    Failed,
    /// Its job no longer ran it (settled or cancelled meanwhile): a late report.
    Dropped,
    /// Leased and handed back unstarted.
    Released,
    /// Its records were whole, but the coordinator could not write them (a full disk, an
    /// I/O error): uncounted, its job queued again.
    Unwritten,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Committed => "committed",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::Dropped => "dropped",
            AttemptOutcome::Released => "released",
            AttemptOutcome::Unwritten => "unwritten",
        }
    }
}

/// A job's spec without its seed, as the store keeps it: the wire's `armada.v1.JobSpec`
/// encoding, so that the column is readable by any protobuf tool and the encoding stays
/// in this module. A job's bytes are its template's (seed 0, so absent) followed by a
/// message of just the seed: protobuf merges concatenated messages.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecTemplate(pb::JobSpec);

impl SpecTemplate {
    /// The bytes of a template: `spec` with its seed left out.
    pub fn encode(spec: &JobSpec) -> Vec<u8> {
        pb::JobSpec { seed: 0, ..wire::spec_to_wire(spec) }.encode_to_vec()
    }

    /// The bytes of a job: its template's, then its seed.
    pub fn with_seed(template: &[u8], seed: u64) -> Vec<u8> {
        let mut bytes = template.to_vec();
        pb::JobSpec { seed, ..Default::default() }.encode(&mut bytes).expect("a Vec grows");
        bytes
    }

    /// The bytes of a stored job's template: its bytes without the seed [`Self::with_seed`]
    /// appended, when they end with it (a template's own bytes leave the seed out). Equal
    /// template bytes are then equal templates.
    pub fn template_bytes(stored: &[u8], seed: u64) -> Option<&[u8]> {
        let suffix = pb::JobSpec { seed, ..Default::default() }.encode_to_vec();
        stored.strip_suffix(&suffix[..])
    }

    /// A stored job's bytes split, read from their end, into the bytes before its seed's
    /// field and that seed: `None` unless they end with a seed field (a job of seed 0 has
    /// none). Whatever the bytes before, the whole decodes to their fields with this seed
    /// (a message's fields merge, the last seed wins), so bytes before that are a known
    /// template's are that template's job of this seed, and need no decoding.
    pub fn split_seed(stored: &[u8]) -> Option<(&[u8], u64)> {
        const SEED_TAG: u8 = 6 << 3; // field 6 of armada.v1.JobSpec, a varint
        let last = stored.len().checked_sub(1)?;
        if stored[last] & 0x80 != 0 {
            return None;
        }
        // A varint: bytes with the high bit set, then one without; 10 bytes at most.
        let mut start = last;
        while start > 0 && last - start < 9 && stored[start - 1] & 0x80 != 0 {
            start -= 1;
        }
        let tag = start.checked_sub(1)?;
        if stored[tag] != SEED_TAG {
            return None;
        }
        let seed = prost::encoding::decode_varint(&mut &stored[start..]).ok()?;
        Some((&stored[..tag], seed))
    }

    /// A stored job's template and seed.
    pub fn decode(bytes: &[u8]) -> Result<(SpecTemplate, u64), String> {
        let mut spec = pb::JobSpec::decode(bytes).map_err(|e| e.to_string())?;
        let seed = std::mem::take(&mut spec.seed);
        Ok((SpecTemplate(spec), seed))
    }

    /// The template as a spec (seed 0), checked as the wire's specs are.
    pub fn to_spec(&self) -> Result<JobSpec, String> {
        wire::spec_from_wire(self.0.clone(), "spec")
    }

    /// Family, benchmark and algorithm, for a job this build cannot run.
    pub fn names(&self) -> (&str, &str, &str) {
        (&self.0.family, &self.0.benchmark, &self.0.algorithm)
    }
}

/// One stored job.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredJob {
    /// One allocation shared by the jobs of a sweep.
    pub sweep_id: SweepId,
    pub key: String,
    /// The job's position in its sweep (the run order).
    pub ord: i64,
    /// Its spec's bytes ([`SpecTemplate`]).
    pub spec: Vec<u8>,
    pub state: JobState,
    pub attempts: u32,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored job's bytes are its template's, then its seed: recovery finds the cell of
    /// each job by them, from their end or knowing the seed.
    #[test]
    fn a_stored_jobs_template_bytes_are_its_templates() {
        let mut spec = JobSpec::new("testkit", "constant", "slow");
        spec.algorithm_params.insert("ms".into(), armada_core::ParamValue::Int(1));
        let template = SpecTemplate::encode(&spec);
        for seed in [0, 1, 127, 128, 1 << 35, u64::MAX] {
            let stored = SpecTemplate::with_seed(&template, seed);
            assert_eq!(SpecTemplate::template_bytes(&stored, seed), Some(&template[..]), "seed {seed}");
            assert_eq!(SpecTemplate::decode(&stored).unwrap().1, seed);
            let split = SpecTemplate::split_seed(&stored);
            assert_eq!(split, (seed != 0).then_some((&template[..], seed)), "seed {seed}");
        }
        // Bytes that do not end with their seed (another encoder's) have no template bytes.
        let seed_first = [pb::JobSpec { seed: 3, ..Default::default() }.encode_to_vec(), template.clone()].concat();
        assert_eq!(SpecTemplate::decode(&seed_first).unwrap().1, 3);
        assert_eq!(SpecTemplate::template_bytes(&seed_first, 3), None);
    }

    /// Whatever bytes split from their end, their decoding is that of the bytes before the
    /// seed with that seed: so bytes before it that are a known template's need no decoding.
    #[test]
    fn bytes_split_at_their_seed_decode_as_the_bytes_before_with_that_seed() {
        let mut spec = JobSpec::new("testkit", "constant", "slow");
        spec.algorithm_params.insert("ms".into(), armada_core::ParamValue::Int(1));
        let template = SpecTemplate::encode(&spec);
        let (mut state, mut n_split) = (0x2545_f491_4f6c_dd1du64, 0);
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..20_000 {
            // Random bytes, a template's bytes with random tails, or a job's with its end cut.
            let mut bytes: Vec<u8> = match i % 3 {
                0 => (0..next() % 24).map(|_| next() as u8).collect(),
                1 => [&template[..], &(0..next() % 12).map(|_| next() as u8).collect::<Vec<_>>()].concat(),
                _ => SpecTemplate::with_seed(&template, next() >> (next() % 64)),
            };
            if i % 7 == 0 {
                bytes.push(6 << 3);
                bytes.extend((0..next() % 11).map(|_| 0x80 | next() as u8));
                bytes.push(next() as u8 & 0x7f);
            }
            let Some((before, seed)) = SpecTemplate::split_seed(&bytes) else { continue };
            n_split += 1;
            match (SpecTemplate::decode(before), SpecTemplate::decode(&bytes)) {
                (Ok((template, _)), whole) => assert_eq!(whole, Ok((template, seed)), "{bytes:?}"),
                (Err(_), _) => {}
            }
        }
        assert!(n_split > 5_000, "{n_split} of 20,000 split");
    }

    #[test]
    fn a_stored_spec_is_its_template_and_its_seed() {
        let mut spec = JobSpec::new("lse", "sinusoidal", "straddle");
        spec.algorithm_params.insert("beta_sqrt".into(), armada_core::ParamValue::Float(3.0));
        spec.horizon = 40;
        spec.sweep_seed = u64::MAX;
        let template = SpecTemplate::encode(&JobSpec { seed: 9, ..spec.clone() });
        let (a, seed_a) = SpecTemplate::decode(&SpecTemplate::with_seed(&template, 7)).unwrap();
        let (b, seed_b) = SpecTemplate::decode(&SpecTemplate::with_seed(&template, u64::MAX)).unwrap();
        assert_eq!((seed_a, seed_b), (7, u64::MAX));
        assert_eq!(a, b);
        assert_eq!(a.to_spec().unwrap(), JobSpec { seed: 0, ..spec });
        assert_eq!(a.names(), ("lse", "sinusoidal", "straddle"));
        assert!(SpecTemplate::decode(&[0xff, 0xff]).is_err());
    }
}
