"""A tiny stand-alone kernel process for the wire-protocol tests (no import of the harness: it
stands for a kernel in another language). ``python fake_kernel.py MODE``:

* ``ok``: each run makes one ``model.complete`` and answers with the reply text;
* ``crash``: like ok, but a scenario whose name contains "crash" writes to stderr and exits 3
  after its model call (mid-run); ``crashall``: every scenario does;
* ``hang``: never answers ``run``;
* ``garbage``: prints a line that is not JSON on stdout during a run;
* ``wrongseq``: its callback carries another seq;
* ``version``: answers ``start`` with protocol version 2;
* ``refuse``: answers ``start`` with error -32001;
* ``invalid``: sends ``tool.invoke`` with an integer call id (caught by --validate-protocol);
* ``errored`` / ``skipped``: answers run with that envelope;
* ``spans``: sends one span as a notification and another in the result; ``badspan``: its
  notified span has no ``span_id``;
* ``exit``: exits with code 5 at once, before answering ``start``;
* ``giveup``: gives up its first ``model.complete`` (``$/cancel``) once its first chunk came,
  then makes a second one; its reply is the first answer's error code and the second's text,
  ``CODE:TEXT``.
"""

import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
TURN = {"profile_id": "default", "session_id": "s1", "turn_id": "t1", "parent_turn_id": None, "tags": [], "depth": 0}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def call(rid, method, params):
    """A callback; skips notifications (model.chunk) until the response arrives."""
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        msg = read()
        if "method" not in msg and msg.get("id") == rid:
            return msg


def result(seq, scenario, reply):
    outcomes = [
        {"message": i, "session_id": "s1", "turn_id": "t1", "status": "completed", "reply": reply}
        for i, _ in enumerate(scenario["user_messages"])
    ]
    return {"seq": seq, "status": "ok", "result": {"outcomes": outcomes}}


def run(rid, params):
    seq, scenario = params["seq"], params["scenario"]
    if MODE == "hang":
        return
    if MODE == "garbage":
        print("hello from the kernel, this is not JSON", flush=True)
        return
    if MODE == "wrongseq":
        call(1, "model.complete", {"seq": seq + 7, "request": {"messages": []}, "turn": TURN})
        return
    if MODE == "invalid":
        call(1, "tool.invoke", {"seq": seq, "call": {"id": 7, "name": "t", "args": {}}, "turn": TURN})
    if MODE == "errored":
        send({"jsonrpc": "2.0", "id": rid, "result": {"seq": seq, "status": "errored",
              "error": {"type": "KeyError", "message": "'tools'", "context": "in build_kernel()"}}})
        return
    if MODE == "skipped":
        send({"jsonrpc": "2.0", "id": rid, "result": {"seq": seq, "status": "skipped", "reason": "no hooks in this kernel"}})
        return
    if MODE == "spans":
        send({"jsonrpc": "2.0", "method": "span", "params": {"seq": seq, "span": {"span_id": "n1", "name": "turn", "kind": "turn"}}})
    if MODE == "badspan":
        send({"jsonrpc": "2.0", "method": "span", "params": {"seq": seq, "span": {"name": "turn", "kind": "turn"}}})
    if MODE == "giveup":
        send({"jsonrpc": "2.0", "id": 1, "method": "model.complete", "params": {"seq": seq, "request": {"messages": []}, "turn": TURN}})
        while read().get("method") != "model.chunk":
            pass  # its first chunk: the harness is serving it
        send({"jsonrpc": "2.0", "method": "$/cancel", "params": {"seq": seq, "id": 1}})
        while True:
            first = read()
            if "method" not in first and first.get("id") == 1:
                break
        answer = call(2, "model.complete", {"seq": seq, "request": {"messages": []}, "turn": TURN})
        text = "".join(c.get("text", "") for c in answer.get("result", {}).get("chunks", []) if c.get("type") == "text")
        code = (first.get("error") or {}).get("code")
        send({"jsonrpc": "2.0", "id": rid, "result": result(seq, scenario, f"{code}:{text}")})
        return
    answer = call(1, "model.complete", {"seq": seq, "request": {"messages": [{"role": "user", "text": "hi"}]}, "turn": TURN})
    if MODE == "crashall" or (MODE == "crash" and "crash" in scenario["name"]):
        sys.stderr.write("fatal: the fake kernel crashed (pid %d)\n" % os.getpid())
        sys.stderr.flush()
        os._exit(3)
    text = "".join(c.get("text", "") for c in answer.get("result", {}).get("chunks", []) if c.get("type") == "text")
    envelope = result(seq, scenario, text)
    if MODE == "spans":
        envelope["result"]["spans"] = [{"span_id": "r1", "name": "session", "kind": "session"}]
    send({"jsonrpc": "2.0", "id": rid, "result": envelope})


def main():
    if MODE == "exit":
        sys.stderr.write("cannot open the model configuration\n")
        sys.exit(5)
    while True:
        msg = read()
        method = msg.get("method")
        if method == "start":
            if MODE == "refuse":
                send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32001, "message": "unsupported protocol version", "data": {"supported": [2]}}})
                continue
            info = {"name": "fake-" + MODE, "version": "0.0.1", "language": "python", "profiles": ["commonagent"]}
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocol": 2 if MODE == "version" else 1, "info": info}})
        elif method == "run":
            run(msg["id"], msg["params"])
        elif method == "stop":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
            return


if __name__ == "__main__":
    main()
