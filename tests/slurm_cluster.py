"""A single-node Slurm cluster on localhost for the tests (and .ci/run): munged, slurmctld and slurmd, started from
Debian's ``slurm-wlm`` and ``munge`` with a generated ``slurm.conf`` in a folder of their own.

One node with two CPUs, one partition (``debug``), no accounting, a short ``MinJobAge`` (finished jobs leave the
queue after 30 s), and every file the daemons write (state, spool, logs, sockets, the munge key) under ``root``:
nothing under /etc or /run is touched. The daemons run in the foreground as children of this process, and ``stop``
ends each one by its PID. Clients find the cluster through ``SLURM_CONF`` (``env``). ``python tests/slurm_cluster.py
DIR`` starts one and prints its ``SLURM_CONF`` (what ``.ci/run`` would need by hand); the tests use ``start``.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel")
NODE = "simpe-node"
PARTITION = "debug"
CPUS = 2
MIN_JOB_AGE = 30  # seconds a finished job stays in the queue (squeue, scontrol) before the controller forgets it


class ClusterError(RuntimeError):
    """The cluster could not start here: the reason, for a test's skip."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _paths(*names: str) -> dict[str, str]:
    """Each program's path; a daemon may live in /usr/sbin, off a normal user's PATH."""
    found = {}
    for name in names:
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")
        if path is None:
            raise ClusterError(f"{name} is not installed (apt-get install slurm-wlm munge)")
        found[name] = path
    return found


def slurm_conf(root: Path, ctld_port: int, slurmd_port: int, user: str) -> str:
    """The cluster's slurm.conf: one node of ``CPUS`` CPUs, one partition, no accounting, no cgroups."""
    host = socket.gethostname().split(".")[0]
    return "\n".join([
        "ClusterName=simpetest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        f"SlurmUser={user}",
        "AuthType=auth/munge",
        # cred_expire: also how long a requeued job waits before it may start again (default 120 s)
        f"AuthInfo=socket={root}/munge.socket,cred_expire=10",
        "CredType=cred/munge",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/slurmctld.log",
        f"SlurmdLogFile={root}/slurmd.log",
        "ProctrackType=proctrack/linuxproc",  # follows the tasks by parent and child in /proc (no cgroups here)
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "MpiDefault=none",
        "ReturnToService=2",
        "JobRequeue=1",
        f"MinJobAge={MIN_JOB_AGE}",
        "KillWait=2",  # seconds between a cancelled task's SIGTERM (which submitit ignores) and its SIGKILL (default 30)
        "SlurmdTimeout=60",
        "SlurmctldTimeout=60",
        "SlurmdParameters=config_overrides",  # the node has CPUS CPUs whatever the machine has
        f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={CPUS} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO",
        "",
    ])


@dataclass
class Cluster:
    """A running single-node cluster: its folder, its conf and the daemons it started (name -> process)."""

    root: Path
    conf: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """This process's environment with ``SLURM_CONF`` naming the cluster (for sbatch, squeue and the rest)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, check: bool = True) -> str:
        """A Slurm client's output, e.g. ``run("sinfo", "-h", "-o", "%T")``."""
        done = subprocess.run(list(args), env=self.env(), capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-n", NODE, "-o", "%T", check=False).strip()

    def stop(self) -> None:
        """Cancel the jobs still in the queue (their slurmstepd would outlive slurmd), then end every daemon this
        cluster started, by its PID, the last started first."""
        if self.processes.get("slurmctld") is not None and self.processes["slurmctld"].poll() is None:
            self.run("scancel", "--user", "root", check=False)
            end = time.monotonic() + 30
            while time.monotonic() < end and self.run("squeue", "-h", check=False).strip():
                time.sleep(0.5)
        for name in reversed(list(self.processes)):
            process = self.processes.pop(name)
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)

    def logs(self) -> str:
        """The daemons' log tails: why the cluster would not come up."""
        out = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            path = self.root / name
            if path.exists():
                out.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(out)


def start(root: Path, timeout: float = 60.0) -> Cluster:
    """Start munged, slurmctld and slurmd with their files under ``root`` and wait until the node is idle.

    Raises ``ClusterError`` with the reason where they cannot start (not installed, not root, a daemon that dies);
    whatever was started by then is stopped first.
    """
    programs = _paths(*DAEMONS, *CLIENTS)
    if os.geteuid() != 0:
        raise ClusterError("the single-node Slurm cluster needs root (slurmd starts jobs as their user)")
    root = Path(root).resolve()
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    conf = root / "slurm.conf"
    user = "root"
    conf.write_text(slurm_conf(root, _free_port(), _free_port(), user), encoding="utf-8")
    cluster = Cluster(root, conf)
    env = cluster.env()
    try:
        cluster.processes["munged"] = subprocess.Popen(
            [programs["munged"], "-F", "--force", f"--socket={root}/munge.socket", f"--key-file={key}",
             f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log", f"--seed-file={root}/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _wait(lambda: (root / "munge.socket").exists(), 15, cluster, "munged did not open its socket")
        cluster.processes["slurmctld"] = subprocess.Popen([programs["slurmctld"], "-D", "-i", "-f", str(conf)], env=env,
                                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                          start_new_session=True)
        cluster.processes["slurmd"] = subprocess.Popen([programs["slurmd"], "-D", "-N", NODE, "-f", str(conf)], env=env,
                                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                       start_new_session=True)
        _wait(lambda: cluster.node_state() == "idle", timeout, cluster, "the node did not become idle")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait(ready, timeout: float, cluster: Cluster, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise ClusterError(f"{name} exited with {process.returncode}\n{cluster.logs()}")
        if ready():
            return
        time.sleep(0.3)
    raise ClusterError(f"{what} within {timeout:g} s (node state: {cluster.node_state() or '?'})\n{cluster.logs()}")


def _stop_on(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str]) -> int:
    """``python tests/slurm_cluster.py [--check] DIR``: start a cluster in DIR and print its SLURM_CONF, until SIGTERM or
    Ctrl-C stops it; with ``--check`` (.ci/run) start it, say how long the node took to be idle, and stop it."""
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    signal.signal(signal.SIGTERM, _stop_on)
    signal.signal(signal.SIGINT, _stop_on)  # also where a shell started this in the background (SIGINT ignored there)
    begin = time.monotonic()
    try:
        started = start(Path(rest[0] if rest else "/tmp/simpe-slurm"))
    except ClusterError as err:
        print(f"slurm_cluster: {err}", file=sys.stderr)
        return 1
    try:
        if check:
            print(f"slurm: a single-node cluster ({CPUS} CPUs, partition {PARTITION}) was idle after "
                  f"{time.monotonic() - begin:.1f} s; stopped", flush=True)
            return 0
        print(f"SLURM_CONF={started.conf}", flush=True)
        signal.pause()
    finally:
        started.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
