// ops.js: what the operator pages (overview, servers, agents, approvals,
// audit) share beyond ui.js: their stylesheet, SVG charts drawn here (no
// chart library), and small formatters. Like ui.js, text from the API only
// ever goes in as text nodes, and nothing sets a style attribute (CSP):
// ops.css styles the charts by class.

import { h } from './ui.js';

const SVG = 'http://www.w3.org/2000/svg';

/** useStyles() links ops.css once (a <link>, which the CSP allows: 'self'). */
export function useStyles() {
  if (document.getElementById('ops-css')) return;
  document.head.appendChild(h('link', { id: 'ops-css', rel: 'stylesheet', href: '/ui/ops.css' }));
}

/** s(tag, attrs, ...children) is h() for SVG elements. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'style') throw new Error('ops.s: no style attributes (CSP): use a class');
    el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** num(n) formats a count: 1234 → "1,234". */
export function num(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : '';
}

/** compact(n) is a short count for a chart: 950, 9.5k, 95k, 1.2M. */
export function compact(n) {
  if (typeof n !== 'number') return '';
  const a = Math.abs(n);
  const f = (v, u) => `${Number(v.toPrecision(v < 10 ? 2 : 3))}${u}`;
  if (a >= 1e6) return f(n / 1e6, 'M');
  if (a >= 1e3) return f(n / 1e3, 'k');
  return String(Number(n.toPrecision(3)));
}

/** pct(part, whole) is a percentage with one decimal, "" without a whole. */
export function pct(part, whole) {
  return whole ? `${(100 * part / whole).toFixed(part && part < whole / 1000 ? 2 : 1)} %` : '–';
}

/** hhmm(date, withDay) is a short UTC time label for a chart axis. */
export function hhmm(d, withDay) {
  const t = new Date(d);
  const p = (n) => String(n).padStart(2, '0');
  const time = `${p(t.getUTCHours())}:${p(t.getUTCMinutes())}`;
  return withDay ? `${p(t.getUTCMonth() + 1)}-${p(t.getUTCDate())} ${time}` : time;
}

/** niceMax(v) rounds a chart's top up to 1, 2 or 5 × 10^n. */
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const e = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * e) return m * e;
  return 10 * e;
}

/** shortURI('ossa:acme/send@1.2') → 'acme/send@1.2'. */
export function shortURI(uri) {
  return String(uri || '').replace(/^[a-z]+:/, '');
}

/** capabilityHash(uri) is the Capability page of a URI, '' when it is not one. */
export function capabilityHash(uri) {
  const m = /^(?:[a-z]+:)?([^/@]+)\/([^@]+)(@.+)?$/.exec(String(uri || ''));
  if (!m) return '';
  return `#/capability/${encodeURIComponent(m[1])}/${encodeURIComponent(m[2])}${m[3] || ''}`;
}

/**
 * chart({title, desc, width, height}) is an accessible SVG frame: role img,
 * <title> and <desc> for screen readers; draw into its .plot group with
 * the returned scale helpers.
 */
function frame({ title, desc, width, height, pad }) {
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': title, preserveAspectRatio: 'xMidYMid meet' },
    s('title', {}, title), s('desc', {}, desc));
  const plot = s('g', { class: 'plot', transform: `translate(${pad.l},${pad.t})` });
  svg.appendChild(plot);
  return { svg, plot, w: width - pad.l - pad.r, ht: height - pad.t - pad.b };
}

/**
 * timeChart(buckets, series, opts) draws values over time buckets.
 * series: [{key, label, cls, kind: 'bar'|'line', axis: 'left'|'right', value(b) → number|null}].
 * opts: {title, desc, leftLabel, rightLabel, rightMax, format(v, axis)}.
 */
