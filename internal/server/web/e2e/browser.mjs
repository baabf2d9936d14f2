// browser.mjs drives Debian's chromium with playwright-core through one
// scenario of caphub's web UI and prints a JSON report on stdout:
//   node browser.mjs NPM_DIR BASE_URL SCENARIO SHOT_DIR PARAMS_JSON
// PARAMS_JSON: {chromium, token, ...}. A failed step exits 1 with the
// reason on stderr (and a screenshot SCENARIO-failed.png).
import path from 'node:path';
import fs from 'node:fs/promises';
import { startBrowser } from './session.mjs';

const [npmDir, base, scenario, shots, paramsJSON] = process.argv.slice(2);
const params = JSON.parse(paramsJSON || '{}');
const { context, page, report, close } = await startBrowser(npmDir, scenario, params);

const shot = (name, opts = {}) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true, ...opts });
const text = (sel) => page.locator(sel).first().innerText();
const ready = '#catalog-results[data-count]:not([aria-busy])';

async function login(token) {
  await page.locator('#login[open]').waitFor();
  await page.fill('#login-token', token);
  await page.click('#login-form button[type=submit]');
}

const scenarios = {
  // search → open a capability → read its schema → try it → see the output
  async browse() {
    await page.goto(`${base}/`);
    if (params.token) await login(params.token);
    await page.locator(ready).waitFor();
    report.checks.defaultRoute = new URL(page.url()).hash;
    await page.locator('#catalog-q').pressSequentially('add two numbers', { delay: 25 });
    await page.waitForFunction(() => document.getElementById('catalog-status').textContent.includes('add two numbers'));
    const hit = page.locator('a.hit-title[href*="/capability/everruns/add"]');
    await hit.first().waitFor();
    report.checks.catalogHash = new URL(page.url()).hash;
    report.checks.status = await text('#catalog-status');
    await shot('catalog');
    await hit.first().click();
    await page.locator('#input-schema').waitFor();
    report.checks.title = await text('main h1');
    // A route change moves focus to <main> (a screen reader reads the new
    // page); Tab then reaches the page's first link.
    report.checks.focusAfterRoute = await page.evaluate(() => document.activeElement && document.activeElement.id);
    await page.keyboard.press('Tab');
    report.checks.firstTab = await page.evaluate(() => document.activeElement && document.activeElement.textContent);
    report.checks.inputSchema = await text('#input-schema');
    report.checks.toolName = await page.locator('#tool-name').innerText().catch(() => '');
    await shot('capability');
    // Invoke with nothing filled: inline messages, no call.
    await page.click('#try-run');
    report.checks.validation = await text('#try-errors');
    report.checks.fieldErrors = await page.locator('#try-form .field-error:not(:empty)').allInnerTexts();
    const field = (name) => page.locator('#try-form .field').filter({ has: page.locator('label code', { hasText: new RegExp(`^${name}$`) }) }).locator('input, select, textarea');
    await field('a').fill('2');
    await field('b').fill('3.5');
    await page.click('#try-run');
    await page.locator('#try-result [data-outcome]').waitFor();
    report.checks.outcome = await page.locator('#try-result [data-outcome]').getAttribute('data-outcome');
    report.checks.result = await text('#try-result');
    report.checks.focusAfterInvoke = await page.evaluate(() => document.activeElement && document.activeElement.id);
    await shot('tryit');
    await page.locator('#h-try').scrollIntoViewIfNeeded();
    await page.evaluate(() => document.getElementById('h-try').scrollIntoView({ block: 'start' }));
    await shot('readme-tryit', { fullPage: false });
  },

  // a call the policy holds: the pending approval's id and a link to Approvals
  async pending() {
    await page.goto(`${base}/#/capability/everruns/add`);
    if (params.token) await login(params.token);
    await page.locator('#try-form').waitFor();
    const field = (name) => page.locator('#try-form .field').filter({ has: page.locator('label code', { hasText: new RegExp(`^${name}$`) }) }).locator('input');
    await field('a').fill('1');
    await field('b').fill('2');
    await page.click('#try-run');
    await page.locator('#try-result [data-outcome]').waitFor();
    report.checks.outcome = await page.locator('#try-result [data-outcome]').getAttribute('data-outcome');
    report.checks.approval = await page.locator('#approval-id').innerText().catch(() => '');
    report.checks.link = await page.locator('#try-result a[href="#/approvals"]').count();
    report.checks.result = await text('#try-result');
    await shot('pending');
    // Before approval, running it again is still held. The Go test approves
    // it through the API once this script writes the id to the handoff
    // folder (and answers with a file "approved"); then it completes.
    await page.click('#try-approved');
    await page.locator('#try-result [data-outcome]').waitFor();
    report.checks.beforeApproval = await page.locator('#try-result [data-outcome]').getAttribute('data-outcome');
    await fs.writeFile(path.join(params.handoff, 'approval'), report.checks.approval);
    for (let i = 0; i < 200; i++) {
      try { await fs.access(path.join(params.handoff, 'approved')); break; } catch { await page.waitForTimeout(50); }
    }
    await page.click('#try-approved');
    await page.locator('#try-result [data-outcome="ok"]').waitFor();
    report.checks.afterApproval = await text('#try-result');
    await shot('approved');
  },

  // the shared helpers, run in the page: routes, schema trees with cycles
  // and depth, forms and their validation; and API text is never markup
  async helpers() {
    await page.goto(`${base}/`);
    if (params.token) await login(params.token);
    await page.locator(ready).waitFor();
    report.checks.units = await page.evaluate(async () => {
      const ui = await import('/ui/ui.js');
      const app = await import('/ui/app.js');
      const cat = await import('/ui/pages/catalog.js');
      const out = {};
      const r = app.parseRoute('#/capability/a.b/x%20y@1.2?scheme=mcp');
      out.route = [r.name, ...r.parts, r.query.get('scheme')].join('|');
      out.routeDefault = app.parseRoute('').name;
      out.hash = cat.capabilityHash('mcp:fs.local/read_file@1.0', '1.0.3');
      const cyclic = { $ref: '#/$defs/node', $defs: { node: { type: 'object', description: 'a node', properties: { child: { $ref: '#/$defs/node' }, name: { type: 'string' } } } } };
      out.cycle = ui.schemaTree(cyclic).textContent;
      let deep = { type: 'string' };
      for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { [`l${i}`]: deep } };
      const deepTree = ui.schemaTree(deep);
      out.deep = deepTree.textContent.includes('deeper than 8 levels');
      out.deepItems = deepTree.querySelectorAll('li').length;
      out.unresolved = ui.schemaTree({ $ref: '#/$defs/none' }).textContent;
      const el = ui.h('p', { class: 'x' }, '<img src=x onerror="window.pwned=9">', 3, null, ['a', 'b']);
      out.text = [el.textContent, el.querySelectorAll('img').length].join('|');
      try { ui.h('p', { style: 'color:red' }); out.style = 'allowed'; } catch (e) { out.style = 'refused'; }
      const f = ui.formFromSchema({
        type: 'object', required: ['name', 'n', 'kind'],
        properties: {
          name: { type: 'string', minLength: 2, pattern: '^[a-z]+$' }, n: { type: 'integer', minimum: 1, maximum: 5 },
          kind: { type: 'string', enum: ['x', 'y'] }, opt: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' } }, note: { type: 'string' },
        },
      });
      document.body.appendChild(f.element);
      out.empty = f.validate();
      const inputs = f.element.querySelectorAll('input, select, textarea');
      const set = (i, v) => { inputs[i].value = v; inputs[i].dispatchEvent(new Event('change')); };
      set(0, 'A'); set(1, '7.5'); set(2, '0'); set(4, '[1');
      out.bad = f.validate();
      set(0, 'abc'); set(1, '3'); set(4, '["t"]');
      out.good = f.validate();
      out.value = JSON.stringify(f.value());
      out.labels = [...f.element.querySelectorAll('label')].every((l) => l.htmlFor && document.getElementById(l.htmlFor));
      f.element.remove();
      return out;
    });
    // Text from the API is text: a hostile title and description render as themselves.
    await page.locator('#catalog-q').fill('hostile');
    await page.waitForFunction(() => document.getElementById('catalog-status').textContent.includes('hostile'));
    report.checks.hostileHit = await text('#catalog-results');
    await page.locator('a.hit-title[href*="/capability/demo/hostile"]').click();
    await page.locator('#input-schema').waitFor();
    report.checks.hostilePage = await text('main');
    report.checks.pwned = await page.evaluate(() => window.pwned === undefined ? 'no' : String(window.pwned));
    report.checks.injected = await page.locator('main img, main script, main svg, main b').count();
  },

  // compare two versions and see the breaking change flagged
  async diff() {
    await page.goto(`${base}/#/capability/demo/lint@2.0.0`);
    if (params.token) await login(params.token);
    await page.locator('#diff-result table').waitFor();
    report.checks.versions = await text('.timeline');
    report.checks.diff = await text('#diff-result');
    report.checks.outputSchema = await text('#output-schema');
    await shot('diff');
    await page.evaluate(() => window.scrollTo(0, document.getElementById('h-versions').getBoundingClientRect().top + window.scrollY - 16));
    await shot('readme-diff', { fullPage: false });
    // Two quick changes, the first answered last (as by a loaded server):
    // the page shows the comparison asked last, not the answer that came
    // last (it did, under load: a CI run saw 2.0.0 against itself).
    let stale = null;
    await page.route(/\/diff\?from=2\.0\.0&to=2\.0\.0/, (route) => {
      stale = new Promise((r) => setTimeout(r, 1000)).then(() => route.continue()).catch(() => {});
    });
    await page.selectOption('#diff-from', '2.0.0');
    await page.selectOption('#diff-to', '1.0.0');
    await page.locator('#diff-result .bad-text').waitFor();
    if (stale) {
      const answered = page.waitForResponse((r) => r.url().includes('from=2.0.0&to=2.0.0'), { timeout: 5000 }).catch(() => null);
      await stale;
      if (await answered) await page.waitForTimeout(300);
    }
    await page.unroute(/\/diff\?from=2\.0\.0&to=2\.0\.0/);
    report.checks.backwards = await text('#diff-result');
    await page.setViewportSize({ width: 390, height: 844 });
    report.checks.phoneOverflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    await shot('capability-phone');
    await page.evaluate(() => document.getElementById('h-diff').scrollIntoView({ block: 'start' }));
    await shot('capability-phone-diff', { fullPage: false });
  },

  // a page refused without the needed scope: the problem's detail is shown
  async forbidden() {
    await page.goto(`${base}/#/catalog`);
    await login(params.token);
    await page.locator('.problem').waitFor();
    report.checks.problem = await text('.problem');
    await shot('forbidden');
  },

  // a wrong token: the login form comes back with the reason
  async unauthorized() {
    await page.goto(`${base}/#/catalog`);
    await login('not-a-token');
    await page.locator('#login[open]').waitFor();
    await page.waitForFunction(() => document.getElementById('login-reason').textContent !== '');
    report.checks.reason = await text('#login-reason');
    report.checks.stored = await page.evaluate(() => Object.keys(sessionStorage));
    report.checks.cookies = (await context.cookies()).length;
    await shot('login');
  },

  // time until the first catalog page is shown, on a large registry
  async measure() {
    const runs = [];
    for (let i = 0; i < (params.runs || 5); i++) {
      // A new document each time (the query differs), timed from its navigation start.
      const t0 = Date.now();
      await page.goto(`${base}/?run=${i}#/catalog`);
      await page.locator(ready).waitFor();
      const wall = Date.now() - t0;
      const nav = await page.evaluate(() => {
        const n = performance.getEntriesByType('navigation')[0];
        const shown = performance.getEntriesByName('caphub:catalog-shown')[0];
        const api = performance.getEntriesByType('resource').filter((e) => e.name.includes('/registry/'));
        return {
          shown: shown.startTime, domContentLoaded: n.domContentLoadedEventEnd,
          api: api.map((e) => ({ url: e.name.replace(location.origin, ''), ttfb: Math.round((e.responseStart - e.requestStart) * 10) / 10, total: Math.round(e.duration * 10) / 10, bytes: e.transferSize })),
        };
      });
      runs.push({ wall, ...nav, count: Number(await page.locator('#catalog-results').getAttribute('data-count')) });
    }
    report.checks.list = runs;
    const search = [];
    for (const q of params.queries || ['report', 'create issue']) {
      await page.locator('#catalog-q').fill('');
      await page.locator(ready).waitFor();
      const before = await page.evaluate(() => performance.now());
      await page.locator('#catalog-q').fill(q);
      await page.waitForFunction((want) => {
        const r = document.querySelector('#catalog-results');
        return r && !r.hasAttribute('aria-busy') && document.getElementById('catalog-status').textContent.includes(want);
      }, q);
      const after = await page.evaluate(() => performance.now());
      search.push({ q, ms: after - before, status: await text('#catalog-status') });
    }
    report.checks.search = search;
    await shot('catalog-100k', { fullPage: false });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/#/catalog`);
    await page.locator(ready).waitFor();
    await shot('catalog-phone', { fullPage: false });
  },

  // every page of the shell, for screenshots (the other pages may not be built yet)
  async pages() {
    for (const name of params.pages || []) {
      await page.goto(`${base}/#/${name}`);
      if (params.token && name === (params.pages || [])[0]) await login(params.token);
      await page.waitForFunction(() => !document.getElementById('page').hasAttribute('aria-busy'));
      await page.waitForTimeout(300);
      await shot(`page-${name}`);
    }
  },
};

try {
  if (!scenarios[scenario]) throw new Error(`no scenario ${scenario}: one of ${Object.keys(scenarios).join(', ')}`);
  await scenarios[scenario]();
  process.stdout.write(JSON.stringify(report));
} catch (e) {
  await shot(`${scenario}-failed`).catch(() => {});
  process.stderr.write(`${scenario}: ${e.stack || e}\nreport so far: ${JSON.stringify(report)}\n`);
  process.exitCode = 1;
} finally {
  await close();
}
