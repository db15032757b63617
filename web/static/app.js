// rcamesh war room: watch and steer an investigation live. A plain client of
// the public REST and streaming API (/api/v4); nothing private.
import { html, render, useState, useEffect, useRef, useMemo, useCallback } from "/static/vendor/htm-preact-standalone-3.1.1.js";
import { HistoryList, HistoryPage } from "/static/history.js";

const DOMAINS = ["compute", "network", "storage", "control_plane", "security", "unknown"];
// A live pin shows pending at least this long; events within REPLAY_MS of
// (re)connecting are history being replayed.
// A pin created less than FRESH_MS ago counts as live even in a replay.
const MIN_PENDING_MS = 900, REPLAY_MS = 500, FRESH_MS = 10000;
const pinTime = (p) => Date.parse(String(p.timestamp || "").replace(/(\.\d{3})\d+/, "$1")) || 0;
const strip = (v, prefix) => (v || "").replace(prefix, "").toLowerCase();

// API token (when the server has -auth.tokens-file or JWTs on): kept in
// sessionStorage for this tab, given once as ?token=... in the page URL
// (removed from the address bar at once) or typed into the sign-in form.
const TOKEN_KEY = "rcamesh.token";
{
  const q = new URLSearchParams(location.search);
  if (q.get("token")) {
    sessionStorage.setItem(TOKEN_KEY, q.get("token"));
    q.delete("token");
    history.replaceState(null, "", location.pathname + (q.toString() ? "?" + q : "") + location.hash);
  }
}
const authHeaders = () => { const t = sessionStorage.getItem(TOKEN_KEY); return t ? { Authorization: `Bearer ${t}` } : {}; };
const needToken = () => dispatchEvent(new Event("rcamesh-unauthorized"));

