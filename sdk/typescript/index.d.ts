// Types of @outrun/client (hand-written; the code is index.js). Field names are the API's.

export type Status = 'queued' | 'running' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled';

export declare const TERMINAL: readonly Status[];
export declare const SUBMIT_FIELDS: readonly string[];
export declare const EXECUTION_READS: readonly string[];
export declare const PROGRESS_READS: readonly string[];
export declare const CHUNK_READS: readonly string[];
export declare const STREAM_DELTA_READS: readonly string[];

/** An input file written into the workdir before the command starts. */
export interface InputFile {
  path: string;
  /** UTF-8 text, or base64 with encoding 'base64'. */
  content: string;
  encoding?: 'utf8' | 'base64';
  /** e.g. "0755"; default 0644. */
  mode?: string | number;
}

export interface RunOptions {
  /** Wait up to this long (clamped to 30 s) for the end, or with waitFor 'output' for the first output. */
  waitMs?: number;
  waitFor?: 'end' | 'output';
  /** The API's file objects, or {path: text | bytes}. */
  files?: InputFile[] | Record<string, string | Uint8Array | ArrayBuffer>;
  /** Paths or globs relative to the workdir to keep after the end: ["out/*.txt", "dist"]. */
  artifacts?: string[];
  workspace?: string;
  env?: Record<string, string>;
  labels?: Record<string, string>;
  timeoutMs?: number;
  /** Sent as the Idempotency-Key header: a repeat returns the first execution and starts nothing. */
  idempotencyKey?: string;
  /** W3C headers: the execution's spans join this trace; the command gets TRACEPARENT / TRACESTATE. */
  traceparent?: string;
  tracestate?: string;
  /** How much output the answer shows (query ?output=). */
  output?: 'none' | 'tail' | 'full';
  maxAttempts?: number;
  maxOutputBytes?: number;
  image?: string;
  workdir?: string;
  stdin?: boolean;
  tty?: boolean;
  delayMs?: number;
  startAt?: string;
  secrets?: string[];
  network?: 'egress' | 'none';
  retry?: { maxRetries: number; backoffMs?: number; on?: string[] };
  webhook?: string;
  memoryMb?: number;
  cpus?: number;
  pids?: number;
  tmpfsMb?: number;
  /**
   * true, or an audience ("https://my-service.example"): the command gets OUTRUN_ID_TOKEN, a JWT
   * signed by the fleet's key that a service verifies against the API's /.well-known/jwks.json.
   */
  identity?: boolean | string | { audience?: string };
  /** Inside a run (a child): false lets it outlive its parent; default true. */
  cancelWithParent?: boolean;
  signal?: AbortSignal;
  /** Any other submit field passes through as it is. */
  [field: string]: unknown;
}

/** One submission of a batch: run()'s options with its command; idempotencyKey is its own. */
export type BatchSubmission = string | (Omit<RunOptions, 'waitMs' | 'waitFor' | 'traceparent' | 'tracestate' | 'output' | 'signal'> & {
  command: string;
});

/** What became of one submission of a batch, at its index in the list sent. */
export type BatchItemResult =
  | {
      index: number;
      /** 202: accepted; 200: a repeat of an idempotency key whose execution has ended. */
      status: 200 | 202;
      execution: Execution;
      /** Its idempotencyKey had been accepted before: this is that first execution. */
      replayed: boolean;
      error?: undefined;
    }
  | {
      index: number;
      /** The HTTP status a single submit would have answered for it: 400, 403, 409, 429, ... */
      status: number;
      /** The error body a single submit would have answered: error.code, error.message, guidance. */
      error: ErrorBody;
      execution?: undefined;
      replayed?: undefined;
    };

export interface BatchResult {
  accepted: number;
  refused: number;
  /** One per submission, in the order sent. */
  results: BatchItemResult[];
  /** What to do next. */
  guidance?: string;
}

/** Outrun's error shape (every error answer, and a refused batch item). */
export interface ErrorBody {
  status: 'error';
  error: ErrorInfo;
  guidance?: string;
}

export interface StreamText {
  text?: string;
  truncated: boolean;
  totalBytes: number;
  omittedBytes?: number;
}

export interface StreamDelta {
  text: string;
  droppedBytes: number;
  totalBytes: number;
}

export interface ErrorInfo {
  code: string;
  message: string;
}

export interface Execution {
  executionId: string;
  status: Status;
  command?: string;
  exitCode?: number | null;
  attempt?: number;
  maxAttempts?: number;
  cancelRequested?: boolean;
  createdAt?: string;
  startedAt?: string;
  finishedAt?: string;
  durationMs?: number;
  timeoutMs?: number;
  maxOutputBytes?: number;
  labels?: Record<string, string>;
  stdout?: StreamText;
  stderr?: StreamText;
  /** Set when it did not succeed: command_failed, timed_out, cancelled, ... */
  error?: ErrorInfo;
  guidance?: string;
  /** Output position at the end of what was printed so far: pass it to output() / follow(). */
  cursor?: string;
  waitMsClamped?: number;
  startsAt?: string;
  /** The parent's id when a run submitted this one (a child). */
  parentId?: string | null;
  /** A child: whether it is cancelled when its parent ends. */
  cancelWithParent?: boolean;
  /** Present when it was given an identity token: its audience. */
  identity?: { audience: string };
  /** What the run last reported of itself. */
  progress?: Progress | null;
  [field: string]: unknown;
}

