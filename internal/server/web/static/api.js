// api.js: the REST API as the pages use it. The token lives in this tab's
// sessionStorage and goes out only as an Authorization: Bearer header
// (credentials: 'omit': no cookie, no HTTP auth), so nothing ambient
// exists for another site to ride.

const KEY = 'caphub.token';

/** ApiError is a non-2xx answer, read from its RFC 9457 problem document. */
export class ApiError extends Error {
  constructor(status, body, fallback) {
    const doc = body && typeof body === 'object' ? body : {};
    const title = doc.title || fallback || `HTTP ${status}`;
    super(doc.detail ? `${title}: ${doc.detail}` : title);
    this.name = 'ApiError';
    this.status = status;
    this.title = title;
    this.detail = doc.detail || (typeof body === 'string' ? body.slice(0, 500) : '');
    this.type = doc.type || '';
    this.body = body;
  }
}

const listeners = new Set();

/** onUnauthorized(fn): fn(err) runs on every 401 (the shell shows its login). */
export function onUnauthorized(fn) { listeners.add(fn); return () => listeners.delete(fn); }

export function getToken() {
  try { return sessionStorage.getItem(KEY) || ''; } catch { return ''; }
}
export function setToken(t) {
  try { t ? sessionStorage.setItem(KEY, t.trim()) : sessionStorage.removeItem(KEY); } catch { /* storage off: token unset */ }
}

function url(path, query) {
  if (!query) return path;
  const q = query instanceof URLSearchParams ? new URLSearchParams(query) : new URLSearchParams();
  if (!(query instanceof URLSearchParams)) {
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === '' || v === false) continue;
      for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
    }
  }
  const s = q.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
}

/**
 * send(method, path, {query, body, signal, headers}) answers {status,
 * headers, data} for 2xx and throws ApiError otherwise (the pages use
 * get/post/del). headers adds request headers (X-Caphub-Approval…).
 */
export async function send(method, path, { query, body, signal, headers: extra } = {}) {
  const headers = { ...(extra || {}), Accept: 'application/json, application/problem+json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(url(path, query), {
      method, headers, signal,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit', redirect: 'error', referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, { title: 'caphub did not answer', detail: `${method} ${path}: ${e && e.message}. Is caphub serve running?` });
  }
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = text; } }
  if (!res.ok) {
    const err = new ApiError(res.status, data, res.statusText);
    if (res.status === 401) for (const fn of listeners) fn(err);
    throw err;
  }
  return { status: res.status, headers: res.headers, data };
}

export const api = {
  /** get(path, query?) → parsed JSON. query: an object or URLSearchParams; empty values are left out. */
  get: async (path, query, opts = {}) => (await send('GET', path, { ...opts, query })).data,
  /** post(path, body) → parsed JSON. */
  post: async (path, body, opts = {}) => (await send('POST', path, { ...opts, body: body === undefined ? {} : body })).data,
  /** put(path, body) → parsed JSON. */
  put: async (path, body, opts = {}) => (await send('PUT', path, { ...opts, body: body === undefined ? {} : body })).data,
  /** del(path) → parsed JSON, or null for an empty answer. */
  del: async (path, opts = {}) => (await send('DELETE', path, opts)).data,
  send,
  getToken,
  setToken,
  onUnauthorized,
};

export default api;
