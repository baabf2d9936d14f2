// Agents: the agents caphub keeps (GET /v1/agents) and, for one, its
// capabilities in position order and the AgentConfig they compose to
// (GET /v1/agents/{id}/config): the system prompt and the tools. When the
// capabilities cannot be composed (an unknown or unavailable capability, two
// tools of one name) the API answers 422 with the issues and what could be
// composed (partial): both are shown, the config marked as not runnable.

import { useStyles, num, shortURI, capabilityHash, wide } from '../ops.js';

export async function render(root, route, ctx) {
  useStyles();
  if (route.parts.length) return renderAgent(root, route.parts[0], ctx);
  return renderList(root, route, ctx);
}

async function renderList(root, route, ctx) {
  const { api, ui } = ctx;
  const { h } = ui;
  const cursor = route.query.get('cursor') || '';
  root.append(h('h1', {}, 'Agents'),
    h('p', { class: 'muted' }, 'Each agent\u2019s capabilities apply in position order: their prompt additions and tools compose its AgentConfig.'));
  const page = await api.get('/v1/agents', { cursor, limit: 50 });
  root.append(ui.table([
    { label: 'Agent', render: (a) => h('a', { href: `#/agents/${encodeURIComponent(a.id)}` }, a.id) },
    { label: 'Name', render: (a) => [a.name || '', a.version ? h('span', { class: 'muted small' }, ` ${a.version}`) : null] },
    { label: 'Description', render: (a) => (a.description || '').slice(0, 200) },
    { label: 'Capabilities', class: 'num', render: (a) => num((a.capabilities || []).length) },
    { label: 'Updated', render: (a) => ui.timeAgo(a.updated_at) },
  ], page.items || [], { caption: `${num(page.total)} agent${page.total === 1 ? '' : 's'}`, empty: 'No agents: apply one with caphub agent apply FILE or PUT /v1/agents/{id}.' }));
  if (page.next_cursor || cursor) {
    root.append(ui.pager({
      hasPrev: !!cursor, hasNext: !!page.next_cursor, onPrev: () => history.back(),
      onNext: () => ctx.navigate(`#/agents?cursor=${encodeURIComponent(page.next_cursor)}`),
    }));
  }
  return undefined;
}

async function renderAgent(root, id, ctx) {
  const { api, ui } = ctx;
  const { h } = ui;
  const path = `/v1/agents/${encodeURIComponent(id)}`;
  const ag = await api.get(path);
  let cfg = null;
  let refusal = null;
  try {
    cfg = await api.get(`${path}/config`);
  } catch (err) {
    if (err.status !== 422) throw err;
    refusal = err;
    cfg = err.body && err.body.partial;
  }
  root.append(h('p', { class: 'small' }, h('a', { href: '#/agents' }, '← Agents')),
    h('h1', {}, ag.name || ag.id, ag.version ? h('span', { class: 'muted small' }, ` ${ag.version}`) : null),
    h('p', {}, ag.description || ''),
    ui.kv([['Id', h('code', {}, ag.id)], ['Updated', ui.timeAgo(ag.updated_at)],
      ['Bindings of its own', Object.keys(ag.capability_bindings || {}).length ? Object.keys(ag.capability_bindings).join(', ') : '']]));

  // Problems by capability id (the issues' path), shown on their row.
  const issues = (refusal && refusal.body && refusal.body.issues) || [];
  const problemOf = (capID) => issues.filter((i) => i.path === capID);
  if (refusal) {
    root.append(h('div', { class: 'problem', role: 'alert', id: 'ag-problems' },
      h('p', { class: 'problem-title' }, `${refusal.title} (${refusal.status})`),
      h('p', {}, refusal.detail),
      h('ul', {}, issues.map((i) => h('li', {}, h('code', {}, i.path), ' ', ui.badge((i.rule || '').replace(/^agent-config:/, '') || 'issue', 'bad'), ' ', i.message))),
      h('p', { class: 'small' }, 'The configuration below is what could be composed, for reading only: an agent loop is never handed it.')));
  }

  const applied = new Map(((cfg && cfg.capabilities) || []).map((c) => [`${c.position}\u0000${c.capability_id}`, c]));
  const caps = (ag.capabilities || []).slice().sort((a, b) => a.position - b.position);
  root.append(h('h2', {}, 'Capabilities, in position order'), wide(ui.table([
    { label: '#', class: 'num', render: (c) => String(c.position) },
    { label: 'Capability', render: (c) => h('code', {}, c.capability_id) },
    { label: 'Resolved to', render: (c) => {
      const a = applied.get(`${c.position}\u0000${c.capability_id}`);
      if (!a) return h('span', { class: 'muted' }, '–');
      const href = capabilityHash(a.uri);
      return [href ? h('a', { href }, shortURI(a.uri)) : a.uri, ' ', h('span', { class: 'muted small' }, a.version), a.bundle ? [' ', ui.badge('bundle', 'info')] : null];
    } },
    { label: 'Tools it adds', render: (c) => { const a = applied.get(`${c.position}\u0000${c.capability_id}`); return a ? (a.tools || []).map((t) => [h('code', {}, t), ' ']) : ''; } },
    { label: 'Status', render: (c) => {
      const p = problemOf(c.capability_id);
      return p.length ? p.map((i) => [ui.badge((i.rule || '').replace(/^agent-config:/, '') || 'problem', 'bad'), h('div', { class: 'small' }, i.message)]) : ui.badge('ok', 'ok');
    } },
  ], caps, { empty: 'This agent has no capabilities.' })));

  root.append(h('h2', {}, refusal ? 'AgentConfig (partial)' : 'AgentConfig'));
  if (!cfg) {
    root.append(h('p', { class: 'muted' }, 'Nothing could be composed.'));
    return undefined;
  }
  for (const w of cfg.warnings || []) root.append(h('p', { class: 'notice' }, w));
  root.append(h('h3', {}, 'System prompt'),
    cfg.system_prompt ? h('pre', { class: 'prompt', id: 'ag-prompt' }, cfg.system_prompt) : h('p', { class: 'muted' }, 'Empty.'),
    h('h3', {}, `Tools (${num((cfg.tools || []).length)})`),
    ui.table([
      { label: 'Tool', render: (t) => h('code', {}, t.name) },
      { label: 'Capability', render: (t) => { const href = capabilityHash(t.uri); return [href ? h('a', { href }, shortURI(t.uri)) : t.uri, ' ', h('span', { class: 'muted small' }, t.version)]; } },
      { label: 'Description', render: (t) => (t.description || '').slice(0, 240) },
      { label: 'Policy', render: (t) => (t.policy === 'requires_approval' ? ui.badge('requires approval', 'warn') : ui.badge(t.policy || 'auto', 'ok')) },
      { label: 'From', render: (t) => h('code', { class: 'small' }, t.from) },
      { label: 'Input', render: (t) => h('details', {}, h('summary', {}, 'schema'), ui.schemaTree(t.input_schema || {})) },
    ], cfg.tools || [], { empty: 'No tools.', stack: true }));
  return undefined;
}
