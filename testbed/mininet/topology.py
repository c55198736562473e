"""The Mininet side of the testbed: builds the topology, reports it, tears it down.

It runs under the system Python (``/usr/bin/python3``), where Debian's ``mininet`` package
lives, as a child of the orchestrator (``stack.MininetStack``) in the venv. It imports only
the standard library and mininet, never ``p4reduce``: the venv has no mininet and the system
Python has no numpy, so each side stays in its own interpreter (docs/testbed.md, "Mininet").

    /usr/bin/python3 topology.py '{"hosts": 4, "bw": 10, "delay_ms": 1, "loss": 0.01}'

Topology (docs/testbed.md has the picture):

- hosts ``h1..hN``, each in its own network namespace, with two interfaces:
  ``hI-eth0`` (data, 10.0.0.I/24, MAC 02:00:0a:00:00:II) linked to the switch, and
  ``hI-eth1`` (management, 10.254.0.I/24) linked to a Linux bridge;
- the P4 switch's ports are the root-namespace ends ``p4r-ethI`` of the data links (switch
  port I = host hI); the switch process itself is started by the orchestrator;
- the data links have MTU ``mtu`` (1500 unless the orchestrator asks for a jumbo MTU, which
  K = 1024 needs: its frames carry 4,148-byte IP packets);
- the data links are TCLinks: HTB rate ``bw`` Mbit/s and netem ``delay`` on both ends (so
  each direction sees them once), loss as a BPF drop filter on both ends' egress
  (``loss_filter``), checksum and segmentation offloads off on both ends (a raw-socket
  switch must see every frame as it is on the wire);
- the management bridge ``p4rm-br`` (10.254.0.254/24, in the root namespace) joins the
  root-namespace ends ``p4rm-ethI``: workers reach the registration service there, while
  their aggregation and gloo traffic goes only through the P4 switch.

Protocol on stdout: one JSON line ``{"ready": true, ...}`` once built (the addresses), then
``{"stopped": true}`` after teardown. Teardown starts when stdin closes (the orchestrator
exited or asked for it), or on SIGTERM / SIGINT / SIGHUP (after the build, when one comes
during it). It kills every process left in a
host's namespace, stops Mininet, deletes the bridge and any interface left with our
prefixes. A lock (``/run/lock/p4reduce-testbed.lock``) allows one testbed per machine, and a
state file names the running driver. What a driver killed outright leaves is cleaned up by
the next run (``clean_stale_state``: our hosts' namespaces are recognised by their
management address). Errors: one line on stderr, exit 1.
"""

import contextlib
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time

SWITCH_NODE = "p4r"  # root-namespace ends of the data links: p4r-eth1 .. p4r-ethN
MGMT_NODE = "p4rm"  # root-namespace ends of the management links: p4rm-eth1 ..
BRIDGE = "p4rm-br"
DATA_NET = "10.0.0."
MGMT_NET = "10.254.0."
SWITCH_IP = DATA_NET + "254"
SWITCH_MAC = "02:00:00:00:00:fe"
MGMT_IP = MGMT_NET + "254"
MAX_HOSTS = 32  # the switch's bitmap width (docs/p4src.md, 'Tofino's rules')
# Leaf-spine ("racks" in the spec, docs/testbed.md "Leaf-spine"): ToR r answers at
# 10.0.0.(TOR_IP_BASE + r), the spine at SPINE_IP; ToR r's port w is host w of its rack, its
# port UPLINK_PORT the spine, whose port r + 1 is ToR r. Root-namespace ends keep the "p4r-"
# prefix, so that the cleanup finds them: p4r-tRpW (ToR r, port w), p4r-tRup, p4r-sP.
TOR_IP_BASE = 200
SPINE_IP = DATA_NET + "250"
SPINE_MAC = "02:00:00:00:02:00"
UPLINK_PORT = 40
MAX_RACKS = 8
DEFAULT_MTU = 1500
MAX_MTU = 9000  # a jumbo frame: K = 1024's 4,148-byte IP packets need more than 1500
LOCK = "/run/lock/p4reduce-testbed.lock"
STATE = "/run/p4reduce-testbed.json"


class TopologyError(Exception):
    pass


def host_mac(i: int) -> str:
    return f"02:00:0a:00:00:{i:02x}"


def tor_ip(r: int) -> str:
    return f"{DATA_NET}{TOR_IP_BASE + r}"


def tor_mac(r: int) -> str:
    return f"02:00:00:00:01:{r:02x}"


