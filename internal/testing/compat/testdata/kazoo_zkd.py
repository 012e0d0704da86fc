"""pytest plugin: run kazoo's own test suite against zkd instead of Apache ZooKeeper.

Load it with ``python3 -m pytest -p kazoo_zkd`` (this directory on PYTHONPATH). kazoo's
harness (kazoo/testing/common.py, ManagedZooKeeper.run) writes each server's zoo.cfg and
myid itself and then starts ``java ... QuorumPeerMain zoo.cfg``. This plugin leaves all of
that untouched and replaces only the process start: the java command line is turned into
``$ZKD_BIN --config zoo.cfg``. The ZooKeeper system properties kazoo passes with -D
(zookeeper.DigestAuthenticationProvider.superDigest, readonlymode.enabled) are appended to
that zoo.cfg, where zkd reads them; the JVM's own properties (log4j, file.encoding, JAAS)
mean nothing to zkd and are dropped.

Environment:
  ZKD_BIN   the zkd binary (required)
  ZKD_LOGDIR  where each zkd's output goes, as zkd-<server id>-<n>.log (kazoo removes
            its working directories at exit); the server's working directory by default.
  ZKD_PIDS  a file that gets each started process id on its own line, so that the caller
            can stop them by PID if pytest itself dies before its atexit handler runs.

kazoo's TestReadOnlyMode.test_read_only is marked as a strict expected failure: it expects
a session made while the quorum was up to reconnect to a read-only server, which ZooKeeper
refuses since 3.7 (ZOOKEEPER-3864, ReadOnlyZooKeeperServer.validateSession: "Refusing global
session reconnection in RO mode") and zkd refuses likewise. Should it pass, pytest reports
the test as failed (XPASS(strict)), so the difference is noticed.

Each zkd also gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the pytest thread that
started it.
"""
import ctypes
import os
import signal
import subprocess as _subprocess
import types

import kazoo.testing.common as _common

_PR_SET_PDEATHSIG = 1

# -D properties that are ZooKeeper settings (QuorumPeerConfig/ZooKeeperServer read them as
# system properties; zkd reads the same names from zoo.cfg).
_ZK_PROPERTY_PREFIXES = ("zookeeper.", "readonlymode.")


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_seq = [0]


def _next_seq():
    _seq[0] += 1
    return _seq[0]


def _zkd_popen(args, **kwargs):
    """Popen for kazoo's java command line: start zkd on the same zoo.cfg instead."""
    args = list(args)
    if not args or args[0] != "java":
        return _subprocess.Popen(args, **kwargs)
    config_path = args[-1]
    props = []
    for a in args[1:-1]:
        if a.startswith("-D") and "=" in a:
            key, value = a[2:].split("=", 1)
            if key.startswith(_ZK_PROPERTY_PREFIXES):
                props.append("%s=%s" % (key, value))
    if props:
        with open(config_path, "a") as cfg:
            cfg.write("\n# ZooKeeper system properties from kazoo's java command line\n")
            cfg.write("\n".join(props) + "\n")
    zkd = os.environ["ZKD_BIN"]
    workdir = os.path.dirname(config_path)
    with open(os.path.join(workdir, "data", "myid")) as f:
        myid = f.read().strip()
    logdir = os.environ.get("ZKD_LOGDIR") or workdir
    log = open(os.path.join(logdir, "zkd-%s-%d.log" % (myid, _next_seq())), "ab")
    try:
        proc = _subprocess.Popen(
            [zkd, "--config", config_path],
            stdin=_subprocess.DEVNULL, stdout=log, stderr=log,
            preexec_fn=_die_with_parent, **kwargs)
    finally:
        log.close()
    pids = os.environ.get("ZKD_PIDS")
    if pids:
        with open(pids, "a") as f:
            f.write("%d\n" % proc.pid)
    return proc


# get_global_cluster insists on a ZooKeeper install path, classpath or version; zkd reports
# itself as 3.8.0 (server_version), and ZOOKEEPER_VERSION >= 3.5 is what makes the harness
# write reconfigEnabled=true, 4lw.commands.whitelist=* and the super digest.
os.environ.setdefault("ZOOKEEPER_VERSION", "3.8.0")
os.environ.setdefault("ZOOKEEPER_CLASSPATH", "(zkd needs no jars)")

# common.py calls subprocess.Popen through its module global; give it a copy of the module
# whose Popen is ours, so nothing else in the process is affected.
_shim = types.ModuleType("subprocess")
_shim.__dict__.update(_subprocess.__dict__)
_shim.Popen = _zkd_popen
_common.subprocess = _shim


_READ_ONLY_TEST = "kazoo/tests/test_connection.py::TestReadOnlyMode::test_read_only"


def pytest_collection_modifyitems(config, items):
    import pytest
    for item in items:
        if item.nodeid.endswith(_READ_ONLY_TEST):
            item.add_marker(pytest.mark.xfail(
                strict=True,
                reason="ZooKeeper 3.7+ and zkd refuse a global session's reconnection to a "
                       "read-only server (ZOOKEEPER-3864)"))
