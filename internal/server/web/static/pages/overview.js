// Overview: what caphub holds (counts) and how its calls went over a recent
// window (GET /v1/stats, computed from the audit chain), drawn as SVG
// charts, and the recent activity of the chain (GET /v1/audit, admin only:
// without that scope the page says so and shows the rest).

import { useStyles, timeChart, barList, dataTable, num, compact, pct, hhmm, shortURI, capabilityHash, isScopeError } from '../ops.js';

// Each window with the bucket width its chart uses.
const windows = [
  { value: '1h', label: 'Last hour', bucket: '5m' },
  { value: '24h', label: 'Last 24 hours', bucket: '1h' },
  { value: '7d', label: 'Last 7 days', bucket: '6h' },
];

export async function render(root, route, ctx) {
  useStyles();
  const { api, ui } = ctx;
  const { h } = ui;
  const win = windows.find((w) => w.value === route.query.get('window')) || windows[1];
  const select = h('select', { id: 'ov-window', onchange: () => ctx.navigate(`#/overview?window=${select.value}`) },
    windows.map((w) => h('option', { value: w.value, selected: w === win }, w.label)));
  root.append(h('div', { class: 'title-row' }, h('h1', {}, 'Overview'), h('button', { type: 'button', id: 'refresh', onclick: () => ctx.rerender() }, 'Refresh')),
    h('div', { class: 'toolbar' }, h('div', { class: 'field' }, h('label', { for: 'ov-window' }, 'Window'), select)));

  const st = await api.get('/v1/stats', { window: win.value, bucket: win.bucket });
  const c = st.counts;
  const calls = st.calls;
  const figure = (n, label, href, alert) => h('div', { class: ['figure', alert && 'alert'] },
    href ? h('a', { href }, h('span', { class: 'n' }, num(n)), h('span', { class: 'l' }, label))
      : [h('span', { class: 'n' }, num(n)), h('span', { class: 'l' }, label)]);
  const figures = [
    figure(c.capabilities, 'capabilities', '#/catalog'),
    figure(c.versions, 'versions'),
    figure(c.servers, 'MCP servers', '#/servers'),
    figure(c.agents, 'agents', '#/agents'),
  ];
  if (c.pending_approvals !== undefined) figures.push(figure(c.pending_approvals, 'pending approvals', '#/approvals', c.pending_approvals > 0));
  figures.push(figure(calls.calls, `calls (${win.label.toLowerCase()})`),
    h('div', { class: ['figure', calls.errors && 'alert'] }, h('span', { class: 'n' }, pct(calls.errors, calls.calls)), h('span', { class: 'l' }, `error rate (${num(calls.errors)} error${calls.errors === 1 ? '' : 's'})`)));
  root.append(h('section', { 'aria-label': 'Counts' }, h('div', { class: 'figures', id: 'ov-figures' }, figures)));

  // The charts.
  const buckets = calls.buckets || [];
  const charts = h('div', { class: 'charts' });
  root.append(h('h2', {}, 'Calls'));
  if (calls.partial) {
    root.append(h('p', { class: 'notice' }, `The window holds more events than the overview reads: the figures start at audit event ${num(calls.from_seq)}.`));
  }
  root.append(charts);
  if (!calls.calls) {
    charts.append(h('p', { class: 'muted' }, `No calls in the ${win.label.toLowerCase()}. Invoke a capability (its page has a Try it form) and they show here.`));
  } else {
    const rate = (b) => (b.calls ? (100 * b.errors) / b.calls : null);
    const bucketRows = ui.table([
      { label: 'From (UTC)', render: (b) => hhmm(b.start, true) },
      { label: 'Calls', class: 'num', render: (b) => num(b.calls) },
      { label: 'Errors', class: 'num', render: (b) => num(b.errors) },
      { label: 'Held', class: 'num', render: (b) => num(b.held) },
      { label: 'p50', class: 'num', render: (b) => (b.calls ? ui.ms(b.p50_ms) : '') },
      { label: 'p95', class: 'num', render: (b) => (b.calls ? ui.ms(b.p95_ms) : '') },
    ], buckets.filter((b) => b.calls));
    charts.append(
      h('section', { 'aria-labelledby': 'ov-c1' }, h('h3', { id: 'ov-c1' }, 'Calls per capability'),
        barList(calls.capabilities, {
          title: 'Calls per capability', desc: calls.capabilities.map((x) => `${shortURI(x.uri)}: ${x.calls} calls, ${x.errors} errors`).join('; '),
          label: (x) => shortURI(x.uri), value: (x) => x.calls, part: (x) => x.errors, href: (x) => capabilityHash(x.uri),
          tip: (x) => `${compact(x.calls)}${x.errors ? ` (${compact(x.errors)} err)` : ''}`,
          legend: [{ label: 'calls', cls: 'calls' }, { label: 'errors', cls: 'errors' }],
        }),
        calls.other_capabilities ? h('p', { class: 'muted small' }, `…and ${num(calls.other_capabilities)} calls of other capabilities.`) : null,
        dataTable('Calls per capability as a table', ui.table([
          { label: 'Capability', render: (x) => { const href = capabilityHash(x.uri); return href ? h('a', { href }, x.uri) : x.uri; } },
          { label: 'Calls', class: 'num', render: (x) => num(x.calls) },
          { label: 'Errors', class: 'num', render: (x) => num(x.errors) },
          { label: 'Held', class: 'num', render: (x) => num(x.held) },
          { label: 'p50', class: 'num', render: (x) => ui.ms(x.p50_ms) },
          { label: 'p95', class: 'num', render: (x) => ui.ms(x.p95_ms) },
        ], calls.capabilities))),
      h('section', { 'aria-labelledby': 'ov-c2' }, h('h3', { id: 'ov-c2' }, 'Calls and error rate'),
        timeChart(buckets, [
          { label: 'calls', cls: 'calls', kind: 'bar', value: (b) => b.calls },
          { label: 'errors', cls: 'errors', kind: 'bar', value: (b) => b.errors },
          { label: 'error rate', cls: 'rate', kind: 'line', axis: 'right', value: rate },
        ], {
          title: `Calls and error rate per ${calls.bucket.replace(/0s$/, '').replace(/0m$/, '') || calls.bucket}`,
          desc: `${calls.calls} calls, ${calls.errors} errors in ${buckets.length} buckets`,
          leftLabel: 'calls', rightLabel: 'error %', rightMax: 100,
          format: (v, axis) => (axis === 'right' ? `${Math.round(v)}%` : compact(v)),
          caption: 'Times in UTC.',
        }),
        dataTable('Per time bucket as a table', bucketRows)),
      h('section', { 'aria-labelledby': 'ov-c3' }, h('h3', { id: 'ov-c3' }, 'Latency'),
        timeChart(buckets, [
          { label: 'p50', cls: 'p50', kind: 'line', value: (b) => (b.calls ? b.p50_ms : null) },
          { label: 'p95', cls: 'p95', kind: 'line', value: (b) => (b.calls ? b.p95_ms : null) },
        ], {
          title: 'Latency (p50 and p95) over time', desc: 'median and 95th percentile of call durations per bucket, in milliseconds',
          leftLabel: 'ms', format: (v) => compact(v), caption: 'Times in UTC; buckets without calls are left out.',
        })));
    if (Object.keys(calls.codes || {}).length) {
      root.append(h('h3', {}, 'Outcomes other than success'), h('p', {}, Object.entries(calls.codes).sort((a, b) => b[1] - a[1])
        .map(([code, n]) => [ui.badge(`${code} × ${num(n)}`, code === 'APPROVAL_REQUIRED' ? 'warn' : 'bad'), ' '])));
    }
  }

  // Recent activity: the newest events of the chain (admin scope).
  const recent = h('section', { 'aria-labelledby': 'ov-recent' }, h('h2', { id: 'ov-recent' }, 'Recent activity'));
  root.append(recent);
  if (!calls.head_seq) {
    recent.append(h('p', { class: 'muted' }, 'The audit chain is empty.'));
    return undefined;
  }
  try {
    const page = await api.get('/v1/audit', { after_seq: Math.max(0, calls.head_seq - 12), limit: 12 });
    const items = (page.items || []).slice().reverse();
    recent.append(h('ul', { class: 'activity', id: 'ov-activity' }, items.map((e) => {
      let code = '';
      if (e.kind === 'invocation' && e.data) code = e.data.code || 'ok';
      const href = capabilityHash(e.capability);
      return h('li', {},
        ui.timeAgo(e.time), ui.badge(e.kind, e.kind !== 'invocation' ? 'info' : code === 'ok' ? 'ok' : code === 'APPROVAL_REQUIRED' ? 'warn' : 'bad'),
        code && code !== 'ok' ? h('code', {}, code) : null,
        e.capability ? (href ? h('a', { href }, shortURI(e.capability)) : h('span', {}, e.capability)) : null,
        e.actor ? h('span', { class: 'muted small' }, `by ${e.actor}`) : null);
    })), h('p', {}, h('a', { href: '#/audit' }, 'The whole audit chain →')));
  } catch (err) {
    if (!isScopeError(err)) throw err;
    recent.append(h('p', { class: 'muted' }, 'The recent events of the audit chain need a token with the admin scope.'));
  }
  return undefined;
}
