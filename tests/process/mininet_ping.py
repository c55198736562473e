"""Run by test_mininet.py with the system Python (where Debian's Mininet lives).

Two Mininet hosts, each linked to an interface in the root namespace (s1-eth1, s1-eth2);
p4reduce-switch bridges them; h1 pings h2. Prints the ping output; exits 0 on no loss.
Everything it creates is removed in ``finally`` (Mininet's stop, then the switch process).

    python3 mininet_ping.py SWITCH_EXE PROGRAM
"""

import shutil
import subprocess
import sys

from mininet.log import setLogLevel
from mininet.net import Mininet


def main() -> int:
    exe, program = sys.argv[1], sys.argv[2]
    setLogLevel("warning")
    net = Mininet(controller=None, build=False, autoSetMacs=True)
    switch = None
    try:
        h1 = net.addHost("h1", ip="10.0.0.1/24")
        h2 = net.addHost("h2", ip="10.0.0.2/24")
        root = net.addHost("s1", inNamespace=False)
        net.addLink(h1, root, intfName2="s1-eth1")
        net.addLink(h2, root, intfName2="s1-eth2")
        net.build()
        for intf in ("s1-eth1", "s1-eth2"):
            subprocess.run(["ip", "link", "set", intf, "up"], check=True)
            # offloads would hand the raw socket merged or checksum-less frames
            if shutil.which("ethtool"):
                off = ["ethtool", "-K", intf, "tx", "off", "rx", "off", "gro", "off"]
                subprocess.run(off, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        switch = subprocess.Popen(
            [
                exe,
                program,
                "-i",
                "1@s1-eth1",
                "-i",
                "2@s1-eth2",
                "--grpc-server-addr",
                "127.0.0.1:0",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = switch.stdout.readline()
        if "ready" not in ready:
            print("switch did not start:", ready)
            return 2
        out = h1.cmd("ping -c 3 -W 2 10.0.0.2")
        print(out)
        return 0 if " 0% packet loss" in out else 1
    finally:
        if switch is not None:
            switch.terminate()
            try:
                switch.wait(timeout=20)
            except subprocess.TimeoutExpired:
                switch.kill()
        net.stop()


if __name__ == "__main__":
    sys.exit(main())
