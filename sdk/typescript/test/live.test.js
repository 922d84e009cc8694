// Tests against a live `outrun dev` (sdk/test.sh starts one): OUTRUN_API and OUTRUN_TOKEN name it.
// Without OUTRUN_API they are skipped, unless OUTRUN_REQUIRE_LIVE=1 (sdk/test.sh sets it).
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createRequire } from 'node:module';
import {
  Outrun, OutrunError, NotFoundError, InvalidRequestError, ConflictError, IdentityRequiredError,
  SUBMIT_FIELDS, EXECUTION_READS, CHUNK_READS, STREAM_DELTA_READS, PROGRESS_READS,
} from '@outrun/client';

const LIVE = Boolean(process.env.OUTRUN_API);
if (!LIVE && process.env.OUTRUN_REQUIRE_LIVE === '1') throw new Error('OUTRUN_REQUIRE_LIVE=1 but OUTRUN_API is not set');
const skip = LIVE ? false : 'needs a live outrun dev: set OUTRUN_API and OUTRUN_TOKEN (sdk/test.sh does)';

const TERMINAL_STATES = new Set(['succeeded', 'failed', 'timed_out', 'cancelled']);
const CHATTY = 'for i in $(seq 1 200); do echo line-$i; done; sleep 1; for i in $(seq 201 400); do echo line-$i; done';
const CHATTY_TEXT = Array.from({ length: 400 }, (_, i) => `line-${i + 1}\n`).join('');

async function collect(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}

