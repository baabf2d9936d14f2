// ui.js: DOM helpers shared by the pages. Text from the API always goes in
// as text nodes (never innerHTML), and nothing sets a style attribute (the
// Content-Security-Policy forbids inline styles): classes in style.css do.

/**
 * h(tag, attrs, ...children) makes an element. attrs: class, for, on{Event}
 * (a function), value/checked/disabled/selected/hidden (properties), true
 * (an empty attribute), false/null/undefined (left out), anything else an
 * attribute. children: nodes, strings and numbers (text nodes), arrays;
 * null/false/undefined are skipped.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    else if (k === 'for') el.htmlFor = v;
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden') el[k] = v;
    else if (k === 'style') throw new Error('ui.h: no style attributes (CSP): use a class');
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false || c === true) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** loading() is a "Loading…" placeholder. */
export function loading(what = 'Loading…') {
  return h('p', { class: 'muted loading', role: 'status' }, what);
}

/** badge(text, kind) is a small label; kind: ok, warn, bad, info or none. */
export function badge(text, kind = '') {
  return h('span', { class: ['badge', kind && `badge-${kind}`] }, text);
}

/** code(value) shows JSON (or a string) in a <pre>. */
export function code(value) {
  const s = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return h('pre', { class: 'code' }, h('code', {}, s === undefined ? '' : s));
}

/** kv([[label, value], …]) is a definition list; empty values are left out. */
export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** debounce(fn, ms) calls fn ms after the last call. */
export function debounce(fn, ms = 200) {
  let t;
  const d = (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
  d.cancel = () => clearTimeout(t);
  return d;
}

/**
 * showError(root, err) appends an alert with the problem document's title
 * and detail (an ApiError), or the error's message; returns the alert.
 */
export function showError(root, err) {
  const el = errorBox(err);
  root.appendChild(el);
  return el;
}

/** errorBox(err) is the alert showError appends. */
export function errorBox(err) {
  const title = (err && err.title) || 'Something went wrong';
  const detail = err && (err.title ? err.detail : err.message || String(err));
  const body = err && err.body && typeof err.body === 'object' ? err.body : {};
  return h('div', { class: 'problem', role: 'alert' },
    h('p', { class: 'problem-title' }, err && err.status ? `${title} (${err.status})` : title),
    detail ? h('p', { class: 'problem-detail' }, detail) : null,
    body.required_scope ? h('p', { class: 'small' }, 'Needed scope: ', h('code', {}, body.required_scope)) : null,
    Array.isArray(body.issues) && body.issues.length ? h('ul', { class: 'small' }, body.issues.slice(0, 20).map((i) =>
      h('li', {}, typeof i === 'string' ? i : [i.path || i.field || i.pointer || '', i.path || i.field || i.pointer ? ': ' : '', i.message || i.detail || JSON.stringify(i)]))) : null);
}

/**
 * table(columns, rows, {empty, caption, stack}) is a table in a scrolling
 * box; stack: at phone widths each row becomes a block instead.
 * columns: [{label, key, render(row) → node|string, class}].
 */
export function table(columns, rows, opts = {}) {
  const cell = (c, r) => {
    const v = c.render ? c.render(r) : r[c.key];
    return h('td', { class: c.class }, v === undefined || v === null ? '' : v);
  };
  const t = h('table', {},
    opts.caption ? h('caption', {}, opts.caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label)))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', {}, columns.map((c) => cell(c, r))))
      : h('tr', {}, h('td', { colspan: columns.length, class: 'muted' }, opts.empty || 'Nothing here.'))));
  return h('div', { class: ['table-wrap', opts.stack && 'stack'] }, t);
}

/**
 * pager({onPrev, onNext, hasPrev, hasNext, label}) is a Previous/Next bar
 * for cursor paging (the caller keeps the cursors).
 */
export function pager({ onPrev, onNext, hasPrev, hasNext, label }) {
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', disabled: !hasPrev, onclick: onPrev }, '← Previous'),
    label ? h('span', { class: 'muted' }, label) : null,
    h('button', { type: 'button', disabled: !hasNext, onclick: onNext }, 'Next →'));
}

