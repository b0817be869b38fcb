"""The webhook receiver over real HTTP (uvicorn on loopback) with the real Redis."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from frognano.app.intake import DROP_TOKENS_JOB, REVIEW_JOB, RUN_JOB
from frognano.app.web.receiver import WEBHOOK_PATH, create_app
from frognano.errors import ConfigError
from frognano.policy.store import PolicyStore
from frognano.settings import Settings
from tests.app.web.conftest import (
    POLICIES,
    SECRET,
    Space,
    delivery_headers,
    encode,
    free_port,
    installation_event,
    issue_event,
    make_app,
    review_event,
    serving,
    sign,
)


@pytest.fixture
async def client(space: Space) -> AsyncIterator[httpx.AsyncClient]:
    with serving(make_app(space)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            yield http


async def post(
    http: httpx.AsyncClient,
    payload: dict[str, Any],
    event: str = "issues",
    delivery: str | None = None,
    **kwargs: Any,
) -> httpx.Response:
    body = encode(payload)
    return await http.post(
        WEBHOOK_PATH, content=body, headers=delivery_headers(body, event, delivery, **kwargs)
    )


# Intake ---------------------------------------------------------------------------------------


async def test_a_labelled_issue_queues_one_run_job(space: Space, client: httpx.AsyncClient) -> None:
    reply = await post(client, issue_event(space), delivery="d-1")
    assert reply.status_code == 202
    answer = reply.json()
    assert answer["status"] == "queued"
    assert answer["delivery"] == "d-1"
    run_id = answer["run_id"]
    assert answer["job_id"] == f"run:{space.ident}:7:{run_id}"
    assert await space.queued() == [answer["job_id"]]
    job = await space.job(answer["job_id"])
    assert job["f"] == RUN_JOB
    assert job["a"] == []
    request = job["k"]["request"]
    assert job["k"]["run_id"] == run_id
    assert request["issue"] == {
        "installation_id": space.ident,
        "repo": "acme/calculator",
        "repo_id": space.ident,
        "number": 7,
    }
    assert request["labeller"] == "alice"
    assert request["label"] == "frognano"
    assert request["body"] == "The calculator divides by zero."
    assert request["delivery_id"] == "d-1"


@pytest.mark.parametrize(
    "signature",
    [
        pytest.param(None, id="missing"),
        pytest.param("sha256=" + "0" * 64, id="wrong"),
        pytest.param(sign(b"something else"), id="other-body"),
        pytest.param("sha256=zz", id="malformed"),
        pytest.param("sha1=" + "0" * 40, id="sha1-in-sha256-header"),
    ],
)
async def test_a_bad_signature_is_refused_and_nothing_is_queued(
    space: Space, client: httpx.AsyncClient, signature: str | None
) -> None:
    reply = await post(client, issue_event(space), signature=signature)
    assert reply.status_code == 401
    assert reply.json()["status"] == "rejected"
    assert await space.own_keys() == []


async def test_a_sha1_only_signature_is_refused(space: Space, client: httpx.AsyncClient) -> None:
    body = encode(issue_event(space))
    headers = delivery_headers(body, "issues", signature=None)
    headers["X-Hub-Signature"] = "sha1=" + "0" * 40
    reply = await client.post(WEBHOOK_PATH, content=body, headers=headers)
    assert reply.status_code == 401
    assert "SHA-1" in reply.json()["reason"]
    assert await space.own_keys() == []


async def test_a_signature_made_with_another_secret_is_refused(
    space: Space, client: httpx.AsyncClient
) -> None:
    body = encode(issue_event(space))
    headers = delivery_headers(body, "issues", signature=sign(body, "not the secret"))
    reply = await client.post(WEBHOOK_PATH, content=body, headers=headers)
    assert reply.status_code == 401
    assert await space.own_keys() == []


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", b"", b'{"action": 5}'],
    ids=["syntax", "array", "empty", "type"],
)
async def test_a_signed_but_malformed_body_is_400(
    space: Space, client: httpx.AsyncClient, body: bytes
) -> None:
    reply = await client.post(WEBHOOK_PATH, content=body, headers=delivery_headers(body, "issues"))
    assert reply.status_code == 400
    assert reply.json()["status"] == "rejected"
    assert await space.own_keys() == []


async def test_missing_github_headers_are_400(space: Space, client: httpx.AsyncClient) -> None:
    body = encode(issue_event(space))
    headers = {"X-Hub-Signature-256": sign(body), "Content-Type": "application/json"}
    reply = await client.post(WEBHOOK_PATH, content=body, headers=headers)
    assert reply.status_code == 400
    assert "X-GitHub-Event" in reply.json()["reason"]


async def test_the_same_delivery_three_times_makes_one_job(
    space: Space, client: httpx.AsyncClient
) -> None:
    replies = [await post(client, issue_event(space), delivery="same") for _ in range(3)]
    assert [r.status_code for r in replies] == [202, 202, 202]
    statuses = [r.json()["status"] for r in replies]
    assert statuses == ["queued", "duplicate", "duplicate"]
    job_id = replies[0].json()["job_id"]
    assert replies[1].json()["previous"] == f"queued:{job_id}"
    assert await space.queued() == [job_id]


async def test_concurrent_redeliveries_make_one_job(
    space: Space, client: httpx.AsyncClient
) -> None:
    replies = await asyncio.gather(
        *(post(client, issue_event(space), delivery="burst") for _ in range(8))
    )
    statuses = sorted(r.json()["status"] for r in replies)
    assert statuses == ["duplicate"] * 7 + ["queued"]
    assert len(await space.queued()) == 1


async def test_two_label_events_for_one_issue_at_once_start_one_run(
    space: Space, client: httpx.AsyncClient
) -> None:
    first, second = await asyncio.gather(
        post(client, issue_event(space, sender="alice")),
        post(client, issue_event(space, sender="bob")),
    )
    answers = sorted([first.json(), second.json()], key=lambda a: str(a["status"]))
    assert [a["status"] for a in answers] == ["already_running", "queued"]
    assert answers[0]["job_id"] == answers[1]["job_id"]
    assert answers[0]["run_id"] == answers[1]["run_id"]
    assert await space.queued() == [answers[1]["job_id"]]
    waiting: list[bytes] = await space.redis.lrange(  # type: ignore[misc]
        f"{space.prefix}run:{space.ident}:7:waiting", 0, -1
    )
    assert [json.loads(w)["delivery_id"] for w in waiting] == [answers[0]["delivery"]]


async def test_another_issue_gets_its_own_run(space: Space, client: httpx.AsyncClient) -> None:
    one = await post(client, issue_event(space, number=1))
    two = await post(client, issue_event(space, number=2))
    assert [one.json()["status"], two.json()["status"]] == ["queued", "queued"]
    assert len(await space.queued()) == 2


async def test_unlabelling_cancels_the_run_and_aborts_its_job(
    space: Space, client: httpx.AsyncClient
) -> None:
    queued = (await post(client, issue_event(space))).json()
    reply = await post(client, issue_event(space, "unlabeled", sender="bob"))
    assert reply.status_code == 202
    answer = reply.json()
    assert answer["status"] == "cancelled"
    assert answer["job_id"] == queued["job_id"]
    reason = await space.redis.get(f"{space.prefix}cancel:{queued['run_id']}")
    assert reason == b"the label frognano was removed by @bob"
    assert await space.redis.zscore("arq:abort", queued["job_id"]) is not None
    # While the cancelled run winds down, the issue still has its run.
    again = await post(client, issue_event(space, sender="carol"))
    assert again.json()["status"] == "already_running"


async def test_closing_an_issue_without_a_run_has_nothing_to_cancel(
    space: Space, client: httpx.AsyncClient
) -> None:
    reply = await post(client, issue_event(space, "closed"))
    assert reply.status_code == 202
    assert reply.json()["status"] == "nothing_to_cancel"
    assert await space.queued() == []


@pytest.mark.parametrize(
    ("event", "make", "reason"),
    [
        ("issues", lambda s: issue_event(s, label="bug"), "is not the trigger label"),
        ("ping", lambda s: {"zen": "Keep it logically awesome.", "hook_id": 1}, "pong"),
        ("star", lambda s: {"action": "created"}, "event star is not used"),
        ("issues", lambda s: {**issue_event(s), "sender": {"login": "x[bot]"}}, "bot"),
    ],
    ids=["other-label", "ping", "unused-event", "bot-sender"],
)
async def test_an_ignored_event_gets_200_with_the_reason(
    space: Space, client: httpx.AsyncClient, event: str, make: Any, reason: str
) -> None:
    reply = await post(client, make(space), event=event)
    assert reply.status_code == 200
    answer = reply.json()
    assert answer["status"] == "ignored"
    assert reason in answer["reason"]
    assert await space.own_keys() == []


async def test_a_repository_the_policy_disables_is_ignored(space: Space, tmp_path: Path) -> None:
    (tmp_path / "10-off.yaml").write_text(
        "version: 1\nrepos:\n  - {match: acme/calculator, enabled: false}\n"
    )
    app = make_app(space, policy_dir=tmp_path)
    with serving(app) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            reply = await post(http, issue_event(space))
    assert reply.status_code == 200
    assert "disables" in reply.json()["reason"]
    assert await space.own_keys() == []


async def test_the_policy_label_is_the_trigger(space: Space, tmp_path: Path) -> None:
    (tmp_path / "10-label.yaml").write_text("version: 1\ndefaults:\n  trigger: {label: ai-draft}\n")
    app = make_app(space, policy_dir=tmp_path)
    with serving(app) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            default = await post(http, issue_event(space, label="frognano"))
            custom = await post(http, issue_event(space, label="AI-Draft"))
    assert default.status_code == 200
    assert custom.json()["status"] == "queued"


async def test_an_approval_on_an_app_pr_queues_a_review_gate_job(
    space: Space, client: httpx.AsyncClient
) -> None:
    reply = await post(client, review_event(space), event="pull_request_review", delivery="r-1")
    assert reply.status_code == 202
    job_id = reply.json()["job_id"]
    assert job_id == f"review:{space.ident}:12:r-1"
    job = await space.job(job_id)
    assert job["f"] == REVIEW_JOB
    assert job["k"]["request"]["head_sha"] == "a" * 40
    again = await post(client, review_event(space), event="pull_request_review", delivery="r-1")
    assert again.json()["status"] == "duplicate"
    assert await space.queued() == [job_id]


async def test_an_installation_event_queues_a_drop_tokens_job(
    space: Space, client: httpx.AsyncClient
) -> None:
    reply = await post(client, installation_event(space), event="installation", delivery="i-1")
    assert reply.status_code == 202
    job_id = reply.json()["job_id"]
    assert job_id == f"drop-tokens:{space.ident}:i-1"
    job = await space.job(job_id)
    assert job["f"] == DROP_TOKENS_JOB
    assert job["k"] == {"request": {"installation_id": space.ident, "delivery_id": "i-1"}}


# Body size ------------------------------------------------------------------------------------

LIMIT = 64 * 1024  # make_app's max_body_bytes


async def raw_request(
    url: str, head: bytes, body: bytes = b"", after: bytes = b""
) -> tuple[int, bytes]:
    """Send `head` and `body` on a fresh connection, read the whole reply, then try to send
    `after`; the status and the reply."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(head + body)
        await writer.drain()
        reply = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        length = next(
            int(line.split(b":", 1)[1])
            for line in reply.lower().splitlines()
            if line.startswith(b"content-length:")
        )
        reply += await asyncio.wait_for(reader.readexactly(length), 10)
        if after:
            with contextlib.suppress(ConnectionError):
                writer.write(after)
                await writer.drain()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    status = int(reply.split(b" ", 2)[1])
    return status, reply