export function timeChart(buckets, series, opts) {
  const width = 480;
  const height = 220;
  const pad = { l: 44, r: opts.rightLabel ? 44 : 12, t: 26, b: 30 };
  const { svg, plot, w, ht } = frame({ title: opts.title, desc: opts.desc, width, height, pad });
  const n = Math.max(buckets.length, 1);
  const bw = w / n;
  const maxOf = (axis) => niceMax(Math.max(0, ...series.filter((x) => (x.axis || 'left') === axis)
    .flatMap((x) => buckets.map((b) => x.value(b) ?? 0))));
  const top = { left: maxOf('left'), right: opts.rightMax ?? maxOf('right') };
  const y = (v, axis) => ht - (ht * v) / top[axis || 'left'];
  const fmt = opts.format || ((v) => num(v));
  // Grid and axes.
  // Round steps: a top of 2×10^n in 4, of 1 or 5×10^n in 5.
  const lead = top.left / 10 ** Math.floor(Math.log10(top.left));
  const steps = Math.round(lead) === 2 ? 4 : 5;
  for (let i = 0; i <= steps; i++) {
    const v = (top.left * i) / steps;
    const yy = y(v, 'left');
    plot.appendChild(s('line', { x1: 0, x2: w, y1: yy, y2: yy, class: i ? 'grid' : 'axis' }));
    plot.appendChild(s('text', { x: -6, y: yy + 4, class: 'tick', 'text-anchor': 'end' }, fmt(v, 'left')));
    if (opts.rightLabel) {
      plot.appendChild(s('text', { x: w + 6, y: y((top.right * i) / steps, 'right') + 4, class: 'tick' }, fmt((top.right * i) / steps, 'right')));
    }
  }
  const every = Math.max(1, Math.ceil(n / 6));
  const multiDay = buckets.length > 1 && (new Date(buckets[buckets.length - 1].start) - new Date(buckets[0].start)) > 86400e3;
  buckets.forEach((b, i) => {
    if (i % every === 0) plot.appendChild(s('text', { x: i * bw + bw / 2, y: ht + 18, class: 'tick', 'text-anchor': 'middle' }, hhmm(b.start, multiDay)));
  });
  plot.appendChild(s('text', { x: -pad.l + 4, y: -12, class: 'axis-label' }, opts.leftLabel || ''));
  if (opts.rightLabel) plot.appendChild(s('text', { x: w + pad.r - 4, y: -12, class: 'axis-label', 'text-anchor': 'end' }, opts.rightLabel));
  const bars = series.filter((x) => x.kind === 'bar');
  bars.forEach((x, j) => {
    const sub = (bw * 0.8) / bars.length;
    buckets.forEach((b, i) => {
      const v = x.value(b) || 0;
      if (!v) return;
      const yy = y(v, x.axis);
      plot.appendChild(s('rect', { x: i * bw + bw * 0.1 + j * sub, y: yy, width: Math.max(sub, 1), height: ht - yy, class: `bar ${x.cls}` },
        s('title', {}, `${hhmm(b.start, true)} UTC: ${x.label} ${fmt(v, x.axis || 'left')}`)));
    });
  });
  for (const x of series.filter((z) => z.kind === 'line')) {
    const pts = [];
    buckets.forEach((b, i) => {
      const v = x.value(b);
      if (v === null || v === undefined) return;
      pts.push([i * bw + bw / 2, y(v, x.axis), b, v]);
    });
    if (pts.length > 1) plot.appendChild(s('polyline', { points: pts.map(([a, c]) => `${a.toFixed(1)},${c.toFixed(1)}`).join(' '), class: `line ${x.cls}` }));
    for (const [a, c, b, v] of pts) {
      plot.appendChild(s('circle', { cx: a.toFixed(1), cy: c.toFixed(1), r: 3, class: `dot ${x.cls}` },
        s('title', {}, `${hhmm(b.start, true)} UTC: ${x.label} ${fmt(v, x.axis || 'left')}`)));
    }
  }
  return h('figure', { class: 'chart-box' }, svg,
    h('figcaption', {}, legend(series), opts.caption ? h('span', { class: 'muted small' }, opts.caption) : null));
}

/** legend(series) names each series beside its colour swatch. */
export function legend(series) {
  return h('ul', { class: 'legend' }, series.map((x) => h('li', {},
    s('svg', { viewBox: '0 0 12 12', class: 'swatch', 'aria-hidden': 'true' }, s('rect', { width: 12, height: 12, class: `bar ${x.cls}` })), x.label)));
}

/**
 * barList(items, opts) draws horizontal bars, one per item: label(item),
 * value(item), part(item) (a second, darker share of the bar: e.g. errors),
 * href(item) (the label links there).
 */
export function barList(items, opts) {
  const rowH = 28;
  const labelW = 190;
  const width = 480;
  const height = Math.max(items.length, 1) * rowH + 8;
  const w = width - labelW - 96; // room for "6.7k (1.7k err)" after the longest bar
  const max = Math.max(1, ...items.map(opts.value));
  // A group, not an image: its capability names are links.
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'group', 'aria-label': opts.title },
    s('title', {}, opts.title), s('desc', {}, opts.desc));
  items.forEach((it, i) => {
    const yy = i * rowH + 4;
    const v = opts.value(it);
    const part = opts.part ? opts.part(it) : 0;
    const label = opts.label(it);
    const text = s('text', { x: labelW - 8, y: yy + rowH / 2 + 4, class: 'bar-label', 'text-anchor': 'end' }, label.length > 24 ? `${label.slice(0, 23)}…` : label);
    const href = opts.href ? opts.href(it) : '';
    svg.appendChild(href ? s('a', { href }, text) : text);
    const bw = (w * v) / max;
    svg.appendChild(s('rect', { x: labelW, y: yy + 3, width: Math.max(bw, 1), height: rowH - 8, class: 'bar calls' },
      s('title', {}, `${label}: ${opts.tip ? opts.tip(it) : num(v)}`)));
    if (part) svg.appendChild(s('rect', { x: labelW, y: yy + 3, width: Math.max((w * part) / max, 1), height: rowH - 8, class: 'bar errors' }));
    svg.appendChild(s('text', { x: labelW + bw + 6, y: yy + rowH / 2 + 4, class: 'tick' }, opts.tip ? opts.tip(it) : num(v)));
  });
  return h('figure', { class: 'chart-box' }, svg, opts.legend ? h('figcaption', {}, legend(opts.legend)) : null);
}

/** dataTable(label, columns, rows) is a chart's data as a table behind a disclosure (for screen readers and exact values). */
export function dataTable(label, table) {
  return h('details', { class: 'chart-data' }, h('summary', {}, label), table);
}

/** field(label, input, hint) is a labelled form field (the input gets an id when it has none). */
let fieldSeq = 0;
export function field(label, input, hint) {
  if (!input.id) input.id = `f${++fieldSeq}`;
  const hintEl = hint ? h('span', { class: 'hint', id: `${input.id}-hint` }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, hintEl);
}

/** status(kind, text) is a live region line (role status) for an action's outcome. */
export function status() {
  return h('p', { class: 'op-status', role: 'status', 'aria-live': 'polite' });
}

/** wide(tableWrap) marks a ui.table() that scrolls sideways at phone widths rather than crushing its columns. */
export function wide(el) {
  el.classList.add('wide');
  return el;
}

/** isScopeError(err) says whether err is a 403 (the token lacks a scope). */
export function isScopeError(err) {
  return !!err && err.status === 403;
}
