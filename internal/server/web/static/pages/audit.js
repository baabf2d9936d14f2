// Audit: the audit chain (GET /v1/audit, admin scope), oldest first a page
// at a time, filtered by capability, actor, kind and time (the filters live
// in the address, so a filtered view can be shared); and Verify
// (GET /v1/audit/verify): whether the chain is intact, where it verified from
// (the genesis or the checkpoint of the last prune), its head, and the first
// broken link when there is one.

import { useStyles, field, num, shortURI, capabilityHash, wide } from '../ops.js';

const kinds = ['invocation', 'policy_decision', 'approval', 'registered', 'deprecated', 'agent_applied', 'agent_updated', 'agent_deleted',
  'server_saved', 'server_deleted', 'token_created', 'token_revoked', 'policy_set', 'policy_deleted', 'pruned'];

// toLocalInput turns an RFC 3339 time into a datetime-local value (UTC).
function toInput(v) {
  const d = new Date(v);
  return v && !Number.isNaN(d.getTime()) ? d.toISOString().slice(0, 16) : '';
}

// fromInput reads a datetime-local value as UTC.
function fromInput(v) {
  return v ? new Date(`${v}:00Z`).toISOString() : '';
}

export async function render(root, route, ctx) {
  useStyles();
  const { api, ui } = ctx;
  const { h } = ui;
  const q = route.query;
  root.append(h('h1', {}, 'Audit'),
    h('p', { class: 'muted' }, 'Every registration, deprecation, policy decision, approval, change and call, each event hashed with the one before it: changing, removing or reordering one breaks the chain there.'));

  // Verify.
  const verifyOut = h('div', { id: 'au-verify', 'aria-live': 'polite' });
  const verifyBtn = h('button', { type: 'button', class: 'primary', id: 'au-verify-btn', onclick: async () => {
    verifyBtn.disabled = true;
    verifyOut.replaceChildren(ui.loading('Verifying the whole chain…'));
    try {
      verifyOut.replaceChildren(verifyView(await api.get('/v1/audit/verify'), ctx));
    } catch (err) {
      verifyOut.replaceChildren();
      ui.showError(verifyOut, err);
    } finally {
      verifyBtn.disabled = false;
    }
  } }, 'Verify the chain');
  root.append(h('div', { class: 'actions' }, verifyBtn), verifyOut);

  // Filters.
  const capIn = h('input', { type: 'text', name: 'capability', value: q.get('capability') || '', placeholder: 'ossa:domain/name', title: 'a capability URI; without @version, any version of it', autocomplete: 'off', spellcheck: 'false' });
  const actorIn = h('input', { type: 'text', name: 'actor', value: q.get('actor') || '', placeholder: 'token:ci-bot', autocomplete: 'off', spellcheck: 'false' });
  const kindIn = h('select', { name: 'kind' }, h('option', { value: '' }, 'any'), kinds.map((k) => h('option', { value: k, selected: q.get('kind') === k }, k)));
  const sinceIn = h('input', { type: 'datetime-local', name: 'since', value: toInput(q.get('since')) });
  const untilIn = h('input', { type: 'datetime-local', name: 'until', value: toInput(q.get('until')) });
  const form = h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Filter the audit chain', onsubmit: (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    const set = (k, v) => { if (v) next.set(k, v); };
    set('capability', capIn.value.trim());
    set('actor', actorIn.value.trim());
    set('kind', kindIn.value);
    set('since', fromInput(sinceIn.value));
    set('until', fromInput(untilIn.value));
    ctx.navigate(`#/audit${next.toString() ? `?${next}` : ''}`);
  } },
  field('Capability', capIn), field('Actor', actorIn), field('Kind', kindIn),
  field('Since (UTC)', sinceIn), field('Until (UTC)', untilIn),
  h('button', { type: 'submit', class: 'primary' }, 'Filter'),
  h('button', { type: 'button', onclick: () => ctx.navigate('#/audit') }, 'Clear'));
  root.append(h('h2', {}, 'Events'), form);

  const query = {};
  for (const k of ['capability', 'actor', 'kind', 'since', 'until', 'cursor', 'after_seq']) if (q.get(k)) query[k] = q.get(k);
  query.limit = 50;
  const page = await api.get('/v1/audit', query);
  const items = page.items || [];
  root.append(wide(ui.table([
    { label: 'Seq', class: 'num', render: (e) => String(e.seq) },
    { label: 'Time', class: 'nowrap', render: (e) => ui.timeAgo(e.time) },
    { label: 'Kind', render: (e) => ui.badge(e.kind, kindBadge(e)) },
    { label: 'Actor', render: (e) => (e.actor ? h('code', { class: 'small' }, e.actor) : '') },
    { label: 'Capability', render: (e) => { if (!e.capability) return ''; const href = capabilityHash(e.capability); return href ? h('a', { href }, shortURI(e.capability)) : e.capability; } },
    { label: 'What', render: (e) => summary(e, ctx) },
    { label: 'Hash', render: (e) => h('span', { class: 'hash', title: `hash ${e.hash}\nprevious ${e.prev_hash}` }, e.hash.slice(0, 12)) },
  ], items, { caption: `${num(items.length)} event${items.length === 1 ? '' : 's'} on this page, oldest first${q.get('after_seq') ? `, after event ${q.get('after_seq')}` : ''}`, empty: 'No event matches.' })));
  const here = new URLSearchParams(q);
  here.delete('cursor');
  const pager = ui.pager({
    hasPrev: !!q.get('cursor'), hasNext: !!page.next_cursor, onPrev: () => history.back(),
    onNext: () => { here.set('cursor', page.next_cursor); ctx.navigate(`#/audit?${here}`); },
  });
  // The chain lists oldest first: jump to its newest 50 events (of those the filters keep).
  const newest = new URLSearchParams(here);
  newest.set('after_seq', String(Math.max(0, (page.head_seq || 0) - 50)));
  pager.append(h('a', { href: `#/audit?${newest}`, id: 'au-newest' }, `Newest events (the chain ends at event ${num(page.head_seq || 0)})`));
  root.append(pager);
  return undefined;
}