def placement(spec: dict, i: int) -> tuple[int, int, str]:
    """Host i's (1-based) rack (0 without racks), its switch port and that port's
    root-namespace interface."""
    if not spec["racks"]:
        return 0, i, f"{SWITCH_NODE}-eth{i}"
    per = spec["hosts"] // spec["racks"]
    r, w = divmod(i - 1, per)
    return r, w + 1, f"{SWITCH_NODE}-t{r}p{w + 1}"


def uplink_intfs(r: int) -> tuple[str, str]:
    """ToR r's end of its link to the spine, and the spine's end."""
    return f"{SWITCH_NODE}-t{r}up", f"{SWITCH_NODE}-s{r + 1}"


def run(*args: str) -> str:
    """Run a command in the root namespace; its output, or TopologyError with its error."""
    done = subprocess.run(list(args), capture_output=True, text=True)
    if done.returncode != 0:
        msg = (done.stderr or done.stdout).strip().splitlines()
        raise TopologyError(f"{' '.join(args)}: {msg[-1] if msg else done.returncode}")
    return done.stdout


def quiet(*args: str) -> None:
    subprocess.run(list(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def pids_in_netns(inode: int) -> list[int]:
    """Every process whose network namespace is ``inode`` (found through /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and netns_inode(int(entry)) == inode:
            found.append(int(entry))
    return found


def kill_namespace_processes(
    inodes: list[int | None], spare: set[int] = frozenset(), grace: float = 3.0
) -> None:
    """SIGTERM, then SIGKILL after ``grace`` s, to every process inside these namespaces
    except ``spare`` (the host shells, which Mininet still talks to while it stops):
    processes the orchestrator started in a host (nsenter) are not in Mininet's process
    groups, so Mininet's own stop would leave them running."""
    root = netns_inode(os.getpid())  # this process runs in the root namespace
    if root is None:
        return  # cannot tell the root namespace apart: kill nothing
    live = [i for i in inodes if i is not None and i != root]
    spare = set(spare) | {os.getpid()}

    def victims() -> list[int]:
        return [p for i in live for p in pids_in_netns(i) if p not in spare]

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        pids = victims()
        if not pids:
            return
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and victims():
            time.sleep(0.05)


def our_links() -> list[str]:
    """Root-namespace interfaces with our prefixes (a previous run's leftovers, or ours)."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if name.startswith((SWITCH_NODE + "-", MGMT_NODE + "-")):
                names.append(name)
    return names


def delete_links() -> None:
    # the bridge first, so its ports are plain veths; deleting one veth end deletes both
    quiet("ip", "link", "del", BRIDGE)
    for name in our_links():
        quiet("ip", "link", "del", name)


def our_namespaces() -> list[int]:
    """Network namespaces (inodes) of our hosts: those with an interface ``hI-eth1`` holding
    an address of the management subnet. The signature, not a recorded pid, identifies
    them: a killed driver's host shells die with its pseudo-terminals, while processes
    started in the hosts live on, and namespace inode numbers are reused."""
    root = netns_inode(os.getpid())  # this process runs in the root namespace
    if root is None:
        return []
    pid_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ino = netns_inode(int(entry))
            if ino is not None and ino != root:
                pid_of.setdefault(ino, int(entry))
    ours = []
    for ino, pid in pid_of.items():
        r = subprocess.run(
            ["nsenter", f"--net=/proc/{pid}/ns/net", "ip", "-o", "-4", "addr", "show"],
            capture_output=True, text=True,
        )  # fmt: skip
        for line in r.stdout.splitlines():
            parts = line.split()
            if (len(parts) > 3 and parts[1].startswith("h") and parts[1].endswith("-eth1")
                    and parts[3].startswith(MGMT_NET)):  # fmt: skip
                ours.append(ino)
                break
    return ours


def clean_stale_state() -> None:
    """What a testbed whose driver was killed outright left: kill every process in our
    hosts' namespaces (before their interfaces go, which is what identifies them), then
    delete our interfaces and the state file. Call it only while holding the lock."""
    kill_namespace_processes(list(our_namespaces()))
    delete_links()
    with contextlib.suppress(OSError):
        os.unlink(STATE)


def clean_if_free() -> bool:
    """``clean_stale_state`` under the lock; False (nothing done) while a testbed runs."""
    try:
        fd = acquire_lock()
    except TopologyError:
        return False
    try:
        clean_stale_state()
    finally:
        os.close(fd)
    return True


def acquire_lock() -> int:
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = ""
        with contextlib.suppress(OSError, ValueError):
            with open(STATE) as f:
                holder = f" (driver pid {json.load(f).get('driver_pid')})"
        raise TopologyError(
            f"another p4reduce testbed is running on this machine{holder}"
        ) from None
    return fd


def parse_spec(text: str) -> dict:
    spec = json.loads(text)
    n = int(spec["hosts"])
    if not 1 <= n <= MAX_HOSTS:
        raise TopologyError(f"{n} hosts: 1 .. {MAX_HOSTS}")
    loss = float(spec.get("loss") or 0.0)
    if not 0.0 <= loss < 1.0:
        raise TopologyError(f"loss probability {loss} is outside 0 .. 1")
    mtu = int(spec.get("mtu") or DEFAULT_MTU)
    if not 576 <= mtu <= MAX_MTU:
        raise TopologyError(f"MTU {mtu} is outside 576 .. {MAX_MTU}")
    racks = int(spec.get("racks") or 0)
    if racks and (not 1 <= racks <= MAX_RACKS or n % racks):
        raise TopologyError(f"{racks} racks for {n} hosts: 1 .. {MAX_RACKS}, dividing the hosts")
    return {
        "hosts": n,
        "racks": racks,
        "bw": None if spec.get("bw") is None else float(spec["bw"]),
        "delay_ms": None if spec.get("delay_ms") is None else float(spec["delay_ms"]),
        "loss": loss,
        "mtu": mtu,
    }


def data_link_params(spec: dict) -> dict:
    """TCLink parameters of a data link (mininet's units: Mbit/s, '1ms'). Loss is not among
    them: it is a BPF drop filter (``loss_filter``), so that it works without netem."""
    params: dict = {"txo": False, "rxo": False, "gro": False}
    if spec["bw"] is not None:
        params["bw"] = spec["bw"]
    if spec["delay_ms"]:
        params["delay"] = f"{spec['delay_ms']:g}ms"
    return params


LOSS_BITS = 20  # random bits compared: loss probabilities have a resolution of 2^-20


def loss_filter(p: float) -> str:
    """Classic BPF for a tc ``bpf da`` filter that drops a frame with probability ``p``:
    ``ld rand; and #(2^20 - 1); jge #T, drop; ret #0 (TC_ACT_OK); drop: ret #2
    (TC_ACT_SHOT)`` with T = 2^20 - round(p * 2^20). Why not netem's ``loss``: netem is
    missing from some kernels (this project's VMs among them), while cls_bpf and clsact
    are there. Only the low 20 bits of ``rand`` are used because the kernel's value was
    measured never to reach 2^31 here."""
    full = 1 << LOSS_BITS
    t = full - round(p * full)
    rand = 0xFFFFF000 + 56  # SKF_AD_OFF + SKF_AD_RANDOM, as an unsigned 32-bit k
    prog = [(0x20, 0, 0, rand), (0x54, 0, 0, full - 1), (0x35, 0, 1, t), (0x06, 0, 0, 2),
            (0x06, 0, 0, 0)]  # fmt: skip
    return f"{len(prog)}," + ",".join(f"{c} {jt} {jf} {k}" for c, jt, jf, k in prog)


def bpf_filter_command(intf: str, hook: str, bytecode: str) -> str:
    """A classic-BPF filter on ``intf``'s clsact ``hook`` (ingress or egress)."""
    return f"tc filter add dev {intf} {hook} bpf da bytecode '{bytecode}'"


def loss_commands(intf: str, p: float) -> list[str]:
    return [f"tc qdisc add dev {intf} clsact", bpf_filter_command(intf, "egress", loss_filter(p))]


# The switch's end of a data link belongs to the switch process alone, which reads frames
# from a packet socket. The kernel hands a frame to packet sockets before tc's ingress hook,
# and after it to the root namespace's IP stack, which has no address on these links: a
# route lookup per frame (and now and then an ICMP error) for nothing. This filter drops the
# frame at the ingress hook, after the switch's socket has its copy ("ret #2", TC_ACT_SHOT).
SWITCH_PORT_INGRESS_DROP = "1,6 0 0 2"


def switch_port_commands(intf: str) -> list[str]:
    return [
        f"tc qdisc add dev {intf} clsact",
        bpf_filter_command(intf, "ingress", SWITCH_PORT_INGRESS_DROP),
    ]


def build(spec: dict):  # -> (Mininet, report dict)
    from mininet.link import Link, TCLink
    from mininet.log import setLogLevel
    from mininet.net import Mininet

    setLogLevel("error")
    net = Mininet(controller=None, build=False, autoSetMacs=False, autoStaticArp=False)
    # the two root-namespace nodes only carry interface ends; ip=None keeps Mininet from
    # putting an address of its own on them (which would add routes in the root namespace)
    sw = net.addHost(SWITCH_NODE, inNamespace=False, ip=None)
    mg = net.addHost(MGMT_NODE, inNamespace=False, ip=None)
    hosts = []
    params = data_link_params(spec)
    for i in range(1, spec["hosts"] + 1):
        h = net.addHost(f"h{i}", ip=f"{DATA_NET}{i}/24", mac=host_mac(i))
        _, port, swi = placement(spec, i)
        where = {} if spec["racks"] else {"port2": port}  # sw holds every switch's ends
        net.addLink(
            h, sw, cls=TCLink, intfName1=f"h{i}-eth0", intfName2=swi, **where, **params,
        )  # fmt: skip
        net.addLink(
            h, mg, cls=Link, intfName1=f"h{i}-eth1", intfName2=f"{MGMT_NODE}-eth{i}",
            params1={"ip": f"{MGMT_NET}{i}/24"},
        )  # fmt: skip
        hosts.append(h)
    for r in range(spec["racks"]):  # the ToR-spine links: shaped like the hosts' links
        up, down = uplink_intfs(r)
        net.addLink(sw, sw, cls=TCLink, intfName1=up, intfName2=down, **params)
    net.build()
    return net, sw, mg, hosts


def configure(spec: dict, hosts: list) -> None:
    """What Mininet does not do: offloads, IPv6 silence, the management bridge."""
    off = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
    for i, h in enumerate(hosts, start=1):
        # IPv6 router and neighbour solicitations would cost the slow switch for nothing
        h.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        h.cmd(f"ethtool -K h{i}-eth0 " + " ".join(off))
        swi = placement(spec, i)[2]
        quiet("ethtool", "-K", swi, *off)
        # both ends of the data link: a larger K needs a jumbo MTU (stack.data_link_mtu)
        if spec["mtu"] != DEFAULT_MTU:
            out = h.cmd(f"ip link set h{i}-eth0 mtu {spec['mtu']} && echo __done__")
            if "__done__" not in out:
                raise TopologyError(f"h{i}: cannot set MTU {spec['mtu']}: {out.strip()}")
            run("ip", "link", "set", swi, "mtu", str(spec["mtu"]))
        quiet("sysctl", "-qw", f"net.ipv6.conf.{swi}.disable_ipv6=1")
        quiet("sysctl", "-qw", f"net.ipv6.conf.{MGMT_NODE}-eth{i}.disable_ipv6=1")
        for cmd in switch_port_commands(swi):
            run("sh", "-c", cmd)
    configure_uplinks(spec, off)
    if spec["racks"]:
        static_arp(hosts)
    if spec["delay_ms"]:
        # Mininet only prints tc's complaint when netem is missing: check it took effect
        qdiscs = run("tc", "qdisc", "show", "dev", placement(spec, 1)[2])
        if "netem" not in qdiscs:
            raise TopologyError(
                "--delay needs the kernel's netem qdisc (CONFIG_NET_SCH_NETEM), which this "
                "kernel lacks: run without --delay"
            )
    if spec["loss"] > 0:
        for i, h in enumerate(hosts, start=1):
            for cmd in loss_commands(f"h{i}-eth0", spec["loss"]):
                out = h.cmd(cmd + " && echo __done__")
                if "__done__" not in out:
                    raise TopologyError(f"h{i}: {cmd}: {out.strip()}")
            # the switch port has its clsact qdisc already (switch_port_commands, above)
            swi = placement(spec, i)[2]
            run("sh", "-c", bpf_filter_command(swi, "egress", loss_filter(spec["loss"])))
        for r in range(spec["racks"]):
            for swi in uplink_intfs(r):
                run("sh", "-c", bpf_filter_command(swi, "egress", loss_filter(spec["loss"])))
    run("ip", "link", "add", BRIDGE, "type", "bridge")
    quiet("sysctl", "-qw", f"net.ipv6.conf.{BRIDGE}.disable_ipv6=1")
    run("ip", "addr", "add", f"{MGMT_IP}/24", "dev", BRIDGE)
    for i in range(1, len(hosts) + 1):
        run("ip", "link", "set", f"{MGMT_NODE}-eth{i}", "master", BRIDGE, "up")
    run("ip", "link", "set", BRIDGE, "up")
    for i in range(1, len(hosts) + 1):
        run("ip", "link", "set", placement(spec, i)[2], "up")


def configure_uplinks(spec: dict, off: list[str]) -> None:
    """Both (root-namespace) ends of every ToR-spine link: switch ports as the hosts' ones."""
    for r in range(spec["racks"]):
        for swi in uplink_intfs(r):
            quiet("ethtool", "-K", swi, *off)
            if spec["mtu"] != DEFAULT_MTU:
                run("ip", "link", "set", swi, "mtu", str(spec["mtu"]))
            quiet("sysctl", "-qw", f"net.ipv6.conf.{swi}.disable_ipv6=1")
            for cmd in switch_port_commands(swi):
                run("sh", "-c", cmd)
            run("ip", "link", "set", swi, "up")


def static_arp(hosts: list) -> None:
    """Every host knows every other host's MAC: across racks nothing is flooded (the ToRs
    forward the other racks' MACs to the spine; a flood there would come back)."""
    for i, h in enumerate(hosts, start=1):
        for j in range(1, len(hosts) + 1):
            if j != i:
                out = h.cmd(f"ip neigh replace {DATA_NET}{j} lladdr {host_mac(j)} dev h{i}-eth0 "
                            "nud permanent && echo __done__")  # fmt: skip
                if "__done__" not in out:
                    raise TopologyError(f"h{i}: static ARP entry for h{j}: {out.strip()}")


def report(spec: dict, hosts: list) -> dict:
    racks = [
        {"rack": r, "ip": tor_ip(r), "mac": tor_mac(r), "uplink_port": UPLINK_PORT,
         "uplink_intf": uplink_intfs(r)[0], "spine_port": r + 1,
         "spine_intf": uplink_intfs(r)[1]}
        for r in range(spec["racks"])
    ]  # fmt: skip
    return {
        "ready": True,
        "racks": racks,
        "spine_ip": SPINE_IP,
        "spine_mac": SPINE_MAC,
        "driver_pid": os.getpid(),
        "switch_ip": SWITCH_IP,
        "switch_mac": SWITCH_MAC,
        "mgmt_ip": MGMT_IP,
        "bridge": BRIDGE,
        "spec": spec,
        "hosts": [
            {
                "name": h.name,
                "pid": h.pid,
                "rank": i - 1,
                "ip": f"{DATA_NET}{i}",
                "mac": host_mac(i),
                "intf": f"h{i}-eth0",
                "mgmt_ip": f"{MGMT_NET}{i}",
                "mgmt_intf": f"h{i}-eth1",
                "rack": placement(spec, i)[0],
                "switch_port": placement(spec, i)[1],
                "switch_intf": placement(spec, i)[2],
            }  # fmt: skip
            for i, h in enumerate(hosts, start=1)
        ],
    }


def teardown(net, hosts: list) -> None:
    shells = {h.pid for h in hosts if h.pid}
    kill_namespace_processes([netns_inode(p) for p in shells], spare=shells)
    if net is not None:
        with contextlib.suppress(Exception):
            net.stop()
    delete_links()
    with contextlib.suppress(OSError):
        os.unlink(STATE)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_stop_asked: list[int] = []  # the signals received; the handler only records them


def wait_for_stop() -> None:
    """Block until stdin closes or a stop signal has come (checked every 0.2 s)."""
    fd = sys.stdin.fileno()
    while not _stop_asked:
        readable, _, _ = select.select([fd], [], [], 0.2)
        if readable and not os.read(fd, 4096):
            return


def main() -> int:
    # The handler never raises: the orchestrator's death brings its parent-death SIGTERM
    # together with the end of stdin, and an exception raised in the finally clause
    # below, before it ignores the signals, would skip the teardown. A signal during the
    # build lets it finish, then tears down.
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda sig, _frame: _stop_asked.append(sig))
    if os.geteuid() != 0:
        print("topology: error: needs root (Mininet creates namespaces and veths)", file=sys.stderr)
        return 1
    net = None
    hosts: list = []
    lock = -1
    try:
        spec = parse_spec(sys.argv[1] if len(sys.argv) > 1 else sys.stdin.readline())
        lock = acquire_lock()
        clean_stale_state()
        with open(STATE, "w") as f:
            json.dump({"driver_pid": os.getpid()}, f)
        net, _sw, _mg, hosts = build(spec)
        configure(spec, hosts)
        print(json.dumps(report(spec, hosts)), flush=True)
        wait_for_stop()
        return 0
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        msg = " ".join(str(err).split()) or type(err).__name__
        print(f"topology: error: {msg}", file=sys.stderr, flush=True)
        return 1
    finally:
        # the handler stays harmless; ignoring the signals also keeps them from cutting
        # short a system call of the teardown
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        if lock >= 0:
            teardown(net, hosts)
            with contextlib.suppress(BrokenPipeError, OSError):
                print(json.dumps({"stopped": True}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
