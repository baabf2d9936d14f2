// app.js: the shell's hash router. A route is #/{name}/{parts…}?{query};
// each name loads its page module, which exports
//   render(root, route, ctx) → optional cleanup function
// with root the cleared <main>, route = {name, parts, query: URLSearchParams}
// and ctx = {api, ui, navigate(hash), replace(hash), rerender(), signal}.
// Each render has its own ctx: its signal is aborted, and so are the API
// requests its api makes, as soon as another render starts, so that a page
// answered late never writes into the page that replaced it.

import { api, ApiError, onUnauthorized, getToken, setToken } from './api.js';
import * as ui from './ui.js';

export const pages = {
  overview: () => import('./pages/overview.js'),
  catalog: () => import('./pages/catalog.js'),
  capability: () => import('./pages/capability.js'),
  servers: () => import('./pages/servers.js'),
  agents: () => import('./pages/agents.js'),
  approvals: () => import('./pages/approvals.js'),
  audit: () => import('./pages/audit.js'),
};

const titles = {
  overview: 'Overview', catalog: 'Catalog', capability: 'Capability', servers: 'MCP servers',
  agents: 'Agents', approvals: 'Approvals', audit: 'Audit',
};

export const defaultRoute = '#/catalog';

/** parseRoute('#/capability/acme/send@1.2?x=1') → {name, parts, query}. */
export function parseRoute(hash) {
  const raw = (hash || '').replace(/^#\/?/, '');
  const i = raw.indexOf('?');
  const path = i < 0 ? raw : raw.slice(0, i);
  const qs = i < 0 ? '' : raw.slice(i + 1);
  const parts = path.split('/').filter(Boolean).map((s) => { try { return decodeURIComponent(s); } catch { return s; } });
  const name = parts.shift() || 'catalog';
  return { name, parts, query: new URLSearchParams(qs) };
}

/** routeHash(name, parts, query) is the hash of a route (the inverse of parseRoute). */
export function routeHash(name, parts = [], query) {
  const p = [name, ...parts.map((s) => encodeURIComponent(s).replace(/%40/g, '@'))].join('/');
  const q = query ? new URLSearchParams(query).toString() : '';
  return `#/${p}${q ? `?${q}` : ''}`;
}

const root = document.getElementById('page');
let cleanup = null;
let seq = 0;
let current = null; // the AbortController of the render under way
let first = true;

function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

// replace changes the address without rendering again (a page keeping its
// own state in the query, such as the catalog's search box).
function replace(hash) {
  history.replaceState(history.state, '', hash);
}

const ctx = { api, ui, navigate, replace, rerender: () => render() };

// renderContext is ctx for one render: its api's requests end with the
// render (an AbortError), besides any signal a page passes itself.
function renderContext(signal) {
  const bound = (opts) => ({ ...opts, signal: opts && opts.signal ? AbortSignal.any([signal, opts.signal]) : signal });
  const scoped = {
    ...api,
    get: (path, query, opts = {}) => api.get(path, query, bound(opts)),
    post: (path, body, opts = {}) => api.post(path, body, bound(opts)),
    put: (path, body, opts = {}) => api.put(path, body, bound(opts)),
    del: (path, opts = {}) => api.del(path, bound(opts)),
    send: (method, path, opts = {}) => api.send(method, path, bound(opts)),
  };
  return { ...ctx, api: scoped, signal };
}

function markNav(name) {
  for (const a of document.querySelectorAll('header nav a')) {
    const on = (a.dataset.route || '').split(' ').includes(name);
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
}

async function render() {
  if (!location.hash.startsWith('#/')) {
    replace(defaultRoute);
  }
  const route = parseRoute(location.hash);
  const mine = ++seq;
  if (current) current.abort();
  current = new AbortController();
  const pageCtx = renderContext(current.signal);
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  markNav(route.name);
  document.title = `${titles[route.name] || 'Not found'} · caphub`;
  root.replaceChildren(ui.loading());
  root.setAttribute('aria-busy', 'true');
  if (!first) root.focus({ preventScroll: true });
  first = false;
  const load = pages[route.name];
  if (!load) {
    root.replaceChildren(ui.h('h1', {}, 'Not found'),
      ui.h('p', {}, `There is no page “${route.name}”. `, ui.h('a', { href: defaultRoute }, 'Open the catalog'), '.'));
    root.removeAttribute('aria-busy');
    return;
  }
  let mod;
  try {
    mod = await load();
  } catch (e) {
    if (mine !== seq) return;
    root.replaceChildren(ui.h('h1', {}, titles[route.name]),
      ui.h('p', { class: 'notice' }, `The ${titles[route.name]} page is not built yet.`),
      ui.h('p', { class: 'muted small' }, String(e && e.message || e)));
    root.removeAttribute('aria-busy');
    return;
  }
  if (mine !== seq) return;
  root.replaceChildren();
  try {
    const done = await mod.render(root, route, pageCtx);
    if (mine !== seq) { if (typeof done === 'function') done(); return; }
    if (typeof done === 'function') cleanup = done;
  } catch (e) {
    if (mine !== seq) return;
    if (e && e.name === 'AbortError') return;
    if (!(e instanceof ApiError)) console.error(e);
    root.replaceChildren(ui.h('h1', {}, titles[route.name]));
    ui.showError(root, e);
  } finally {
    if (mine === seq) root.removeAttribute('aria-busy');
  }
}

// The login dialog: shown on a 401, it stores the token and renders again.
const dialog = document.getElementById('login');
const form = document.getElementById('login-form');
const input = document.getElementById('login-token');
const reason = document.getElementById('login-reason');

function showLogin(err) {
  reason.textContent = err ? (err.detail || err.title) : '';
  if (!dialog.open) dialog.showModal();
  input.focus();
}

function sessionState() {
  const has = !!getToken();
  document.getElementById('session-state').textContent = has ? 'Token set' : '';
  document.getElementById('logout').hidden = !has;
  document.getElementById('login-open').hidden = has;
}

// A 401 means the token is missing, wrong, expired or revoked: forget it.
onUnauthorized((err) => { setToken(''); sessionState(); showLogin(err); });

form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (!input.value.trim()) return;
  setToken(input.value);
  input.value = '';
  dialog.close();
  sessionState();
  render();
});
document.getElementById('login-cancel').addEventListener('click', () => dialog.close());
document.getElementById('login-open').addEventListener('click', () => showLogin(null));
document.getElementById('logout').addEventListener('click', () => { setToken(''); sessionState(); render(); });
document.getElementById('skip').addEventListener('click', (ev) => { ev.preventDefault(); root.focus(); });

window.addEventListener('hashchange', () => render());
sessionState();
render();
