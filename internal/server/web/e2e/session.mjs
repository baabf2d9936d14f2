// session.mjs starts Debian's chromium through playwright-core for one
// scenario script (browser.mjs, ops.mjs): a fresh profile, the flags this
// machine's closed network needs, and a report that collects the page's
// console errors and warnings and its uncaught exceptions.
import path from 'node:path';
import os from 'node:os';
import fs from 'node:fs/promises';
import { pathToFileURL } from 'node:url';

// startBrowser opens chromium (params.chromium, else /usr/bin/chromium) at
// params.width × params.height (1280 × 860) and returns its context, its
// page, the report and close, which ends chromium and removes the profile.
export async function startBrowser(npmDir, scenario, params) {
  const { chromium } = await import(pathToFileURL(path.join(npmDir, 'playwright-core', 'index.mjs')).href);
  const userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'caphub-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: params.chromium || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: params.width || 1280, height: params.height || 860 },
  });
  const page = context.pages()[0] || await context.newPage();
  const report = { scenario, console: [], checks: {} };
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') report.console.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => report.console.push(`pageerror: ${e.message}`));
  page.setDefaultTimeout(15000);
  const close = async () => {
    await context.close();
    await fs.rm(userDataDir, { recursive: true, force: true });
  };
  return { context, page, report, close };
}
