// The claude-agent-sdk adapter's hooks module (conformance/adapters/claude_agent_sdk.py writes it,
// with its loopback endpoint in place of __ENDPOINT__, into a plugin in the run's scratch folder).
// Claude Code dispatches a hooks module's turn.step hook around every model request; here it hands
// the adapter what context-assemble needs (the session's history and spend, before the request)
// and what post-model-response needs (the whole streamed response, before the loop sees any of
// it); the adapter maps them and runs the chains. context-assemble is observe-only (turn.step may
// change only the model and the effort of its request); post-model-response replaces: the loop
// gets the chunks the hook yields, so the hook yields what the adapter answers.
const ENDPOINT = "__ENDPOINT__";

async function send($, point, data) {
  const reply = await $.http.fetch(ENDPOINT, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ point, data }),
  });
  if (reply.status !== 200) throw new Error(`${point}: ${reply.text}`);
  return JSON.parse(reply.text);
}

export function register(on) {
  on("turn.step", async function* ($, e, next) {
    // the history as this request carries it (the transcript's rows joined for the API)
    const messages = await $.session.messages({ as: "api" });
    const usage = await $.session.usage();
    await send($, "context-assemble", { messages, usage, index: e.index });
    // the whole response is held until the post-model-response chain has run on it: the loop sees
    // its text and its tool calls only as the chain returns them
    const stream = next(e);
    const chunks = [];
    let step;
    let sawText = false;
    while (!(step = await stream.next()).done) {
      // the adapter's cancel at a model call waits until the CLI holds some of its text
      if (step.value.kind === "text" && !sawText) {
        sawText = true;
        await send($, "model-text", {});
      }
      chunks.push(step.value);
    }
    // the answer: each item either the index of a chunk passed on unchanged, or a chunk of the
    // replacement (text, tool, input); the step's result names the replacement's answer and calls
    const reply = await send($, "post-model-response", { chunks });
    for (const item of reply.chunks) yield typeof item === "number" ? chunks[item] : item;
    return reply.result ? { ...step.value, ...reply.result } : step.value;
  });
}