/** timeAgo(t) is "3 min ago" in a <time> whose title is the exact time. */
export function timeAgo(t) {
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) return h('span', {}, String(t ?? ''));
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  const abs = Math.abs(s);
  const [n, unit] = abs < 60 ? [abs, 's'] : abs < 3600 ? [Math.round(abs / 60), 'min'] : abs < 86400 ? [Math.round(abs / 3600), 'h']
    : abs < 86400 * 60 ? [Math.round(abs / 86400), 'd'] : [0, ''];
  const text = unit ? (s >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`) : d.toISOString().slice(0, 10);
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, text);
}

/** ms(n) formats a duration in milliseconds. */
export function ms(n) {
  if (typeof n !== 'number' || Number.isNaN(n)) return '';
  return n < 1 ? `${n.toFixed(2)} ms` : n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`;
}

// --- JSON Schema ---------------------------------------------------------

const MAX_DEPTH = 8;

/** resolveRef(root, ref) follows a local $ref (#/$defs/X, #/definitions/X, #/…). */
export function resolveRef(root, ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
  let cur = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const k = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object' || !(k in cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function typeText(s) {
  if (!s || typeof s !== 'object') return s === true ? 'any' : s === false ? 'nothing' : '';
  let t = Array.isArray(s.type) ? s.type.join(' | ') : s.type || '';
  if (!t) t = s.properties ? 'object' : s.items ? 'array' : s.enum ? 'enum' : s.const !== undefined ? 'const' : (s.anyOf || s.oneOf) ? 'one of' : s.allOf ? 'all of' : 'any';
  if (t === 'array' && s.items && typeof s.items === 'object') {
    const it = s.items.$ref ? s.items.$ref.split('/').pop() : typeText(s.items);
    t = `array of ${it}`;
  }
  if (s.format) t += ` (${s.format})`;
  return t;
}

function constraints(s) {
  const c = [];
  const add = (k, label) => { if (s[k] !== undefined) c.push(`${label} ${typeof s[k] === 'object' ? JSON.stringify(s[k]) : s[k]}`); };
  add('minimum', '≥'); add('exclusiveMinimum', '>'); add('maximum', '≤'); add('exclusiveMaximum', '<');
  add('minLength', 'min length'); add('maxLength', 'max length'); add('pattern', 'pattern');
  add('minItems', 'min items'); add('maxItems', 'max items'); add('multipleOf', 'multiple of');
  if (s.uniqueItems) c.push('unique items');
  return c;
}

function fmt(v) { return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v); }

/**
 * schemaTree(schema) renders a JSON Schema as a tree: each property with its
 * type, required, enum, default, constraints, description and examples;
 * local $refs followed (into $defs/definitions), MAX_DEPTH levels at most
 * and a recursive reference shown once.
 */
