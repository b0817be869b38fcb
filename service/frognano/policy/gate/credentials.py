"""Files whose names say they hold credentials: `.env`, private keys, key stores, `.netrc`."""

from __future__ import annotations

import re

_SSH_KEY = re.compile(r"id_(?:rsa|dsa|ecdsa|ed25519|xmss)(?:_sk)?(?:[_-][\w-]*)?")
_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".p8", ".jks", ".keystore", ".ppk", ".kdbx")
_CREDENTIAL_NAMES = frozenset({
    ".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".htpasswd",
    ".dockercfg", ".s3cfg", ".boto",
})  # fmt: skip
_CREDENTIAL_PATHS = (".aws/credentials", ".docker/config.json")
# `.env.example` and the like are templates meant to be committed; their content is scanned.
_ENV_TEMPLATES = frozenset({"example", "sample", "template", "dist", "defaults", "tpl"})


def credential_file(path: str) -> str | None:
    """What `path` is, when its name says it holds credentials (None otherwise).

    Public keys (`id_rsa.pub`) are not: leaking one harms nobody, and where a public key
    would grant access (`authorized_keys`) the path is forbidden instead.
    """
    name = path.rpartition("/")[2].lower()
    if name == ".env" or (name.startswith(".env.") and name[5:] not in _ENV_TEMPLATES):
        return "an environment file (.env), where credentials live"
    if name.endswith(_KEY_SUFFIXES):
        return "a key, certificate or key-store file"
    if _SSH_KEY.fullmatch(name):
        return "an SSH private key"
    if name in _CREDENTIAL_NAMES or path.lower().endswith(_CREDENTIAL_PATHS):
        return "a credentials file"
    return None
