// Approvals: calls the policy held for a human (GET /v1/approvals, admin
// scope). The pending queue, each call with its caller, capability, rule and
// input, to approve or deny with a reason; the history of decided ones.
// An approved call runs once, when its caller retries it: when that caller
// is this page's own (the same token), "Run the approved call" retries it
// here (POST /v1/invoke with approval_id) and shows the output.

import { useStyles, field, num, shortURI, capabilityHash } from '../ops.js';

const tabs = [
  { status: 'pending', label: 'Pending' },
  { status: 'approved', label: 'Approved' },
  { status: 'denied', label: 'Denied' },
  { status: 'expired', label: 'Expired' },
  { status: 'all', label: 'All' },
];

export async function render(root, route, ctx) {
  useStyles();
  const { api, ui } = ctx;
  const { h } = ui;
  const tab = tabs.find((t) => t.status === route.query.get('status')) || tabs[0];
  const cursor = route.query.get('cursor') || '';
  root.append(h('div', { class: 'title-row' }, h('h1', {}, 'Approvals'), h('button', { type: 'button', id: 'refresh', onclick: () => ctx.rerender() }, 'Refresh')),
    h('p', { class: 'muted' }, 'Calls a policy holds until someone approves them (require_approval). An approved call may run once, when its caller retries it.'),
    h('nav', { 'aria-label': 'Approval status' }, h('ul', { class: 'tabs' }, tabs.map((t) => h('li', {},
      h('a', { href: `#/approvals?status=${t.status}`, 'aria-current': t === tab ? 'page' : false }, t.label))))));
  const page = await api.get('/v1/approvals', { status: tab.status === 'all' ? '' : tab.status, cursor, limit: 50 });
  const items = (page.items || []).slice();
  // The queue oldest first (the API's order); the history newest first.
  if (tab.status !== 'pending') items.reverse();
  root.append(h('p', { class: 'muted small', id: 'ap-count' }, `${num(page.total)} ${tab.status === 'all' ? '' : `${tab.status} `}approval${page.total === 1 ? '' : 's'}`));
  const list = h('div', { id: 'ap-list' });
  if (!items.length) {
    list.append(h('p', { class: 'muted' }, tab.status === 'pending' ? 'Nothing waits for a decision.' : 'None.'));
  }
  for (const ap of items) list.append(card(ap, ctx));
  root.append(list);
  // #/approvals?id=apr_…: that approval (linked from a held call) in view,
  // first, whatever its status.
  const want = route.query.get('id');
  if (want) {
    let el = list.querySelector(`article[data-id="${CSS.escape(want)}"]`);
    if (!el) {
      el = card(await api.get(`/v1/approvals/${encodeURIComponent(want)}`), ctx);
      list.querySelector('p.muted')?.remove();
    }
    el.classList.add('wanted');
    list.prepend(el);
    el.querySelector('h3 a, h3')?.focus();
  }
  if (page.next_cursor || cursor) {
    root.append(ui.pager({
      hasPrev: !!cursor, hasNext: !!page.next_cursor, onPrev: () => history.back(),
      onNext: () => ctx.navigate(`#/approvals?status=${tab.status}&cursor=${encodeURIComponent(page.next_cursor)}`),
    }));
  }
  return undefined;
}

const statusKind = { pending: 'warn', approved: 'ok', denied: 'bad', expired: '' };

