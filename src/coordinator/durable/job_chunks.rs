//! A submission's jobs as the store keeps them first: a `job_chunks` row holds a chunk of
//! them (4,096) as they were submitted, instead of a `jobs` row each. A chunk becomes
//! `jobs` rows only when one of its jobs is about to change alone (an attempt ends without
//! a result, a restart charges an attempt, a repair); a cancel or a resubmission changes the
//! chunks in place. A job done is recorded by its part's row either way, so a sweep that
//! runs to its end writes no row per job at all.

use crate::coordinator::state::stored::{JobState, StoredJob};
use armada_proto::ids::SweepId;

/// The entries of `jobs`, one after the other, each: its key (a byte of length, then the
/// text), its order (i64), its state (a byte of length, then the text), its spec (u32 of
/// length, then the bytes); numbers little-endian. A job's count of attempts (0) and error
/// (none) are those of a job just submitted.
pub fn encode(jobs: &[StoredJob]) -> Vec<u8> {
    let size: usize = jobs.iter().map(|j| 1 + j.key.len() + 8 + 1 + j.state.as_str().len() + 4 + j.spec.len()).sum();
    let mut blob = Vec::with_capacity(size);
    for job in jobs {
        let state = job.state.as_str();
        blob.push(u8::try_from(job.key.len()).expect("a job key is 32 hex digits"));
        blob.extend_from_slice(job.key.as_bytes());
        blob.extend_from_slice(&job.ord.to_le_bytes());
        blob.push(state.len() as u8);
        blob.extend_from_slice(state.as_bytes());
        blob.extend_from_slice(&u32::try_from(job.spec.len()).expect("a spec under 4 GiB").to_le_bytes());
        blob.extend_from_slice(&job.spec);
    }
    blob
}

/// The jobs of a chunk of `sweep`, in their order; Err names what does not read.
pub fn decode(sweep: &SweepId, blob: &[u8]) -> Result<Vec<StoredJob>, String> {
    let mut jobs = Vec::new();
    let mut rest = blob;
    while !rest.is_empty() {
        let at = blob.len() - rest.len();
        let damaged = |what: &str| format!("a job chunk of sweep {sweep} is damaged at byte {at}: {what}");
        let key = text(&mut rest).ok_or_else(|| damaged("its key"))?;
        let ord = take::<8>(&mut rest).map(i64::from_le_bytes).ok_or_else(|| damaged("its order"))?;
        let state = text(&mut rest).ok_or_else(|| damaged("its state"))?;
        let state = JobState::parse(&state).ok_or_else(|| damaged(&format!("unknown state {state:?}")))?;
        let len = take::<4>(&mut rest).map(u32::from_le_bytes).ok_or_else(|| damaged("its spec's length"))?;
        let spec = bytes(&mut rest, len as usize).ok_or_else(|| damaged("its spec"))?.to_vec();
        jobs.push(StoredJob { sweep_id: sweep.clone(), key, ord, spec, state, attempts: 0, error: None });
    }
    Ok(jobs)
}

/// Whether one of `keys` is a job of the chunk `blob` (its entries walked, not decoded: a
/// sweep of a million jobs is searched a chunk at a time). A damaged blob holds none.
pub fn holds_any(blob: &[u8], keys: &std::collections::HashSet<&str>) -> bool {
    let mut rest = blob;
    let mut entry = || -> Option<bool> {
        let len = take::<1>(&mut rest)?[0] as usize;
        let key = std::str::from_utf8(bytes(&mut rest, len)?).ok()?;
        let found = keys.contains(key);
        bytes(&mut rest, 8)?;
        let len = take::<1>(&mut rest)?[0] as usize;
        bytes(&mut rest, len)?;
        let len = take::<4>(&mut rest).map(u32::from_le_bytes)? as usize;
        bytes(&mut rest, len)?;
        Some(found)
    };
    loop {
        match entry() {
            Some(true) => return true,
            Some(false) => {}
            None => return false,
        }
    }
}

fn bytes<'b>(rest: &mut &'b [u8], n: usize) -> Option<&'b [u8]> {
    if rest.len() < n {
        return None;
    }
    let (taken, left) = rest.split_at(n);
    *rest = left;
    Some(taken)
}

fn take<const N: usize>(rest: &mut &[u8]) -> Option<[u8; N]> {
    bytes(rest, N).map(|b| b.try_into().expect("N bytes"))
}

fn text(rest: &mut &[u8]) -> Option<String> {
    let len = take::<1>(rest)?[0] as usize;
    String::from_utf8(bytes(rest, len)?.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(key: &str, ord: i64, state: JobState, spec: &[u8]) -> StoredJob {
        StoredJob { sweep_id: "s".into(), key: key.into(), ord, spec: spec.to_vec(), state, attempts: 0, error: None }
    }

    /// Jobs come back as they went in (keys, orders, states, specs of any length, empty
    /// ones too), and every cut of the blob short of its end is reported, never misread.
    #[test]
    fn a_chunk_reads_back_its_jobs_and_a_cut_one_is_named_damaged() {
        let jobs = vec![
            job(&"0".repeat(32), 0, JobState::Queued, b"\x0a\x07testkit"),
            job(&"f".repeat(32), 7, JobState::Done, b""),
            job("ab", -3, JobState::Queued, &[0xa5; 300]),
        ];
        let blob = encode(&jobs);
        assert_eq!(blob.len(), (1 + 32 + 8 + 1 + 6 + 4 + 9) + (1 + 32 + 8 + 1 + 4 + 4) + (1 + 2 + 8 + 1 + 6 + 4 + 300));
        assert_eq!(decode(&"s".into(), &blob).unwrap(), jobs);
        assert_eq!(decode(&"s".into(), &[]).unwrap(), vec![]);
        for cut in 1..blob.len() {
            match decode(&"s".into(), &blob[..cut]) {
                // Only a cut between two entries reads, as the jobs before it.
                Ok(read) => {
                    let n = read.len();
                    assert!(n < jobs.len() && cut == encode(&jobs[..n]).len(), "cut at {cut}");
                    assert_eq!(read, jobs[..n]);
                }
                Err(e) => assert!(e.starts_with("a job chunk of sweep s is damaged at byte "), "{e}"),
            }
        }
        let (fs, ones) = ("f".repeat(32), "1".repeat(32));
        let wanted =
            |keys: &[&str]| -> std::collections::HashSet<String> { keys.iter().map(|k| k.to_string()).collect() };
        let holds = |blob: &[u8], keys: &std::collections::HashSet<String>| {
            holds_any(blob, &keys.iter().map(String::as_str).collect())
        };
        assert!(holds(&blob, &wanted(&["ab"])) && holds(&blob, &wanted(&["x", &fs])));
        assert!(!holds(&blob, &wanted(&["a", "abc", &ones])) && !holds(&blob, &wanted(&[])));
        assert!(!holds(&blob[..blob.len() - 1], &wanted(&["ab"])), "the last entry cut short");
        let mut unknown = encode(&jobs[..1]);
        unknown[1 + 32 + 8 + 1] = b'Q';
        assert_eq!(
            decode(&"s".into(), &unknown).unwrap_err(),
            "a job chunk of sweep s is damaged at byte 0: unknown state \"Queued\""
        );
    }
}
