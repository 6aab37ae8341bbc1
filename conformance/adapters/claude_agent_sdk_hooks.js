// The claude-agent-sdk adapter's hooks module (conformance/adapters/claude_agent_sdk.py writes it,
// with its loopback endpoint in place of __ENDPOINT__, into a plugin in the run's scratch folder).
// Claude Code dispatches a hooks module's turn.step hook around every model request; here it hands
// the harness context-assemble (the session's history and spend, before the request) and
// post-model-response (the streamed message, before the loop sees a tool_use), both observe-only:
// turn.step may change only the model and the effort of its request.
const ENDPOINT = "__ENDPOINT__";
const PREFIX = "mcp__akc__";

async function send($, point, payload) {
  const reply = await $.http.fetch(ENDPOINT, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ point, payload }),
  });
  if (reply.status !== 200) throw new Error(`${point}: ${reply.text}`);
}

function history(messages) {
  const out = [];
  for (const m of messages) {
    if (m.role === "user") {
      if (m.text) out.push({ role: "user", text: m.text });
      for (const r of m.toolResults || []) out.push({ role: "tool_result", call_id: r.tool_use_id, content: r.text, is_error: !!r.isError });
    } else if (m.role === "assistant") {
      const entry = { role: "assistant" };
      if (m.text) entry.text = m.text;
      if (m.toolUses && m.toolUses.length) entry.tool_calls = m.toolUses.map((u) => ({ id: u.tool_use_id, name: String(u.tool).replace(PREFIX, ""), args: u.input }));
      out.push(entry);
    }
  }
  return out;
}

function message(chunks) {
  let text = "";
  const calls = [];
  const byIndex = {};
  for (const c of chunks) {
    if (c.kind === "text") text += c.text;
    else if (c.kind === "tool") { byIndex[c.index] = { id: c.id, name: String(c.name).replace(PREFIX, ""), json: "" }; calls.push(byIndex[c.index]); }
    else if (c.kind === "input" && byIndex[c.index]) byIndex[c.index].json += c.json;
  }
  const out = { role: "assistant" };
  if (text) out.text = text;
  if (calls.length) out.tool_calls = calls.map((c) => ({ id: c.id, name: c.name, args: c.json ? JSON.parse(c.json) : {} }));
  return out;
}

export function register(on) {
  on("turn.step", async function* ($, e, next) {
    const messages = await $.session.messages();
    const usage = await $.session.usage();
    const cost = usage.cost && typeof usage.cost.usd === "number" ? usage.cost.usd : 0;
    await send($, "context-assemble", { history: history(messages), budget: { turns_used: e.index, cost_usd: cost } });
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
    await send($, "post-model-response", message(chunks));
    for (const c of held) yield c;
    return step.value;
  });
}
