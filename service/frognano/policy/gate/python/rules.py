"""The rules of pycode: the labels a reviewer reads, and the names and attributes they catch."""

from __future__ import annotations

import re
from functools import lru_cache

EXIT = ("os._exit(), os.abort(), os.exec*() or another hard exit, which ends the test process "
        "before it reports failures")  # fmt: skip
SYS_EXIT = "sys.exit(), exit() or quit(), which stop the test run"
SIGNAL = ("a signal the test process sends itself (os.kill of its own pid, signal.raise_signal, "
          "signal.alarm, kill $PPID)")  # fmt: skip
RAISE = "raise SystemExit or KeyboardInterrupt, which stops the test run"
PYTEST_SKIP = "a pytest skip, xfail or exit (pytest.skip, pytest.mark.skip, pytest.exit, ...)"
UNITTEST_SKIP = "a unittest skip or expected failure (unittest.skip, skipTest, ...)"
ATEXIT = "atexit.register, which runs code after the tests have finished"
RAW_FD = ("output to raw file descriptors (os.write, os.dup2, os.fdopen, /proc/self/fd), "
          "which bypasses pytest's capture")  # fmt: skip
INTROSPECTION = ("frame or garbage-collector introspection (sys._getframe, gc.get_objects, "
                 "inspect.currentframe), which can reach into the test runner")  # fmt: skip
ALWAYS_EQUAL = "an __eq__ that always returns True (or __ne__ that always returns False)"
PLUGIN = "a pytest plugin or hook (def pytest_*, pytest_plugins, _pytest imports)"
PATCH = "patching of the test runner (assignments to pytest, _pytest, unittest, builtins or sys)"
STREAMS = "a replacement of sys.stdout or sys.stderr"
RESULTS = "a change to pytest's session or report results (exitstatus, outcome, ...)"
COLLECT = "a change to which tests pytest collects (collect_ignore)"
UNDER_TEST = ("code that checks whether it runs under the tests (pytest in sys.modules, "
              "PYTEST_* or FROGNANO_* variables)")  # fmt: skip
DYNAMIC_CODE = ("dynamic code (exec, eval, compile, marshal, code loaded from a file path), "
                "which the gate cannot analyse")  # fmt: skip
DYNAMIC_IMPORT = "an import of a module named at run time, which hides what is imported"
DYNAMIC_ATTRIBUTE = "an attribute of {} looked up by a computed name, which hides what is used"
CTYPES = "ctypes or cffi, which can call C functions such as _exit directly"
JUNIT = "a reference to the JUnit XML report that verification reads"
ANY_EQUAL = "an object equal to everything (unittest.mock.ANY), which passes any assertEqual"
IMPORTS = ("a change to the import system (sys.modules entries, sys.meta_path), which can swap "
           "the code under test for another")  # fmt: skip
ENCODING = "a source encoding declaration ({}), under which Python reads other code than shown"
MODULES = ("a walk through sys.modules (values, items, get...), which reaches every loaded "
           "module, the test runner's and FrogNano's collector included")  # fmt: skip
COLLECTOR = "a reference to FrogNano's own result collector, which reports the verdict's outcomes"

TAMPERING = frozenset({
    EXIT, SIGNAL, RAW_FD, INTROSPECTION, ALWAYS_EQUAL, PLUGIN, PATCH, RESULTS, UNDER_TEST,
    CTYPES, ANY_EQUAL, IMPORTS, ENCODING, COLLECTOR, MODULES,
})  # fmt: skip
"""Labels of code that can turn a verdict green with no fix at all (forge or cut short what the
collector sees, or answer the tests' questions only under test): `gate.tampering` decides
them. The rest (skips, sys.exit, atexit, dynamic code) follow `gate.suspicious_patterns`."""

