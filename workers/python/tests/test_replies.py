"""The coordinator's answers become Python values with the .proto's field names."""

import dataclasses

from armada_sdk import FamilyInfo, ServerInfo, SweepState, SweepStatus
from armada_sdk._proto import service_pb2
from armada_sdk.examples.noisy import FAMILY


def test_a_sweep_status_keeps_every_field_of_the_proto():
    fields = {f.name for f in dataclasses.fields(SweepStatus)}
    assert fields == {f.name for f in service_pb2.SweepStatus.DESCRIPTOR.fields}
    message = service_pb2.SweepStatus(
        sweep_id="s", family="noisy", state=service_pb2.SWEEP_STATE_FINISHED, n_jobs=3, n_done=2, n_failed=1,
        failures=[service_pb2.JobFailed(job_key="k", error="ValueError: no", attempt=1, final=True)],
    )
    status = SweepStatus.from_proto(message)
    assert (status.n_jobs, status.n_done, status.n_failed, status.n_queued) == (3, 2, 1, 0)
    assert status.state == SweepState.FINISHED == service_pb2.SWEEP_STATE_FINISHED and status.finished
    assert status.failures[0].error == "ValueError: no" and status.failures[0].final
    assert SweepStatus.from_proto(service_pb2.SweepStatus(state=99)).state == SweepState.UNSPECIFIED


def test_a_family_reads_as_declared():
    info = FAMILY.to_proto()
    assert {f.name for f in dataclasses.fields(FamilyInfo)} == {f.name for f in service_pb2.FamilyInfo.DESCRIPTOR.fields}
    server = ServerInfo.from_proto(service_pb2.ServerInfoResponse(version="0.1.0", families=[info]))
    family = server.family(FAMILY.name)
    assert family.metrics[0].name == FAMILY.metrics[0].name and family.metrics[0].kind == "float"
    declared = {p.name: (type(p).__name__.lower(), p.default) for b in FAMILY.benchmarks for p in b.params}
    read = {p.name: (p.kind, p.default) for b in family.benchmarks for p in b.params}
    assert declared and read == declared


def test_the_families_parts_keep_every_field_of_the_proto():
    from armada_sdk import ComponentInfo, MetricInfo, ParamInfo

    for ours, theirs in [(ComponentInfo, service_pb2.ComponentInfo), (ParamInfo, service_pb2.ParamInfo), (MetricInfo, service_pb2.MetricInfo)]:
        assert {f.name for f in dataclasses.fields(ours)} == {f.name for f in theirs.DESCRIPTOR.fields}, ours.__name__
