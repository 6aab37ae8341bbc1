"""A misbehaving stdio kernel: a proxy in front of the reference kernel's stdio server
(``python -m reference_kernel.stdio``) that relays every line both ways and misbehaves in one
way, chosen by ``argv[1]``:

* ``grandchild``: leaves a grandchild (``sleep 60``) holding its stdout, then exits (code 4) on
  its first ``run`` (the grandchild's pid goes to the file ``$ZOO_PIDFILE``);
* ``setsid``: on its first ``run``, starts a daemon (``sleep 60`` in a session of its own, so not
  in the kernel's process group) and a double-forked one whose parent exits at once (both pids go
  to ``$ZOO_PIDFILE``), then carries on normally;
* ``duplicate``: answers the run of seq 1 twice;
* ``late``: after answering the run of seq 1, sends a ``tool.invoke`` carrying seq 1;
* ``badutf8``: before answering the run of seq 1, sends a ``span`` notification whose JSON string
  holds an invalid UTF-8 byte;
* ``badutf8-always``: the same before answering every run;
* ``deep``: answers the run of seq 1 with a result nested 100,000 deep;
* ``dollar``: sends a ``$/progress`` notification before every message (LSP clients do);
* ``bigline``: on its first ``run``, writes 5 MB without a newline, then goes silent;
* ``chatty``: never passes a ``run`` on to the kernel (deadlocked in its turn) while a thread
  sends a ``$/progress`` notification every 20 ms;
* ``deaf``: on its first ``run``, stops reading its stdin and sends ``$ZOO_CALLBACKS`` (40) ``tool.invoke`` callbacks of a 256 kB tool name
  (their answers fill the pipe), then waits;
* ``misspelt``: claims the capability ``"max_cost_usd "`` (a trailing space) at ``start``.
"""

import json
import os
import subprocess
import sys
import threading
import time

MODE = sys.argv[1]
out = sys.stdout.buffer
lock = threading.Lock()


def write(data: bytes) -> None:
    with lock:
        out.write(data)
        out.flush()


def main() -> None:
    kernel = subprocess.Popen([sys.executable, "-m", "reference_kernel.stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if MODE == "grandchild":
        sleeper = subprocess.Popen(["sleep", "60"], stdout=sys.stdout, stdin=subprocess.DEVNULL)
        with open(os.environ["ZOO_PIDFILE"], "a") as fh:
            fh.write(f"{sleeper.pid}\n")

    def upstream() -> None:  # kernel → harness
        for line in kernel.stdout:
            msg = json.loads(line)
            result = msg.get("result") if isinstance(msg.get("result"), dict) else {}
            if MODE == "dollar":
                write(b'{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"report"}}}\n')
            if MODE == "misspelt" and "info" in result:
                result["info"]["capabilities"] = [*result["info"].get("capabilities", []), "max_cost_usd "]
                line = (json.dumps(msg) + "\n").encode()
            first_run = result.get("seq") == 1 and "status" in result
            if (MODE == "badutf8" and first_run) or (MODE == "badutf8-always" and "status" in result):
                write(b'{"jsonrpc":"2.0","method":"span","params":{"seq":1,"span":{"name":"caf\xe9"}}}\n')
            if MODE == "deep" and first_run:
                line = b'{"jsonrpc":"2.0","id":%d,"result":' % msg["id"] + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
            write(line)
            if MODE == "duplicate" and first_run:
                write(line)
            if MODE == "late" and first_run:
                write(b'{"jsonrpc":"2.0","id":9999,"method":"tool.invoke","params":{"seq":1,"call":{"id":"late","name":"x","args":{}},"turn":{}}}\n')
        os._exit(0)

    threading.Thread(target=upstream, daemon=True).start()
    for line in sys.stdin.buffer:  # harness → kernel
        msg = json.loads(line)
        if msg.get("method") == "run":
            if MODE == "setsid" and not os.path.exists(os.environ["ZOO_PIDFILE"]):
                daemon = subprocess.Popen(["sleep", "60"], start_new_session=True, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                orphan = subprocess.run(
                    [sys.executable, "-c", "import subprocess; print(subprocess.Popen(['sleep', '60'], start_new_session=True, "
                     "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL).pid)"], capture_output=True, text=True).stdout.strip()
                with open(os.environ["ZOO_PIDFILE"], "a") as fh:
                    fh.write(f"{daemon.pid}\n{orphan}\n")
            if MODE == "grandchild":
                os._exit(4)
            if MODE == "bigline":
                write(b"x" * (5 * 1024 * 1024))
                time.sleep(60)
        if MODE == "deaf" and msg.get("method") == "run":
            seq = msg["params"]["seq"]
            for n in range(int(os.environ.get("ZOO_CALLBACKS", "40"))):
                write(json.dumps({"jsonrpc": "2.0", "id": 10_000 + n, "method": "tool.invoke", "params": {
                    "seq": seq, "call": {"id": f"c{n}", "name": "x" * (256 << 10), "args": {}}, "turn": {}}}).encode() + b"\n")
            time.sleep(60)
        if MODE == "chatty" and msg.get("method") == "run":
            def ping() -> None:
                while True:
                    write(b'{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"report"}}}\n')
                    time.sleep(0.02)

            threading.Thread(target=ping, daemon=True).start()
            continue
        if MODE == "late" and msg.get("id") == 9999:
            continue  # the harness's answer to the late call
        kernel.stdin.write(line)
        kernel.stdin.flush()
    kernel.stdin.close()
    kernel.wait()


main()
