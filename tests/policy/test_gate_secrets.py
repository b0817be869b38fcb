"""The gate's secret scan: credential formats, high-entropy strings, keywords in config files,
encoded and split secrets; no finding ever shows one."""

from __future__ import annotations

import base64

import pytest

from frognano.policy.gate.check import Finding, run_gate
from frognano.policy.models import GatePolicy
from tests.policy.fakes import (
    API_KEY,
    AWS_KEY,
    BLOB,
    GITHUB_TOKEN,
    HEX_SECRET,
    PASSWORD,
    STRIPE_KEY,
)
from tests.policy.gitrepo import new_files

ENCODED_TOKEN = base64.b64encode(GITHUB_TOKEN.encode()).decode()
HEX_KEY_HEADER = ("-----BEGIN " + "RSA PRIVATE KEY-----").encode().hex()
HEAD, TAIL = GITHUB_TOKEN[:18], GITHUB_TOKEN[18:]


def scan(path: str, text: str, gate: GatePolicy | None = None) -> list[Finding]:
    diff, facts = new_files({path: text})
    return run_gate(diff, facts, gate or GatePolicy())


def kinds(findings: list[Finding]) -> list[tuple[str, str]]:
    return [
        (finding.severity, finding.reason.partition("(")[2].partition(",")[0])
        for finding in findings
    ]


@pytest.mark.parametrize(
    ("path", "text", "kind"),
    [
        ("src/settings.py", f'TOKEN = "{GITHUB_TOKEN}"\n', "GitHub Token"),
        ("src/pay.js", f"const key = '{STRIPE_KEY}';\n", "Stripe Access Key"),
        ("config/app.env", f"AWS_ACCESS_KEY_ID={AWS_KEY}\nDEBUG=1\n", "AWS Access Key"),
        ("src/a.py", f'TOKEN = "{ENCODED_TOKEN}"\n', "GitHub Token (base64-encoded"),
        ("src/a.py", f'KEY = bytes.fromhex("{HEX_KEY_HEADER}")\n', "Private Key (hex-encoded"),
        ("notes.txt", f"key: {HEX_KEY_HEADER}\n", "Private Key (hex-encoded"),
        # Split across two lines, and across two string literals.
        ("src/t.js", f'const t = "{HEAD}" +\n  "{TAIL}";\n', "GitHub Token (split across"),
        ("src/t.js", f"const t = '{HEAD}' + '{TAIL}';\n", "GitHub Token (split across"),
        ("src/t.sh", f'T="{HEAD}"\\\n"{TAIL}"\n', "GitHub Token (split across"),
        ("src/t.py", f'T = (\n    "{HEAD}"\n    "{TAIL}"\n)\n', "GitHub Token (built from"),
        ("src/t.py", f'T = "{HEAD}" + "{TAIL}"\n', "GitHub Token (built from"),
        ("src/t.py", f'T = "".join(["{HEAD}", "{TAIL}"])\n', "GitHub Token (built from"),
        ("src/t.py", f'A = "{HEAD}"\nT = f"{{A}}{TAIL}"\n', "GitHub Token (built from"),
        (
            "src/t.py",
            f'import base64\nT = base64.b64decode("{ENCODED_TOKEN[:30]}" "{ENCODED_TOKEN[30:]}")\n',
            "GitHub Token (base64-encoded",
        ),
    ],
)
def test_credentials_block(path: str, text: str, kind: str) -> None:
    findings = scan(path, text)

    assert [finding.kind for finding in findings] == ["secret"]
    assert findings[0].severity == "block"
    assert kind in findings[0].reason
    assert "rotate it" in findings[0].reason
    shown = repr(findings)
    for secret in (GITHUB_TOKEN, HEAD, TAIL, ENCODED_TOKEN, AWS_KEY, STRIPE_KEY, HEX_KEY_HEADER):
        assert secret not in shown


