// ops.mjs drives Debian's chromium with playwright-core through the
// operator pages of caphub's web UI (overview, servers, agents, approvals,
// audit) and prints a JSON report on stdout, as browser.mjs does:
//   node ops.mjs NPM_DIR BASE_URL SCENARIO SHOT_DIR PARAMS_JSON
// PARAMS_JSON: {chromium, token, width, height, ...}. A failed step exits 1
// with the reason on stderr (and a screenshot SCENARIO-failed.png).
import path from 'node:path';
import fs from 'node:fs/promises';
import { startBrowser } from './session.mjs';

const [npmDir, base, scenario, shots, paramsJSON] = process.argv.slice(2);
const params = JSON.parse(paramsJSON || '{}');
const { page, report, close } = await startBrowser(npmDir, scenario, params);

const suffix = params.suffix || '';
// shot saves a screenshot and notes whether the page fits the viewport's
// width (nothing wider than the screen but the scrolling tables).
const shot = async (name) => {
  report.checks[`fits:${name}`] = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  await page.screenshot({ path: path.join(shots, `${name}${suffix}.png`), fullPage: true });
};
const text = (sel) => page.locator(sel).first().innerText();

// open goes to a route and logs in when the page asks.
async function open(hash, ready) {
  await page.goto(`${base}/${hash}`);
  if (params.token) {
    await page.locator('#login[open]').waitFor();
    await page.fill('#login-token', params.token);
    await page.click('#login-form button[type=submit]');
  }
  await page.locator(ready).first().waitFor();
  await page.waitForFunction(() => !document.getElementById('page').hasAttribute('aria-busy'));
}

// go follows an in-app link (the token stays in the tab's session storage).
async function go(hash, ready) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.locator(ready).first().waitFor();
  await page.waitForFunction(() => !document.getElementById('page').hasAttribute('aria-busy'));
}

