-- Issue 30: each execution's W3C trace context, so that the spans of its later steps (on any
-- node) join the trace its submit began or joined, and the command gets TRACEPARENT. The header
-- texts as received or made (io.outrun.trace.TraceContext); null: the submit had no trace.
ALTER TABLE executions
  ADD COLUMN traceparent text CHECK (traceparent IS NULL OR length(traceparent) = 55),
  ADD COLUMN tracestate text CHECK (tracestate IS NULL OR length(tracestate) <= 512);