describe('live outrun dev', { skip }, () => {
  let o;
  before(() => { o = new Outrun(); }); // OUTRUN_API, OUTRUN_TOKEN

  test('run a command and read it back', async () => {
    const ex = await o.run('echo hello; echo oops >&2; exit 3', { waitMs: 20_000, labels: { sdk: 'ts' } });
    assert.equal(ex.status, 'failed');
    assert.equal(ex.exitCode, 3);
    assert.equal(ex.stdout.text, 'hello\n');
    assert.equal(ex.stderr.text, 'oops\n');
    assert.equal(ex.error.code, 'command_failed');
    assert.ok(ex.guidance && ex.cursor);
    const back = await o.get(ex.executionId);
    assert.deepEqual([back.executionId, back.status, back.exitCode, back.stdout.text], [ex.executionId, 'failed', 3, 'hello\n']);
    assert.deepEqual(back.labels, { sdk: 'ts' });
  });

  test('files, env and pass-through fields', async () => {
    const ex = await o.run('cat in.txt; od -An -tx1 bin.dat | tr -d " \\n"; echo; echo "$TZ"', {
      files: { 'in.txt': 'héllo\n', 'bin.dat': new Uint8Array([0, 255]) }, env: { TZ: 'UTC' }, waitMs: 20_000, maxAttempts: 1,
    });
    assert.equal(ex.status, 'succeeded', JSON.stringify(ex));
    assert.equal(ex.stdout.text, 'héllo\n00ff\nUTC\n');
    assert.equal(ex.maxAttempts, 1);
  });

  test('follow a chatty command by cursor, byte-exact', async () => {
    const ex = await o.run(CHATTY);
    const chunks = await collect(o.follow(ex.executionId));
    assert.equal(chunks.map((c) => c.stdout.text).join(''), CHATTY_TEXT);
    assert.equal(chunks.map((c) => c.stderr.text).join(''), '');
    assert.ok(chunks.at(-1).done);
    assert.equal(chunks.at(-1).exitCode, 0);
    assert.ok(chunks.filter((c) => c.stdout.text).length > 1, 'the sleep should split the output');
    const paged = await collect(o.follow(ex.executionId, { maxBytes: 256 }));
    assert.equal(paged.map((c) => c.stdout.text).join(''), CHATTY_TEXT);
    assert.ok(paged.length > 10);
    assert.equal((await o.get(ex.executionId, { output: 'full' })).stdout.text, CHATTY_TEXT);
  });

  test('follow from a submit cursor', async () => {
    const ex = await o.run('echo one; sleep 1; echo two', { waitMs: 10_000, waitFor: 'output' });
    assert.ok(['one\n', 'one\ntwo\n'].includes(ex.stdout.text));
    const rest = (await collect(o.follow(ex.executionId, { cursor: ex.cursor }))).map((c) => c.stdout.text).join('');
    assert.equal(ex.stdout.text + rest, 'one\ntwo\n');
  });

  test('artifacts: list and download one as a stream', async () => {
    const ex = await o.run("mkdir -p out && printf 'alpha\\nbeta\\n' > out/a.txt && echo b > out/b.txt && echo n > c.log",
      { artifacts: ['out/*.txt'], waitMs: 20_000 });
    assert.equal(ex.status, 'succeeded', JSON.stringify(ex));
    const list = await o.artifacts(ex.executionId);
    const byName = Object.fromEntries(list.artifacts.map((a) => [a.name, a]));
    assert.deepEqual(Object.keys(byName).sort(), ['out/a.txt', 'out/b.txt']);
    assert.equal(byName['out/a.txt'].status, 'stored');
    assert.equal(byName['out/a.txt'].size, 11);
    const stream = await o.artifact(ex.executionId, 'out/a.txt');
    assert.ok(stream instanceof ReadableStream);
    const dir = await mkdtemp(join(tmpdir(), 'outrun-ts-'));
    try {
      await pipeline(Readable.fromWeb(stream), createWriteStream(join(dir, 'a.txt')));
      assert.equal(await readFile(join(dir, 'a.txt'), 'utf8'), 'alpha\nbeta\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await assert.rejects(o.artifact(ex.executionId, 'out/nope.txt'), NotFoundError);
  });

  test('cancel a running sleep', async () => {
    const ex = await o.run('echo started; sleep 30', { waitMs: 20_000, waitFor: 'output' });
    assert.equal(ex.status, 'running');
    const c = await o.cancel(ex.executionId);
    assert.ok(c.status === 'cancelled' || c.cancelRequested, JSON.stringify(c));
    const end = await o.wait(ex.executionId, { timeoutMs: 40_000 });
    assert.equal(end.status, 'cancelled');
    assert.equal(end.error.code, 'cancelled');
    assert.equal((await o.cancel(ex.executionId)).status, 'cancelled');
  });

  test('cancelling a finished one is a ConflictError', async () => {
    const ex = await o.run('true', { waitMs: 20_000 });
    assert.equal(ex.status, 'succeeded');
    await assert.rejects(o.cancel(ex.executionId), (e) => e instanceof ConflictError && e.code === 'execution_finished' && e.status === 409);
  });

  test('a random id is NotFoundError', async () => {
    await assert.rejects(o.get(randomUUID()), (e) => {
      assert.ok(e instanceof NotFoundError && e instanceof OutrunError && e instanceof Error);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'execution_not_found');
      assert.ok(e.message && e.guidance);
      return true;
    });
  });

  test('an invalid submit is InvalidRequestError', async () => {
    await assert.rejects(o.run('echo never', { timeoutMs: -5 }), (e) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.status, 400);
      assert.equal(e.code, 'invalid_request');
      assert.match(e.message, /timeoutMs/);
      assert.ok(e.guidance);
      return true;
    });
  });

  test('a bad token is IdentityRequiredError', async () => {
    await assert.rejects(new Outrun(undefined, { token: 'otk_not-a-token' }).list(),
      (e) => e instanceof IdentityRequiredError && e.code === 'identity_required');
  });

  test('idempotency key', async () => {
    const key = `ts-${randomUUID()}`;
    const a = await o.run('echo once', { idempotencyKey: key, waitMs: 20_000 });
    const b = await o.run('echo once', { idempotencyKey: key });
    assert.equal(a.executionId, b.executionId);
    await assert.rejects(o.run('echo other', { idempotencyKey: key }), (e) => e instanceof ConflictError && e.code === 'idempotency_key_reused');
  });

  test('traceparent reaches the command', async () => {
    const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const e = await o.run('printf "%s" "$TRACEPARENT"', { traceparent: parent, waitMs: 20_000 });
    assert.equal(e.status, 'succeeded');
    // A node that exports traces names its attempt's span; outrun dev (no OTEL_*) passes the caller's on.
    assert.ok(e.stdout.text.startsWith('00-4bf92f3577b34da6a3ce929d0e0e4736-'), e.stdout.text);
  });

  test('list by label, in pages', async () => {
    const tag = randomUUID().slice(0, 12);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await o.run(`echo ${i}`, { labels: { batch: tag } })).executionId);
    const page = await o.list({ labels: { batch: tag }, limit: 2 });
    assert.deepEqual(page.executions.map((e) => e.executionId), [ids[2], ids[1]]);
    assert.ok(page.next);
    const rest = await o.list({ labels: { batch: tag }, limit: 2, after: page.next });
    assert.deepEqual(rest.executions.map((e) => e.executionId), [ids[0]]);
    for (const id of ids) await o.wait(id, { timeoutMs: 30_000 });
    const done = await o.list({ status: 'succeeded', labels: { batch: tag } });
    assert.equal(done.executions.length, 3);
  });

  test('progress and a child from inside a run', async (t) => {
    // Issue 31: a run reaches the API with its own token. Skipped while this server's runs lack it.
    const node = process.execPath;
    const probe = await o.run(`test -n "$OUTRUN_API_TOKEN" || echo no-token; test -n "$OUTRUN_API" || echo no-api;`
      + ` test -x '${node}' || echo no-node`, { waitMs: 20_000 });
    if (probe.stdout.text.includes('no-token')) return t.skip("this server's runs get no OUTRUN_API_TOKEN (its nodes cannot sign)");
    if (probe.stdout.text.includes('no-api')) {
      return t.skip("this server's runs cannot reach its API (no OUTRUN_API: host processes without network)");
    }
    if (probe.stdout.text.includes('no-node')) return t.skip(`no ${node} inside a run`);
    const client = await readFile(createRequire(import.meta.url).resolve('@outrun/client/package.json').replace(/package\.json$/, 'index.js'), 'utf8');
    const report = [
      "import { Outrun, progress } from './outrun.mjs';",
      "await progress(40, '2 of 5 shards');",
      'const o = Outrun.fromRunEnv();',
      "const child = await o.run('echo from-child');",
      'process.stdout.write((await o.wait(child.executionId, { timeoutMs: 60_000 })).stdout.text);',
      'console.log(child.executionId);',
      'await new Promise((r) => setTimeout(r, 2000));',
    ].join('\n');
    const ex = await o.run(`'${node}' report.mjs`, { files: { 'outrun.mjs': client, 'report.mjs': report } });
    const deadline = Date.now() + 60_000;
    let seen = await o.get(ex.executionId);
    while (!seen.progress && !TERMINAL_STATES.has(seen.status) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      seen = await o.get(ex.executionId);
    }
    assert.ok(seen.progress, JSON.stringify(seen));
    assert.deepEqual([seen.progress.percent, seen.progress.message], [40, '2 of 5 shards']);
    const end = await o.wait(ex.executionId, { timeoutMs: 90_000 });
    assert.equal(end.status, 'succeeded', end.stderr?.text);
    const [text, childId] = end.stdout.text.trim().split('\n');
    assert.equal(text, 'from-child');
    const child = await o.get(childId);
    assert.equal(child.parentId, ex.executionId);
    assert.equal(child.labels.parent, ex.executionId);
  });

  test('submitBatch answers each item', async () => {
    const tag = randomUUID().slice(0, 12);
    const key = `ts-batch-${randomUUID()}`;
    const first = await o.submitBatch([
      'echo one',
      { command: 'echo two', labels: { batch: tag }, idempotencyKey: key, maxAttempts: 1 },
      { command: 'echo never', timeoutMs: -5 },
      { command: 'echo never', waitMs: 1000 },
    ]);
    assert.deepEqual([first.accepted, first.refused], [2, 2], JSON.stringify(first));
    assert.deepEqual(first.results.map((r) => [r.index, r.status]), [[0, 202], [1, 202], [2, 400], [3, 400]]);
    assert.equal(first.results[2].error.error.code, 'invalid_request');
    assert.match(first.results[2].error.error.message, /timeoutMs/);
    assert.ok(first.results[2].error.guidance);
    assert.equal(first.results[3].error.error.code, 'wait_not_in_batch');
    const [one, two] = first.results.slice(0, 2).map((r) => r.execution);
    assert.equal(one.status, 'queued');
    assert.equal(first.results[1].replayed, false);
    assert.equal((await o.wait(one.executionId, { timeoutMs: 60_000, output: 'full' })).stdout.text, 'one\n');
    const done = await o.wait(two.executionId, { timeoutMs: 60_000, output: 'full' });
    assert.deepEqual([done.status, done.stdout.text, done.labels, done.maxAttempts], ['succeeded', 'two\n', { batch: tag }, 1]);
    // The same key again: the first execution, replayed; with another command: refused, alone.
    const again = await o.submitBatch([
      { command: 'echo two', labels: { batch: tag }, idempotencyKey: key, maxAttempts: 1 },
      { command: 'echo other', idempotencyKey: key }, 'true']);
    // A repeat answers as a single submit would: 200 once that execution has ended.
    assert.deepEqual(again.results.map((r) => r.status), [200, 409, 202], JSON.stringify(again));
    assert.ok(again.guidance);
    assert.equal(again.results[0].replayed, true);
    assert.equal(again.results[0].execution.executionId, two.executionId);
    assert.equal(again.results[1].error.error.code, 'idempotency_key_reused');
    assert.deepEqual([again.accepted, again.refused], [2, 1]);
  });

  test('a whole batch refused throws', async () => {
    await assert.rejects(o.submitBatch([]), (e) => e instanceof InvalidRequestError && e.code === 'batch_invalid');
    await assert.rejects(o.submitBatch(Array(1001).fill('true')),
      (e) => e instanceof OutrunError && e.status === 413 && e.code === 'batch_too_large');
    await assert.rejects(new Outrun({ token: 'otk_not-a-token' }).submitBatch(['true']), IdentityRequiredError);
  });

  test('schema: every field the client sends and reads exists in /openapi.json', async () => {
    const doc = await o.openapi();
    const schemas = doc.components.schemas;
    const props = (name) => new Set(Object.keys(schemas[name].properties));
    // What index.js itself sends and reads.
    const used = {
      SubmitRequest: [...SUBMIT_FIELDS, 'maxAttempts'],
      Execution: [...EXECUTION_READS],
      OutputChunk: [...CHUNK_READS],
      StreamDelta: [...STREAM_DELTA_READS],
      Progress: [...PROGRESS_READS],
      ErrorInfo: ['code', 'message'],
      Error: ['status', 'error', 'guidance'],
    };
    // What index.d.ts promises callers: each interface's fields, against its schema.
    const dts = await readFile(createRequire(import.meta.url).resolve('@outrun/client/package.json').replace(/package\.json$/, 'index.d.ts'), 'utf8');
    const typed = {
      RunOptions: 'SubmitRequest', Execution: 'Execution', OutputChunk: 'OutputChunk', StreamText: 'StreamText',
      StreamDelta: 'StreamDelta', ErrorInfo: 'ErrorInfo', ExecutionSummary: 'ExecutionSummary',
      ExecutionPage: 'ExecutionPage', Artifact: 'Artifact', InputFile: 'InputFile', Progress: 'Progress',
    };
    const clientOnly = new Set(['idempotencyKey', 'traceparent', 'tracestate', 'output', 'signal']); // headers, query, AbortSignal
    for (const [iface, schema] of Object.entries(typed)) {
      const body = dts.match(new RegExp(`export interface ${iface} \\{([\\s\\S]*?)\\n\\}`))[1];
      const fields = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]).filter((f) => !clientOnly.has(f));
      assert.ok(fields.length > 1, iface);
      (used[schema] ??= []).push(...fields);
    }
    for (const [schema, fields] of Object.entries(used)) {
      const declared = props(schema);
      assert.deepEqual(fields.filter((f) => !declared.has(f)), [], `${schema} lacks fields the client uses`);
    }
    const query = {
      '/v1/executions/{id}': ['waitMs', 'output'],
      '/v1/executions/{id}/output': ['cursor', 'waitMs', 'maxBytes'],
      '/v1/executions': ['status', 'label', 'limit', 'after'],
    };
    for (const [route, params] of Object.entries(query)) {
      const declared = new Set((doc.paths[route].get.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
      assert.deepEqual(params.filter((p) => !declared.has(p)), [], route);
    }
    for (const route of ['/v1/executions/{id}/cancel', '/v1/executions/{id}/artifacts', '/v1/executions/{id}/artifacts/{name}',
      '/v1/executions/{id}/progress', '/v1/executions/batch']) {
      assert.ok(doc.paths[route], route);
    }
    const headers = new Set(doc.paths['/v1/executions'].post.parameters.filter((p) => p.in === 'header').map((p) => p.name));
    assert.deepEqual(['Idempotency-Key', 'traceparent', 'tracestate'].filter((h) => !headers.has(h)), [], 'submit headers');
  });
});
