// @outrun/client: a client of Outrun's HTTP API on fetch alone (Node >= 18 and browsers).
// Plain JavaScript (ESM); the types are in index.d.ts.

/** States in which an execution has ended. */
export const TERMINAL = Object.freeze(['succeeded', 'failed', 'timed_out', 'cancelled']);

/** Options of run() and the submit fields (SubmitRequest) they become; others pass through as they are. */
export const SUBMIT_FIELDS = Object.freeze([
  'command', 'waitMs', 'waitFor', 'files', 'artifacts', 'workspace', 'env', 'labels', 'timeoutMs', 'identity',
]);
/** Fields of an Execution answer this client reads (wait(), list()). */
export const EXECUTION_READS = Object.freeze(['executionId', 'status', 'cursor']);
/** Fields of a Progress answer (POST .../progress) it reads. */
export const PROGRESS_READS = Object.freeze(['percent', 'message', 'at']);
/** Fields of an OutputChunk answer this client reads (follow()). */
export const CHUNK_READS = Object.freeze(['stdout', 'stderr', 'cursor', 'done', 'restarted']);
/** Fields of a StreamDelta (a chunk's stdout / stderr) it reads. */
export const STREAM_DELTA_READS = Object.freeze(['text']);

const SLACK_MS = 30_000; // on top of a long poll's wait before giving up on an answer
const DEFAULT_API = 'http://localhost:8080';
const env = (name) => (typeof process !== 'undefined' && process.env ? process.env[name] : undefined);

/** true asks for the server's default audience, a string names one; an object passes as it is. */
function identityOf(identity) {
  if (identity == null || identity === false) return undefined;
  if (identity === true) return {};
  if (typeof identity === 'string') return { audience: identity };
  return identity;
}

/**
 * An error from the Outrun API, or the failure to reach it: `status` (HTTP; undefined when there
 * was no answer), `code` (the API's stable code), `message`, `guidance`, `retryAfter` (seconds).
 */