export function schemaTree(schema, opts = {}) {
  const rootSchema = schema;
  const maxDepth = opts.maxDepth || MAX_DEPTH;
  if (schema === undefined || schema === null) return h('p', { class: 'muted' }, 'No schema.');

  function node(name, s, required, depth, seen) {
    let refName = '';
    let cur = s;
    const seenHere = new Set(seen);
    for (let hops = 0; cur && typeof cur === 'object' && cur.$ref && hops < 16; hops++) {
      refName = cur.$ref.split('/').pop();
      if (seenHere.has(cur.$ref)) {
        return h('li', {}, head(name, required, `${refName} (recursive, shown above)`, cur), null);
      }
      seenHere.add(cur.$ref);
      const target = resolveRef(rootSchema, cur.$ref);
      if (target === undefined) {
        return h('li', {}, head(name, required, `unresolved ${cur.$ref}`, cur));
      }
      const { $ref, ...rest } = cur; // siblings of $ref (description…) win
      cur = { ...target, ...rest };
    }
    const s2 = cur;
    const typ = (refName ? `${refName}: ` : '') + typeText(s2);
    const kids = depth < maxDepth ? children(s2, depth, seenHere) : null;
    const more = depth >= maxDepth && hasChildren(s2) ? h('p', { class: 'muted small' }, `… deeper than ${maxDepth} levels`) : null;
    const body = [details(s2), more];
    if (kids && kids.length) {
      return h('li', {}, h('details', { open: depth < 4 ? true : undefined },
        h('summary', {}, head(name, required, typ, s2)), body, h('ul', { class: 'schema-tree' }, kids)));
    }
    return h('li', {}, head(name, required, typ, s2), body);
  }

  function head(name, required, typ, s) {
    return h('span', { class: 'schema-head' },
      name !== null ? h('code', { class: 'prop' }, name) : null,
      h('span', { class: 'type' }, typ),
      required ? badge('required', 'warn') : null,
      s && typeof s === 'object' && s.deprecated ? badge('deprecated', 'bad') : null,
      s && typeof s === 'object' && s.readOnly ? badge('read-only') : null);
  }

  function details(s) {
    if (!s || typeof s !== 'object') return null;
    const out = [];
    if (s.title) out.push(h('div', { class: 'schema-title' }, s.title));
    if (s.description) out.push(h('div', { class: 'desc' }, s.description));
    if (Array.isArray(s.enum)) out.push(h('div', { class: 'small' }, 'One of: ', s.enum.map((v, i) => [i ? ', ' : '', h('code', {}, fmt(v))])));
    if (s.const !== undefined) out.push(h('div', { class: 'small' }, 'Exactly ', h('code', {}, fmt(s.const))));
    if (s.default !== undefined) out.push(h('div', { class: 'small' }, 'Default ', h('code', {}, fmt(s.default))));
    const c = constraints(s);
    if (c.length) out.push(h('div', { class: 'small muted' }, c.join(' · ')));
    const ex = Array.isArray(s.examples) ? s.examples : s.example !== undefined ? [s.example] : [];
    if (ex.length) out.push(h('div', { class: 'small' }, ex.length > 1 ? 'Examples: ' : 'Example: ', ex.slice(0, 5).map((v, i) => [i ? ', ' : '', h('code', {}, fmt(v))])));
    return out.length ? h('div', { class: 'schema-details' }, out) : null;
  }

  function hasChildren(s) {
    return s && typeof s === 'object' && !!(s.properties || s.items || s.anyOf || s.oneOf || s.allOf || (s.additionalProperties && typeof s.additionalProperties === 'object'));
  }

  function children(s, depth, seen) {
    if (!s || typeof s !== 'object') return [];
    const out = [];
    const req = new Set(Array.isArray(s.required) ? s.required : []);
    if (s.properties && typeof s.properties === 'object') {
      for (const [k, v] of Object.entries(s.properties)) out.push(node(k, v, req.has(k), depth + 1, seen));
    }
    if (s.items && typeof s.items === 'object' && !Array.isArray(s.items) && hasChildren(s.items.$ref ? resolveRef(rootSchema, s.items.$ref) : s.items)) {
      out.push(node('[item]', s.items, false, depth + 1, seen));
    }
    if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(node('[any key]', s.additionalProperties, false, depth + 1, seen));
    for (const k of ['anyOf', 'oneOf', 'allOf']) {
      if (Array.isArray(s[k])) s[k].forEach((v, i) => out.push(node(`${k}[${i}]`, v, false, depth + 1, seen)));
    }
    return out;
  }

  return h('ul', { class: 'schema-tree schema-root' }, node(null, schema, false, 0, new Set()));
}

// --- A form from a JSON Schema --------------------------------------------

let formSeq = 0;

function deref(root, s) {
  for (let i = 0; s && typeof s === 'object' && s.$ref && i < 16; i++) {
    const t = resolveRef(root, s.$ref);
    if (!t) return {};
    const { $ref, ...rest } = s;
    s = { ...t, ...rest };
  }
  return s && typeof s === 'object' ? s : {};
}

function primaryType(s) {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (t) return t;
  if (s.properties) return 'object';
  if (s.items) return 'array';
  if (Array.isArray(s.enum) && s.enum.length) return typeof s.enum[0] === 'number' ? 'number' : typeof s.enum[0];
  return '';
}

