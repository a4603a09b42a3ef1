"""A real mosquitto on 127.0.0.1 for the benchmark scripts (tests/bench/soak.py,
tests/fleet/bench.py): a free port, no persistence, TCP_NODELAY, restartable on the same port."""

import os
import shutil
import signal
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Broker:
    """mosquitto with `extra` appended to its config; its log goes to `work`/mosquitto.log
    when `log` is set."""

    def __init__(self, work, extra="", log=False):
        self.port = free_port()
        self.conf = os.path.join(work, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    f"set_tcp_nodelay true\n{extra}")
        self.out = open(os.path.join(work, "mosquitto.log"), "ab") if log else subprocess.DEVNULL
        self.proc = None
        self.start()

    def start(self):
        """Starts it and waits until it accepts connections (the port may take a moment to be
        free again after a kill)."""
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        end = time.time() + 10
        while True:
            self.proc = subprocess.Popen([binary, "-c", self.conf], stdout=self.out,
                                         stderr=self.out)
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                    return
                except OSError:
                    if self.proc.poll() is not None:
                        break
                    time.sleep(0.05)
            self.proc.kill()
            self.proc.wait()
            if time.time() > end:
                raise SystemExit("mosquitto did not start")
            time.sleep(0.2)

    def restart(self):
        self.stop()
        time.sleep(0.5)
        self.start()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
