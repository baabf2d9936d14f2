// MCP servers: the saved servers (GET /v1/servers), one server's connection,
// tools and last discovery (GET /v1/servers/{name}), discovering a new one
// and re-discovering a saved one (POST /v1/servers/{name}/discover: publish
// scope, admin for a server that runs a program) with the report of what
// changed: new, changed (with the bump and why), unchanged and vanished tools.

import { useStyles, field, num, shortURI, capabilityHash } from '../ops.js';

export async function render(root, route, ctx) {
  useStyles();
  if (route.parts.length) return renderServer(root, route.parts[0], ctx);
  return renderList(root, route, ctx);
}

function describeConn(srv) {
  if (srv.url) return srv.url;
  return [srv.command, ...(srv.args || [])].filter(Boolean).join(' ');
}

async function renderList(root, route, ctx) {
  const { api, ui } = ctx;
  const { h } = ui;
  const cursor = route.query.get('cursor') || '';
  root.append(h('h1', {}, 'MCP servers'),
    h('p', { class: 'muted' }, 'The MCP servers caphub saved, with the tools each offered when last discovered.'));
  const listBox = h('div', {});
  root.append(listBox);
  const load = async () => {
    const page = await api.get('/v1/servers', { cursor, limit: 50 });
    listBox.replaceChildren(serverTable(page, ctx));
    if (page.next_cursor || cursor) {
      listBox.append(ui.pager({
        hasPrev: !!cursor, hasNext: !!page.next_cursor,
        onPrev: () => history.back(),
        onNext: () => ctx.navigate(`#/servers?cursor=${encodeURIComponent(page.next_cursor)}`),
      }));
    }
  };
  await load();
  root.append(discoverForm(ctx, load));
  return undefined;
}

function serverTable(page, ctx) {
  const { ui } = ctx;
  const { h } = ui;
  return ui.table([
    { label: 'Server', render: (s) => h('a', { href: `#/servers/${encodeURIComponent(s.server.name)}` }, s.server.name) },
    { label: 'Transport', render: (s) => s.server.transport || 'stdio' },
    { label: 'Connection', render: (s) => h('code', { class: 'small' }, describeConn(s.server)) },
    { label: 'Tools', class: 'num', render: (s) => (s.listing ? num((s.listing.tools || []).length) : '–') },
    { label: 'Last discovery', render: (s) => (s.listing ? ui.timeAgo(s.listing.at) : h('span', { class: 'muted' }, 'never')) },
    { label: 'Saved', render: (s) => [ui.timeAgo(s.saved_at), s.via_api ? [' ', ui.badge('via API', 'info')] : null] },
  ], page.items || [], { caption: `${num(page.total)} saved server${page.total === 1 ? '' : 's'}`, empty: 'No saved servers: discover one below, or run caphub discover mcp.' });
}

