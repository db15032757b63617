// Past investigations (the history store, /api/v4/history): a searchable,
// paged list and a read-only view of one investigation with its report, pins
// and critic verdicts. A plain client of the public REST API.
import { html, useState, useEffect } from "/static/vendor/htm-preact-standalone-3.1.1.js";

const CATEGORIES = ["configuration_error", "code_defect", "data_quality", "resource_exhaustion", "dependency_failure", "infrastructure", "healthy", "unknown"];
const strip = (v, prefix) => (v || "").replace(prefix, "").toLowerCase();
const when = (t) => (t ? new Date(t).toLocaleString() : "");

export function HistoryList({ Header, api }) {
  const [form, setForm] = useState({ query: "", service: "", namespace: "", category: "", since: "" });
  const [applied, setApplied] = useState(form);
  const [pages, setPages] = useState([""]); // page tokens: pages[i] opens page i
  const [page, setPage] = useState(null);
  const [error, setError] = useState("");
  const token = pages[pages.length - 1];
  useEffect(() => {
    let stop = false;
    const q = new URLSearchParams({ page_size: "25" });
    for (const [k, v] of Object.entries(applied)) {
      if (!v) continue;
      if (k === "category") q.set(k, "ROOT_CAUSE_CATEGORY_" + v.toUpperCase());
      else if (k === "since") q.set(k, new Date(v).toISOString());
      else q.set(k, v);
    }
    if (token) q.set("page_token", token);
    api("/api/v4/history/investigations?" + q).then(r => { if (!stop) { setPage(r); setError(""); } }, e => { if (!stop) setError(e.message); });
    return () => { stop = true; };
  }, [applied, token]);
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const submit = (e) => { e.preventDefault(); setPages([""]); setApplied(form); };
  const rows = (page && page.investigations) || [];
  return html`<${Header} title="history" />
  <main>
    <form class="history-filters" data-testid="history-search" onSubmit=${submit} role="search">
      <input type="search" placeholder="search alerts, diagnoses, reports" aria-label="text" value=${form.query} onInput=${set("query")} data-testid="history-query" />
      <input placeholder="service" aria-label="service" value=${form.service} onInput=${set("service")} />
      <input placeholder="namespace" aria-label="namespace" value=${form.namespace} onInput=${set("namespace")} />
      <select aria-label="category" value=${form.category} onChange=${set("category")}>
        <option value="">any category</option>${CATEGORIES.map(c => html`<option value=${c}>${c.replace(/_/g, " ")}</option>`)}
      </select>
      <label class="answer">since <input type="date" value=${form.since} onInput=${set("since")} /></label>
      <button type="submit">Search</button>
    </form>
    ${error && html`<div class="error" role="alert">${error}</div>`}
    ${page === null ? html`<p>Loading…</p>` : rows.length === 0 ? html`<p data-testid="history-empty">No past investigations match.</p>` :
    html`<div class="tablewrap"><table class="sessions" data-testid="history-table"><thead><tr><th>started</th><th>alert</th><th class="opt">service</th><th>category</th><th>status</th><th>root cause</th><th>confidence</th></tr></thead><tbody>
      ${rows.map(s => html`<tr key=${s.investigation_id} data-testid="history-row">
        <td class="nowrap">${when(s.started_at)}</td>
        <td><a href=${"#/h/" + encodeURIComponent(s.investigation_id)} data-testid="history-link">${s.title || s.investigation_id}</a></td>
        <td class="opt">${[s.namespace, s.service].filter(Boolean).join("/")}</td>
        <td><span class="badge">${strip(s.category, "ROOT_CAUSE_CATEGORY_").replace(/_/g, " ")}</span></td>
        <td><span class=${"badge " + strip(s.status, "DIAGNOSIS_STATUS_")}>${strip(s.status, "DIAGNOSIS_STATUS_").replace(/_/g, " ")}</span>${s.silent ? html` <span class="badge silent">silent</span>` : ""}</td>
        <td>${s.root_cause || ""}</td>
        <td>${s.confidence ? Math.round(s.confidence * 100) + "%" : ""}</td></tr>`)}
    </tbody></table></div>`}
    <div class="pager">
      ${pages.length > 1 && html`<button onClick=${() => setPages(pages.slice(0, -1))}>Newer</button>`}
      ${page && page.next_page_token && html`<button data-testid="history-next" onClick=${() => setPages([...pages, page.next_page_token])}>Older</button>`}
      ${page && html`<span class="answer">store: ${page.store}</span>`}
    </div>
  </main>`;
}

export function HistoryPage({ id, Header, api }) {
  const [inv, setInv] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    api("/api/v4/history/investigations/" + encodeURIComponent(id)).then(setInv, e => setError(e.message));
  }, [id]);
  if (error) return html`<${Header} title=${id} /><main><div class="error" role="alert">${error}</div><p><a href="#/history">Back to the history</a></p></main>`;
  if (!inv) return html`<${Header} title=${id} /><main><p>Loading…</p></main>`;
  const s = inv.summary || {};
  const d = (inv.record || {}).diagnosis || {};
  return html`<${Header} title=${s.title || id} />
  <main data-testid="history-investigation">
    <p class="answer"><a href="#/history">← history</a> · started ${when(s.started_at)} · ${[s.namespace, s.service].filter(Boolean).join("/")} ·
      <a href=${"#/s/" + encodeURIComponent(s.session_id)}>session ${s.session_id}</a></p>
    <section class="panel"><h2>Diagnosis</h2>
      <div class="rc" data-testid="history-root-cause">${d.root_cause || s.root_cause || "No diagnosis."}</div>
      <div class="answer">${strip(d.category, "ROOT_CAUSE_CATEGORY_")} · confidence ${Math.round((d.confidence || 0) * 100)}% · ${strip(d.status, "DIAGNOSIS_STATUS_")}${d.root_cause_entity ? " · " + d.root_cause_entity : ""}</div>
      ${(d.remediation_steps || []).length > 0 && html`<h4>Remediation</h4><ol>${d.remediation_steps.map(r => html`<li>${r}</li>`)}</ol>`}
    </section>
    <section class="panel"><h2>Critic verdicts</h2>
      ${(inv.critic_verdicts || []).length === 0 ? html`<span class="answer">None.</span>` :
      html`<table class="sessions" data-testid="history-verdicts"><thead><tr><th>round</th><th>score</th><th>action</th><th>summary</th></tr></thead><tbody>
        ${inv.critic_verdicts.map(v => html`<tr><td>${v.round}</td><td>${(v.score || 0).toFixed(2)}</td><td>${strip(v.action, "CRITIC_ACTION_").replace(/_/g, " ")}</td><td>${v.summary || ""}</td></tr>`)}
      </tbody></table>`}
    </section>
    <section class="panel"><h2>Evidence pins (${(inv.pins || []).length})</h2>
      <ul class="history-pins">${(inv.pins || []).map(p => html`<li><span class=${"badge " + strip(p.validation_status, "VALIDATION_STATUS_")}>${strip(p.validation_status, "VALIDATION_STATUS_") || "?"}</span> <code>${p.source_tool}</code> ${p.claim}</li>`)}</ul>
    </section>
    <section class="panel"><h2>Report</h2>
      ${inv.report ? html`<pre class="report" data-testid="history-report">${inv.report.markdown}</pre>` : html`<span class="answer">No report (noise).</span>`}
    </section>
  </main>`;
}