OS_MODULES = ("os", "posix", "nt")
DANGER: dict[str, str] = {
    **{f"{os}.{name}": EXIT for os in OS_MODULES
       for name in ("_exit", "abort", "execv", "execve", "execl", "execle", "execlp", "execlpe",
                    "execvp", "execvpe")},
    "faulthandler.dump_traceback_later": EXIT,
    **dict.fromkeys(("sys.exit", "builtins.exit", "builtins.quit"), SYS_EXIT),
    **dict.fromkeys(("signal.raise_signal", "signal.pthread_kill", "signal.alarm",
                     "signal.setitimer", "_thread.interrupt_main"), SIGNAL),
    **{f"pytest.{name}": PYTEST_SKIP for name in ("skip", "xfail", "exit", "importorskip",
                                                   "mark.skip", "mark.skipif", "mark.xfail")},
    **{f"{module}.{name}": UNITTEST_SKIP for module in ("unittest", "unittest.case")
       for name in ("skip", "skipIf", "skipUnless", "expectedFailure", "SkipTest",
                    "TestCase.skipTest")},
    "atexit.register": ATEXIT,
    **{f"{os}.{name}": RAW_FD for os in OS_MODULES
       for name in ("write", "writev", "pwrite", "pwritev", "dup", "dup2", "fdopen", "sendfile")},
    **dict.fromkeys(("sys.__stdout__", "sys.__stderr__"), RAW_FD),
    **dict.fromkeys(("sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
                     "sys.monitoring", "threading.settrace", "threading.setprofile",
                     "threading.settrace_all_threads", "gc.get_objects", "gc.get_referrers",
                     "gc.get_referents", "inspect.currentframe", "inspect.stack", "inspect.trace",
                     "inspect.getouterframes", "inspect.getinnerframes", "traceback.walk_stack"),
                    INTROSPECTION),
    **dict.fromkeys(("pytest.hookimpl", "pytest.hookspec", "pytest.TestReport",
                     "pytest.CollectReport", "_pytest", "pluggy"), PLUGIN),
    **dict.fromkeys(("builtins.exec", "builtins.eval", "builtins.compile", "marshal.loads",
                     "types.FunctionType", "types.CodeType", "runpy.run_path", "runpy.run_module",
                     "importlib.machinery.SourceFileLoader",
                     "importlib.machinery.SourcelessFileLoader",
                     "importlib.util.spec_from_file_location", "imp.load_source"), DYNAMIC_CODE),
    **dict.fromkeys(("unittest.mock.ANY", "mock.ANY"), ANY_EQUAL),
    **dict.fromkeys(("sys.meta_path", "sys.path_hooks", "sys.path_importer_cache",
                     "sys.modules.update", "sys.modules.setdefault", "importlib.reload"), IMPORTS),
    **dict.fromkeys(("ctypes", "_ctypes", "cffi"), CTYPES),
    **dict.fromkeys(("frognano_collector", "frognano"), COLLECTOR),
    **dict.fromkeys(("sys.modules.values", "sys.modules.items", "sys.modules.keys",
                     "sys.modules.get", "sys.modules.copy", "sys.modules.pop"), MODULES),
}  # fmt: skip
RAISED = frozenset({"builtins.SystemExit", "builtins.KeyboardInterrupt"})
KILL = frozenset(f"{os}.{name}" for os in OS_MODULES for name in ("kill", "killpg"))
OWN_PID = frozenset(
    f"{os}.{name}()" for os in OS_MODULES for name in ("getpid", "getppid", "getpgrp", "getpgid")
)
GETATTR = frozenset(
    {"builtins.getattr", "builtins.setattr", "builtins.delattr", "builtins.hasattr"}
)
IMPORT = frozenset({"builtins.__import__", "importlib.import_module", "importlib.__import__"})
OPEN = frozenset({"builtins.open", "io.open", "io.FileIO", "_io.open", "_io.FileIO"})
WATCHED = ("os", "posix", "nt", "sys", "builtins", "pytest", "_pytest", "unittest", "atexit", "gc",
            "inspect", "signal", "_thread", "ctypes", "importlib")  # fmt: skip
SYS_PATCHED = frozenset({"excepthook", "unraisablehook", "exit", "modules", "displayhook"})
STREAM_NAMES = frozenset({"stdout", "stderr", "__stdout__", "__stderr__"})
RESULT_ATTRIBUTES = frozenset({"exitstatus", "testsfailed", "testscollected", "shouldfail",
                                "shouldstop", "outcome", "longrepr", "wasxfail"})  # fmt: skip
ATTRIBUTES = {
    **dict.fromkeys(("f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame",
                     "cr_frame", "ag_frame"), INTROSPECTION),
    "_called_from_test": UNDER_TEST,
    "pluginmanager": PLUGIN,
    "xmlpath": JUNIT,
    **dict.fromkeys(("__unittest_skip__", "__unittest_expecting_failure__"), UNITTEST_SKIP),
}  # fmt: skip
NAMES = {"collect_ignore": COLLECT, "collect_ignore_glob": COLLECT, "pytest_plugins": PLUGIN,
          "__unittest_skip__": UNITTEST_SKIP}  # fmt: skip
SENSORS = ("sys.modules", "sys.argv", "sys.orig_argv", "os.environ", "os.getenv", "__main__",
           "psutil")  # fmt: skip
UNDER_TEST_STRING = re.compile(r"(?:PYTEST|FROGNANO)_[A-Z0-9_]*|.*_called_from_test.*", re.DOTALL)
# `kill -9 $PPID`, `pkill -f pytest`: the test process stopping its runner from a shell.
SHELL_KILL = re.compile(r"\b(?:kill|pkill|killall)\b[^\n]*(?:\$PPID|\$\$|\bpytest\b|\bpython)")
RAW_PATH = re.compile(r"/proc/self/|/proc/\d+/fd|/dev/fd/|/dev/std(?:out|err)|/dev/tty")
JUNIT_PATTERN = re.compile(r"--junit|junit[-_]?xml|junit\S*\.xml", re.IGNORECASE)


def inherited(base: str) -> bool:
    """Whether a subclass of `base` stands for it (`class Stop(SystemExit)`)."""
    return base in RAISED or danger(base) is not None


@lru_cache(maxsize=8192)
def danger(name: str) -> str | None:
    """The label of `name` or of the nearest enclosing name that is dangerous."""
    while True:
        label = DANGER.get(name)
        if label is not None:
            return label
        name, dot, _ = name.rpartition(".")
        if not dot:
            return None


def patched(owner: str) -> bool:
    """Whether assigning to an attribute of `owner` patches the test runner or builtins."""
    if owner == "builtins":
        return True
    return within(owner, ("pytest", "_pytest", "unittest")) and not within(
        owner, ("unittest.mock",)
    )


@lru_cache(maxsize=8192)
def within(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether `name` is one of `prefixes` or inside one (`_pytest.runner` is in `_pytest`)."""
    return any(
        name == prefix or name.startswith((f"{prefix}.", f"{prefix}(")) for prefix in prefixes
    )
