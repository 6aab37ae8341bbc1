#!/usr/bin/env node
// A small agent kernel in plain JavaScript (Node 20; no npm dependencies but the optional `openai`) implementing the
// `kernel` profile (seed 003's RunTurn) and speaking the akc stdio wire protocol
// (docs/protocol.md): JSON-RPC 2.0, one JSON object per line. The harness's model, tools, hooks
// and policy are callbacks; everything else (the loop, concurrency keys, bounds, doom loop, cost,
// journal, spans, ids) is this file's own.
//
//   akc run --adapter 'stdio:node examples/node-kernel/kernel.js' --profile kernel
//
// With `--openai` its model calls go over HTTP instead, through the official `openai` npm package
// (`npm ci` here first) to the Chat Completions base URL the run request carries
// (docs/http-kernels.md); everything else stays a wire callback.
//
//   akc run --adapter 'stdio:node examples/node-kernel/kernel.js --openai' --profile kernel
'use strict';

const crypto = require('node:crypto');
const readline = require('node:readline');

const OVER_HTTP = process.argv.includes('--openai');
const INFO = {
  name: OVER_HTTP ? 'node-kernel/openai' : 'node-kernel',
  version: '0.1.0',
  language: 'javascript',
  homepage: null,
  profiles: ['kernel'],
  // live_clock: its clock follows the harness's `clock` notifications, which come with wire
  // callbacks; a model call over HTTP brings none, so with --openai the kernel does not claim it.
  capabilities: ['max_cost_usd', 'max_wall_clock_s', 'injectable_clock', ...(OVER_HTTP ? [] : ['live_clock'])],
  doom_loop_subtype: 'error_doom_loop',
  dialects: OVER_HTTP ? ['openai-chat'] : [],
  // How each hook point, capability and observation maps onto this kernel: all its own.
  mechanisms: Object.fromEntries([
    'session-start', 'context-assemble', 'pre-model-call', 'post-model-response', 'pre-tool-call',
    'plan-ready', 'post-tool-call', 'post-apply', 'session-end',
    'max_cost_usd', 'max_wall_clock_s', 'injectable_clock', ...(OVER_HTTP ? [] : ['live_clock']),
    'policy_precheck', 'tool_kinds', 'concurrency_keys', 'terminal_tool', 'max_turns', 'final_turn',
    'doom_loop', 'usage', 'spans', 'journal', 'turn_info', 'tags', 'cancellation',
  ].map((name) => [name, { kind: 'native', via: `node-kernel ${name}` }])),
};
const DOOM_THRESHOLD = 3; // 003: the default MUST lie in [3, 5]
const TITLE_CHARS = 60;
const TAG = /^[a-z0-9_-]+:[A-Za-z0-9_.-]+$/;
const LIMIT_TEXT = {
  error_max_turns: 'max_turns',
  error_max_budget_usd: 'max_cost_usd',
  error_max_wall_clock: 'max_wall_clock_s',
  error_doom_loop: 'a doom loop (the same tool call repeated)',
};

// ------------------------------------------------------------------ JSON-RPC over stdio

const out = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
const log = (...args) => process.stderr.write(args.join(' ') + '\n');
const pending = new Map(); // our request id -> {resolve, reject, onChunk, off}
let nextId = 1;

class Cancelled extends Error {}
class ModelApiError extends Error {
  constructor(status, message) { super(`${status} ${message}`); this.status = status; }
}

/** Our model request as a Chat Completions body (streamed, usage asked for). */
function toChat(model, request) {
  const messages = request.messages.map((m) => {
    if (m.role === 'tool_result') return { role: 'tool', tool_call_id: m.call_id, content: m.content || '' };
    if (m.role === 'assistant') {
      const out = { role: 'assistant', content: m.text || (m.tool_calls && m.tool_calls.length ? null : '') };
      if (m.tool_calls && m.tool_calls.length) {
        out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {}) } }));
      }
      return out;
    }
    return { role: m.role === 'system' ? 'system' : 'user', content: m.text || '' };
  });
  const body = { ...(request.params || {}), model, messages, stream: true, stream_options: { include_usage: true } };
  if (request.tools && request.tools.length) {
    body.tools = request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description || '', parameters: t.input_schema || { type: 'object' } } }));
  }
  return body;
}
class RpcError extends Error {
  constructor(error) { super(error.message); this.code = error.code; this.data = error.data; }
}