function kindBadge(e) {
  if (e.kind === 'invocation') {
    const c = e.data && e.data.code;
    return !c ? 'ok' : c === 'APPROVAL_REQUIRED' || c === 'TOO_MANY_APPROVALS' ? 'warn' : 'bad';
  }
  if (e.kind === 'pruned' || e.kind.endsWith('_deleted') || e.kind === 'token_revoked') return 'warn';
  return 'info';
}

// summary is one line about an event's data, the whole data behind a disclosure.
function summary(e, ctx) {
  const { ui } = ctx;
  const { h } = ui;
  const d = e.data || {};
  let line = '';
  switch (e.kind) {
    case 'invocation': line = `${d.code || 'ok'} in ${ui.ms(d.duration_ms)}${d.binding ? ` (${d.binding})` : ''}`; break;
    case 'registered': line = `version ${d.version || ''}`; break;
    case 'policy_decision': line = [d.decision, d.effect, d.reason, d.rule].filter((x) => typeof x === 'string' && x).join(' · '); break;
    case 'approval': line = [d.status, d.decision, d.reason].filter((x) => typeof x === 'string' && x).join(' · '); break;
    default: line = '';
  }
  return h('details', {}, h('summary', {}, line || 'data'), ui.code(d));
}

// verifyView shows the result of a verification.
function verifyView(v, ctx) {
  const { ui } = ctx;
  const { h } = ui;
  const br = v.break;
  const regs = v.registrations;
  return h('section', { class: ['verify', v.ok ? 'ok' : 'broken'], 'aria-label': 'Verification' },
    h('h2', {}, v.ok ? 'The chain is intact' : br ? `The chain is broken at event ${br.seq}` : 'Stored versions lack their registration event'),
    ui.kv([
      ['Verified from', v.checkpoint ? `event ${num(v.from_seq)}, after the checkpoint of the last prune` : `event ${num(v.from_seq)}, the genesis`],
      ['It must link to', h('span', { class: 'hash' }, v.from_hash)],
      ['Events verified', num(v.count)],
      ['Head', v.head_seq ? [`event ${num(v.head_seq)} `, h('span', { class: 'hash' }, v.head_hash)] : 'none'],
      ['Pruned before', v.checkpoint ? `${num(v.pruned)} events (checkpoint at event ${num(v.checkpoint.seq)}, recorded by event ${num(v.checkpoint.record)})` : ''],
      ['First broken link', br ? [`event ${num(br.seq)} `, ui.badge(br.problem, 'bad'), ' ', br.message] : ''],
      ['Registrations', regs ? `${num(regs.versions)} versions checked, ${num(regs.unrecorded)} without their event${regs.missing && regs.missing.length ? `: ${regs.missing.slice(0, 5).join(', ')}` : ''}` : ''],
    ]),
    v.ok ? h('p', { class: 'small' }, 'Keep the head (event and hash) somewhere else from time to time: a chain shortened at its end still verifies.') : null,
    h('p', { class: 'muted small' }, v.message));
}