// card is one approval, with its decision buttons while pending.
function card(ap, ctx) {
  const { api, ui } = ctx;
  const { h } = ui;
  const el = h('article', { class: ['approval', ap.status], 'data-id': ap.id, 'aria-labelledby': `ap-${ap.id}` });
  const draw = (a) => {
    const href = capabilityHash(a.uri);
    el.className = `approval ${a.status}`;
    const reasonIn = h('input', { type: 'text', name: 'reason', maxlength: 500, autocomplete: 'off', placeholder: 'why (kept in the audit chain)' });
    const status = h('p', { class: 'op-status ap-status', role: 'status', 'aria-live': 'polite' });
    const decide = async (verb, btns) => {
      btns.forEach((b) => { b.disabled = true; });
      status.textContent = '';
      try {
        const reason = reasonIn.value.trim();
        const body = reason ? { reason } : undefined;
        const next = await api.post(`/v1/approvals/${encodeURIComponent(a.id)}/${verb}`, body);
        draw(next);
        el.querySelector('.ap-status').textContent = verb === 'approve' ? 'Approved: the caller may now run the call once.' : 'Denied.';
        el.querySelector('.ap-status').classList.add('ok');
      } catch (err) {
        btns.forEach((b) => { b.disabled = false; });
        status.replaceChildren();
        ui.showError(status, err);
      }
    };
    let decideBox = null;
    if (a.status === 'pending') {
      const approve = h('button', { type: 'button', class: 'primary', 'aria-describedby': `ap-${a.id}`, onclick: () => decide('approve', [approve, deny]) }, 'Approve');
      const deny = h('button', { type: 'button', class: 'danger', 'aria-describedby': `ap-${a.id}`, onclick: () => decide('deny', [approve, deny]) }, 'Deny');
      decideBox = h('div', { class: 'decide' }, field('Reason (optional; a denial shows it to the caller)', reasonIn), approve, deny);
    }
    let runBox = null;
    if (a.status === 'approved' && !a.used_at) {
      const out = h('div', { class: 'ap-result', 'aria-live': 'polite' });
      const run = h('button', { type: 'button', onclick: async () => {
        run.disabled = true;
        out.replaceChildren(ui.loading('Running…'));
        try {
          const res = await api.post('/v1/invoke', { uri: a.uri, input: a.input || {}, approval_id: a.id });
          out.replaceChildren(h('p', { class: 'op-status ok' }, `Completed in ${ui.ms(res.duration_ms)} by the ${res.binding || ''} binding.`),
            h('h4', {}, 'Output'), ui.code(res.output));
          runRow.hidden = true;
          el.querySelector('.ap-status').textContent = '';
          const fresh = await api.get(`/v1/approvals/${encodeURIComponent(a.id)}`);
          meta.replaceChildren(metaOf(fresh));
        } catch (err) {
          out.replaceChildren();
          ui.showError(out, err);
          run.disabled = false;
        }
      } }, 'Run the approved call');
      const runRow = h('div', { class: 'actions' }, run, h('span', { class: 'hint' }, `Runs as this page\u2019s token: only when it is the caller (${a.agent || 'anonymous'}).`));
      runBox = h('div', { class: 'ap-run' }, runRow, out);
    }
    const metaOf = (x) => ui.kv([
      ['Caller', x.agent || 'anonymous'],
      ['Rule', x.rule],
      ['Asked', ui.timeAgo(x.created_at)],
      [x.status === 'pending' ? 'Expires' : 'Valid until', x.status === 'pending' || (x.status === 'approved' && !x.used_at) ? ui.timeAgo(x.expires_at) : ''],
      ['Decided', x.decided_at ? [ui.timeAgo(x.decided_at), x.decided_by ? ` by ${x.decided_by}` : ''] : ''],
      ['Reason', x.reason],
      ['Ran', x.used_at ? ui.timeAgo(x.used_at) : ''],
      ['Id', h('code', {}, x.id)],
    ]);
    const meta = h('div', {}, metaOf(a));
    el.replaceChildren(
      h('h3', { id: `ap-${a.id}` }, href ? h('a', { href }, shortURI(a.uri)) : a.uri, ' ', ui.badge(a.status, statusKind[a.status] || '')),
      meta,
      h('details', { open: a.status === 'pending' }, h('summary', {}, 'Input'), ui.code(a.input || {})),
      ...[decideBox, runBox, status].filter(Boolean));
  };
  draw(ap);
  return el;
}