/** A cancellation token: `cancel()` wakes every listener once; `check()` throws when cancelled. */
class Token {
  constructor() { this.cancelled = false; this.listeners = new Set(); }
  cancel() { if (!this.cancelled) { this.cancelled = true; for (const f of this.listeners) f(); } }
  on(f) { this.listeners.add(f); return () => this.listeners.delete(f); }
  check() { if (this.cancelled) throw new Cancelled(); }
}

/** A callback to the harness. With a token, cancelling it abandons the request (`$/cancel`). */
function call(seq, method, params, token = null, onChunk = null) {
  return new Promise((resolve, reject) => {
    if (token && token.cancelled) return reject(new Cancelled());
    const id = nextId++;
    const entry = { resolve, reject, onChunk, off: null };
    pending.set(id, entry);
    if (token) {
      entry.off = token.on(() => {
        if (pending.delete(id)) {
          out({ method: '$/cancel', params: { seq, id } });
          reject(new Cancelled());
        }
      });
    }
    out({ id, method, params: { seq, ...params } });
  });
}

// ------------------------------------------------------------------ small helpers

let lastMs = -1;
let counter = 0;
/** UUID v7 (RFC 9562): ms timestamp, then a per-millisecond counter, so ids sort by creation. */
function uuid7() {
  const now = Date.now();
  if (now > lastMs) { lastMs = now; counter = crypto.randomInt(0, 0x800); }
  else if (++counter > 0xfff) { lastMs += 1; counter = crypto.randomInt(0, 0x800); }
  const b = crypto.randomBytes(16);
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Sorted keys, no whitespace: equal arguments give equal text (the doom-loop hash input). */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v === undefined ? null : v);
}
const hashOf = (name, args) => crypto.createHash('sha256').update(`${name}\0${canonical(args)}`).digest('hex');