// discoverForm discovers a new server from its connection, then calls
// done (which shows the list again).
function discoverForm(ctx, done) {
  const { api, ui } = ctx;
  const { h } = ui;
  const name = h('input', { type: 'text', name: 'name', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9._-]*', autocomplete: 'off' });
  const transport = h('select', { name: 'transport' }, ['stdio', 'http', 'sse'].map((t) => h('option', { value: t }, t)));
  const target = h('input', { type: 'text', name: 'target', required: true, autocomplete: 'off', spellcheck: 'false' });
  const register = h('input', { type: 'checkbox', name: 'register', checked: true });
  const out = h('div', { 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Discover');
  const form = h('form', { class: 'inline-form', onsubmit: async (ev) => {
    ev.preventDefault();
    out.replaceChildren();
    const conn = { name: name.value.trim(), transport: transport.value };
    if (transport.value === 'stdio') {
      const words = target.value.trim().split(/\s+/);
      conn.command = words.shift();
      if (words.length) conn.args = words;
    } else conn.url = target.value.trim();
    button.disabled = true;
    out.append(ui.loading('Discovering…'));
    try {
      const rep = await api.post(`/v1/servers/${encodeURIComponent(conn.name)}/discover${register.checked ? '' : '?register=false'}`, conn);
      out.replaceChildren(report(rep, ctx), h('p', {}, h('a', { href: `#/servers/${encodeURIComponent(conn.name)}` }, `Open ${conn.name} →`)));
      await done();
    } catch (err) {
      out.replaceChildren();
      ui.showError(out, err);
    } finally {
      button.disabled = false;
    }
  } },
  field('Name', name), field('Transport', transport),
  field('Command or URL', target, 'stdio: the program and its arguments (never run by a shell); http/sse: the URL'),
  h('div', { class: 'field' }, h('label', {}, register, ' Register its tools')), button);
  return h('section', { class: 'section', 'aria-labelledby': 'sv-new' }, h('h2', { id: 'sv-new' }, 'Discover a server'),
    h('p', { class: 'muted small' }, 'Needs the publish scope, and admin for a server that runs a program. caphub connects to it, lists its tools and registers them.'),
    form, out);
}

async function renderServer(root, name, ctx) {
  const { api, ui } = ctx;
  const { h } = ui;
  const sv = await api.get(`/v1/servers/${encodeURIComponent(name)}`);
  const srv = sv.server;
  root.append(h('p', { class: 'small' }, h('a', { href: '#/servers' }, '← MCP servers')),
    h('h1', {}, srv.name));
  root.append(ui.kv([
    ['Transport', srv.transport || 'stdio'],
    [srv.url ? 'URL' : 'Command', h('code', {}, describeConn(srv))],
    ['Working directory', srv.dir],
    ['Environment', srv.env ? Object.keys(srv.env).sort().join(', ') : ''],
    ['Headers', srv.headers ? Object.keys(srv.headers).sort().join(', ') : ''],
    ['Sessions', srv.sessions],
    ['Saved', [ui.timeAgo(sv.saved_at), sv.via_api ? ' over the API (bound by the operator\u2019s allow-lists)' : ' by the operator']],
  ]));

  const register = h('input', { type: 'checkbox', id: 'sv-register', checked: true });
  const out = h('div', { id: 'sv-report', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', class: 'primary', id: 'sv-rediscover', onclick: async () => {
    button.disabled = true;
    out.replaceChildren(ui.loading('Discovering…'));
    try {
      // No body: the saved connection is used.
      const rep = (await api.send('POST', `/v1/servers/${encodeURIComponent(name)}/discover`, { query: { register: register.checked ? '' : 'false' } })).data;
      out.replaceChildren(report(rep, ctx));
      const fresh = await api.get(`/v1/servers/${encodeURIComponent(name)}`);
      tools.replaceChildren(toolsView(fresh.listing, ctx));
    } catch (err) {
      out.replaceChildren();
      ui.showError(out, err);
    } finally {
      button.disabled = false;
    }
  } }, sv.listing ? 'Re-discover' : 'Discover');
  root.append(h('section', { class: 'section', 'aria-labelledby': 'sv-disc' },
    h('h2', { id: 'sv-disc' }, 'Discovery'),
    h('p', { class: 'muted small' }, 'Connects to the server again, lists its tools and compares them with the registered ones: new tools are registered, changed ones get a new version, vanished ones are deprecated. Needs the publish scope (admin when the server runs a program).'),
    h('div', { class: 'actions' }, button, h('label', { for: 'sv-register' }, register, ' Register the changes')), out));
  const tools = h('div', {}, toolsView(sv.listing, ctx));
  root.append(h('section', { class: 'section', 'aria-labelledby': 'sv-tools' }, h('h2', { id: 'sv-tools' }, 'Tools'), tools));
  return undefined;
}

function toolsView(listing, ctx) {
  const { ui } = ctx;
  const { h } = ui;
  if (!listing) return h('p', { class: 'muted' }, 'Never discovered: use Discover above.');
  const params = (t) => {
    const props = (t.inputSchema && t.inputSchema.properties) || {};
    const req = new Set((t.inputSchema && t.inputSchema.required) || []);
    return Object.keys(props).map((k) => [h('code', {}, req.has(k) ? `${k}*` : k), ' ']);
  };
  const hints = (t) => {
    const a = t.annotations || {};
    return [a.readOnlyHint ? ui.badge('read-only', 'ok') : null, a.destructiveHint ? ui.badge('destructive', 'bad') : null,
      a.idempotentHint ? ui.badge('idempotent', 'info') : null, a.openWorldHint ? ui.badge('open world', 'warn') : null];
  };
  return h('div', {},
    ui.kv([['Last discovery', ui.timeAgo(listing.at)], ['Server reported', listing.server_info], ['Protocol', listing.protocol_version], ['Source', listing.source]]),
    ui.table([
      { label: 'Tool', render: (t) => h('code', {}, t.name) },
      { label: 'Description', render: (t) => (t.description || '').slice(0, 300) },
      { label: 'Inputs (* required)', render: params },
      { label: 'Hints', render: hints },
    ], listing.tools || [], { caption: `${num((listing.tools || []).length)} tools offered`, empty: 'The server offered no tools.', stack: true }));
}

// report shows a discovery's outcome: the plan of new, changed, unchanged
// and vanished tools, and what failed.
function report(rep, ctx) {
  const { ui } = ctx;
  const { h } = ui;
  const plan = rep.plan || {};
  const link = (uri) => { const href = capabilityHash(uri); return href ? h('a', { href }, shortURI(uri)) : uri; };
  const list = (items, render) => (items && items.length ? h('ul', { class: 'plan-list' }, items.map((x) => h('li', {}, render(x)))) : h('p', { class: 'muted small' }, 'none'));
  const n = (k) => (plan[k] || []).length;
  const failures = rep.failures || plan.failures || [];
  return h('div', { class: 'card', role: 'region', 'aria-label': 'Discovery report' },
    h('h3', {}, `Discovered ${rep.server}: ${num(rep.tools)} tool${rep.tools === 1 ? '' : 's'}`),
    rep.error ? ui.errorBox({ title: 'The discovery failed', detail: rep.error }) : null,
    h('p', { class: 'plan-summary' }, ui.badge(`${n('new')} new`, n('new') ? 'info' : ''), ' ', ui.badge(`${n('changed')} changed`, n('changed') ? 'warn' : ''), ' ',
      ui.badge(`${n('vanished')} vanished`, n('vanished') ? 'bad' : ''), ' ', ui.badge(`${n('unchanged')} unchanged`, ''),
      failures.length ? [' ', ui.badge(`${failures.length} failed`, 'bad')] : null),
    n('new') ? [h('h4', {}, 'New'), list(plan.new, link)] : null,
    n('changed') ? [h('h4', {}, 'Changed'), list(plan.changed, (c) => [link(c.uri), ' ', ui.badge(c.bump, c.bump === 'major' ? 'bad' : c.bump === 'minor' ? 'warn' : 'info'),
      ` ${c.from} → ${c.to}`, c.summary ? h('div', { class: 'small muted' }, c.summary) : null])] : null,
    n('vanished') ? [h('h4', {}, 'Vanished (deprecated)'), list(plan.vanished, link)] : null,
    n('unchanged') ? h('details', {}, h('summary', {}, `Unchanged (${n('unchanged')})`), list(plan.unchanged, link)) : null,
    failures.length ? [h('h4', {}, 'Failures'), list(failures, (f) => [h('code', {}, f.item || ''), ': ', f.reason || ''])] : null);
}
