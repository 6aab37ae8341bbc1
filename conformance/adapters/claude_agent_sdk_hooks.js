// The claude-agent-sdk adapter's hooks module (conformance/adapters/claude_agent_sdk.py writes it,
// with its loopback endpoint in place of __ENDPOINT__, into a plugin in the run's scratch folder).
// Claude Code dispatches a hooks module's turn.step hook around every model request; here it hands
// the adapter what context-assemble needs (the session's history and spend, before the request)
// and what post-model-response needs (the streamed chunks, before the loop sees a tool_use); the
// adapter maps them and runs the chains, observe-only: turn.step may change only the model and the
// effort of its request.
const ENDPOINT = "__ENDPOINT__";

async function send($, point, data) {
  const reply = await $.http.fetch(ENDPOINT, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ point, data }),
  });
  if (reply.status !== 200) throw new Error(`${point}: ${reply.text}`);
}

export function register(on) {
  on("turn.step", async function* ($, e, next) {
    // the history as this request carries it (the transcript's rows joined for the API)
    const messages = await $.session.messages({ as: "api" });
    const usage = await $.session.usage();
    await send($, "context-assemble", { messages, usage, index: e.index });
    // text streams on as it comes (a user sees it, and may stop it); from the first tool_use on the
    // chunks are held until post-model-response has seen the whole message, so no tool starts before
    const stream = next(e);
    const chunks = [];
    const held = [];
    let step;
    while (!(step = await stream.next()).done) {
      chunks.push(step.value);
      if (held.length || step.value.kind === "tool") held.push(step.value);
      else yield step.value;
    }
    await send($, "post-model-response", { chunks });
    for (const c of held) yield c;
    return step.value;
  });
}