/** One lock per key: calls with equal keys run one after the other, distinct keys concurrently. */
class KeyedLocks {
  constructor() { this.tails = new Map(); }
  async hold(key, fn) {
    const prev = this.tails.get(key) || Promise.resolve();
    let release;
    const tail = prev.then(() => new Promise((r) => { release = r; }));
    this.tails.set(key, tail);
    await prev;
    try { return await fn(); } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

class Rejected extends Error {
  constructor(field, message) { super(message); this.field = field; }
}

// ------------------------------------------------------------------ one scenario run

class Kernel {
  constructor(seq, sc) {
    this.seq = seq;
    this.sc = sc;
    this.tools = new Map();
    for (const t of sc.tools) {
      if (this.tools.has(t.name)) throw new Rejected('tools', `tool ${t.name} is registered twice`);
      if (t.kind === 'interactive' && t.concurrency) {
        throw new Rejected('concurrency', `interactive tool ${t.name} must not declare a ConcurrencySpec`);
      }
      this.tools.set(t.name, t);
    }
    for (const field of ['max_turns', 'max_cost_usd', 'max_wall_clock_s']) {
      const v = sc.bounds[field];
      if (v !== null && v !== undefined && !(v > 0)) throw new Rejected(field, `${field} must be > 0, got ${v}`);
    }
    this.threshold = sc.doom_loop.threshold ?? DOOM_THRESHOLD;
    this.window = sc.doom_loop.window_size ?? this.threshold;
    if (!Number.isInteger(this.threshold) || this.threshold < 1) throw new Rejected('doom_loop.threshold', 'must be >= 1');
    if (this.window < this.threshold) throw new Rejected('doom_loop.window_size', 'must be >= threshold');
    const tags = [...sc.profile_tags, ...sc.session_tags, ...sc.user_messages.flatMap((m) => m.tags)];
    const bad = tags.find((t) => !TAG.test(t));
    if (bad !== undefined) throw new Rejected('tags', `invalid tag ${JSON.stringify(bad)}`);
    this.hooks = sc.hooks;
    this.specs = sc.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema }));
    this.pricing = sc.model.pricing;
    this.modelCalls = 0;
    this.journal = { sessions: [], turns: [], messages: [], tool_calls: [], usage: [] };
    this.usage = [];
    this.spans = [];
    this.sessionLocks = new Map();
    this.sessionTags = new Map();
  }

  // The harness clock (capabilities injectable_clock, live_clock): start + advance x model
  // requests so far, or the harness's latest `clock` notification if that is later.
  now() {
    const local = this.sc.clock.start + this.sc.clock.advance_per_model_call * this.modelCalls;
    return harnessNow === null ? local : Math.max(local, harnessNow);
  }

  span(name, kind, parent, attributes = {}) {
    const s = { span_id: uuid7(), parent_id: parent, name, kind, start: this.now(), end: null, attributes };
    this.spans.push(s);
    return s;
  }
  end(s, attributes = {}) { s.end = this.now(); Object.assign(s.attributes, attributes); }

  /** A hook chain in registration order; each hook gets what the one before left. */
  async dispatch(point, payload, run, parent, token = run.token) {
    for (const hook of this.hooks.filter((h) => h.point === point)) {
      const s = this.span(point, 'hook', parent?.span_id ?? null, { hook_id: hook.id });
      let outcome;
      try {
        outcome = await call(this.seq, 'hook.dispatch', { hook_id: hook.id, point, payload, turn: run.turn }, token);
      } catch (e) {
        this.end(s, { error: e.constructor.name });
        if (e instanceof Cancelled) throw e;
        throw new Error(`hook ${hook.id} at ${point} raised: ${e.message}`);
      }
      this.end(s);
      if (outcome.kind === 'raise') throw new Error(`hook ${hook.id} at ${point} raised: ${outcome.message}`);
      if (outcome.kind === 'replace') payload = outcome.payload;
      if (outcome.kind === 'veto' && point === 'plan-ready') {
        const ids = new Set(outcome.call_ids);
        payload = { ...payload, items: (payload.items || []).map((it) => (ids.has(it.call_id) ? { ...it, vetoed: true, reason: outcome.reason } : it)) };
      }
    }
    return payload;
  }

  append(run, message) {
    run.history.push(message);
    this.journal.messages.push({ session_id: run.turn.session_id, turn_id: run.turn.turn_id, message });
  }

  // -------------------------------------------------------------- the user messages

  async runAll(tokens) {
    const sessions = new Map();
    const outcomes = [];
    let running = [];
    this.sc.user_messages.forEach((m, i) => { tokens[i] = new Token(); });
    for (const [i, m] of this.sc.user_messages.entries()) {
      if (!m.concurrent) await Promise.all(running);
      if (!sessions.has(m.session)) {
        const id = uuid7();
        const own = [...new Set([...this.sc.session_tags, ...m.tags])].sort();
        this.journal.sessions.push({ id, profile_id: this.sc.profile_id, source: 'cli', title: m.text.slice(0, TITLE_CHARS), tags: own, parent_session_id: null });
        this.sessionTags.set(id, own);
        sessions.set(m.session, id);
      }
      running.push(this.locked(sessions.get(m.session), () => this.runSession(i, sessions.get(m.session), m.text, tokens[i]))
        .then((o) => { outcomes[i] = o; }));
    }
    await Promise.all(running);
    return outcomes;
  }

  /** One run per session at a time: a second message to the same session waits. */
  locked(sessionId, fn) {
    const prev = this.sessionLocks.get(sessionId) || Promise.resolve();
    const next = prev.then(fn);
    this.sessionLocks.set(sessionId, next.catch(() => {}));
    return next;
  }

  /** 003's session run: session-start, RunTurns until a termination condition, session-end. */
  async runSession(index, sessionId, text, token) {
    const tags = [...new Set([...this.sc.profile_tags, ...this.sessionTags.get(sessionId)])].sort();
    const turn = { profile_id: this.sc.profile_id, session_id: sessionId, turn_id: uuid7(), parent_turn_id: null, tags, depth: 0 };
    const record = { turn, status: null };
    this.journal.turns.push(record);
    const run = {
      turn, token, turnsUsed: 0, cost: 0, started: this.now(), doom: [],
      history: this.journal.messages.filter((m) => m.session_id === sessionId).map((m) => m.message),
      status: 'completed', subtype: 'success', reply: null, error: null,
    };
    run.span = this.span('session', 'session', null, { session_id: sessionId, turn_id: turn.turn_id });
    try {
      this.append(run, { role: 'user', text });
      await this.dispatch('session-start', { session_id: sessionId }, run, run.span);
      for (;;) { // step 18
        const fired = await this.runTurn(run);
        if (fired === 'success') break;
        if (fired) { await this.runTurn(run, fired); run.status = 'limit_reached'; run.subtype = fired; break; }
      }
    } catch (e) {
      if (e instanceof Cancelled || token.cancelled) Object.assign(run, { status: 'cancelled', subtype: 'cancelled' });
      else Object.assign(run, { status: 'error', subtype: 'error_during_execution', error: e.message });
    }
    try { // session-end fires once, whichever way the loop ended; a cancel does not stop it
      await this.dispatch('session-end', { session_id: sessionId, subtype: run.subtype }, run, run.span, null);
    } catch (e) {
      Object.assign(run, { status: 'error', error: e.message });
      if (run.subtype === 'success') run.subtype = 'error_during_execution';
    }
    record.status = run.status;
    this.end(run.span, { status: run.status, subtype: run.subtype });
    return { message: index, session_id: sessionId, turn_id: turn.turn_id, status: run.status, subtype: run.subtype, reply: run.reply, error: run.error };
  }

  // -------------------------------------------------------------- one RunTurn

  /** Returns 'success' (done), a limit subtype (16/17 fired) or null (loop on). With `limit`
   * set it is the limit-reached turn: no tool specs, a synthetic instruction, no tool runs. */
  async runTurn(run, limit = null) {
    const check = () => run.token.check();
    check();
    run.turnSpan = this.span('turn', 'turn', run.span.span_id, { index: run.turnsUsed, final: limit !== null });
    try {
      const max = this.sc.bounds.max_cost_usd;
      const budget = { turns_used: run.turnsUsed, cost_usd: run.cost, remaining_cost_budget_usd: max == null ? null : max - run.cost, elapsed_s: this.now() - run.started };
      const payload = await this.dispatch('context-assemble', { history: [...run.history], budget }, run, run.turnSpan); // 1
      check();
      const pre = await this.dispatch('pre-model-call', { payload, tool_specs: limit ? [] : this.specs, params: {} }, run, run.turnSpan); // 2
      check();
      let message = await this.modelCall(run, this.request(pre, run, limit)); // 3-4
      check();
      message = await this.dispatch('post-model-response', message, run, run.turnSpan); // 5
      check();
      const toolUses = message.tool_calls || [];
      if (limit || toolUses.length === 0) { // 6: DoneCheck (the final turn's tool calls never run)
        if (toolUses.length) { message = { ...message, text: message.text ?? '' }; delete message.tool_calls; }
        this.append(run, message);
        run.reply = message.text ?? null;
        run.turnsUsed += 1;
        return 'success';
      }
      for (const u of toolUses) { // 7
        await this.dispatch('pre-tool-call', { id: u.id, name: u.name, args: u.args }, run, run.turnSpan);
        check();
      }
      const calls = toolUses.map((u) => this.prepare(u, run));
      const live = (kind) => calls.filter((c) => c.content === null && c.tool.kind === kind); // 8
      await this.execute(run, await this.precheck(run, live('data_source'))); // 9
      check();
      for (const c of await this.precheck(run, live('interactive'))) { await this.runTool(run, c); check(); } // 9b
      const resources = live('resource');
      let plan = { items: resources.map((c) => ({ call_id: c.id, name: c.name, args: c.args, vetoed: false, reason: null })) }; // 10
      const veto = this.span('plan-ready', 'veto_chain', run.turnSpan.span_id, { items: plan.items.length });
      try { plan = await this.dispatch('plan-ready', plan, run, veto); } finally { this.end(veto); } // 11
      check();
      const items = new Map((plan.items || []).map((it) => [it.call_id, it]));
      const approved = [];
      for (const c of resources) {
        const it = items.get(c.id);
        if (!it) c.fail('Vetoed: removed from the plan');
        else if (it.vetoed) c.fail(`Vetoed: ${it.reason || 'vetoed'}`);
        else approved.push(c);
      }
      await this.execute(run, approved); // 12
      check();
      let terminal = false;
      for (const c of calls) { // 13, in the order the model asked
        await this.dispatch('post-tool-call', { call: c.call, result: { content: c.content, is_error: c.is_error } }, run, run.turnSpan);
        check();
        if (c.tool && c.tool.terminates_turn) { terminal = true; break; } // done right after its post-tool-call
      }
      if (!terminal) { await this.dispatch('post-apply', plan, run, run.turnSpan); check(); } // 14
      this.append(run, message); // 15
      for (const c of calls) this.append(run, { role: 'tool_result', call_id: c.id, content: c.content, is_error: c.is_error });
      for (const c of calls) this.journal.tool_calls.push({ session_id: run.turn.session_id, turn_id: run.turn.turn_id, call_id: c.id, name: c.name, args: c.args, result: c.content, is_error: c.is_error, risk: c.tool ? c.tool.risk : null, duration_ms: c.ms, approval: null });
      run.turnsUsed += 1;
      if (terminal) { run.reply = message.text ?? null; return 'success'; }
      return this.doomCheck(run, calls) || this.boundsCheck(run); // 16, 17
    } finally {
      this.end(run.turnSpan);
    }
  }

  /** The request from the pre-model-call chain's output; the final turn adds the instruction. */
  request(pre, run, limit) {
    const history = pre && pre.payload && Array.isArray(pre.payload.history) ? pre.payload.history : run.history;
    const messages = [{ role: 'system', text: this.sc.system_prompt }, ...history];
    if (limit) messages.push({ role: 'user', text: `The limit was reached (${LIMIT_TEXT[limit]}). Do not call tools; give your final answer from what you have.` });
    return { messages, tools: limit ? [] : (pre && pre.tool_specs) || [], params: (pre && pre.params) || {} };
  }

  /** Steps 3-4: stream one assistant message; each usage event is costed when it arrives. */
  async modelCall(run, request) {
    const s = this.span('model_call', 'model_call', run.turnSpan.span_id, { model: this.sc.model.name });
    const texts = [];
    const calls = [];
    let seen = 0;
    const onChunk = (chunk) => {
      seen += 1;
      if (chunk.type === 'text') texts.push(chunk.text || '');
      else if (chunk.type === 'tool_use') {
        const last = calls[calls.length - 1];
        if (last && last.id === chunk.id) last.raw += chunk.input_json || '';
        else calls.push({ id: chunk.id, name: chunk.name, raw: chunk.input_json || '' });
      } else if (chunk.type === 'usage') this.onUsage(run, chunk);
    };
    this.modelCalls += 1;
    try {
      if (OVER_HTTP) await this.openaiCall(request, run, onChunk);
      else {
        const result = await call(this.seq, 'model.complete', { request, turn: run.turn }, run.token, onChunk);
        result.chunks.slice(seen).forEach(onChunk); // chunks not already streamed as notifications
      }
      this.end(s);
    } catch (e) {
      this.end(s, { error: e.constructor.name });
      if (e instanceof RpcError && e.code === 1001) throw new Error(`model call failed: ${e.data ? e.data.status : ''} ${e.message}`);
      if (e instanceof ModelApiError) throw new Error(`model call failed: ${e.message}`);
      throw e;
    }
    const message = { role: 'assistant' };
    if (texts.length || !calls.length) message.text = texts.join('');
    if (calls.length) {
      run.badArgs = new Map();
      message.tool_calls = calls.map((c) => {
        let args = {};
        try { args = c.raw.trim() ? JSON.parse(c.raw) : {}; } catch { args = null; }
        if (!args || typeof args !== 'object' || Array.isArray(args)) { run.badArgs.set(c.id, c.raw); args = {}; }
        return { id: c.id, name: c.name, args };
      });
    }
    return message;
  }

  /** The model call over HTTP: our request as a streamed chat completion through the openai
   *  package; its deltas back as our chunks. Cancelling the turn aborts the request. */
  async openaiCall(request, run, onChunk) {
    if (!this.http) throw new Error('the run request carries no http_model (an older harness?)');
    const abort = new AbortController();
    const off = run.token.on(() => abort.abort());
    const calls = new Map();
    let usage = null;
    try {
      const stream = await this.http.client.chat.completions.create(toChat(this.sc.model.name, request),
        { signal: abort.signal, headers: { 'x-akc-turn': JSON.stringify(run.turn) } });
      for await (const chunk of stream) {
        for (const choice of chunk.choices || []) {
          if (choice.delta.content) onChunk({ type: 'text', text: choice.delta.content });
          for (const part of choice.delta.tool_calls || []) {
            const c = calls.get(part.index) || { id: '', name: '', raw: '' };
            c.id = part.id || c.id;
            c.name = (part.function && part.function.name) || c.name;
            c.raw += (part.function && part.function.arguments) || '';
            calls.set(part.index, c);
          }
        }
        if (chunk.usage) {
          const cached = (chunk.usage.prompt_tokens_details && chunk.usage.prompt_tokens_details.cached_tokens) || 0;
          usage = { type: 'usage', input_tokens: chunk.usage.prompt_tokens - cached, output_tokens: chunk.usage.completion_tokens, cached_input_tokens: cached };
        }
      }
    } catch (e) {
      if (run.token.cancelled) throw new Cancelled();
      throw new ModelApiError(e.status ?? (e.error && e.error.code) ?? '', e.message);
    } finally {
      off();
    }
    [...calls.keys()].sort((a, b) => a - b).forEach((k) => { const c = calls.get(k); onChunk({ type: 'tool_use', id: c.id, name: c.name, input_json: c.raw }); });
    if (usage) onChunk(usage);
  }

  onUsage(run, u) {
    const p = this.pricing;
    const i = u.input_tokens || 0;
    const o = u.output_tokens || 0;
    const c = u.cached_input_tokens || 0;
    const cost = (i * p.input_usd_per_mtok + c * p.cached_input_usd_per_mtok + o * p.output_usd_per_mtok) / 1e6;
    run.cost += cost;
    const event = { session_id: run.turn.session_id, turn_id: run.turn.turn_id, model: this.sc.model.name, input_tokens: i, output_tokens: o, cached_input_tokens: c, cost_usd: cost };
    this.usage.push(event);
    this.journal.usage.push({ ...event }); // persisted at receipt (003), shown in the journal dump
  }

  /** A tool_use block with its slot for the result; an unknown tool or bad JSON fails it now. */
  prepare(use, run) {
    const c = { id: use.id, name: use.name, args: use.args, call: { id: use.id, name: use.name, args: use.args }, tool: this.tools.get(use.name), content: null, is_error: false, ms: 0 };
    c.raw = run.badArgs && run.badArgs.get(use.id);
    c.fail = (text) => { c.content = text; c.is_error = true; };
    if (!c.tool) c.fail(`Unknown tool: ${JSON.stringify(use.name)}`);
    else if (c.raw !== undefined) c.fail(`Invalid arguments for ${use.name}: not a JSON object: ${c.raw.slice(0, 200)}`);
    else if (!c.args || typeof c.args !== 'object' || Array.isArray(c.args)) c.fail(`Invalid arguments for ${use.name}: expected a JSON object`);
    return c;
  }

  /** Steps 9/9b: the policy precheck for every data-source and interactive call. */
  async precheck(run, calls) {
    const allowed = [];
    for (const c of calls) {
      const d = await call(this.seq, 'policy.precheck', { call: c.call, turn: run.turn }, run.token);
      if (d.allow) allowed.push(c);
      else c.fail(`Denied by policy: ${d.reason || 'denied'}`);
    }
    return allowed;
  }

  /** Concurrency keys: safe with key_fields -> (provider, tool, values); safe without -> the
   * call's own key; safe: false or undeclared -> one provider-wide lock, whatever the kind. */
  async execute(run, calls) {
    const locks = new KeyedLocks();
    const key = (c) => {
      const spec = c.tool.concurrency;
      if (!spec || !spec.safe) return `provider\0${c.tool.provider}`;
      if (!spec.key_fields.length) return `call\0${c.id}`;
      return `key\0${c.tool.provider}\0${c.name}\0${spec.key_fields.map((f) => canonical(c.args[f])).join('\0')}`;
    };
    const results = await Promise.allSettled(calls.map((c) => locks.hold(key(c), () => this.runTool(run, c))));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async runTool(run, c) {
    if (run.token.cancelled) { c.fail('Cancelled before it started'); return; }
    const s = this.span(c.name, 'tool', run.turnSpan.span_id, { call_id: c.id, name: c.name });
    const t0 = performance.now();
    try {
      const r = await call(this.seq, 'tool.invoke', { call: { id: c.id, name: c.name, args: c.args }, turn: run.turn }, run.token);
      c.content = String(r.content ?? '');
      c.is_error = Boolean(r.is_error);
    } catch (e) {
      if (e instanceof Cancelled) throw e;
      c.fail(e.message || 'tool failed');
    } finally {
      c.ms = performance.now() - t0;
      this.end(s, { is_error: c.is_error });
    }
  }

  /** Step 16: the last `threshold` resource/data-source call hashes all equal -> fired. */
  doomCheck(run, calls) {
    for (const c of calls) {
      if (c.tool && c.tool.kind !== 'interactive') run.doom.push(hashOf(c.name, c.raw !== undefined ? c.raw : c.args));
    }
    run.doom = run.doom.slice(-this.window);
    const last = run.doom.slice(-this.threshold);
    return last.length === this.threshold && last.every((h) => h === last[0]) ? INFO.doom_loop_subtype : null;
  }

  /** Step 17: each bound on its own, one graceful path for all. */
  boundsCheck(run) {
    const b = this.sc.bounds;
    if (b.max_turns != null && run.turnsUsed >= b.max_turns) return 'error_max_turns';
    if (b.max_cost_usd != null && run.cost >= b.max_cost_usd) return 'error_max_budget_usd';
    if (b.max_wall_clock_s != null && this.now() - run.started >= b.max_wall_clock_s) return 'error_max_wall_clock';
    return null;
  }
}

