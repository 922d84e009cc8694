// Behaviour a live server does not show on demand (503s, a restarted attempt, 429), against a
// scripted fake server on loopback (node:http, no dependencies).
import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  Outrun, OutrunError, UnavailableError, RateLimitedError, UnreachableError, progress,
} from '@outrun/client';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const err = (code, message) => ({ status: 'error', error: { code, message }, guidance: `do ${code}` });
const chunk = (text, cursor, { done = false, restarted = false, attempt = 1 } = {}) => ({
  executionId: 'e1', status: done ? 'succeeded' : 'running', attempt, restarted,
  stdout: { text, droppedBytes: 0, totalBytes: 0 }, stderr: { text: '', droppedBytes: 0, totalBytes: 0 },
  cursor, done, more: false, exitCode: done ? 0 : null, guidance: 'g',
});
const EXEC = { executionId: 'e1', status: 'queued', cursor: 'c0', guidance: 'g' };
const UNAVAILABLE = [503, err('database_unavailable', 'down'), { 'Retry-After': '0' }];

describe('offline (scripted fake server)', () => {
  let server, url, script, seen, o;

  beforeEach(async () => {
    script = {};
    seen = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        const path = req.url.split('?')[0];
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        const queue = script[`${req.method} ${path}`] ?? [[404, err('route_not_found', 'no'), {}]];
        const [status, payload, headers] = queue.length > 1 ? queue.shift() : queue[0];
        res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
        res.end(JSON.stringify(payload));
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${server.address().port}`;
    o = new Outrun(url, { token: 'tok', retries: 2 });
  });

  afterEach(() => new Promise((resolve) => server.close(resolve)));

  test('a GET is retried on 503', async () => {
    script['GET /v1/executions/e1'] = [UNAVAILABLE, UNAVAILABLE, [200, EXEC, {}]];
    assert.equal((await o.get('e1')).executionId, 'e1');
    assert.equal(seen.length, 3);
    assert.equal(seen[0].headers.authorization, 'Bearer tok');
  });

  test('a GET gives up after the retries', async () => {
    script['GET /v1/executions/e1'] = [UNAVAILABLE];
    await assert.rejects(o.get('e1'), (e) => e instanceof UnavailableError && e.code === 'database_unavailable'
      && e.retryAfter === 0 && e.status === 503 && e.guidance === 'do database_unavailable');
    assert.equal(seen.length, 3);
  });

  test('a submit without a key is not retried', async () => {
    script['POST /v1/executions'] = [UNAVAILABLE, [202, EXEC, {}]];
    await assert.rejects(o.run('echo hi'), UnavailableError);
    assert.equal(seen.length, 1);
  });

  test('a submit with a key is retried', async () => {
    script['POST /v1/executions'] = [UNAVAILABLE, [202, EXEC, {}]];
    assert.equal((await o.run('echo hi', { idempotencyKey: 'k1', maxAttempts: 1 })).executionId, 'e1');
    assert.equal(seen.length, 2);
    assert.equal(seen[1].headers['idempotency-key'], 'k1');
    assert.equal(seen[1].headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(seen[1].body), { command: 'echo hi', maxAttempts: 1 });
  });

  test('429 is RateLimitedError with retryAfter', async () => {
    script['POST /v1/executions'] = [[429, err('too_many_queued', 'cap'), { 'Retry-After': '10' }]];
    await assert.rejects(o.run('echo hi', { idempotencyKey: 'k' }),
      (e) => e instanceof RateLimitedError && e.code === 'too_many_queued' && e.retryAfter === 10);
    assert.equal(seen.length, 1);
  });

  test('identity and cancelWithParent in the submit', async () => {
    script['POST /v1/executions'] = [[202, EXEC, {}]];
    await o.run('a', { identity: true });
    await o.run('b', { identity: 'https://svc.example', cancelWithParent: false });
    await o.run('c', { identity: false });
    const bodies = seen.map((r) => JSON.parse(r.body));
    assert.deepEqual(bodies[0], { command: 'a', identity: {} });
    assert.deepEqual(bodies[1], { command: 'b', cancelWithParent: false, identity: { audience: 'https://svc.example' } });
    assert.deepEqual(bodies[2], { command: 'c' });
  });

  test('progress from the run env, tried again when too fast', async () => {
    const stored = { percent: 40, message: '2 of 5', at: '2026-01-01T00:00:00Z' };
    script['POST /v1/executions/e1/progress'] = [[429, err('progress_too_fast', 'slow'), { 'Retry-After': '0' }], [200, stored, {}]];
    const saved = { ...process.env };
    Object.assign(process.env, { OUTRUN_API: url, OUTRUN_API_TOKEN: 'run-tok', OUTRUN_EXECUTION_ID: 'e1', OUTRUN_TOKEN: 'owner' });
    try {
      assert.deepEqual(await progress(40, '2 of 5'), stored);
      assert.equal(Outrun.fromRunEnv().token, 'run-tok');
    } finally {
      for (const k of ['OUTRUN_API', 'OUTRUN_API_TOKEN', 'OUTRUN_EXECUTION_ID', 'OUTRUN_TOKEN']) {
        if (k in saved) process.env[k] = saved[k]; else delete process.env[k];
      }
    }
    assert.equal(seen.length, 2);
    assert.equal(seen[1].url, '/v1/executions/e1/progress');
    assert.equal(seen[1].headers.authorization, 'Bearer run-tok');
    assert.deepEqual(JSON.parse(seen[1].body), { percent: 40, message: '2 of 5' });
  });

  test('outside a run', async () => {
    const saved = { ...process.env };
    for (const k of ['OUTRUN_API_TOKEN', 'OUTRUN_EXECUTION_ID']) delete process.env[k];
    try {
      assert.throws(() => Outrun.fromRunEnv(), (e) => e instanceof OutrunError && e.code === 'not_in_run');
      await assert.rejects(o.progress(10), (e) => e.code === 'not_in_run');
      await assert.rejects(o.progress(null, null, { id: 'e1' }), TypeError);
      process.env.OUTRUN_API_TOKEN = 'run-tok';
      delete process.env.OUTRUN_TOKEN;
      assert.equal(new Outrun(url).token, 'run-tok', 'the run token is the default inside a run');
      assert.equal(new Outrun(url, { token: 'given' }).token, 'given');
    } finally {
      for (const k of ['OUTRUN_API_TOKEN', 'OUTRUN_EXECUTION_ID', 'OUTRUN_TOKEN']) {
        if (k in saved) process.env[k] = saved[k]; else delete process.env[k];
      }
    }
  });

  test('follow reports a restarted attempt and passes cursors on', async () => {
    script['GET /v1/executions/e1/output'] = [
      [200, chunk('a\n', 'c1'), {}], [200, chunk('', 'c2'), {}],
      [200, chunk('a\n', 'c3', { restarted: true, attempt: 2 }), {}], [200, chunk('b\n', 'c4', { done: true, attempt: 2 }), {}]];
    const got = [];
    for await (const c of o.follow('e1')) got.push([c.stdout.text, c.restarted, c.done]);
    assert.deepEqual(got, [['a\n', false, false], ['a\n', true, false], ['b\n', false, true]]);
    assert.equal(seen[0].url, '/v1/executions/e1/output?waitMs=30000');
    assert.ok(seen[1].url.startsWith('/v1/executions/e1/output?cursor=c1&'));
    assert.ok(seen[3].url.startsWith('/v1/executions/e1/output?cursor=c3&'));
  });

  test('nothing listening is UnreachableError', async () => {
    const port = server.address().port;
    await new Promise((resolve) => server.close(resolve));
    server = createServer(); // afterEach closes this one
    const dead = new Outrun(`http://127.0.0.1:${port}`, { token: 't', retries: 1 });
    await assert.rejects(dead.get('e1'), (e) => e instanceof UnreachableError && e instanceof OutrunError && e.status === undefined);
  });

  test('submitBatch sends each item and answers each result', async () => {
    const answer = { accepted: 2, refused: 1, results: [
      { index: 0, status: 202, execution: EXEC, replayed: false },
      { index: 1, status: 400, error: err('invalid_request', 'timeoutMs: must be at least 1, got -5') },
      { index: 2, status: 202, execution: { ...EXEC, executionId: 'e2' }, replayed: true }] };
    script['POST /v1/executions/batch'] = [[200, answer, {}]];
    const got = await o.submitBatch([
      'echo a',
      { command: 'echo b', timeoutMs: -5, labels: { k: 'v' }, files: { 'x.bin': new Uint8Array([0]) } },
      { command: 'echo c', idempotencyKey: 'k3', identity: true, maxAttempts: 1 },
    ], { traceparent: TRACEPARENT, output: 'none' });
    assert.deepEqual(got, answer);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].method, 'POST');
    assert.equal(seen[0].url, '/v1/executions/batch?output=none');
    assert.equal(seen[0].headers['content-type'], 'application/json');
    assert.equal(seen[0].headers.traceparent, TRACEPARENT);
    assert.equal(seen[0].headers['idempotency-key'], undefined);
    assert.deepEqual(JSON.parse(seen[0].body), { submissions: [
      { command: 'echo a' },
      { command: 'echo b', timeoutMs: -5, labels: { k: 'v' }, files: [{ path: 'x.bin', content: 'AA==', encoding: 'base64' }] },
      { command: 'echo c', maxAttempts: 1, identity: {}, idempotencyKey: 'k3' }] });
  });

  test('a whole batch refused throws, not retried without a key on every item', async () => {
    script['POST /v1/executions/batch'] = [[413, err('batch_too_large', '1001 > 1000'), {}]];
    await assert.rejects(o.submitBatch(['true', 'true']),
      (e) => e instanceof OutrunError && e.status === 413 && e.code === 'batch_too_large');
    script['POST /v1/executions/batch'] = [[503, err('database_disk_full', 'full'), { 'Retry-After': '30' }]];
    await assert.rejects(o.submitBatch(['true', { command: 'true', idempotencyKey: 'k' }]),
      (e) => e instanceof UnavailableError && e.code === 'database_disk_full' && e.retryAfter === 30);
    script['POST /v1/executions/batch'] = [UNAVAILABLE, [200, { results: [] }, {}]];
    await assert.rejects(o.submitBatch(['true', { command: 'true', idempotencyKey: 'k' }]), UnavailableError);
    assert.equal(seen.length, 3, 'one request each');
  });

  test('a batch whose every item has a key is retried', async () => {
    const ok = { accepted: 1, refused: 0, results: [{ index: 0, status: 202, execution: EXEC, replayed: false }] };
    script['POST /v1/executions/batch'] = [UNAVAILABLE, [200, ok, {}]];
    assert.equal((await o.submitBatch([{ command: 'true', idempotencyKey: 'k1' }])).results[0].execution.executionId, 'e1');
    assert.equal(seen.length, 2);
    assert.equal(seen[0].body, seen[1].body);
  });

  test('batch arguments are checked before sending', async () => {
    await assert.rejects(o.submitBatch('echo a'), TypeError);
    await assert.rejects(o.submitBatch([42]), /submissions\[0\]/);
    await assert.rejects(o.submitBatch(['x', { command: 'a', traceparent: TRACEPARENT }]), /submissions\[1\]: traceparent/);
    assert.equal(seen.length, 0);
  });

  test('an answer without the error shape is UnreachableError', async () => {
    script['GET /v1/executions/e1'] = [[502, { oops: 1 }, {}]];
    await assert.rejects(o.get('e1'), (e) => e instanceof UnreachableError && e.status === 502);
  });
});
