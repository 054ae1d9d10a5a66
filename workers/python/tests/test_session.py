"""The worker session's state machine held to the table of cases armada's Rust worker is
held to (workers/session_cases.json, run by workers/runtime/src/session/tests.rs too)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from armada_sdk import session as s

CASES = pathlib.Path(__file__).resolve().parents[2] / "session_cases.json"
MS = 1_000_000


def event(v: Any) -> s.Event[None]:
    if isinstance(v, str):
        return {"wake": s.Wake(), "heartbeat_due": s.HeartbeatDue(), "drain": s.Drain(), "lost": s.Lost()}[v]
    [(name, body)] = v.items()
    if name == "leased":
        jobs = [s.LeasedJob(attempt, sweep, None) for attempt, sweep in body["leases"]]
        return s.Leased(jobs, body["retry_after_ms"])
    if name == "heartbeat_answered":
        return s.HeartbeatAnswered(list(body))
    if name == "committed":
        return s.Committed(list(body))
    assert name == "task_ended", name
    outcomes: dict[str, Any] = {"ended": lambda r: s.Ended(), "run_again_alone": lambda r: s.RunAgainAlone(None), "ready": lambda r: s.Ready(r["values"])}
    return s.TaskEnded([s.Ran(r["attempt"], outcomes[r["outcome"]](r), r["took_ms"] * MS) for r in body])


def written(action: s.Action[None]) -> Any:
    """An action as the table writes it."""
    if isinstance(action, s.Lease):
        return {"lease": {"max_jobs": action.max_jobs, "wait_ms": action.wait_ms}}
    if isinstance(action, s.Start):
        return {"start": {"attempts": [j.attempt for j in action.jobs], "batched": action.batched}}
    if isinstance(action, s.Heartbeat):
        return {"heartbeat": {"attempts": action.attempts, "started": action.started}}
    if isinstance(action, (s.Cancel, s.Commit, s.Release)):
        return {type(action).__name__.lower(): action.attempts}
    return {s.Drained: "drained", s.Register: "register", s.Exit: "exit"}[type(action)]


TABLE = json.loads(CASES.read_text())


def test_the_table_has_its_cases() -> None:
    assert len(TABLE["cases"]) >= 12


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"][:60] for c in TABLE["cases"]])
def test_the_shared_case_table_holds(case: dict[str, Any]) -> None:
    session: s.Session[None] = s.Session(case["slots"])
    for i, step in enumerate(case["steps"]):
        actions = session.handle(step["at_ms"] * MS, event(step["event"]))
        assert [written(a) for a in actions] == step["actions"], f"step {i}"
        if "wake_at_ms" in step:
            wake = session.wake_at()
            assert (None if wake is None else wake // MS) == step["wake_at_ms"], f"step {i}: when it next wakes"


def test_a_slot_holds_about_100_ms_of_short_jobs_ahead_and_runs_them_as_a_batch() -> None:
    # The numbers of the Rust machine's test of the same name.
    lengths = s.JobLengths()
    assert (lengths.batch("s"), lengths.depth("s", 2)) == (None, 2), "not measured: one a slot"
    lengths.record("s", 10 * MS)
    assert (lengths.batch("s"), lengths.depth("s", 2)) == (10, 22)
    lengths.record("t", 10_000)
    assert lengths.batch("t") == s.BATCH_MOST, "at most a batch's most"
    assert lengths.depth("t", 3) == 3 * (1 + s.PREFETCH_PER_SLOT)
    lengths.record("v", 40 * MS)
    assert (lengths.batch("v"), lengths.depth("v", 1)) == (2, 3), "100 ms is two 40 ms jobs"
    lengths.record("w", 200 * MS)
    assert (lengths.batch("w"), lengths.depth("w", 1)) == (1, 2), "short: one ahead"
    lengths.record("u", 300 * MS)
    assert (lengths.batch("u"), lengths.depth("u", 2)) == (None, 2), "long: one a slot"
    lengths.record_streaming("s")
    assert (lengths.batch("s"), lengths.depth("s", 2)) == (None, 22), "records beyond a batch's: streamed"


def test_the_mean_follows_the_last_eight_jobs_or_so() -> None:
    lengths = s.JobLengths()
    lengths.record("s", 400 * MS)
    assert lengths.depth("s", 1) == 1
    for _ in range(8):
        lengths.record("s", 10 * MS)
    # 400 ms weighs (7/8)^8 = 34% after eight jobs of 10 ms: 143 ms, short.
    assert lengths.mean["s"] == pytest.approx(143e6, rel=0.01)
    assert lengths.depth("s", 1) == 2, "short: one ahead"