async def test_an_honest_content_length_over_the_cap_is_refused_before_the_body(
    space: Space,
) -> None:
    with serving(make_app(space)) as url:
        head = (
            f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-GitHub-Event: issues\r\nX-GitHub-Delivery: big\r\n"
            f"Content-Length: {LIMIT + 1}\r\n\r\n"
        ).encode()
        # Not a byte of the body is sent: the answer comes from the header alone.
        status, reply = await raw_request(url, head)
    assert status == 413
    assert b"larger than" in reply
    assert await space.own_keys() == []


async def test_a_chunked_body_over_the_cap_is_refused_while_streaming(
    space: Space, client: httpx.AsyncClient
) -> None:
    chunk = b"x" * 8192
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(LIMIT // len(chunk) + 4):
            sent += len(chunk)
            yield chunk

    headers = delivery_headers(b"", "issues", signature=sign(b"x" * (LIMIT + 4 * 8192)))
    reply = await client.post(WEBHOOK_PATH, content=body(), headers=headers)
    assert "content-length" not in {k.lower() for k in reply.request.headers}
    assert reply.status_code == 413
    assert await space.own_keys() == []


async def test_a_chunked_body_under_the_cap_is_accepted(
    space: Space, client: httpx.AsyncClient
) -> None:
    payload = encode(issue_event(space))

    async def body() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 50):
            yield payload[start : start + 50]

    reply = await client.post(
        WEBHOOK_PATH, content=body(), headers=delivery_headers(payload, "issues")
    )
    assert reply.status_code == 202