// ------------------------------------------------------------------ the harness's requests

let cancelTokens = []; // tokens of the running scenario's user messages, by index
let runningSeq = null;
let harnessNow = null; // the largest `clock` reading of the running scenario

async function onRun(id, { seq, scenario, http_model: httpModel }) {
  runningSeq = seq;
  cancelTokens = [];
  harnessNow = null;
  const reply = (env) => out({ id, result: { seq, ...env } });
  try {
    if (scenario.profile !== 'kernel') return reply({ status: 'skipped', reason: `profile ${scenario.profile} is not implemented` });
    let kernel;
    try { kernel = new Kernel(seq, scenario); } catch (e) {
      if (e instanceof Rejected) return reply({ status: 'ok', result: { rejected: { field: e.field, message: e.message } } });
      throw e;
    }
    if (OVER_HTTP && httpModel) {
      const OpenAI = require('openai'); // npm ci in examples/node-kernel
      kernel.http = { client: new OpenAI({ baseURL: httpModel.base_urls['openai-chat'], apiKey: httpModel.api_key, maxRetries: 0 }) };
    }
    const outcomes = await kernel.runAll(cancelTokens);
    reply({ status: 'ok', result: { outcomes, journal: kernel.journal, usage: kernel.usage, spans: kernel.spans, raised: null, rejected: null } });
  } catch (e) {
    reply({ status: 'errored', error: { type: e.constructor.name, message: e.message, context: e.stack } });
  } finally {
    runningSeq = null;
  }
}

