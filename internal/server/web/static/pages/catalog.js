// The catalog: the registry's ranked search as you type, or with no words
// the list, with filters, a page at a time by cursor. The filters and the
// words live in the address (#/catalog?q=…&domain=…) so a search can be
// shared and survives a reload.

const PAGE = 25;
// A search hit's trust tier, as the capability page marks it.
const TIERS = { verified: 'ok', trusted: 'ok', community: 'warn', untrusted: 'bad' };
const FILTERS = ['domain', 'category', 'binding', 'stability', 'trust', 'source'];
const CHOICES = {
  binding: ['native', 'mcp', 'http', 'grpc', 'cli', 'delegation'],
  stability: ['stable', 'beta', 'experimental', 'deprecated'],
  trust: ['verified', 'trusted', 'community', 'untrusted'],
  source: ['manual', 'mcp_introspection', 'openapi', 'agentos', 'rtfs', 'mcp_registry'],
};
const LABELS = { q: 'Search', domain: 'Domain', category: 'Category', binding: 'Binding kind', stability: 'Stability', trust: 'Trust tier', source: 'Source' };

/** capabilityHash is the route of a capability version, from its URI (scheme:domain/name@version). */
export function capabilityHash(uri, version) {
  const m = /^([a-z0-9]+):(.+)\/([^/@]+)(?:@(.+))?$/i.exec(uri || '');
  if (!m) return '#/catalog';
  const [, scheme, domain, name, uriVersion] = m;
  const v = version || uriVersion;
  const q = scheme !== 'ossa' ? `?scheme=${encodeURIComponent(scheme)}` : '';
  return `#/capability/${encodeURIComponent(domain)}/${encodeURIComponent(name)}${v ? `@${encodeURIComponent(v)}` : ''}${q}`;
}