const scenarios = {
  // The overview with real calls: counts, the three charts, recent activity.
  async overview() {
    const t0 = Date.now();
    await open('#/overview', '#ov-figures');
    await page.locator('svg.chart, #ov-recent').first().waitFor();
    report.checks.shownMS = Date.now() - t0; // with the login, when there is one
    if (params.timeOnly) return;
    await page.locator('svg.chart').first().waitFor();
    report.checks.figures = await text('#ov-figures');
    report.checks.charts = await page.locator('svg.chart').count();
    report.checks.bars = await page.locator('svg.chart rect.bar.calls').count();
    report.checks.lines = await page.locator('svg.chart polyline.line, svg.chart circle.dot').count();
    report.checks.barLabels = await page.locator('svg.chart .bar-label').allTextContents();
    report.checks.activity = await text('section[aria-labelledby=ov-recent]');
    report.checks.chartTitles = await page.locator('svg.chart > title').allTextContents();
    await shot('overview');
  },

  // A saved server, its tools and a re-discovery with its report.
  async servers() {
    await open('#/servers', 'main table');
    report.checks.list = await text('main table');
    if (params.command) {
      // Discover a new server from the form.
      await page.getByLabel('Name', { exact: true }).fill(params.newServer);
      await page.getByLabel('Transport').selectOption('stdio');
      await page.getByLabel('Command or URL').fill(params.command);
      await page.click('form.inline-form button[type=submit]');
      await page.locator('section[aria-labelledby=sv-new] [role=region], section[aria-labelledby=sv-new] .problem').first().waitFor({ timeout: 60000 });
      report.checks.discovered = await text('section[aria-labelledby=sv-new] [aria-live]');
      await page.waitForFunction(() => document.querySelector('main table caption').textContent.startsWith('2 saved'));
      report.checks.listAfter = await text('main table');
    }
    await shot('servers');
    await page.click(`main table a[href="#/servers/${params.server}"]`);
    await page.locator('#sv-rediscover').waitFor();
    report.checks.tools = await text('#sv-tools + div');
    await page.click('#sv-rediscover');
    await page.locator('#sv-report [role=region], #sv-report .problem').first().waitFor({ timeout: 60000 });
    report.checks.report = await text('#sv-report');
    await shot('server');
  },

  // An agent: capabilities in order and the composed config; a broken one.
  async agents() {
    await open('#/agents', 'main table');
    report.checks.list = await text('main table');
    await go(`#/agents/${params.agent}`, '#ag-prompt');
    report.checks.prompt = await text('#ag-prompt');
    report.checks.tables = await page.locator('main table').allInnerTexts();
    await shot('agent');
    if (params.broken) {
      await go(`#/agents/${params.broken}`, '#ag-problems');
      report.checks.problems = await text('#ag-problems');
      report.checks.brokenTables = await page.locator('main table').allInnerTexts();
      await shot('agent-broken');
    }
  },

  // Approve a pending call, run it, see it complete, then see it in the history.
  async approvals() {
    // Linked to one approval: it comes first, marked.
    await open(`#/approvals?id=${params.deny}`, '#ap-list article.wanted');
    report.checks.firstID = await page.locator('#ap-list article').first().getAttribute('data-id');
    report.checks.pending = await text('#ap-list');
    await shot('approvals');
    const card = page.locator(`article.approval[data-id="${params.approval}"]`);
    await card.locator('input[name=reason]').fill('checked the input');
    await card.locator('button', { hasText: 'Approve' }).click();
    await card.locator('button', { hasText: 'Run the approved call' }).waitFor();
    report.checks.approved = await card.innerText();
    await card.locator('button', { hasText: 'Run the approved call' }).click();
    await card.locator('.ap-result pre, .ap-result .problem').first().waitFor();
    report.checks.result = await card.locator('.ap-result').innerText();
    report.checks.after = await card.innerText();
    await shot('approval-run');
    if (params.deny) {
      const other = page.locator(`article.approval[data-id="${params.deny}"]`);
      await other.locator('input[name=reason]').fill('not during the freeze');
      await other.locator('button', { hasText: 'Deny' }).click();
      await other.locator('.badge', { hasText: 'denied' }).waitFor();
      report.checks.denied = await other.innerText();
    }
    await go('#/approvals?status=all', '#ap-count');
    report.checks.history = await text('#ap-list');
  },

  // Filter the audit chain and verify it.
  async audit() {
    await open('#/audit', 'main table');
    report.checks.all = await page.locator('main table tbody tr').count();
    await page.selectOption('select[name=kind]', 'invocation');
    await page.click('form[role=search] button[type=submit]');
    await page.waitForFunction(() => location.hash.includes('kind=invocation'));
    await page.locator('main table').waitFor();
    await page.waitForFunction(() => !document.getElementById('page').hasAttribute('aria-busy'));
    report.checks.hash = new URL(page.url()).hash;
    report.checks.kinds = await page.locator('main table tbody tr td:nth-child(3)').allInnerTexts();
    // Two quick filters, the first answered last (as by a loaded server):
    // the page shows the events asked last, and only them.
    let stale = null;
    const registered = /\/v1\/audit\?.*kind=registered/;
    await page.route(registered, (route) => {
      stale = new Promise((r) => setTimeout(r, 1000)).then(() => route.continue()).catch(() => {});
    });
    await page.evaluate(() => { location.hash = '#/audit?kind=registered'; });
    await page.waitForFunction(() => location.hash.includes('kind=registered'));
    await page.evaluate(() => { location.hash = '#/audit?kind=invocation'; });
    await page.locator('main table').waitFor();
    await page.waitForFunction(() => !document.getElementById('page').hasAttribute('aria-busy'));
    if (stale) await stale;
    await page.waitForTimeout(300);
    await page.unroute(registered);
    report.checks.staleTables = await page.locator('main table').count();
    report.checks.staleKinds = await page.locator('main table tbody tr td:nth-child(3)').allInnerTexts();
    await page.click('#au-newest');
    await page.waitForFunction(() => location.hash.includes('after_seq='));
    await page.waitForFunction(() => !document.getElementById('page').hasAttribute('aria-busy'));
    report.checks.newestHash = new URL(page.url()).hash;
    report.checks.newestSeqs = await page.locator('main table tbody tr td:nth-child(1)').allInnerTexts();
    await page.click('#au-verify-btn');
    await page.locator('#au-verify section.verify').waitFor({ timeout: 60000 });
    report.checks.verify = await text('#au-verify');
    await shot('audit');
  },
};

try {
  if (!scenarios[scenario]) throw new Error(`no scenario ${scenario}`);
  await scenarios[scenario]();
} catch (e) {
  await page.screenshot({ path: path.join(shots, `${scenario}${suffix}-failed.png`), fullPage: true }).catch(() => {});
  process.stderr.write(`${scenario}: ${e && e.stack || e}\nchecks so far: ${JSON.stringify(report.checks)}\nconsole: ${report.console.join('\n')}\n`);
  await close();
  process.exit(1);
}
await close();
process.stdout.write(JSON.stringify(report));