/** checkValue(value, s) is the first rule value breaks (a message) or ''. */
export function checkValue(v, s) {
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return `must be one of ${s.enum.map(fmt).join(', ')}`;
  if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(v)) return `must be ${fmt(s.const)}`;
  const t = primaryType(s);
  if (t === 'integer' && !Number.isInteger(v)) return 'must be a whole number';
  if ((t === 'number' || t === 'integer') && typeof v !== 'number') return 'must be a number';
  if (t === 'string' && typeof v !== 'string') return 'must be text';
  if (t === 'boolean' && typeof v !== 'boolean') return 'must be true or false';
  if (t === 'array' && !Array.isArray(v)) return 'must be a JSON array';
  if (t === 'object' && (v === null || typeof v !== 'object' || Array.isArray(v))) return 'must be a JSON object';
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) return `must be at least ${s.minimum}`;
    if (s.maximum !== undefined && v > s.maximum) return `must be at most ${s.maximum}`;
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) return `must be more than ${s.exclusiveMinimum}`;
    if (typeof s.exclusiveMaximum === 'number' && v >= s.exclusiveMaximum) return `must be less than ${s.exclusiveMaximum}`;
  }
  if (typeof v === 'string') {
    const n = [...v].length;
    if (s.minLength !== undefined && n < s.minLength) return `must be at least ${s.minLength} characters`;
    if (s.maxLength !== undefined && n > s.maxLength) return `must be at most ${s.maxLength} characters`;
    if (s.pattern) { try { if (!new RegExp(s.pattern, 'u').test(v)) return `must match ${s.pattern}`; } catch { /* a pattern JS cannot read: the server checks it */ } }
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) return `needs at least ${s.minItems} items`;
    if (s.maxItems !== undefined && v.length > s.maxItems) return `takes at most ${s.maxItems} items`;
  }
  if (t === 'object' && v && typeof v === 'object' && Array.isArray(s.required)) {
    const missing = s.required.filter((k) => !(k in v));
    if (missing.length) return `misses ${missing.join(', ')}`;
  }
  return '';
}

/**
 * formFromSchema(schema, {initial}) makes inputs for an object schema's
 * properties (a select for an enum, a number input, a checkbox or a
 * true/false select, a JSON text area for objects and arrays; a single
 * JSON text area when the schema is not an object with properties).
 * Returns {element, value(), validate()}: validate() shows each field's
 * message inline and returns the messages; value() is the input object
 * (empty optional fields left out; throws when a field's JSON is invalid).
 */