export async function render(root, route, ctx) {
  const { h, debounce, badge } = ctx.ui;
  const state = { q: route.query.get('q') || '' };
  for (const f of FILTERS) state[f] = route.query.get(f) || '';
  let cursors = ['']; // the cursor of each page seen; the last is the current page's
  let controller = null;

  const fields = {};
  const search = h('input', { id: 'catalog-q', type: 'search', value: state.q, placeholder: 'e.g. create an issue, send a message…', autocomplete: 'off', spellcheck: 'false', 'aria-controls': 'catalog-results' });
  fields.q = search;
  const filterEls = FILTERS.map((f) => {
    let el;
    if (f === 'source') {
      el = h('input', { id: `catalog-${f}`, type: 'text', value: state[f], list: 'catalog-sources', autocomplete: 'off', size: 14 });
    } else if (CHOICES[f]) {
      el = h('select', { id: `catalog-${f}` }, h('option', { value: '' }, 'any'),
        CHOICES[f].map((v) => h('option', { value: v, selected: v === state[f] }, v)));
    } else {
      el = h('input', { id: `catalog-${f}`, type: 'text', value: state[f], autocomplete: 'off', size: 14, placeholder: f === 'domain' ? 'github' : 'crud.read' });
    }
    fields[f] = el;
    return h('div', { class: 'field' }, h('label', { for: el.id }, LABELS[f]), el);
  });
  const status = h('p', { class: 'muted small', id: 'catalog-status', role: 'status', 'aria-live': 'polite' });
  const results = h('div', { id: 'catalog-results', 'aria-busy': 'true' });
  const pagerBox = h('div');
  const clear = h('button', { type: 'button', onclick: () => { for (const k of Object.keys(fields)) fields[k].value = ''; changed(true); } }, 'Clear');

  // The filters fold away on a phone unless one is set.
  const filters = h('details', { class: 'filters', open: FILTERS.some((f) => state[f]) || window.matchMedia('(min-width: 641px)').matches },
    h('summary', {}, 'Filters'), h('div', { class: 'toolbar' }, filterEls, h('div', { class: 'field' }, clear)));
  root.append(
    h('h1', {}, 'Catalog'),
    h('form', { role: 'search', onsubmit: (e) => { e.preventDefault(); changed(true); } },
      h('div', { class: 'toolbar' }, h('div', { class: 'field grow' }, h('label', { for: 'catalog-q' }, 'Search capabilities'), search)),
      filters),
    h('datalist', { id: 'catalog-sources' }, CHOICES.source.map((v) => h('option', { value: v }))),
    status, results, pagerBox);

  function read() {
    for (const k of Object.keys(fields)) state[k] = fields[k].value.trim();
  }

  function syncHash() {
    const q = new URLSearchParams();
    for (const k of ['q', ...FILTERS]) if (state[k]) q.set(k, state[k]);
    const s = q.toString();
    ctx.replace(`#/catalog${s ? `?${s}` : ''}`);
  }

  async function load() {
    if (controller) controller.abort();
    controller = new AbortController();
    const signal = controller.signal;
    const cursor = cursors[cursors.length - 1];
    const query = { limit: PAGE, cursor };
    for (const f of FILTERS) query[f] = state[f];
    results.setAttribute('aria-busy', 'true');
    const t0 = performance.now();
    let page;
    try {
      if (state.q) {
        page = await ctx.api.get('/registry/search', { q: state.q, view: 'compact', ...query }, { signal });
      } else {
        page = await ctx.api.get('/registry/capabilities', query, { signal });
      }
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      results.replaceChildren(ctx.ui.errorBox(e));
      results.removeAttribute('aria-busy');
      status.textContent = '';
      pagerBox.replaceChildren();
      return;
    }
    const took = performance.now() - t0;
    const items = (page.items || []).map((it) => (state.q ? it : summaryOf(it)));
    const first = (cursors.length - 1) * PAGE + 1;
    const range = items.length ? `${first}–${first + items.length - 1}` : '0';
    status.textContent = state.q
      ? `${page.total ?? items.length} ${page.total === 1 ? 'match' : 'matches'} for “${state.q}”, showing ${range} (${Math.round(took)} ms)`
      : `Showing ${range}${page.next_cursor ? '' : ' (all)'} (${Math.round(took)} ms)`;
    const unknown = Array.isArray(page.unknown) ? page.unknown.filter((u) => u.did_you_mean && u.did_you_mean.length) : [];
    const suggestion = unknown.length ? h('p', { class: 'notice' }, 'Did you mean ',
      h('a', { href: '#', onclick: (e) => { e.preventDefault(); let q = state.q; for (const u of unknown) q = q.replace(u.word, u.did_you_mean[0]); fields.q.value = q; changed(true); } },
        unknown.map((u) => u.did_you_mean[0]).join(', ')), '?') : null;
    results.replaceChildren(...[suggestion, list(items)].filter(Boolean));
    results.dataset.count = String(items.length);
    results.removeAttribute('aria-busy');
    // The moment a page of results is on screen, for measurements
    // (performance.getEntriesByName('caphub:catalog-shown')).
    performance.mark('caphub:catalog-shown', { detail: { items: items.length, ms: took } });
    pagerBox.replaceChildren(ctx.ui.pager({
      hasPrev: cursors.length > 1, hasNext: !!page.next_cursor,
      onPrev: () => { cursors.pop(); load(); },
      onNext: () => { cursors.push(page.next_cursor); load(); },
    }));
  }

  function list(items) {
    if (!items.length) {
      return h('p', { class: 'muted' }, state.q || FILTERS.some((f) => state[f]) ? 'No capability matches. Try fewer words or filters.' : 'The registry is empty: register capabilities with caphub capability register or caphub import.');
    }
    return h('ol', { class: 'hits', start: (cursors.length - 1) * PAGE + 1 }, items.map((s) => h('li', { class: 'hit' },
      h('div', { class: 'hit-head' },
        h('a', { href: capabilityHash(s.uri, s.version), class: 'hit-title' }, s.title || s.name || s.uri),
        h('code', { class: 'small' }, s.uri),
        s.version ? h('span', { class: 'muted small' }, `v${s.version}`) : null,
        s.stability && s.stability !== 'stable' ? badge(s.stability, s.stability === 'deprecated' ? 'bad' : 'warn') : null,
        s.trust_tier ? badge(`trust: ${s.trust_tier}`, TIERS[s.trust_tier] || '') : null,
        (s.bindings || []).map((b) => badge(b, 'info'))),
      s.description ? h('p', { class: 'hit-desc' }, s.description) : null,
      s.params ? h('p', { class: 'small muted hit-params' }, h('span', { class: 'sr-only' }, 'Parameters: '), s.params) : null)));
  }

  const typed = debounce(() => changed(false), 200);
  function changed(now) {
    if (now) typed.cancel();
    read();
    syncHash();
    cursors = [''];
    load();
  }
  search.addEventListener('input', typed);
  for (const f of FILTERS) fields[f].addEventListener(fields[f].tagName === 'SELECT' ? 'change' : 'input', CHOICES[f] && f !== 'source' ? () => changed(true) : typed);

  await load();
  if (!state.q && !FILTERS.some((f) => state[f])) search.focus({ preventScroll: true });
  return () => { typed.cancel(); if (controller) controller.abort(); };
}

// summaryOf reduces a listed definition to what a search hit shows: its
// description on one line, cut at a word within 240 characters.
function summaryOf(d) {
  const text = (d.description || '').replace(/\s+/g, ' ').trim();
  const cut = text.length > 240 ? `${text.slice(0, 240).replace(/\s+\S*$/, '')}…` : text;
  return {
    uri: d.uri, version: d.version, title: d.title || d.name, name: d.name, stability: d.stability,
    description: cut,
    bindings: Object.keys(d.bindings || {}),
  };
}
