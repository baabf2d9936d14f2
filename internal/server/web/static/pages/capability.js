// One capability: what it does, its versions as a timeline, a diff of any
// two versions, its schemas as trees, bindings, trust, and a Try it form
// that invokes it through the pipeline (POST /v1/invoke).

const TIERS = { verified: 'ok', trusted: 'ok', community: 'warn', untrusted: 'bad' };
const BUMPS = { major: 'bad', minor: 'warn', patch: 'info', none: '' };

export async function render(root, route, ctx) {
  const { h, badge, kv, code, schemaTree, table } = ctx.ui;
  const [domain, nameAt] = route.parts;
  if (!domain || !nameAt) {
    root.append(h('h1', {}, 'Capability'), h('p', {}, 'Open a capability from the ', h('a', { href: '#/catalog' }, 'catalog'), '.'));
    return undefined;
  }
  const [name, wanted] = nameAt.split('@');
  const scheme = route.query.get('scheme') || '';
  const base = `/registry/capabilities/${encodeURIComponent(domain)}/${encodeURIComponent(name)}`;
  const sq = scheme ? { scheme } : undefined;

  const listing = await ctx.api.get(base, { ...sq, limit: 1000 });
  const versions = listing.items || [];
  if (!versions.length) throw new Error(`${domain}/${name} has no versions`);
  const version = wanted ? pick(versions, wanted) : versions[versions.length - 1].version;
  const one = await ctx.api.send('GET', `${base}@${encodeURIComponent(version || wanted)}`, { query: sq });
  const def = one.data;
  const tier = one.headers.get('Caphub-Trust-Tier') || '';
  const toolName = await ctx.api.get('/registry/search', { name, domain, ...sq, limit: 20 })
    .then((p) => ((p.items || []).find((s) => s.uri === def.uri) || {}).tool_name || '')
    .catch(() => '');

  const vhash = (v) => `#/capability/${encodeURIComponent(domain)}/${encodeURIComponent(name)}@${encodeURIComponent(v)}${scheme ? `?scheme=${encodeURIComponent(scheme)}` : ''}`;

  // Heading and overview.
  root.append(
    h('p', { class: 'small' }, h('a', { href: '#/catalog' }, '← Catalog')),
    h('h1', {}, def.title || def.name, ' ', h('span', { class: 'muted version' }, `v${def.version}`)),
    h('div', { class: 'hit-head' },
      h('code', {}, def.uri),
      stabilityBadge(def),
      tier ? badge(`trust: ${tier}`, TIERS[tier] || '') : badge('trust: none recorded')),
    def.description ? h('p', { class: 'lead' }, def.description) : null,
    kv([
      ['MCP tool', toolName ? h('code', { id: 'tool-name' }, toolName) : ''],
      ['Documentation', def.documentation_url && /^https?:\/\//.test(def.documentation_url) ? h('a', { href: def.documentation_url, rel: 'noopener noreferrer', target: '_blank' }, def.documentation_url) : def.documentation_url],
      ['Signature', signature(def, tier)],
      ['Domains', (def.domains || []).join(', ')],
      ['Categories', (def.categories || []).join(', ')],
      ['Intents', (def.intents || []).join(', ')],
      ['Keywords', (def.keywords || []).join(', ')],
      ['Permissions', (def.permissions || []).join(', ')],
      ['Effects', (def.effects || []).join(', ')],
      ['Source', def.provenance ? [def.provenance.method || '', def.provenance.source_url ? ` (${def.provenance.source_url})` : ''] : 'manual'],
      ['Deprecated by', def.deprecated_by ? h('a', { href: `#/catalog?q=${encodeURIComponent(def.deprecated_by)}` }, def.deprecated_by) : ''],
      ['Sunset', def.sunset_date || ''],
      ['Migration', def.migration_guide || ''],
    ]));

  // Versions timeline.
  root.append(h('section', { class: 'section', 'aria-labelledby': 'h-versions' },
    h('h2', { id: 'h-versions' }, `Versions (${versions.length})`),
    h('ol', { class: 'timeline', reversed: true }, [...versions].reverse().map((v) => h('li', { class: v.version === def.version ? 'current' : '' },
      h('a', { href: vhash(v.version), 'aria-current': v.version === def.version ? 'page' : undefined }, `v${v.version}`), ' ',
      stabilityBadge(v),
      v.deprecated_by ? h('span', { class: 'small muted' }, ` replaced by ${v.deprecated_by}`) : null,
      v.sunset_date ? h('span', { class: 'small' }, ' ', badge(`sunset ${v.sunset_date}`, new Date(v.sunset_date) <= new Date() ? 'bad' : 'warn')) : null,
      v.version === def.version ? h('span', { class: 'small muted' }, ' (shown)') : null)))));

  // Diff of two versions.
  if (versions.length > 1) root.append(diffSection());

  // Schemas.
  root.append(h('section', { class: 'section', 'aria-labelledby': 'h-input' }, h('h2', { id: 'h-input' }, 'Input'), h('div', { id: 'input-schema' }, schemaTree(def.input))),
    h('section', { class: 'section', 'aria-labelledby': 'h-output' }, h('h2', { id: 'h-output' }, 'Output'), h('div', { id: 'output-schema' }, schemaTree(def.output))));
  if (def.errors && def.errors.length) {
    root.append(h('section', { class: 'section' }, h('h2', {}, 'Errors'), table([
      { label: 'Code', render: (e) => h('code', {}, e.code) },
      { label: 'Retryable', render: (e) => (e.retryable ? 'yes' : 'no') },
      { label: 'Description', key: 'description' }], def.errors)));
  }

  // Bindings.
  root.append(h('section', { class: 'section', 'aria-labelledby': 'h-bindings' }, h('h2', { id: 'h-bindings' }, 'Bindings'),
    h('p', { class: 'muted small' }, 'Tried in this order until one succeeds.'),
    bindingsView(def.bindings || {})));

  if (def.examples && def.examples.length) {
    root.append(h('section', { class: 'section' }, h('h2', {}, 'Examples'), def.examples.map((ex) => h('div', { class: 'card' },
      ex.description ? h('p', {}, ex.description) : null,
      ex.input !== undefined ? [h('p', { class: 'small muted' }, 'Input'), code(ex.input)] : null,
      ex.output !== undefined ? [h('p', { class: 'small muted' }, 'Output'), code(ex.output)] : null))));
  }

  // Try it.
  root.append(tryIt());
  return undefined;

  function diffSection() {
    const opts = (sel) => versions.map((v) => h('option', { value: v.version, selected: v.version === sel }, v.version));
    const idx = versions.findIndex((v) => v.version === def.version);
    const from = h('select', { id: 'diff-from' }, opts(versions[idx > 0 ? idx - 1 : 0].version));
    const to = h('select', { id: 'diff-to' }, opts(versions[idx > 0 ? idx : 1].version));
    const out = h('div', { id: 'diff-result', 'aria-live': 'polite' });
    // One comparison at a time: changing both versions quickly must show
    // the last one asked, not whichever answer came last.
    let controller = null;
    const run = async () => {
      if (controller) controller.abort();
      const mine = new AbortController();
      controller = mine;
      out.replaceChildren(ctx.ui.loading('Comparing…'));
      try {
        const d = await ctx.api.get(`${base}/diff`, { from: from.value, to: to.value, ...sq }, { signal: mine.signal });
        if (controller === mine) out.replaceChildren(diffView(d));
      } catch (e) {
        if (controller === mine && !(e && e.name === 'AbortError')) out.replaceChildren(ctx.ui.errorBox(e));
      }
    };
    from.addEventListener('change', run);
    to.addEventListener('change', run);
    queueMicrotask(run);
    return h('section', { class: 'section', 'aria-labelledby': 'h-diff' }, h('h2', { id: 'h-diff' }, 'Compare versions'),
      h('div', { class: 'toolbar' },
        h('div', { class: 'field' }, h('label', { for: 'diff-from' }, 'From'), from),
        h('div', { class: 'field' }, h('label', { for: 'diff-to' }, 'To'), to)),
      out);
  }

  function diffView(d) {
    const breaking = d.required === 'major';
    return h('div', {},
      h('p', {},
        breaking ? badge('breaking change', 'bad') : badge(d.changes.length ? `${d.required} change` : 'no change', BUMPS[d.required] || ''), ' ',
        `${d.changes.length} ${d.changes.length === 1 ? 'change' : 'changes'} from v${d.old} to v${d.new}; bump required: ${d.required}, declared: ${d.declared} — `,
        d.satisfied ? h('span', { class: 'ok-text' }, 'the version bump is large enough') : h('strong', { class: 'bad-text' }, `not satisfied: ${d.problem || 'bump too small'}`)),
      d.changes.length ? table([
        { label: 'Class', render: (c) => badge(c.bump, BUMPS[c.bump] || '') },
        { label: 'Where', render: (c) => h('code', {}, c.path) },
        { label: 'What and why', render: (c) => [c.description, ' ', h('span', { class: 'muted small' }, `(${c.kind})`)] },
      ], d.changes, { caption: 'Each change and the bump it needs', stack: true }) : null);
  }

  function bindingsView(b) {
    const order = ['native', 'mcp', 'http', 'grpc', 'cli', 'delegation'];
    const kinds = [...order.filter((k) => b[k]), ...Object.keys(b).filter((k) => !order.includes(k))];
    if (!kinds.length) return h('p', { class: 'muted' }, 'No binding: this capability cannot run here.');
    return h('div', { class: 'cards' }, kinds.map((k) => {
      const v = b[k] || {};
      const rows = {
        native: [['Handler', v.handler]],
        mcp: [['Server', v.server], ['Tool', v.tool]],
        http: [['Request', `${v.method || ''} ${v.url || ''}`], ['Auth', v.auth ? `${v.auth.type}${v.auth.env ? ` from $${v.auth.env}` : ''}` : '']],
        grpc: [['Target', v.target], ['Method', `${v.service || ''}/${v.method || ''}`]],
        cli: [['Command', v.command], ['Parser', v.parser]],
        delegation: [['Agent', v.agent], ['URL', v.url], ['Capability', v.capability]],
      }[k];
      return h('div', { class: 'card' }, h('h3', {}, k), rows ? kv(rows.map(([a, c]) => [a, c ? h('code', {}, c) : ''])) : code(v));
    }));
  }

  function tryIt() {
    const form = ctx.ui.formFromSchema(def.input || {});
    const out = h('div', { id: 'try-result', 'aria-live': 'polite' });
    const msgs = h('div', { class: 'form-error', id: 'try-errors', role: 'alert' });
    const button = h('button', { type: 'submit', class: 'primary', id: 'try-run' }, 'Invoke');
    const f = h('form', { id: 'try-form', novalidate: true, onsubmit: async (e) => {
      e.preventDefault();
      msgs.textContent = '';
      const problems = form.validate();
      if (problems.length) { msgs.textContent = `Fix ${problems.length === 1 ? 'this' : 'these'} first: ${problems.join('; ')}`; return; }
      let input;
      try { input = form.value(); } catch (err) { msgs.textContent = err.message; return; }
      if (button.getAttribute('aria-disabled') === 'true') return; // one call at a time
      button.setAttribute('aria-disabled', 'true'); // not disabled: the focus stays on it
      try { await invoke(input, ''); } finally { button.removeAttribute('aria-disabled'); }
    } }, form.element, h('div', { class: 'actions' }, button), msgs);

    // invoke calls the capability, retried with an approval when given.
    async function invoke(input, approval) {
      out.replaceChildren(ctx.ui.loading('Invoking…'));
      const t0 = performance.now();
      try {
        const res = await ctx.api.send('POST', '/v1/invoke', { body: { uri: def.uri, input }, headers: approval ? { 'X-Caphub-Approval': approval } : undefined });
        out.replaceChildren(res.status === 202 ? pending(res.data, input) : result(res.data, performance.now() - t0));
      } catch (err) {
        out.replaceChildren(failure(err, performance.now() - t0));
      }
    }

    // pending shows a held call: its approval, and a button to run it once
    // approved (the same input, with the approval's id).
    function pending(p, input) {
      const id = p && p.details && p.details.approval_id;
      return h('div', { class: 'result pending', 'data-outcome': 'pending' },
        h('h3', {}, badge('waiting for approval', 'warn')),
        h('p', {}, p.detail || 'The policy holds this call until someone approves it.'),
        id ? [
          h('p', {}, 'Approval ', h('code', { id: 'approval-id' }, id), ': decide it on the ', h('a', { href: '#/approvals' }, 'Approvals'), ' page; once approved, run it:'),
          h('button', { type: 'button', id: 'try-approved', onclick: () => invoke(input, id) }, 'Invoke with this approval'),
        ] : null);
    }
    return h('section', { class: 'section try', 'aria-labelledby': 'h-try' }, h('h2', { id: 'h-try' }, 'Try it'),
      h('p', { class: 'muted small' }, `Invokes ${def.uri} through caphub's pipeline (policy, bindings, audit) with your token: it needs the invoke scope.`),
      f, out);
  }

  function result(r, roundTrip) {
    return h('div', { class: 'result ok', 'data-outcome': 'ok' },
      h('h3', {}, badge('succeeded', 'ok'), ' Output'),
      code(r.output),
      kv([['Version', r.version], ['Binding', r.binding], ['Time', `${ctx.ui.ms(r.duration_ms)} in caphub, ${ctx.ui.ms(roundTrip)} round trip`]]),
      r.warnings && r.warnings.length ? h('div', { class: 'notice' }, h('strong', {}, 'Warnings'), h('ul', {}, r.warnings.map((w) => h('li', {}, w)))) : null,
      attempts(r.attempts));
  }

  function failure(err, roundTrip) {
    const body = err && err.body && typeof err.body === 'object' ? err.body : {};
    const d = body.details || {};
    return h('div', { class: 'result failed', 'data-outcome': 'failed' },
      ctx.ui.errorBox(err),
      body.code ? kv([['Code', h('code', {}, body.code)], ['Binding', body.binding || ''], ['Retryable', body.retryable ? 'yes' : 'no'], ['Round trip', ctx.ui.ms(roundTrip)]]) : null,
      Array.isArray(d.attempts) ? attempts(d.attempts) : null);
  }

  function attempts(list) {
    if (!Array.isArray(list) || !list.length) return null;
    return h('div', {}, h('h3', {}, 'Attempts'), table([
      { label: '#', key: 'attempt' },
      { label: 'Binding', key: 'binding' },
      { label: 'Time', render: (a) => ctx.ui.ms(a.duration_ms) },
      { label: 'Outcome', render: (a) => (a.error ? [badge(a.error.code || 'error', 'bad'), ' ', a.error.message || ''] : badge('ok', 'ok')) },
    ], list));
  }

  function stabilityBadge(v) {
    const s = v.stability || 'stable';
    return badge(s, s === 'stable' ? 'ok' : s === 'deprecated' ? 'bad' : 'warn');
  }

  function signature(d, t) {
    const a = d.attestation;
    if (!a) return 'unsigned';
    const who = `signed by key ${a.key_id} (${a.algorithm})`;
    return t === 'verified' ? [badge('verified', 'ok'), ` ${who}`] : [badge('not verified', 'warn'), ` ${who}: the key is not among the trusted keys`];
  }
}

// pick is the version a route names: a full version, or the highest of
// MAJOR or MAJOR.MINOR.
function pick(versions, wanted) {
  if (versions.some((v) => v.version === wanted)) return wanted;
  const parts = wanted.split('.');
  const match = versions.filter((v) => v.version.split(/[.-]/).slice(0, parts.length).join('.') === wanted);
  return match.length ? match[match.length - 1].version : wanted;
}
