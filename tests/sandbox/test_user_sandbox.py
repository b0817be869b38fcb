"""bwrap's total disk cap and an ordinary user's supplementary groups, attacked."""

from __future__ import annotations

import json
import os
import pwd
import shutil
from pathlib import Path

import pytest

from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.options import SandboxLimits
from tests.adversarial.runner import BASE, FAST, FIX, ISSUE, environment, make_repo, solve_process
from tests.conftest import STRICT, options_for, require_mechanism
from tests.fakes.model_server import ScriptedModelServer, Turn
from tests.sandbox.test_hardening import GROUP, _group_secret
from tests.sandbox.test_mechanism import _as_nobody, public_copy

__all__ = ["public_copy"]  # a fixture: imported to be used here

MiB = 1 << 20

# What an agent does to fill the disk: 30 MB in each of the three places it may write, then
# what the filesystem says; the files go again so the patch is only the fix.
FILL = """
for place in /workspace /tmp "$HOME"; do
  head -c 30000000 /dev/zero > "$place/fill" && echo "wrote $place" || echo "full at $place"
done
df --output=fstype,size -k /workspace | tail -1
rm -f /workspace/fill /tmp/fill "$HOME/fill"
"""


def test_a_disk_filling_agent_stops_at_the_policy_cap_with_bwrap(tmp_path: Path) -> None:
    """The attack replayed through `frognano solve`: with the bwrap mechanism, /workspace,
    /tmp and the home share one filesystem of the policy's sandbox.ephemeral_storage."""
    require_mechanism("bwrap")
    repo = make_repo(tmp_path / "repo", BASE, {})
    issue = tmp_path / "ISSUE.md"
    issue.write_text(ISSUE)
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "50-case.yaml").write_text(
        "version: 1\ndefaults:\n  sandbox:\n    ephemeral_storage: 48Mi\n"
        f"  verify:\n    command: {json.dumps(FAST + ' python -m pytest -q')}\n"
    )
    turns = [
        Turn(reasoning="Fill the disk.", calls=[("Bash", {"command": FILL + FIX})]),
        Turn(content="Done."),
    ]
    out = tmp_path / "out"
    argv = ["solve", str(repo), "--issue-file", str(issue), "--out", str(out)]
    cache = tmp_path / "baselines"
    with ScriptedModelServer(turns) as server:
        env = environment(server, tmp_path, policies, cache)
        env["FROGNANO_LOCAL_SANDBOX_MECHANISM"] = "bwrap"
        code, stderr = solve_process(argv, env, tmp_path, timeout=300)
    report = json.loads((out / "report.json").read_text())
    assert code == 0, stderr
    assert report["sandbox"]["mechanism"] == "bwrap"
    said = "\n".join(
        path.read_text(errors="replace") for path in out.rglob("*") if path.suffix == ".jsonl"
    )
    assert "wrote /workspace" in said
    assert "No space left on device" in said
    assert "full at /tmp" in said
    assert "full at /home/sandbox" in said


async def test_workspace_tmp_and_home_share_the_disk_cap(mechanism: str) -> None:
    """Both mechanisms: one filesystem of the sandbox's disk size holds all three."""
    options = options_for(mechanism, limits=SandboxLimits(disk_bytes=32 * MiB))
    async with await LocalSandbox.create(options) as box:
        result = await box.exec(
            "head -c 20000000 /dev/zero > /workspace/a && echo one;"
            "head -c 20000000 /dev/zero > /tmp/b || echo refused;"
            "head -c 20000000 /dev/zero > ~/c || echo refused-home;"
            "df --output=fstype,size -k /workspace | tail -1"
        )
    assert "one" in result.output
    assert "No space left on device" in result.output
    assert "refused" in result.output
    assert "refused-home" in result.output
    assert result.output.split()[-2] in ("ext4", "tmpfs")


def test_an_ordinary_users_sandbox_caps_the_disk_outside_the_host_tmpdir(
    public_copy: Path,
) -> None:
    """A laptop user (no root): the tmpfs of the held user namespace caps the total, and
    nothing the sandbox writes lands in the host's TMPDIR."""
    done = _as_nobody(
        """
        import asyncio, os
        from frognano.sandbox import SandboxLimits, SandboxOptions, create_sandbox

        async def main():
            opts = SandboxOptions(limits=SandboxLimits(disk_bytes=16 << 20))
            async with await create_sandbox("local", opts) as box:
                r = await box.exec(
                    "head -c 10000000 /dev/zero > /workspace/a && echo one;"
                    "head -c 10000000 /dev/zero > /tmp/b || echo refused;"
                    "df --output=fstype,size -k /tmp | tail -1"
                )
                print(box.mechanism, r.output)
                on_host = sum(
                    os.path.getsize(os.path.join(folder, name))
                    for folder, _, names in os.walk(box.layout.base) for name in names
                )
                print("host-bytes", on_host)
        asyncio.run(main())
        """,
        public_copy,
        "/usr/sbin:/usr/bin:/sbin:/bin",
    )
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    assert words[0] == "bwrap"
    assert "one" in words
    assert "No space left on device" in done.stdout
    assert "refused" in words
    assert "tmpfs" in words
    assert int(words[words.index("host-bytes") + 1]) < MiB


def _subid_user() -> pwd.struct_passwd:
    """The user .ci/run makes for this: an ordinary account with subordinate ids."""
    name = os.environ.get("FNTEST_SUBID_USER", "frognano-test")
    msg = f"needs root, uidmap and a user {name!r} with /etc/subuid and /etc/subgid entries"
    try:
        user = pwd.getpwnam(name)
        listed = all(
            any(line.startswith(f"{name}:") for line in Path(f).read_text().splitlines())
            for f in ("/etc/subuid", "/etc/subgid")
        )
    except (KeyError, OSError):
        listed = False
    if os.geteuid() != 0 or not listed or shutil.which("newgidmap") is None:
        if STRICT:
            pytest.fail(msg)
        pytest.skip(msg)
    return user


GROUP_PROBE = """
import asyncio, sys
from pathlib import Path
from frognano.log import configure_logging
configure_logging("json", "WARNING", stream=sys.stdout)
from frognano.sandbox import SandboxOptions, create_sandbox

async def main():
    opts = SandboxOptions(python_env=Path(sys.argv[1]))
    async with await create_sandbox("local", opts) as box:
        r = await box.exec(f"cat {sys.argv[1]}/secret; grep ^Groups: /proc/self/status")
        print("mechanism", box.mechanism, "kept", list(box.kept_groups))
        print(r.output)
asyncio.run(main())
"""


def test_an_ordinary_user_with_subordinate_ids_loses_their_groups(public_copy: Path) -> None:
    """Where newgidmap and /etc/subgid allow it, the user namespace may call setgroups, and a
    file only the user's extra group may read is unreadable inside."""
    user = _subid_user()
    env = _group_secret()
    try:
        code = f"import sys; sys.argv = ['probe', {str(env)!r}]\n" + GROUP_PROBE
        done = _as_nobody(
            code,
            public_copy,
            "/usr/sbin:/usr/bin:/sbin:/bin",
            groups=(GROUP,),
            uid=user.pw_uid,
            gid=user.pw_gid,
        )
    finally:
        shutil.rmtree(env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "mechanism bwrap kept []" in out
    assert "sandbox.groups_kept" not in out
    assert "group-only" not in out
    assert "Permission denied" in out
    assert "Groups:\t\n" in out or out.rstrip().endswith("Groups:")