function onLine(line) {
  if (!line.trim()) return;
  let msg;
  try { msg = JSON.parse(line); } catch { log('node-kernel: not JSON:', line.slice(0, 200)); return; }
  if (msg.method && msg.id !== undefined) { // a request from the harness
    if (msg.method === 'start') {
      if (msg.params.protocol !== 1) return out({ id: msg.id, error: { code: -32001, message: 'unsupported protocol version', data: { supported: [1] } } });
      return out({ id: msg.id, result: { protocol: 1, info: INFO } });
    }
    if (msg.method === 'run') return void onRun(msg.id, msg.params);
    if (msg.method === 'stop') { out({ id: msg.id, result: {} }); process.exit(0); }
    return out({ id: msg.id, error: { code: -32601, message: `method not found: ${msg.method}` } });
  }
  if (msg.method === 'cancel') { // cancel that user message's running turn
    if (msg.params.seq === runningSeq && cancelTokens[msg.params.message]) cancelTokens[msg.params.message].cancel();
    return;
  }
  if (msg.method === 'clock') { // the harness clock moved: read before the response that follows
    if (msg.params.seq === runningSeq) harnessNow = harnessNow === null ? msg.params.now : Math.max(harnessNow, msg.params.now);
    return;
  }
  if (msg.method === 'model.chunk') {
    const entry = pending.get(msg.params.request);
    if (entry && entry.onChunk) entry.onChunk(msg.params.chunk);
    return;
  }
  if (msg.method) return; // other notifications: nothing to do
  const entry = pending.get(msg.id); // a response to one of our callbacks
  if (!entry) return; // e.g. the -32800 answer to a request we gave up
  pending.delete(msg.id);
  if (entry.off) entry.off();
  if (msg.error) entry.reject(new RpcError(msg.error));
  else entry.resolve(msg.result);
}

readline.createInterface({ input: process.stdin }).on('line', onLine).on('close', () => process.exit(0));