async function api(path, opts = {}) {
  const res = await fetch(path, { headers: { "Content-Type": "application/json", ...authHeaders() }, ...opts });
  if (res.status === 401) needToken();
  const text = await res.text();
  let body = {};
  try { body = text ? JSON.parse(text) : {}; } catch { body = { message: text }; }
  if (!res.ok) {
    const err = new Error(body.message || `HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return body;
}

// apiAll reads every page of a paged list (page_token / next_page_token).
async function apiAll(path, key) {
  const items = [];
  let token = "";
  for (let i = 0; i < 100; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await api(token ? `${path}${sep}page_token=${encodeURIComponent(token)}` : path);
    items.push(...(r[key] || []));
    token = r.next_page_token || r.nextPageToken || "";
    if (!token) break;
  }
  return items;
}

function useRoute() {
  const [hash, setHash] = useState(location.hash || "#/");
  useEffect(() => {
    const on = () => setHash(location.hash || "#/");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  const m = hash.match(/^#\/s\/(.+)$/);
  const h = hash.match(/^#\/h\/(.+)$/);
  if (h) return { page: "past", id: decodeURIComponent(h[1]) };
  if (hash === "#/history") return { page: "history" };
  return m ? { page: "session", id: decodeURIComponent(m[1]) } : { page: "list" };
}

function SignIn({ onSignedIn }) {
  const [token, setToken] = useState("");
  const submit = (e) => { e.preventDefault(); sessionStorage.setItem(TOKEN_KEY, token.trim()); onSignedIn(); };
  return html`<${Header} title="sign in" /><main><form class="params" data-testid="signin" onSubmit=${submit}>
    <p>This server requires an API token (role read; steer to run commands).</p>
    <label for="token"><span>API token</span><input id="token" type="password" autocomplete="current-password" value=${token} onInput=${e => setToken(e.target.value)} /></label>
    <button type="submit">Sign in</button></form></main>`;
}

function App() {
  const route = useRoute();
  const [unauthorized, setUnauthorized] = useState(false);
  useEffect(() => {
    const on = () => setUnauthorized(true);
    addEventListener("rcamesh-unauthorized", on);
    return () => removeEventListener("rcamesh-unauthorized", on);
  }, []);
  if (unauthorized) return html`<${SignIn} onSignedIn=${() => setUnauthorized(false)} />`;
  if (route.page === "history") return html`<${HistoryList} Header=${Header} api=${api} />`;
  if (route.page === "past") return html`<${HistoryPage} id=${route.id} Header=${Header} api=${api} />`;
  return route.page === "session" ? html`<${SessionPage} id=${route.id} />` : html`<${SessionList} />`;
}

function Header({ title, conn }) {
  return html`<header class="top"><h1><a href="#/" class="home">rcamesh</a> · ${title}</h1>
    <nav class="views"><a href="#/">sessions</a> <a href="#/history" data-testid="nav-history">history</a></nav>
    ${conn && html`<span class=${"conn " + conn} data-testid="conn" role="status" aria-live="polite">${conn === "live" ? "live" : "reconnecting…"}</span>`}</header>`;
}

function SessionList() {
  const [sessions, setSessions] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stop = false;
    const load = async () => {
      try { const r = await api("/api/v4/sessions?limit=200"); if (!stop) { setSessions(r.sessions || []); setError(""); } }
      catch (e) { if (!stop) setError(e.message); }
    };
    load();
    const t = setInterval(load, 3000);
    return () => { stop = true; clearInterval(t); };
  }, []);
  return html`<${Header} title="sessions" />
  <main>
    ${error && html`<div class="error" role="alert">${error}</div>`}
    ${sessions === null ? html`<p>Loading…</p>` : sessions.length === 0 ? html`<p>No alerts received yet. Post one to <code>/api/v4/alerts</code>.</p>` :
    html`<div class="tablewrap"><table class="sessions"><thead><tr><th>session</th><th>state</th><th class="opt">service</th><th>pins</th><th>root cause</th><th>confidence</th><th class="opt">updated</th></tr></thead><tbody>
      ${sessions.map(s => html`<tr key=${s.session_id}>
        <td><a href=${"#/s/" + encodeURIComponent(s.session_id)} data-testid="session-link">${s.title || s.session_id}</a></td>
        <td><span class=${"badge " + (s.state || "").toLowerCase()}>${s.state || "?"}</span></td>
        <td class="opt">${[s.namespace, s.service].filter(Boolean).join("/")}</td>
        <td>${s.pins || 0}</td>
        <td>${s.root_cause || ""}</td>
        <td>${s.confidence ? Math.round(s.confidence * 100) + "%" : ""}</td>
        <td class="opt">${s.updated_at ? new Date(s.updated_at).toLocaleTimeString() : ""}</td></tr>`)}
    </tbody></table></div>`}
  </main>`;
}

// Live pin events: replay from the last sequence seen, follow, reconnect.
function usePinStream(sessionId, onLifecycle) {
  const [pins, setPins] = useState({});
  const [conn, setConn] = useState("down");
  const lastSeq = useRef(0);
  const lifecycleRef = useRef(onLifecycle);
  lifecycleRef.current = onLifecycle;
  useEffect(() => {
    let stopped = false;
    let ctrl = null;
    let openedAt = 0;
    const arrived = {}; // pin id -> when it arrived pending on a live stream
    const timers = new Set();
    const put = (p, kind) => setPins(prev => {
      const old = prev[p.id];
      if (old && Number(old.version || 0) > Number(p.version || 0)) return prev;
      return { ...prev, [p.id]: { ...p, _kind: kind } };
    });
    const apply = (ev) => {
      const seq = Number(ev.sequence || 0);
      if (seq && seq <= lastSeq.current) return; // already applied
      if (seq) lastSeq.current = seq;
      if (ev.pin && ev.pin.pin) {
        const p = ev.pin.pin, now = Date.now();
        const pending = !p.validation_status || p.validation_status === "VALIDATION_STATUS_PENDING_CRITIC";
        // A pin that arrives live stays amber long enough to be seen before
        // the critic's verdict snaps it; history replays at once.
        if (pending && (now - openedAt > REPLAY_MS || now - pinTime(p) < FRESH_MS)) arrived[p.id] = now;
        const wait = !pending && arrived[p.id] ? arrived[p.id] + MIN_PENDING_MS - now : 0;
        if (wait > 0) {
          const t = setTimeout(() => { timers.delete(t); if (!stopped) put(p, ev.pin.kind); }, wait);
          timers.add(t);
        } else put(p, ev.pin.kind);
      } else if (ev.lifecycle && lifecycleRef.current) {
        lifecycleRef.current(ev.lifecycle);
      }
    };
    const run = async () => {
      let backoff = 250;
      while (!stopped) {
        ctrl = new AbortController();
        try {
          // Resume one event early: the gateway sends the response headers
          // only with the first event, so replaying the last one seen (skipped
          // by its sequence) tells at once that the stream is back.
          const from = Math.max(0, lastSeq.current - 1);
          const res = await fetch(`/api/v4/session/${encodeURIComponent(sessionId)}/events?from_sequence=${from}`, { signal: ctrl.signal, headers: authHeaders() });
          if (res.status === 401) needToken();
          if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
          setConn("live");
          openedAt = Date.now();
          backoff = 250;
          const reader = res.body.getReader();
          const dec = new TextDecoder();
          let buf = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
            let nl;
            while ((nl = buf.indexOf("\n")) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              let msg;
              try { msg = JSON.parse(line); } catch { continue; }
              if (msg.result && msg.result.event) apply(msg.result.event);
            }
          }
        } catch (e) {
          if (stopped) return;
        }
        if (stopped) return;
        setConn("down");
        await new Promise(r => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 4000);
      }
    };
    run();
    return () => { stopped = true; if (ctrl) ctrl.abort(); timers.forEach(clearTimeout); };
  }, [sessionId]);
  return { pins, conn };
}

function SessionPage({ id }) {
  const [session, setSession] = useState(null);
  const [tools, setTools] = useState([]);
  const [chips, setChips] = useState([]);
  const [diagnosis, setDiagnosis] = useState(null);
  const [record, setRecord] = useState(null);
  const [report, setReport] = useState(null);
  const [tick, setTick] = useState(0);
  const [highlight, setHighlight] = useState("");
  // Lifecycle events come in bursts: refetch the derived views once per burst.
  const refreshTimer = useRef(null);
  const refresh = useCallback(() => {
    if (refreshTimer.current) return;
    refreshTimer.current = setTimeout(() => { refreshTimer.current = null; setTick(t => t + 1); }, 200);
  }, []);
  useEffect(() => () => clearTimeout(refreshTimer.current), []);
  const { pins, conn } = usePinStream(id, refresh);

  useEffect(() => {
    api(`/api/v4/session/${encodeURIComponent(id)}`).then(setSession).catch(() => setSession({ context: { session_id: id } }));
  }, [id, tick]);
  const pinCount = Object.keys(pins).length;
  // The tools' options (known pods, namespaces) grow with the pins.
  useEffect(() => { apiAll(`/api/v4/session/${encodeURIComponent(id)}/tools`, "tools").then(setTools).catch(() => {}); }, [id, tick, pinCount]);
  const pinStates = Object.values(pins).map(p => p.validation_status).join(",");
  useEffect(() => {
    api(`/api/v4/session/${encodeURIComponent(id)}/suggestions`).then(r => setChips(r.chips || [])).catch(() => setChips([]));
  }, [id, pinCount, pinStates]);
  useEffect(() => {
    api(`/api/v4/session/${encodeURIComponent(id)}/diagnosis`).then(r => setDiagnosis(r.diagnosis || null)).catch(() => {});
    api(`/api/v4/session/${encodeURIComponent(id)}/record`).then(r => setRecord(r.record || null)).catch(() => {});
    api(`/api/v4/session/${encodeURIComponent(id)}/report`).then(r => setReport(r.report || null)).catch(() => {});
  }, [id, tick, pinCount]);

  const ctx = useMemo(() => {
    const c = { ...(session && session.context || {}), session_id: id };
    const pods = new Set(c.pod_names || []), nss = new Set(c.discovered_namespaces || []);
    for (const p of Object.values(pins)) {
      if (p.namespace) nss.add(p.namespace);
      if (p.resource_name && (p.source_tool || "").match(/pod/)) pods.add(p.resource_name);
    }
    c.pod_names = [...pods]; c.discovered_namespaces = [...nss];
    return c;
  }, [session, pins, id]);

  const run = async (body) => {
    const r = await api(`/api/v4/session/${encodeURIComponent(id)}/investigate`, { method: "POST", body: JSON.stringify({ ...body, context: ctx }) });
    return r;
  };

  const focusPin = (pid) => {
    setHighlight(pid);
    const el = document.getElementById("pin-" + pid);
    if (el) el.scrollIntoView({ behavior: "smooth", block: "center" });
  };
  // A pin started from this page is highlighted and scrolled to when it lands.
  const [follow, setFollow] = useState("");
  useEffect(() => {
    if (follow && pins[follow]) { focusPin(follow); setFollow(""); }
  }, [follow, pins]);
  const started = (r) => { if (r && r.pin_id) { setHighlight(r.pin_id); setFollow(r.pin_id); } };
  const [chipState, setChipState] = useState({ error: "", answer: "" });
  const fireChip = async (c) => {
    setChipState({ error: "", answer: "" });
    try {
      const r = await run({ quick_action: c.action });
      if (r.status === "INVESTIGATE_STATUS_ERROR" || r.status === "INVESTIGATE_STATUS_UNRESOLVED") { setChipState({ error: r.error || r.answer || "could not run", answer: "" }); return; }
      started(r);
      setChipState({ error: "", answer: `running ${r.command || r.intent}` });
    } catch (e) { setChipState({ error: e.message, answer: "" }); }
  };

  const title = session && session.session ? (session.session.title || id) : id;
  // A SAST triage session: its pins are the findings' verdicts.
  const findings = Object.values(pins).filter(isFinding);
  if (findings.length > 0) return html`<${TriageSession} id=${id} title=${title} conn=${conn} findings=${findings} pins=${pins} highlight=${highlight} />`;
  return html`<${Header} title=${title} conn=${conn} />
  <main>
    <div class="layout">
      <div>
        <section class="panel"><h2>Quick actions</h2><${Toolbar} tools=${tools} ctx=${ctx} run=${run} started=${started} /></section>
        <section class="panel chat"><h2>Ask or command</h2><${ChatBox} tools=${tools} ctx=${ctx} sessionId=${id} run=${run} started=${started} /></section>
        <section class="panel"><h2>Evidence</h2>
          <${EvidenceGrid} pins=${pins} highlight=${highlight} />
          ${chips.length > 0 && html`<div class="chips" role="group" aria-label="suggested next steps"><span class="answer">Next steps:</span>
            ${chips.map(c => html`<button key=${c.label + c.rule} data-testid="chip" data-intent=${c.action && c.action.intent} title=${c.rule ? "suggested by " + c.rule.replaceAll("_", " ") : ""} onClick=${() => fireChip(c)}>${c.label}</button>`)}</div>`}
          ${chipState.error && html`<div class="error" role="alert" data-testid="chip-error">${chipState.error}</div>`}
          ${chipState.answer && html`<div class="answer" data-testid="chip-answer">${chipState.answer}</div>`}
        </section>
      </div>
      <div>
        <section class="panel"><h2>Stages</h2><${Timeline} record=${record} /></section>
        <section class="panel diag"><h2>Diagnosis</h2><${Diagnosis} d=${diagnosis} focusPin=${focusPin} /></section>
        <section class="panel"><h2>Report</h2>${report && report.markdown ? html`
          <button data-testid="download-report" onClick=${() => download(`rcamesh-${id}.md`, report.markdown)}>Download markdown</button>
          <span class="answer">${report.silent ? " kept silent (below the confidence gate)" : ""}</span>` : html`<span class="answer">No report yet.</span>`}</section>
      </div>
    </div>
  </main>`;
}

// SAST triage (seed 004): a session whose pins are findings' verdicts, each
// with its claims, the raw code they cite, the unknowns left and the cost.
const isFinding = (p) => p.source_tool === "sast_triage" && p.metadata;
const VERDICTS = ["TRUE_POSITIVE", "FALSE_POSITIVE", "NEEDS_REVIEW"];
const verdictOf = (m) => strip(m.verdict, "VERDICT_").toUpperCase() || "NEEDS_REVIEW";

function TriageSession({ id, title, conn, findings, pins, highlight }) {
  const [filter, setFilter] = useState("");
  const sorted = [...findings].sort((a, b) => Number(a.metadata.index || 0) - Number(b.metadata.index || 0));
  const counts = Object.fromEntries(VERDICTS.map(v => [v, sorted.filter(p => verdictOf(p.metadata) === v).length]));
  const shown = filter ? sorted.filter(p => verdictOf(p.metadata) === filter) : sorted;
  return html`<${Header} title=${title === id ? "SAST triage " + id : title} conn=${conn} />
  <main>
    <div class="layout">
      <div>
        <section class="panel"><h2>Findings</h2>
          <div class="toolbar" role="toolbar" aria-label="filter by verdict">
            <button aria-pressed=${filter === ""} onClick=${() => setFilter("")}>all ${sorted.length}</button>
            ${VERDICTS.map(v => html`<button key=${v} aria-pressed=${filter === v} data-testid=${"filter-" + v} onClick=${() => setFilter(filter === v ? "" : v)}>
              <span class=${"badge verdict " + v.toLowerCase()}>${v}</span> ${counts[v]}</button>`)}
          </div>
          <div class="findings" data-testid="findings">${shown.map(p => html`<${Finding} key=${p.id} p=${p} highlight=${highlight} />`)}</div>
        </section>
      </div>
      <div>
        <section class="panel"><h2>Verdicts</h2><ul class="tally" data-testid="tally">
          ${VERDICTS.map(v => html`<li key=${v}><span class=${"badge verdict " + v.toLowerCase()}>${v}</span> ${counts[v]}</li>`)}</ul>
          <div class="answer">Each verdict was accepted by the critic's evaluator on raw code, or ends as NEEDS_REVIEW with what is still unknown.</div></section>
        <section class="panel"><h2>Evidence pins</h2><${EvidenceGrid} pins=${pins} highlight=${highlight} /></section>
      </div>
    </div>
  </main>`;
}

function Finding({ p, highlight }) {
  const m = p.metadata, v = verdictOf(m);
  const cites = Object.fromEntries((m.evidence || []).map(c => [c.id, c]));
  const cost = m.cost || {};
  return html`<article class=${"finding " + v.toLowerCase() + (highlight === p.id ? " highlight" : "")} id=${"pin-" + p.id} data-testid="finding" data-verdict=${v}>
    <header><span class=${"badge verdict " + v.toLowerCase()} data-testid="verdict">${v}</span>
      <strong>${m.rule_id}</strong> <code>${m.file}${m.start_line ? ":" + m.start_line : ""}</code>
      ${m.category && html`<span class="badge">${m.category}</span>`}</header>
    ${m.reason && html`<div class="reason">${m.reason}</div>`}
    ${m.error && html`<div class="error" role="alert">${m.error}</div>`}
    ${(m.claims || []).length > 0 && html`<h4>Claims</h4><ul class="claims">${m.claims.map(c => html`<li key=${c.id} data-testid="claim" data-claim=${c.id}>
      <strong>${c.id}</strong> <span class=${"badge " + (c.status || "")}>${c.status}</span> ${c.text}
      ${(c.evidence || []).map(eid => cites[eid] && html`<figure class="cite" key=${eid} data-testid="cited-code">
        <figcaption><code>${cites[eid].file}:${cites[eid].start_line}${cites[eid].end_line !== cites[eid].start_line ? "-" + cites[eid].end_line : ""}</code> ${cites[eid].note || ""}</figcaption>
        <pre>${cites[eid].snippet}</pre></figure>`)}</li>`)}</ul>`}
    ${(m.unknowns || []).length > 0 && html`<h4>Unknowns</h4><ul class="unknowns" data-testid="unknowns">${m.unknowns.map(u => html`<li>${u}</li>`)}</ul>`}
    ${(m.next_fetches || []).length > 0 && html`<h4>Next fetches</h4><ul>${m.next_fetches.map(u => html`<li><code>${u}</code></li>`)}</ul>`}
    <div class="answer">${(m.stop_reason || "").replaceAll("_", " ")}${m.rejections ? ` · ${m.rejections} rejection(s) by the critic` : ""} · ${cost.tool_calls || 0} tool calls · ${cost.iterations || 0} iterations · ${Number(cost.wall_ms || 0).toFixed(1)} ms</div>
  </article>`;
}

function download(name, text) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "text/markdown" }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function Toolbar({ tools, ctx, run, started }) {
  const [open, setOpen] = useState(null);
  const [error, setError] = useState("");
  const [answer, setAnswer] = useState("");
  const primary = tools.filter(t => !t.secondary);
  return html`<div class="toolbar" role="toolbar" aria-label="quick actions">
    ${primary.length === 0 && html`<span class="answer">Loading tools…</span>`}
    ${primary.map(t => {
      // The server computes availability from the session's context and
      // the configured integrations, and says why a tool is unavailable.
      // proto3 JSON omits false: a tool is usable only when marked available.
      const disabled = t.available !== true;
      const why = disabled ? (t.unavailable_reason || "not available") : `${t.slash_command ? t.slash_command + " — " : ""}${t.description || ""}`;
      return html`<button key=${t.intent} data-intent=${t.intent} data-icon=${t.icon} disabled=${disabled} title=${why}
        aria-expanded=${open === t.intent} class=${open === t.intent ? "open" : ""}
        onClick=${() => { setError(""); setAnswer(""); setOpen(open === t.intent ? null : t.intent); }}>${t.label}</button>`;
    })}
  </div>
  ${open && html`<${ParamForm} tool=${tools.find(t => t.intent === open)} ctx=${ctx} error=${error}
      onCancel=${() => { setOpen(null); setError(""); }}
      onSubmit=${async (params) => {
        try {
          const r = await run({ quick_action: { intent: open, params } });
          if (r.status === "INVESTIGATE_STATUS_UNRESOLVED" || r.status === "INVESTIGATE_STATUS_ERROR") { setError(r.error || r.answer || "could not run"); return; }
          setOpen(null); started(r); setAnswer(r.answer || `running ${r.command || r.intent}`);
        } catch (e) { setError(e.message); }
      }} />`}
  ${error && html`<div class="error" role="alert" id="form-error" data-testid="form-error">${error}</div>`}
  ${answer && html`<div class="answer" data-testid="form-answer">${answer}</div>`}`;
}

function ctxValue(ctx, key) {
  if (!key) return "";
  const v = ctx[key];
  return Array.isArray(v) ? "" : (v || "");
}

function optionsFor(p, ctx) {
  if (p.options && p.options.length) return p.options;
  if (p.name === "pod" || p.default_from_context === "active_pod") return ctx.pod_names || [];
  if (p.name === "namespace") return ctx.discovered_namespaces || [];
  return [];
}

function ParamForm({ tool, ctx, error, onSubmit, onCancel }) {
  const params = tool.params_schema || [];
  const [vals, setVals] = useState(() => Object.fromEntries(params.map(p => [p.name, ctxValue(ctx, p.default_from_context)])));
  const formRef = useRef(null);
  useEffect(() => {
    // Focus the first required field still empty, else the first field.
    const f = formRef.current;
    if (!f) return;
    const el = [...f.querySelectorAll("input")].find(i => i.dataset.required === "true" && !i.value) || f.querySelector("input");
    if (el) el.focus();
  }, [tool.intent]);
  const submit = (e) => {
    e.preventDefault();
    const out = {};
    for (const p of params) {
      const v = vals[p.name];
      if (v === "" || v === undefined || v === false && p.type === "PARAM_TYPE_BOOLEAN") continue;
      if (p.type === "PARAM_TYPE_NUMBER") out[p.name] = Number(v);
      else if (p.type === "PARAM_TYPE_BOOLEAN") out[p.name] = v === true || v === "true";
      else out[p.name] = v;
    }
    onSubmit(out);
  };
  const field = (p) => {
    const id = `f-${tool.intent}-${p.name}`;
    const opts = optionsFor(p, ctx);
    const set = (v) => setVals(vs => ({ ...vs, [p.name]: v }));
    // After a server error, a required field left empty is the likely culprit.
    const invalid = !!error && p.required && (vals[p.name] === "" || vals[p.name] === undefined);
    const common = { id, name: p.name, title: p.description || "", "data-required": p.required ? "true" : "false",
      "aria-invalid": invalid ? "true" : "false", "aria-describedby": error ? "form-error" : undefined };
    let input;
    if (p.type === "PARAM_TYPE_BOOLEAN") {
      input = html`<input ...${common} type="checkbox" checked=${vals[p.name] === true || vals[p.name] === "true"} onChange=${e => set(e.target.checked)} />`;
    } else {
      input = html`<input ...${common} list=${opts.length ? id + "-opts" : undefined} autocomplete="off"
        type=${p.type === "PARAM_TYPE_NUMBER" ? "number" : "text"} placeholder=${p.placeholder || (opts.length ? opts[0] : "")} value=${vals[p.name] || ""}
        onInput=${e => set(e.target.value)} />
        ${opts.length > 0 && html`<datalist id=${id + "-opts"}>${opts.map(o => html`<option key=${o} value=${o} />`)}</datalist>`}`;
    }
    return html`<label for=${id} key=${p.name} class=${p.type === "PARAM_TYPE_BOOLEAN" ? "check" : ""}><span>${p.name}${p.required ? html`<span class="req" aria-label="required"> *</span>` : ""}</span>${input}</label>`;
  };
  const main = params.filter(p => p.required || p.default_from_context);
  const more = params.filter(p => !(p.required || p.default_from_context));
  return html`<form ref=${formRef} class="params" onSubmit=${submit} onKeyDown=${e => e.key === "Escape" && onCancel()} aria-label=${tool.label + " parameters"} data-testid="param-form" data-intent=${tool.intent}>
    <div class="fields">${main.map(field)}
      <button type="submit" data-testid="run">Run</button>
      <button type="button" onClick=${onCancel}>Cancel</button></div>
    ${more.length > 0 && html`<details class="more"><summary>More options (${more.map(p => p.name).join(", ")})</summary><div class="fields">${more.map(field)}</div></details>`}
  </form>`;
}

// Slash-command palette with ghost-text templates; plain language goes to chat.
function ChatBox({ tools, ctx, sessionId, run, started }) {
  const [text, setText] = useState("");
  const [sel, setSel] = useState(0);
  const [error, setError] = useState("");
  const [answer, setAnswer] = useState("");
  const [busy, setBusy] = useState(false);
  const [dismissed, setDismissed] = useState(false);
  const input = useRef(null);
  const commands = tools.filter(t => t.slash_command);
  const word = text.startsWith("/") && !text.includes(" ") ? text : null;
  const matches = word !== null && !dismissed ? commands.filter(t => t.slash_command.startsWith(word)) : [];
  const current = text.startsWith("/") ? commands.find(t => text.split(" ")[0] === t.slash_command) : null;

  // Template for the chosen command: the parameters not typed yet, each with
  // its context value, else the session's first known option, else a hint.
  const pending = useMemo(() => {
    if (!current) return [];
    const typed = new Set(text.split(/\s+/).slice(1).map(tok => tok.split("=")[0]));
    return (current.params_schema || []).filter(p => (p.required || p.default_from_context) && !typed.has(p.name))
      .map(p => {
        const v = ctxValue(ctx, p.default_from_context) || (optionsFor(p, ctx)[0] || "");
        return { name: p.name, value: v, hint: `${p.name}=${v || "<" + (p.placeholder || p.name) + ">"}` };
      });
  }, [current, text, ctx]);
  const ghost = current && pending.length ? (text.endsWith(" ") ? "" : " ") + pending.map(p => p.hint).join(" ") : "";

  const choose = (t) => { setText(t.slash_command + " "); setSel(0); input.current && input.current.focus(); };
  const submit = async () => {
    const msg = text.trim();
    if (!msg || busy) return;
    setBusy(true); setError(""); setAnswer("");
    try {
      if (msg.startsWith("/")) {
        const r = await run({ command: msg });
        if (r.status === "INVESTIGATE_STATUS_UNRESOLVED" || r.status === "INVESTIGATE_STATUS_ERROR") setError(r.error || r.answer || "could not run");
        else { setText(""); started(r); setAnswer(`running ${r.command || r.intent}`); }
      } else {
        const r = await api(`/api/v4/session/${encodeURIComponent(sessionId)}/chat`, { method: "POST", body: JSON.stringify({ message: msg, context: ctx }) });
        setAnswer(r.reply || "");
        if (r.action && r.action.status === "INVESTIGATE_STATUS_EXECUTING") { setText(""); started(r.action); }
      }
    } catch (e) { setError(e.message); }
    setBusy(false);
  };
  const onKey = (e) => {
    if (matches.length > 0) {
      if (e.key === "ArrowDown") { e.preventDefault(); setSel((sel + 1) % matches.length); return; }
      if (e.key === "ArrowUp") { e.preventDefault(); setSel((sel - 1 + matches.length) % matches.length); return; }
      if (e.key === "Enter" || e.key === "Tab") { e.preventDefault(); choose(matches[Math.min(sel, matches.length - 1)]); return; }
      if (e.key === "Escape") { e.preventDefault(); setDismissed(true); return; }
    }
    if (e.key === "Tab" && !e.shiftKey && pending.length > 0) {
      // Accept the next parameter of the template; an unknown value leaves
      // the cursor after "name=" to type it.
      e.preventDefault();
      const p = pending[0];
      setText((text.endsWith(" ") ? text : text + " ") + `${p.name}=${p.value}` + (p.value ? " " : ""));
      return;
    }
    if (e.key === "Enter") { e.preventDefault(); submit(); }
  };
  const activeId = matches.length > 0 ? `cmd-${matches[Math.min(sel, matches.length - 1)].intent}` : undefined;
  return html`<div class="inputwrap">
      <input ref=${input} value=${text} onInput=${e => { setText(e.target.value); setSel(0); setError(""); setDismissed(false); }} onKeyDown=${onKey}
        placeholder="Type / for commands, or ask in plain language" aria-label="command or question" data-testid="chat-input"
        role="combobox" aria-expanded=${matches.length > 0} aria-controls="palette" aria-autocomplete="list" aria-activedescendant=${activeId}
        aria-invalid=${error ? "true" : "false"} aria-describedby=${error ? "chat-error" : undefined} spellcheck="false" autocomplete="off" />
      ${ghost && html`<div class="ghost" aria-hidden="true" data-testid="ghost"><span class="typed">${text}</span>${ghost}</div>`}
      ${matches.length > 0 && html`<ul class="palette" id="palette" role="listbox" data-testid="palette" aria-label="commands">
        ${matches.map((t, i) => html`<li key=${t.intent} id=${"cmd-" + t.intent} role="option" aria-selected=${i === sel} data-intent=${t.intent}
          onMouseDown=${e => { e.preventDefault(); choose(t); }}>
          <strong>${t.slash_command}</strong><span class="label">${t.label}</span><span class="usage">${(t.usage || "").replace(t.slash_command, "").trim() || t.description}</span></li>`)}</ul>`}
    </div>
    ${current && pending.length > 0 && html`<div class="hint answer">Tab fills <code>${pending[0].name}</code> · Enter runs</div>`}
    ${error && html`<div class="error" role="alert" id="chat-error" data-testid="chat-error">${error}</div>`}
    ${answer && html`<div class="answer" data-testid="chat-answer">${answer}</div>`}`;
}

function Sparkline({ points }) {
  if (!points || points.length < 2) return null;
  const vs = points.map(p => Number(p.v));
  const min = Math.min(...vs), max = Math.max(...vs), w = 220, h = 36;
  const span = max - min || 1;
  const d = vs.map((v, i) => `${(i / (vs.length - 1) * w).toFixed(1)},${(h - 2 - (v - min) / span * (h - 4)).toFixed(1)}`).join(" ");
  return html`<svg class="spark" width=${w} height=${h} viewBox=${`0 0 ${w} ${h}`} role="img" aria-label="metric sparkline">
    <polyline fill="none" stroke="#58a6ff" stroke-width="1.5" points=${d} /></svg>`;
}

function PinCard({ p, highlight }) {
  const status = strip(p.validation_status, "VALIDATION_STATUS_");
  const state = status === "validated" ? "validated" : status === "rejected" ? "rejected" : "pending";
  const role = strip(p.causal_role, "CAUSAL_ROLE_");
  const sev = strip(p.severity, "SEVERITY_");
  const series = p.metadata && p.metadata.series && p.metadata.series[0];
  return html`<article id=${"pin-" + p.id} class=${`card ${state} ${highlight === p.id ? "highlight" : ""}`} data-pin=${p.id} data-state=${state} data-tool=${p.source_tool}>
    <div class="claim">${p.claim}</div>
    <div class="meta">
      <span>${p.source_tool}</span>
      ${sev && html`<span class=${"sev-" + sev}>${sev}</span>`}
      ${state === "validated" && role && html`<span class="badge role" data-testid="role">${role.replace("_", " ")}</span>`}
      ${state === "pending" && html`<span class="badge">critic reviewing</span>`}
      ${p.source === "SOURCE_MANUAL" && html`<span class="badge">manual</span>`}
      <span title=${p.id}>${p.id.slice(0, 10)}</span>
    </div>
    ${series && html`<${Sparkline} points=${series.downsampled} />`}
    ${(p.supporting_evidence || []).length > 0 && html`<ul class="snips">${p.supporting_evidence.slice(0, 3).map(s => html`<li title=${s}>${s}</li>`)}
      ${p.supporting_evidence.length > 3 ? html`<li class="answer">+${p.supporting_evidence.length - 3} more in the raw output</li>` : ""}</ul>`}
    ${p.critic_rationale && html`<div class="answer critic" title=${p.critic_rationale}>critic: ${p.critic_rationale}</div>`}
    ${p.raw_output && html`<details><summary>view raw</summary><pre class="raw">${p.raw_output}</pre></details>`}
  </article>`;
}

function EvidenceGrid({ pins, highlight }) {
  const all = Object.values(pins).sort((a, b) => String(a.timestamp || "").localeCompare(String(b.timestamp || "")));
  const active = all.filter(p => p.validation_status !== "VALIDATION_STATUS_REJECTED");
  const rejected = all.filter(p => p.validation_status === "VALIDATION_STATUS_REJECTED");
  if (all.length === 0) return html`<p class="answer" data-testid="no-evidence">No evidence yet. Automated pins appear here as the investigation runs; the quick actions above add your own.</p>`;
  const by = {};
  for (const p of active) {
    const d = strip(p.domain, "DOMAIN_") || "unknown";
    (by[DOMAINS.includes(d) ? d : "unknown"] ||= []).push(p);
  }
  return html`<div class="grid" data-testid="evidence-grid">
    ${DOMAINS.filter(d => by[d]).map(d => html`<div class="domain" key=${d} data-domain=${d}><h3>${d.replace("_", " ")}<span class="count">${by[d].length}</span></h3>
      <div class="cards">${by[d].map(p => html`<${PinCard} key=${p.id} p=${p} highlight=${highlight} />`)}</div></div>`)}
  </div>
  ${rejected.length > 0 && html`<details class="informational" data-testid="informational" open><summary>Informational (${rejected.length} rejected by the critic)</summary>
    <div class="cards">${rejected.map(p => html`<${PinCard} key=${p.id} p=${p} highlight=${highlight} />`)}</div></details>`}`;
}

function Timeline({ record }) {
  if (!record || !(record.stages || []).length) return html`<span class="answer">No automated investigation yet.</span>`;
  return html`<ol class="timeline" data-testid="timeline">${record.stages.map(s => html`<li class=${(s.status || "").toLowerCase()}>
    <strong>${s.name}</strong> ${s.status ? html`<span class="answer">${s.status}</span>` : ""} ${s.duration_ms ? html`<span class="answer">${s.duration_ms} ms</span>` : ""}
    ${s.detail && html`<div class="answer">${s.detail}</div>`}</li>`)}</ol>
    <div class="answer">${record.loops || 0} loops · ${(record.tool_calls || []).length} tool calls · ${(record.model_calls || []).length} model calls · ${record.wall_ms || 0} ms</div>`;
}

function PinRefs({ ids, focusPin }) {
  return (ids || []).map(id => html`<a class="pinref" href="#" onClick=${e => { e.preventDefault(); focusPin(id); }}>[${id.slice(0, 8)}]</a>`);
}

function Diagnosis({ d, focusPin }) {
  if (!d || !d.root_cause) return html`<span class="answer">No diagnosis yet.</span>`;
  return html`<div data-testid="diagnosis">
    <div class="rc">${d.root_cause}</div>
    <div class="answer">${strip(d.category, "ROOT_CAUSE_CATEGORY_")} · confidence ${Math.round((d.confidence || 0) * 100)}% · ${strip(d.status, "DIAGNOSIS_STATUS_")}${d.root_cause_entity ? " · " + d.root_cause_entity : ""}</div>
    ${(d.causal_chain || []).length > 0 && html`<h4>Causal chain</h4><ol>${d.causal_chain.map(c => html`<li>${c}</li>`)}</ol>`}
    ${(d.validated_claims || []).length > 0 && html`<h4>Validated claims</h4><ul>${d.validated_claims.map(c => html`<li>${c.claim}<${PinRefs} ids=${c.pin_ids} focusPin=${focusPin} /></li>`)}</ul>`}
    ${(d.non_validated_claims || []).length > 0 && html`<h4>Not validated</h4><ul>${d.non_validated_claims.map(c => html`<li>${c.claim}<${PinRefs} ids=${c.pin_ids} focusPin=${focusPin} /></li>`)}</ul>`}
    ${(d.ruled_out || []).length > 0 && html`<h4>Ruled out</h4><ul>${d.ruled_out.map(r => html`<li>${r.alternative}: ${r.reason}<${PinRefs} ids=${r.pin_ids} focusPin=${focusPin} /></li>`)}</ul>`}
    ${(d.remediation_steps || []).length > 0 && html`<h4>Remediation</h4><ol>${d.remediation_steps.map(s => html`<li>${s}</li>`)}</ol>`}
  </div>`;
}

render(html`<${App} />`, document.getElementById("app"));