/** The latest progress a run reported of itself. */
export interface Progress {
  percent?: number | null;
  message?: string | null;
  /** When it was stored (ISO-8601). */
  at: string;
}

export interface OutputChunk {
  executionId: string;
  status: Status;
  attempt: number;
  /** A lost attempt was run again: its output starts again from the beginning. */
  restarted: boolean;
  stdout: StreamDelta;
  stderr: StreamDelta;
  cursor: string;
  /** Finished, and this is the last output. */
  done: boolean;
  /** Stopped at maxBytes: output already printed follows. */
  more: boolean;
  exitCode?: number | null;
  guidance: string;
  waitMsClamped?: number;
}

export interface ExecutionSummary {
  executionId: string;
  status: Status;
  command: string;
  exitCode?: number | null;
  attempt: number;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  durationMs?: number;
  labels: Record<string, string>;
}

export interface ExecutionPage {
  executions: ExecutionSummary[];
  /** Pass as `after` for the next page; null on the last. */
  next?: string | null;
}

export interface Artifact {
  name: string;
  status: 'stored' | 'incomplete' | 'over_limit' | 'not_regular' | 'missing';
  size: number;
  sha256?: string | null;
  detail?: string;
  url?: string;
}

export interface ArtifactList {
  executionId: string;
  artifacts: Artifact[];
}

export interface OutrunOptions {
  /** Bearer token; default OUTRUN_TOKEN, else inside a run its own OUTRUN_API_TOKEN (Node). */
  token?: string;
  /** Times a safe request (GETs; a submit with idempotencyKey) is tried again on 503 or a lost connection; default 3. */
  retries?: number;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** Time to wait for an answer on top of a long poll's wait; default 30000. */
  timeoutMs?: number;
  /** Upper bound of one wait between retries; default 30000. */
  maxRetryWaitMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export declare class Outrun {
  /** api defaults to OUTRUN_API (Node), else http://localhost:8080. */
  constructor(api?: string, options?: OutrunOptions);
  constructor(options: OutrunOptions & { api?: string });
  /** Inside a run: OUTRUN_API with the run's own token OUTRUN_API_TOKEN; throws OutrunError not_in_run elsewhere. */
  static fromRunEnv(options?: OutrunOptions): Outrun;
  readonly api: string;
  run(command: string, options?: RunOptions): Promise<Execution>;
  /**
   * Up to 1000 submissions in one request (POST /v1/executions/batch), stored in one transaction;
   * a bad item fails only itself. Throws for the whole request (batch_invalid, batch_too_large, 401,
   * 403, 503): then nothing was stored.
   */
  submitBatch(submissions: BatchSubmission[], options?: { traceparent?: string; tracestate?: string; output?: 'none' | 'tail' | 'full' } & CallOptions): Promise<BatchResult>;
  get(id: string, options?: { waitMs?: number; output?: 'none' | 'tail' | 'full' } & CallOptions): Promise<Execution>;
  /** Polls until it ended (or timeoutMs passed). */
  wait(id: string, options?: { timeoutMs?: number; output?: 'none' | 'tail' | 'full' } & CallOptions): Promise<Execution>;
  output(id: string, options?: { cursor?: string; waitMs?: number; maxBytes?: number } & CallOptions): Promise<OutputChunk>;
  /** Chunks with text, restarted ones, and the last (done) one; by cursor, byte-exact. */
  follow(id: string, options?: { cursor?: string; waitMs?: number; maxBytes?: number } & CallOptions): AsyncGenerator<OutputChunk, void, undefined>;
  cancel(id: string, options?: CallOptions): Promise<Execution>;
  list(options?: { status?: Status; labels?: Record<string, string>; limit?: number; after?: string } & CallOptions): Promise<ExecutionPage>;
  artifacts(id: string, options?: CallOptions): Promise<ArtifactList>;
  /** The artifact's bytes, streamed (the fetch body). */
  artifact(id: string, name: string, options?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  openapi(options?: CallOptions): Promise<Record<string, any>>;
  /** Reports the run's progress (its own token only); id defaults to OUTRUN_EXECUTION_ID. */
  progress(percent?: number | null, message?: string | null, options?: { id?: string } & CallOptions): Promise<Progress>;
}

/** From inside a run: Outrun.fromRunEnv().progress(percent, message). */
export declare function progress(percent?: number | null, message?: string | null, options?: { id?: string } & CallOptions): Promise<Progress>;

export interface OutrunErrorOptions {
  status?: number;
  code?: string;
  guidance?: string;
  retryAfter?: number;
  body?: unknown;
  cause?: unknown;
}

export declare class OutrunError extends Error {
  constructor(message: string, options?: OutrunErrorOptions);
  /** HTTP status; undefined when there was no answer. */
  readonly status?: number;
  /** The API's stable code: execution_not_found, invalid_request, ...; 'unreachable' without an answer. */
  readonly code: string;
  readonly guidance?: string;
  /** Seconds, from Retry-After (429, 503). */
  readonly retryAfter?: number;
  readonly body?: unknown;
}
export declare class InvalidRequestError extends OutrunError {}
export declare class IdentityRequiredError extends OutrunError {}
export declare class ForbiddenError extends OutrunError {}
export declare class NotFoundError extends OutrunError {}
export declare class ConflictError extends OutrunError {}
export declare class RateLimitedError extends OutrunError {}
export declare class UnavailableError extends OutrunError {}
export declare class UnreachableError extends OutrunError {}

export default Outrun;