@pytest.mark.parametrize(
    ("path", "text", "kind"),
    [
        ("src/crypto.py", f'SALT = "{HEX_SECRET}"\n', "Hex High Entropy String"),
        ("src/a.js", f'const k = "{API_KEY}";\n', "Base64 High Entropy"),
        ("src/a.py", f'K = "{BLOB}"\n', "Base64 High Entropy"),
        ("config/db.yaml", f"database:\n  password: {PASSWORD}\n", "Secret Keyword"),
        ("config/app.ini", f"[db]\npassword = {PASSWORD}\n", "Secret Keyword"),
        ("config/settings.json", f'{{"api_key": "{PASSWORD}"}}\n', "Secret Keyword"),
        (".env.example", f"SECRET_KEY={PASSWORD}\n", "Secret Keyword"),
    ],
)
def test_guessed_secrets_block_or_warn_as_the_policy_says(path: str, text: str, kind: str) -> None:
    blocked = scan(path, text)
    warned = scan(path, text, GatePolicy(high_entropy="warn"))

    assert [(finding.severity, finding.kind) for finding in blocked] == [("block", "secret")]
    assert kind in blocked[0].reason
    assert "gate.high_entropy: warn" in blocked[0].reason
    assert [(finding.severity, finding.kind) for finding in warned] == [("warn", "secret")]
    for secret in (PASSWORD, HEX_SECRET, API_KEY, BLOB):
        assert secret not in repr(blocked)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("src/app.py", "def add(a, b):\n    return a + b\n"),
        ("poetry.lock", f'hash = "sha256:{HEX_SECRET}{HEX_SECRET[:24]}"\n'),
        ("package-lock.json", f'"integrity": "sha512-{BLOB}"\n'),
        ("src/ids.py", 'ID = "123e4567-e89b-12d3-a456-426614174000"\n'),
        ("src/ids.py", f'user_id = "{HEX_SECRET}"\n'),  # detect-secrets' is_likely_id_string
        ("src/seq.py", 'ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"\n'),
        ("config/db.yaml", "password: ${DB_PASSWORD}\n"),
        ("config/db.yaml", "password: {{ vault_password }}\n"),
        ("docker-compose.yml", "    environment:\n      POSTGRES_PASSWORD: postgres\n"),
        ("config/app.ini", "password = changeme\n"),
        ("config/app.ini", "password = os.environ.get(DB)\n"),
        ("tests/test_db.py", 'URL = "postgres://user:pass@localhost/db"\npassword = "x"\n'),
        ("src/a.py", 'X = "abc" + "def"\nY = "".join(["a", "b"])\n'),
        ("docs/regions.md", "THE ASIA\nPACIFICREGIONSERVERS ARE FAST\n"),
        ("src/a.py", 'HELP = "Run `pytest -q` and read the report"\n'),
    ],
)
def test_ordinary_text_is_not_a_secret(path: str, text: str) -> None:
    assert scan(path, text) == []


def test_one_secret_is_one_finding_even_when_several_scans_see_it() -> None:
    findings = scan("src/t.py", f'T = "{HEAD}" "{TAIL}"\nU = "{GITHUB_TOKEN}"\n')

    assert len(findings) == 2  # the built string and the literal one, each named once
    assert {finding.reason.partition("(")[2].partition(",")[0] for finding in findings} == {
        "GitHub Token",
        "GitHub Token (built from pieces)",
    }


def test_a_secret_is_redacted_from_every_line_shown_for_its_file() -> None:
    findings = scan("src/app.py", f'import sys\nsys.exit("{HEAD}" "{TAIL}")\n')

    assert [finding.kind for finding in findings] == ["secret", "suspicious"]
    for finding in findings:
        assert HEAD not in (finding.line or "")
        assert TAIL not in (finding.line or "")
        assert "[REDACTED]" in (finding.line or "")


def test_secret_scan_off_turns_every_secret_rule_off() -> None:
    text = f'T = "{GITHUB_TOKEN}"\nS = "{HEX_SECRET}"\nE = "{ENCODED_TOKEN}"\n'

    assert scan("src/a.py", text, GatePolicy(secret_scan=False)) == []