export class OutrunError extends Error {
  constructor(message, { status, code = 'unknown', guidance, retryAfter, body, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.guidance = guidance;
    this.retryAfter = retryAfter;
    this.body = body;
  }
}
/** 400: invalid_request, image_not_allowed, ... (the message names the field). */
export class InvalidRequestError extends OutrunError {}
/** 401 identity_required: no token, or an unknown or revoked one. */
export class IdentityRequiredError extends OutrunError {}
/** 403, e.g. admin_required. */
export class ForbiddenError extends OutrunError {}
/** 404: execution_not_found (also another owner's id), artifact_not_stored, ... */
export class NotFoundError extends OutrunError {}
/** 409: idempotency_key_reused, execution_finished, ... */
export class ConflictError extends OutrunError {}
/** 429: too_many_queued, too_many_waiting; nothing was stored. */
export class RateLimitedError extends OutrunError {}
/** 503: database_unavailable, database_disk_full, ...; try again after retryAfter seconds. */
export class UnavailableError extends OutrunError {}
/** No answer (connection refused, reset, timed out), or one that is not Outrun's. */
export class UnreachableError extends OutrunError {
  constructor(message, opts = {}) {
    super(message, { ...opts, code: 'unreachable' });
  }
}

const BY_STATUS = {
  400: InvalidRequestError, 401: IdentityRequiredError, 403: ForbiddenError, 404: NotFoundError,
  409: ConflictError, 429: RateLimitedError, 503: UnavailableError,
};

function retryAfterOf(value) {
  if (!value) return undefined;
  const n = Number(value);
  if (Number.isFinite(n)) return Math.max(0, n);
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}

function errorOf(status, body, retryAfter) {
  const info = body && typeof body === 'object' ? body.error : undefined;
  if (!info || typeof info !== 'object') {
    return new UnreachableError(`HTTP ${status} without Outrun's error shape: is this an Outrun API?`, { status, body });
  }
  const Cls = BY_STATUS[status] ?? OutrunError;
  return new Cls(String(info.message ?? ''), {
    status, code: String(info.code ?? 'unknown'), guidance: body.guidance, retryAfter, body,
  });
}

function base64(bytes) {
  if (typeof Buffer !== 'undefined') return Buffer.from(bytes).toString('base64');
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** `{path: string | Uint8Array}` becomes the API's file list; an array passes as it is. */
function filesOf(files) {
  if (files == null || Array.isArray(files)) return files;
  return Object.entries(files).map(([path, content]) => {
    if (content instanceof ArrayBuffer) content = new Uint8Array(content);
    return ArrayBuffer.isView(content)
      ? { path, content: base64(new Uint8Array(content.buffer, content.byteOffset, content.byteLength)), encoding: 'base64' }
      : { path, content };
  });
}

/** The JSON body of a submit (SubmitRequest) for run()'s options: files and identity in their short forms too. */
function submissionOf(command, { files, identity, ...fields }) {
  const body = { command, ...fields };
  if (files != null) body.files = filesOf(files);
  body.identity = identityOf(identity);
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}

/** One submission of a batch: a command, or run()'s options with command and its own idempotencyKey. */
function batchItemOf(s, index) {
  if (typeof s === 'string') return { command: s };
  if (s == null || typeof s !== 'object' || Array.isArray(s)) {
    throw new TypeError(`submissions[${index}]: a command string or run() options with command, got ${s === null ? 'null' : typeof s}`);
  }
  const { command, idempotencyKey, signal, output, ...fields } = s;
  for (const header of ['traceparent', 'tracestate']) {
    if (header in fields) throw new TypeError(`submissions[${index}]: ${header} applies to the whole batch: pass it to submitBatch()`);
  }
  const item = submissionOf(command, fields);
  if (idempotencyKey != null) item.idempotencyKey = String(idempotencyKey);
  return item;
}

function traceHeaders(traceparent, tracestate) {
  const headers = { 'Content-Type': 'application/json' };
  if (traceparent != null) headers.traceparent = String(traceparent);
  if (tracestate != null) headers.tracestate = String(tracestate);
  return headers;
}

const seg = (value) => {
  if (value == null || value === '') throw new TypeError('an execution id (or name) is required');
  return encodeURIComponent(String(value));
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client of one Outrun API with one token. */
export class Outrun {
  /**
   * @param {string} [api] the API's URL; default OUTRUN_API (Node), else http://localhost:8080
   * @param {object} [options] token (default OUTRUN_TOKEN, else inside a run its own OUTRUN_API_TOKEN), retries (3),
   *   fetch, timeoutMs (30000), maxRetryWaitMs
   */
  constructor(api, options = {}) {
    if (api && typeof api === 'object') {
      options = api;
      api = options.api;
    }
    this.api = String(api || env('OUTRUN_API') || DEFAULT_API).replace(/\/+$/, '');
    const token = options.token ?? (env('OUTRUN_TOKEN') || env('OUTRUN_API_TOKEN'));
    this.token = token ? String(token).trim() : undefined;
    this.retries = options.retries ?? 3;
    this.timeoutMs = options.timeoutMs ?? SLACK_MS;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 30_000;
    this.fetch = options.fetch ?? ((...args) => globalThis.fetch(...args));
  }

  /**
   * A client for code running inside an Outrun run: OUTRUN_API with the run's own token
   * OUTRUN_API_TOKEN. It acts as the run's owner within the run's scope: submit children (labelled
   * parent=<id>, cancelled with the run unless cancelWithParent: false), read, wait for and cancel
   * them, read the run itself, report progress(). Throws OutrunError (code not_in_run) outside a run.
   */
  static fromRunEnv(options = {}) {
    const api = env('OUTRUN_API');
    const token = env('OUTRUN_API_TOKEN');
    if (!api || !token) {
      throw new OutrunError('not inside an Outrun run: OUTRUN_API and OUTRUN_API_TOKEN are set only in the'
        + ' environment of a run whose node can sign run tokens', { code: 'not_in_run' });
    }
    return new Outrun(api, { ...options, token });
  }

  /**
   * Submits a command. waitMs waits (up to 30 s) for the end, or with waitFor: 'output' for the
   * first output. idempotencyKey: a repeat returns the first execution (and the submit is
   * retried on a 503 or a lost connection). traceparent / tracestate (W3C headers) put the
   * execution's spans in the caller's trace; the command gets TRACEPARENT / TRACESTATE. Other
   * submit fields pass through (maxAttempts, ...). identity: true or an audience string gives the
   * command OUTRUN_ID_TOKEN, a JWT signed by the fleet's key that a service verifies against the
   * API's /.well-known/jwks.json (true: the operator's default audience).
   */
  async run(command, options = {}) {
    const { idempotencyKey, traceparent, tracestate, output, signal, ...fields } = options;
    const headers = traceHeaders(traceparent, tracestate);
    if (idempotencyKey != null) headers['Idempotency-Key'] = String(idempotencyKey);
    return this.#json('POST', '/v1/executions', {
      query: { output }, body: submissionOf(command, fields), headers, waitMs: fields.waitMs,
      retry: idempotencyKey != null, signal,
    });
  }

  /**
   * Submits up to 1000 commands in one request (POST /v1/executions/batch), stored in one
   * transaction. Each submission is a command string or run()'s options with `command`
   * (`{ command, labels, idempotencyKey, maxAttempts, ... }`), without waitMs: the server refuses
   * a wait per item. A bad item fails only itself: the answer is `{ accepted, refused, results }`,
   * one result per submission in order, `{ index, status: 202, execution, replayed }` or
   * `{ index, status, error }` (the error body a single submit would answer). The whole request
   * throws (and stores nothing) when it is malformed (batch_invalid), too large (batch_too_large)
   * or the API cannot take it (401, 403, 503). traceparent / tracestate apply to every item.
   * Retried on a 503 or a lost connection only when every item carries an idempotencyKey. output:
   * how much output each execution shows ('none' | 'tail' | 'full', as for run()).
   */
  async submitBatch(submissions, { traceparent, tracestate, output, signal } = {}) {
    if (!Array.isArray(submissions)) {
      throw new TypeError('submitBatch takes an array of submissions (command strings or run() options with command)');
    }
    const items = submissions.map((s, i) => batchItemOf(s, i));
    return this.#json('POST', '/v1/executions/batch', {
      query: { output }, body: { submissions: items }, headers: traceHeaders(traceparent, tracestate), signal,
      retry: items.length > 0 && items.every((item) => item.idempotencyKey != null),
    });
  }

  /** The execution; with waitMs the answer comes as soon as it ends. output: 'none' | 'tail' | 'full'. */
  async get(id, { waitMs, output, signal } = {}) {
    return this.#json('GET', `/v1/executions/${seg(id)}`, { query: { waitMs, output }, waitMs, signal });
  }

  /** Polls until the execution ended (or timeoutMs passed) and returns it. */
  async wait(id, { timeoutMs, output, signal } = {}) {
    const deadline = timeoutMs == null ? undefined : Date.now() + timeoutMs;
    for (;;) {
      const left = deadline === undefined ? 30_000 : Math.max(0, deadline - Date.now());
      const ex = await this.get(id, { waitMs: Math.min(30_000, left) || undefined, output, signal });
      if (TERMINAL.includes(ex.status) || (deadline !== undefined && Date.now() >= deadline)) return ex;
    }
  }

  /**
   * Only the output after cursor (none: from the start); with waitMs a long poll answered as soon
   * as there is new output or the end; maxBytes bounds each stream's text (then `more`).
   */
  async output(id, { cursor, waitMs, maxBytes, signal } = {}) {
    return this.#json('GET', `/v1/executions/${seg(id)}/output`, { query: { cursor, waitMs, maxBytes }, waitMs, signal });
  }

  /**
   * Yields the output as it is printed, by cursor: each chunk with text, a `restarted` chunk (a
   * lost attempt ran again: its output starts over; drop what you kept), and the last chunk
   * (`done`, with `exitCode`). Never repeats or skips a byte.
   */
  async *follow(id, { cursor, waitMs = 30_000, maxBytes, signal } = {}) {
    for (;;) {
      const chunk = await this.output(id, { cursor, waitMs, maxBytes, signal });
      cursor = chunk.cursor || cursor;
      if (chunk.stdout?.text || chunk.stderr?.text || chunk.restarted || chunk.done) yield chunk;
      if (chunk.done) return;
    }
  }

  /** Cancels; one that already ended otherwise throws ConflictError execution_finished. */
  async cancel(id, { signal } = {}) {
    return this.#json('POST', `/v1/executions/${seg(id)}/cancel`, { signal });
  }

  /**
   * Reports this run's progress (percent 0-100 and/or message, up to 500 characters); it shows in
   * every poll, in `outrun status` and the dashboard, the latest kept. Only the run's own token may
   * (a client from fromRunEnv()); id defaults to OUTRUN_EXECUTION_ID. A report sooner than 250 ms
   * after the last is tried again a little later (twice), then throws RateLimitedError
   * progress_too_fast.
   */
  async progress(percent, message, { id, signal } = {}) {
    id = id || env('OUTRUN_EXECUTION_ID');
    if (!id) {
      throw new OutrunError('no execution to report for: OUTRUN_EXECUTION_ID is unset (not inside a run); pass { id }',
        { code: 'not_in_run' });
    }
    if (percent == null && message == null) throw new TypeError('a progress report needs a percent (0 to 100), a message, or both');
    const body = {};
    if (percent != null) body.percent = percent;
    if (message != null) body.message = message;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#json('POST', `/v1/executions/${seg(id)}/progress`, {
          body, headers: { 'Content-Type': 'application/json' }, signal,
        });
      } catch (e) {
        if (!(e instanceof OutrunError) || e.code !== 'progress_too_fast' || attempt >= 2) throw e;
        await sleep(Math.min(1000, e.retryAfter ? e.retryAfter * 1000 : 250) + 50);
      }
    }
  }

  /** A page of your executions, newest first, without output; pass `next` as `after`. */
  async list({ status, labels, limit, after, signal } = {}) {
    const query = [['status', status], ['limit', limit], ['after', after]];
    for (const [k, v] of Object.entries(labels ?? {})) query.push(['label', `${k}=${v}`]);
    return this.#json('GET', '/v1/executions', { query, signal });
  }

  /** What was kept after the command ended, and what was not (with why). */
  async artifacts(id, { signal } = {}) {
    return this.#json('GET', `/v1/executions/${seg(id)}/artifacts`, { signal });
  }

  /**
   * One artifact's bytes as a ReadableStream (the fetch body, never whole in memory); name is its
   * path in the workdir, or 'stdout' / 'stderr'.
   */
  async artifact(id, name, { signal } = {}) {
    const path = `/v1/executions/${seg(id)}/artifacts/` + String(name).split('/').map(encodeURIComponent).join('/');
    const response = await this.#send('GET', path, { headers: { Accept: '*/*' }, retry: true, signal, streaming: true });
    return response.body ?? new ReadableStream({ start: (c) => c.close() });
  }

  /** The server's OpenAPI document (GET /openapi.json). */
  async openapi({ signal } = {}) {
    return this.#json('GET', '/openapi.json', { signal });
  }

  // --- plumbing ---------------------------------------------------------------------------

  async #json(method, path, opts) {
    const response = await this.#send(method, path, opts);
    let text;
    try {
      text = await response.text();
    } catch (e) {
      throw new UnreachableError(`the answer from ${this.api} broke: ${e}`, { cause: e });
    } finally {
      opts.clear?.();
    }
    let body;
    try {
      body = text ? JSON.parse(text) : {};
    } catch (e) {
      throw new UnreachableError(`the answer from ${this.api}${path} is not JSON: is ${this.api} an Outrun API?`,
        { status: response.status, cause: e });
    }
    if (body && body.status === 'error' && body.error && typeof body.error === 'object') {
      throw errorOf(response.status, body);
    }
    return body;
  }

  async #send(method, path, opts = {}) {
    const { query, body, headers = {}, waitMs, signal, streaming } = opts;
    const retry = opts.retry ?? method === 'GET';
    let url = this.api + path;
    const pairs = (Array.isArray(query) ? query : Object.entries(query ?? {})).filter(([, v]) => v != null);
    if (pairs.length) url += '?' + new URLSearchParams(pairs.map(([k, v]) => [k, String(v)])).toString();
    const h = { Accept: 'application/json', ...headers };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    const init = { method, headers: h, body: body !== undefined ? JSON.stringify(body) : undefined };
    const limitMs = streaming ? this.timeoutMs : this.timeoutMs + (Number(waitMs) || 0);
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      const onAbort = () => controller.abort(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) controller.abort(signal.reason);
      const timer = setTimeout(() => controller.abort(new Error(`no answer within ${limitMs} ms`)), limitMs);
      const clear = () => { clearTimeout(timer); signal?.removeEventListener('abort', onAbort); };
      let wait;
      try {
        const response = await this.fetch(url, { ...init, signal: controller.signal });
        if (streaming) clearTimeout(timer); // the body may take as long as it takes
        if (response.status < 400) {
          opts.clear = clear;
          if (streaming) signal?.removeEventListener('abort', onAbort);
          return response;
        }
        let parsed;
        try {
          const text = await response.text();
          parsed = text ? JSON.parse(text) : undefined;
        } catch { /* not JSON */ }
        clear();
        const error = errorOf(response.status, parsed, retryAfterOf(response.headers.get('Retry-After')));
        if (!(retry && response.status === 503 && attempt < this.retries)) throw error;
        wait = error.retryAfter !== undefined ? error.retryAfter * 1000 : backoff(attempt);
      } catch (e) {
        clear();
        if (e instanceof OutrunError) throw e;
        if (signal?.aborted) throw e; // the caller's own abort
        if (!(retry && attempt < this.retries)) {
          throw new UnreachableError(`cannot reach the Outrun API at ${this.api}: ${e?.cause?.message ?? e?.message ?? e}`, { cause: e });
        }
        wait = backoff(attempt);
      }
      await sleep(Math.min(wait, this.maxRetryWaitMs));
    }
  }
}

function backoff(attempt) {
  return Math.min(10_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
}

/**
 * From inside a run: reports its progress, `await progress(40, '2 of 5 shards')`, with the run's
 * environment (OUTRUN_API, OUTRUN_API_TOKEN, OUTRUN_EXECUTION_ID); see Outrun#progress.
 */
export async function progress(percent, message, options) {
  return Outrun.fromRunEnv().progress(percent, message, options);
}

export default Outrun;
