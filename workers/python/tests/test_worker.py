"""The worker's retries: how long it waits between tries of a call the coordinator cannot
answer yet."""

import types

import grpc

from armada_sdk import worker


class Unavailable(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "the coordinator cannot record the declaration of `mine` in its store"


def waits_until_answered(monkeypatch, tries: int, **cap) -> list[float]:
    """The waits of `_call` for a call that fails `tries` times, then answers."""
    waits = []
    monkeypatch.setattr(worker.time, "sleep", waits.append)
    left = [tries]

    def call():
        if left[0]:
            left[0] -= 1
            raise Unavailable()
        return "answered"

    this = types.SimpleNamespace(draining=False, coordinator="http://coordinator")
    assert worker.Worker._call(this, "Register", call, **cap) == "answered"
    return waits


def test_a_lost_coordinator_is_tried_again_every_5_s_at_most(monkeypatch):
    waits = waits_until_answered(monkeypatch, 9)
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]


def test_a_register_answered_unavailable_backs_off_to_a_minute(monkeypatch):
    waits = waits_until_answered(monkeypatch, 12, cap=60.0)
    assert [round(w, 1) for w in waits] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 60.0, 60.0]