async def test_a_content_length_smaller_than_the_body_reads_no_more_than_declared(
    space: Space,
) -> None:
    big = encode(issue_event(space, body="x" * (LIMIT * 2)))
    with serving(make_app(space)) as url:
        head = (
            f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-GitHub-Event: issues\r\nX-GitHub-Delivery: liar\r\n"
            f"X-Hub-Signature-256: {sign(big)}\r\nContent-Length: 100\r\n\r\n"
        ).encode()
        status, _ = await raw_request(url, head, big[:100], after=big[100:])
    # The server answers after the 100 declared bytes, whose signature is not that of `big`.
    assert status == 401
    assert await space.own_keys() == []


async def test_more_bytes_than_the_declared_length_still_hit_the_cap(space: Space) -> None:
    """Whatever the server in front does with a lying Content-Length, the app counts the
    bytes it is given: driven here through ASGI directly, as a lax server would."""
    app = make_app(space)
    messages = [
        {"type": "http.request", "body": b"x" * 40_000, "more_body": True},
        {"type": "http.request", "body": b"x" * 40_000, "more_body": False},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": WEBHOOK_PATH,
        "raw_path": WEBHOOK_PATH.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-length", b"10"), (b"x-github-event", b"issues")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)  # type: ignore[arg-type]
    assert sent[0]["status"] == 413


# Redis down -----------------------------------------------------------------------------------


async def test_without_redis_deliveries_get_503_and_readyz_says_why(space: Space) -> None:
    app = make_app(space, redis_url=f"redis://127.0.0.1:{free_port()}/0")
    with serving(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            reply = await post(http, issue_event(space))
            assert reply.status_code == 503
            assert reply.json()["status"] == "unavailable"
            # What needs no Redis still works.
            assert (await post(http, {"zen": "z"}, event="ping")).status_code == 200
            assert (await post(http, issue_event(space), signature=None)).status_code == 401
            assert (await http.get("/healthz")).status_code == 200
            ready = await http.get("/readyz")
            assert ready.status_code == 503
            assert any(r.startswith("redis:") for r in ready.json()["reasons"])
    assert space.registry.get_sample_value("frognano_webhook_queue_errors_total") == 1
    assert await space.own_keys() == []


# Health, readiness, metrics ------------------------------------------------------------------


async def test_healthz_and_readyz_when_all_is_well(client: httpx.AsyncClient) -> None:
    health = await client.get("/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    ready = await client.get("/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready", "reasons": []})


async def test_a_bad_policy_change_leaves_the_receiver_ready_and_says_degraded(
    space: Space, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # One bad policy rollout must not take every web pod out of the Service: the last good
    # policy still decides, so /readyz stays 200 and names the broken file and line.
    caplog.set_level(logging.INFO)
    (tmp_path / "10-base.yaml").write_text("version: 1\n")
    store = PolicyStore(tmp_path, registry=space.registry)
    with serving(make_app(space, policies=store)) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            (tmp_path / "10-base.yaml").write_text("version: 1\nbogus: 1\n")
            assert store.reload() is False
            ready = await http.get("/readyz")
            assert ready.status_code == 200
            body = ready.json()
            assert body["status"] == "degraded"
            assert body["reasons"] == []
            (problem,) = body["policy"]["errors"]
            assert problem.startswith(f"{tmp_path / '10-base.yaml'}:2: bogus: ")
            assert body["policy"]["generation"] == 1
            metrics = set((await http.get("/metrics")).text.splitlines())
            assert "frognano_policy_errors 1.0" in metrics
            assert "policy.invalid" in caplog.text
            # The last good policy still serves deliveries.
            assert (await post(http, issue_event(space))).status_code == 202
            (tmp_path / "10-base.yaml").write_text("version: 1\n")
            assert store.reload() is True
            ready = await http.get("/readyz")
            assert (ready.status_code, ready.json()) == (200, {"status": "ready", "reasons": []})


async def test_a_bad_policy_does_not_hide_a_redis_outage(space: Space, tmp_path: Path) -> None:
    (tmp_path / "10-base.yaml").write_text("version: 1\n")
    store = PolicyStore(tmp_path, registry=space.registry)
    app = make_app(space, policies=store, redis_url=f"redis://127.0.0.1:{free_port()}/0")
    with serving(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            (tmp_path / "10-base.yaml").write_text("version: 1\nbogus: 1\n")
            assert store.reload() is False
            ready = await http.get("/readyz")
            assert ready.status_code == 503
            body = ready.json()
            assert body["status"] == "unready"
            assert [r.split(":")[0] for r in body["reasons"]] == ["redis"]
            assert len(body["policy"]["errors"]) == 1


def test_without_a_good_policy_the_receiver_does_not_start(tmp_path: Path) -> None:
    # Nothing could be decided: `frognano serve` exits 2 before listening, so the pod never
    # becomes ready (see docs/deploy.md).
    (tmp_path / "10-base.yaml").write_text("version: 1\nbogus: 1\n")
    settings = Settings(webhook_secret=SecretStr(SECRET), policy_dir=tmp_path)
    with pytest.raises(ConfigError, match="bogus"):
        create_app(settings, registry=CollectorRegistry())


async def test_metrics_count_deliveries_failures_and_enqueue_time(
    space: Space, client: httpx.AsyncClient
) -> None:
    await post(client, issue_event(space))
    await post(client, issue_event(space, sender="bob"))
    await post(client, issue_event(space), signature=None)
    await post(client, {"zen": "z"}, event="ping")
    text = (await client.get("/metrics")).text
    lines = set(text.splitlines())
    assert (
        'frognano_webhook_deliveries_total{code="202",decision="run",event="issues"} 2.0' in lines
    )
    assert (
        'frognano_webhook_deliveries_total{code="401",decision="rejected",event="unverified"} 1.0'
        in lines
    )
    assert (
        'frognano_webhook_deliveries_total{code="200",decision="ignored",event="ping"} 1.0' in lines
    )
    assert "frognano_webhook_signature_failures_total 1.0" in lines
    assert 'frognano_webhook_submissions_total{result="queued"} 1.0' in lines
    assert 'frognano_webhook_submissions_total{result="already_running"} 1.0' in lines
    assert "frognano_webhook_enqueue_seconds_count 2.0" in lines
    assert "frognano_policy_generation 1.0" in lines
    assert "frognano_policy_errors 0.0" in lines


async def test_an_unverified_event_name_never_becomes_a_metric_label(
    space: Space, client: httpx.AsyncClient
) -> None:
    await post(client, issue_event(space), event="evil_label_value", signature=None)
    text = (await client.get("/metrics")).text
    assert "evil_label_value" not in text


async def test_logs_name_the_delivery_but_never_the_body_or_secret(
    space: Space, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    marker = "UNTRUSTED-ISSUE-TEXT-1234"
    await post(client, issue_event(space, body=marker), delivery="logged-1")
    await post(client, issue_event(space, body=marker), delivery="logged-2", signature=None)
    text = caplog.text
    assert "logged-1" in text
    assert "logged-2" in text
    assert marker not in text
    assert SECRET not in text
    assert sign(encode(issue_event(space, body=marker))) not in text


def test_create_app_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    store = PolicyStore(POLICIES, registry=CollectorRegistry())
    for settings in (Settings(), Settings(webhook_secret=SecretStr(""))):
        with pytest.raises(ConfigError, match="FROGNANO_WEBHOOK_SECRET"):
            create_app(settings, policies=store, registry=CollectorRegistry())


async def test_a_signed_body_replayed_under_a_new_delivery_id_is_not_acted_on(
    space: Space, client: httpx.AsyncClient
) -> None:
    """The attack: capture one signed delivery, send it again under fresh delivery ids (to
    restart a run once the first ends, or to flood the queue)."""
    event = issue_event(space)
    first = await post(client, event, delivery="d-original")
    assert first.json()["status"] == "queued"
    for n in range(3):
        replay = await post(client, event, delivery=f"d-replay-{n}")
        assert replay.status_code == 202
        assert replay.json() == {
            "status": "duplicate",
            "delivery": f"d-replay-{n}",
            "previous": "replay_of:d-original",
        }
    assert len(await space.queued()) == 1
