"""A real `frognano` worker process for tests that kill it: `python -m tests.app.worker_process`.

It reads its configuration from one JSON environment variable, so a test can point it at the
fake GitHub, a test queue and short heartbeats.
"""

from __future__ import annotations

import asyncio
import json
import os

from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from frognano.app.worker import build_worker
from frognano.github.retry import Transport
from frognano.log import configure_logging
from frognano.settings import Settings


async def main() -> None:
    config = json.loads(os.environ["FNTEST_WORKER"])
    configure_logging("console", "WARNING")
    settings = Settings(
        redis_url=config["redis_url"],
        github_app_id=config["app_id"],
        github_private_key=SecretStr(config["private_key"]),
        github_api_url=config["api_url"],
        model_base_url=config["model_base_url"],
        policy_dir=config["policy_dir"],
        trajectory_dir=config["trajectory_dir"],
        sandbox=config.get("sandbox", "local"),
        k8s_kubeconfig=config.get("kubeconfig"),
        k8s_namespace=config.get("namespace", "frognano-sandbox"),
    )
    transport = Transport(
        base_url=config["api_url"], seconds_between_requests=0, seconds_between_writes=0
    )
    worker = build_worker(
        settings,
        transport=transport,
        registry=CollectorRegistry(),
        key_prefix=config["prefix"],
        queue_name=config["queue_name"],
        poll_delay=0.05,
        heartbeat_seconds=config["heartbeat_seconds"],
        heartbeat_ttl=config["heartbeat_ttl"],
        watch_policies=False,
    )
    async with worker:
        await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