export function formFromSchema(schema, opts = {}) {
  const rootSchema = schema || {};
  const top = deref(rootSchema, rootSchema);
  const id = `f${++formSeq}`;
  const initial = opts.initial || {};
  const fields = [];

  const props = top.properties && typeof top.properties === 'object' ? top.properties : null;
  if (!props || primaryType(top) !== 'object') {
    const f = field('input', top, true, `${id}-all`, 'Input (JSON)', initial);
    return { element: h('div', { class: 'schema-form' }, f.el), value: () => f.get(), validate: () => { const m = f.check(); return m ? [`input ${m}`] : []; } };
  }
  const req = new Set(Array.isArray(top.required) ? top.required : []);
  let i = 0;
  for (const [name, raw] of Object.entries(props)) {
    const s = deref(rootSchema, raw);
    if (s.readOnly) continue;
    fields.push({ name, ...field(name, s, req.has(name), `${id}-${i++}`, name, initial[name]) });
  }

  function field(name, s, required, fid, label, init) {
    const t = primaryType(s);
    const hint = h('p', { class: 'hint', id: `${fid}-hint` }, [s.description || '', s.description && typeText(s) ? ' · ' : '', typeText(s)]);
    const msg = h('p', { class: 'field-error', id: `${fid}-err`, 'aria-live': 'polite' });
    const describedBy = `${fid}-hint ${fid}-err`;
    let input;
    let get;
    const ex = Array.isArray(s.examples) && s.examples.length ? s.examples[0] : s.example;
    const ph = ex === undefined ? '' : typeof ex === 'string' ? ex : JSON.stringify(ex);
    const start = init !== undefined ? init : s.default;
    if (Array.isArray(s.enum) && s.enum.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) {
      input = h('select', { id: fid, 'aria-describedby': describedBy },
        h('option', { value: '' }, required ? '— choose —' : '— none —'),
        s.enum.map((v, k) => h('option', { value: String(k), selected: start !== undefined && JSON.stringify(start) === JSON.stringify(v) }, String(v))));
      get = () => (input.value === '' ? undefined : s.enum[Number(input.value)]);
    } else if (t === 'boolean' && required) {
      input = h('input', { id: fid, type: 'checkbox', checked: start === true, 'aria-describedby': describedBy });
      get = () => input.checked;
    } else if (t === 'boolean') {
      input = h('select', { id: fid, 'aria-describedby': describedBy },
        h('option', { value: '' }, '— unset —'), h('option', { value: 'true', selected: start === true }, 'true'), h('option', { value: 'false', selected: start === false }, 'false'));
      get = () => (input.value === '' ? undefined : input.value === 'true');
    } else if (t === 'number' || t === 'integer') {
      input = h('input', { id: fid, type: 'text', inputmode: t === 'integer' ? 'numeric' : 'decimal', value: start !== undefined ? String(start) : '', placeholder: ph, 'aria-describedby': describedBy });
      get = () => { const v = input.value.trim(); if (v === '') return undefined; const n = Number(v); return Number.isNaN(n) ? v : n; };
    } else if (t === 'string') {
      const long = (s.maxLength || 0) > 200 || s.format === 'textarea' || s.contentMediaType;
      input = long ? h('textarea', { id: fid, rows: 4, placeholder: ph, 'aria-describedby': describedBy }, start !== undefined ? String(start) : '')
        : h('input', { id: fid, type: s.format === 'email' ? 'email' : s.format === 'uri' ? 'url' : 'text', value: start !== undefined ? String(start) : '', placeholder: ph, 'aria-describedby': describedBy, autocomplete: 'off' });
      get = () => (input.value === '' && !required ? undefined : input.value);
    } else {
      input = h('textarea', { id: fid, rows: 4, class: 'mono', placeholder: ph || (t === 'array' ? '[ … ]' : '{ … }'), 'aria-describedby': describedBy },
        start !== undefined ? JSON.stringify(start, null, 2) : '');
      get = () => {
        const v = input.value.trim();
        if (v === '') return undefined;
        try { return JSON.parse(v); } catch (e) { const err = new Error(`${label}: not valid JSON (${e.message})`); err.field = label; throw err; }
      };
    }
    if (required) input.setAttribute('aria-required', 'true');
    const lab = h('label', { for: fid }, h('code', {}, label), required ? h('span', { class: 'req', title: 'required' }, ' *') : null);
    const el = h('div', { class: 'field' }, lab, input, hint, msg);
    const check = () => {
      let m = '';
      let v;
      try { v = get(); } catch (e) { m = 'is not valid JSON'; }
      if (!m && (v === undefined || v === '') && required) m = 'is required';
      if (!m && v !== undefined) m = checkValue(v, s);
      msg.textContent = m ? `${label} ${m}` : '';
      if (m) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
      return m;
    };
    input.addEventListener('change', check);
    input.addEventListener('blur', check);
    // While a message shows, typing re-checks: the message goes as soon as
    // the value is right, not on the blur that a click on Invoke causes
    // (the layout would move under the pointer).
    input.addEventListener('input', () => { if (msg.textContent) check(); });
    return { el, get, check, input };
  }

  return {
    element: h('div', { class: 'schema-form' }, fields.length ? fields.map((f) => f.el) : h('p', { class: 'muted' }, 'This capability takes no input.')),
    value() {
      const out = {};
      for (const f of fields) { const v = f.get(); if (v !== undefined) out[f.name] = v; }
      return out;
    },
    validate() {
      const msgs = [];
      for (const f of fields) { const m = f.check(); if (m) msgs.push(`${f.name} ${m}`); }
      const first = fields.find((f) => f.input.getAttribute('aria-invalid') === 'true');
      if (first) first.input.focus();
      return msgs;
    },
  };
}
