/**
 * The Admin UI: one static page and its script. The page carries no data: it asks for the
 * admin token (kept in this tab's sessionStorage) and calls the same HTTP API as curl does, so
 * the API's authentication and roles apply unchanged. Event text is only ever set as
 * textContent, never as HTML, so a hostile query string renders as text.
 */
export const ADMIN_UI_SCRIPT_PATH = '/admin/audit/ui.js';

export const ADMIN_UI_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>auditlake — audit log</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 1.5rem; color: #1b1b1b; }
  h1 { font-size: 1.3rem; margin: 0 0 1rem; }
  form { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin-bottom: 1rem; }
  label { display: flex; flex-direction: column; font-size: 12px; color: #555; }
  input, select, button { font: inherit; padding: .25rem .4rem; }
  table { border-collapse: collapse; width: 100%; }
  th, td { border-bottom: 1px solid #ddd; padding: .3rem .4rem; text-align: left; vertical-align: top; }
  th { background: #f4f4f4; font-weight: 600; }
  td.query { font-family: ui-monospace, monospace; font-size: 12px; max-width: 40rem; white-space: pre-wrap; word-break: break-word; }
  tr.deny td { background: #fff1f0; }
  #status { margin: .5rem 0; color: #555; }
  #status.error { color: #b00020; }
  .note { background: #fff8e1; padding: .4rem .6rem; margin: .5rem 0; }
</style>
</head>
<body>
<h1>auditlake — audit log</h1>
<form id="search">
  <label>Admin token <input id="token" name="token" type="password" autocomplete="off" required></label>
  <label>User <input name="user"></label>
  <label>Engine <input name="engine" placeholder="trino, spark…"></label>
  <label>Table contains <input name="table"></label>
  <label>Action <select name="action"><option value="all">all</option><option value="read">read</option><option value="write">write</option></select></label>
  <label>Free text <input name="q"></label>
  <label>From <input name="from" type="datetime-local" step="1"></label>
  <label>To <input name="to" type="datetime-local" step="1"></label>
  <label>Limit <input name="limit" type="number" min="1" value="200"></label>
  <button type="submit">Search</button>
</form>
<div id="status" role="status"></div>
<div id="notes"></div>
<table id="results" hidden>
  <thead><tr><th>Time (UTC)</th><th>User</th><th>Engine</th><th>Action</th><th>Decision</th><th>Resource</th><th>Tables</th><th>Query</th><th>Details</th></tr></thead>
  <tbody></tbody>
</table>
<script src="${ADMIN_UI_SCRIPT_PATH}"></script>
</body>
</html>
`;

export const ADMIN_UI_SCRIPT = `'use strict';
(function () {
  const form = document.getElementById('search');
  const tokenInput = document.getElementById('token');
  const status = document.getElementById('status');
  const notes = document.getElementById('notes');
  const table = document.getElementById('results');
  const body = table.querySelector('tbody');
  tokenInput.value = sessionStorage.getItem('auditlake.token') || '';

  function setStatus(text, isError) {
    status.textContent = text;
    status.className = isError ? 'error' : '';
  }

  function note(text) {
    const div = document.createElement('div');
    div.className = 'note';
    div.textContent = text;
    notes.appendChild(div);
  }

  function cell(row, text, className) {
    const td = document.createElement('td');
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
  }

  function params() {
    const out = new URLSearchParams();
    for (const name of ['user', 'engine', 'table', 'q', 'limit']) {
      const value = form.elements[name].value.trim();
      if (value !== '') out.set(name, value);
    }
    if (form.elements.action.value !== 'all') out.set('action', form.elements.action.value);
    for (const name of ['from', 'to']) {
      const value = form.elements[name].value;
      // datetime-local has no zone; the page shows UTC, so it is read as UTC.
      if (value !== '') out.set(name, String(Date.parse(value + 'Z')));
    }
    return out;
  }

  async function search(event) {
    if (event) event.preventDefault();
    const token = tokenInput.value.trim();
    if (token === '') { setStatus('Enter the admin token (auditlake start prints it).', true); return; }
    sessionStorage.setItem('auditlake.token', token);
    setStatus('Searching…', false);
    notes.replaceChildren();
    let res;
    try {
      res = await fetch('/admin/audit?' + params().toString(), { headers: { authorization: 'Token ' + token, accept: 'application/json' } });
    } catch (err) {
      setStatus('The node did not answer: ' + err, true);
      return;
    }
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) {
      table.hidden = true;
      setStatus('Error ' + res.status + ': ' + (answer.error || res.statusText), true);
      return;
    }
    body.replaceChildren();
    for (const e of answer.events) {
      const row = document.createElement('tr');
      if (e.decision === 'DENY') row.className = 'deny';
      const time = new Date(e.timestamp);
      cell(row, Number.isNaN(time.getTime()) ? String(e.timestamp) : time.toISOString().replace('T', ' ').replace('Z', ''));
      cell(row, e.userId);
      cell(row, e.source);
      cell(row, e.action);
      cell(row, e.decision);
      cell(row, e.resource);
      cell(row, (e.tables || []).join(', '));
      cell(row, e.query, 'query');
      cell(row, e.details);
      body.appendChild(row);
    }
    table.hidden = false;
    setStatus(answer.count + (answer.count === 1 ? ' event' : ' events') + (answer.truncated ? ' (more matched: narrow the search or raise the limit)' : ''), false);
    if (answer.tierNote) note('Tiered history: ' + answer.tierNote);
    if (answer.stale) note('No leader answered: this is this node\\'s own copy and may be behind.');
  }

  form.addEventListener('submit', search);
  if (tokenInput.value !== '') search();
})();
`;
