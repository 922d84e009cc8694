// Captures pages of JobRunr's dashboard with headless Chromium, driven through the DevTools
// protocol over a pipe (--remote-debugging-pipe: fd 3 carries commands to the browser, fd 4 its
// answers, each message JSON ended by a NUL). No WebSocket, no npm package: node's own
// child_process is the whole client.
//
// For each shot it navigates, then polls document.body.innerText until every `expect` pattern
// (a regular expression) matches and the text has stopped changing for 1 s, relative times
// such as "12 seconds ago" aside (the dashboard keeps an event stream open, so "network idle"
// never comes; its content is what we wait for); it may then click an element by its text and
// wait again (`click`, `expectAfterClick`), and takes the PNG. It writes the page text it waited on to `textOut` (default <out>.txt) for the caller.
//
//   node capture.mjs SPEC.json
//
// SPEC: {"chromium": "/usr/bin/chromium", "profile": "/tmp/dir", "auth": "user:password",
//        "width": 1280, "height": 800, "timeoutMs": 60000,
//        "shots": [{"url": "http://…", "out": "a.png", "textOut": "a.txt", "expect": ["Succeeded\\s+4"],
//                   "height": 1000, "click": "Job Processing", "expectAfterClick": ["exit code"]}, …]}
// Exits 0 when every shot was taken, 1 (naming the shot and the text it saw) when one timed out.
// CAPTURE_DEBUG=1 prints, at every poll, which patterns are still missing. Chromium's own
// sandbox is off (--no-sandbox): it refuses to start as root otherwise, as in CI.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const width = spec.width ?? 1280;
const height = spec.height ?? 800;
const timeoutMs = spec.timeoutMs ?? 60000;

const browser = spawn(spec.chromium, [
  '--headless', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
  '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--hide-scrollbars',
  '--mute-audio', '--no-proxy-server', '--disable-background-networking', '--disable-component-update',
  '--force-color-profile=srgb', '--lang=en-US', `--user-data-dir=${spec.profile}`,
  `--window-size=${width},${height}`, 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => { browser.kill('SIGKILL'); process.exit(128 + (signal === 'SIGINT' ? 2 : 15)); });
}

let stderr = '';
browser.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
const toBrowser = browser.stdio[3];
const fromBrowser = browser.stdio[4];

let nextId = 1;
const pending = new Map();
let buffered = Buffer.alloc(0);
fromBrowser.on('data', (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  let end;
  while ((end = buffered.indexOf(0)) >= 0) {
    const message = JSON.parse(buffered.subarray(0, end).toString('utf8'));
    buffered = buffered.subarray(end + 1);
    const waiter = message.id !== undefined && pending.get(message.id);
    if (waiter) {
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(`${waiter.method}: ${message.error.message}`));
      else waiter.resolve(message.result);
    }
  }
});
browser.on('error', (e) => {
  console.error(`capture: cannot run ${spec.chromium}: ${e.message}`);
  process.exit(1);
});
browser.on('exit', (code, signal) => {
  for (const waiter of pending.values()) {
    waiter.reject(new Error(`chromium exited (${code ?? signal}) during ${waiter.method}; its stderr:\n${stderr}`));
  }
  pending.clear();
});

function send(method, params = {}, sessionId) {
  const id = nextId++;
  const message = { id, method, params };
  if (sessionId) message.sessionId = sessionId;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, method });
    toBrowser.write(JSON.stringify(message) + '\0');
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pageText(session) {
  const { result } = await send('Runtime.evaluate', {
    expression: 'document.body ? document.body.innerText : ""', returnByValue: true,
  }, session);
  return result.value ?? '';
}

const RELATIVE_TIME = /\b(\d+|a few|an?)\s+(seconds?|minutes?|hours?|days?|months?|years?)\s+(ago|from now)\b/g;

// Polls the page's text until every pattern matches and the text has held still for 1 s (the
// counts and the list arrive in separate answers, and the page's transitions take a moment).
async function waitForText(session, label, patterns, ms) {
  const deadline = Date.now() + ms;
  let previous = null;
  let stableSince = 0;
  for (;;) {
    const text = await pageText(session);
    const missing = patterns.filter((p) => !p.test(text));
    if (missing.length === 0) {
      // Relative times ("39 seconds ago") tick every second: they do not count as a change.
      const settled = text.replace(RELATIVE_TIME, '(when)');
      if (settled === previous) {
        if (Date.now() - stableSince >= 1000) return text;
      } else {
        previous = settled;
        stableSince = Date.now();
      }
    } else {
      previous = null;
    }
    if (Date.now() > deadline) {
      throw new Error(`${label}: after ${ms} ms the page still lacks `
        + `${missing.map(String).join(', ') || 'a text that holds still'}; its text was:\n${text}`);
    }
    if (process.env.CAPTURE_DEBUG) console.error(`capture: ${label}: missing ${missing.map(String).join(', ') || '(none)'}`);
    await sleep(250);
  }
}

async function shoot(session, shot) {
  const ms = shot.timeoutMs ?? timeoutMs;
  const began = Date.now();
  await send('Emulation.setDeviceMetricsOverride',
    { width, height: shot.height ?? height, deviceScaleFactor: 1, mobile: false }, session);
  await send('Page.navigate', { url: shot.url }, session);
  let text = await waitForText(session, shot.url, (shot.expect ?? []).map((p) => new RegExp(p)), ms);
  if (shot.click) {
    // Opens a collapsed part of the page: clicks the last element whose whole text is shot.click.
    const { result } = await send('Runtime.evaluate', { returnByValue: true, expression: `(() => {
      const want = ${JSON.stringify(shot.click)};
      const hits = [...document.querySelectorAll('body *')].filter((el) => el.innerText && el.innerText.trim() === want);
      if (hits.length === 0) return false;
      hits[hits.length - 1].click();
      return true;
    })()` }, session);
    if (!result.value) throw new Error(`${shot.url}: no element reads ${JSON.stringify(shot.click)} to click`);
    text = await waitForText(session, `${shot.url} after a click on ${JSON.stringify(shot.click)}`,
      (shot.expectAfterClick ?? []).map((p) => new RegExp(p)), ms);
  }
  await sleep(300); // one more frame for the last paint
  const { data } = await send('Page.captureScreenshot', { format: 'png' }, session);
  const png = Buffer.from(data, 'base64');
  writeFileSync(shot.out, png);
  writeFileSync(shot.textOut ?? `${shot.out}.txt`, text);
  console.log(`capture: ${shot.out} (${png.length} bytes) from ${shot.url}, its content there in ${Date.now() - began} ms`);
}

let exitCode = 0;
try {
  const { targetInfos } = await send('Target.getTargets');
  const page = targetInfos.find((t) => t.type === 'page');
  const targetId = page ? page.targetId : (await send('Target.createTarget', { url: 'about:blank' })).targetId;
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  await send('Page.enable', {}, sessionId);
  await send('Network.enable', {}, sessionId);
  if (spec.auth) {
    // Basic auth on every request of the page, the event stream's too.
    await send('Network.setExtraHTTPHeaders', {
      headers: { Authorization: `Basic ${Buffer.from(spec.auth).toString('base64')}` },
    }, sessionId);
  }
  for (const shot of spec.shots) {
    await shoot(sessionId, shot);
  }
} catch (e) {
  console.error(`capture: ${e.message}`);
  exitCode = 1;
} finally {
  try { await Promise.race([send('Browser.close'), sleep(3000)]); } catch { /* already gone */ }
  if (browser.exitCode === null) browser.kill('SIGKILL');
}
process.exit(exitCode);
