/**
 * Files in, artifacts out, the full output kept, and named workspaces, all in PostgreSQL in
 * chunks of at most {@link io.outrun.core.files.ChunkStream#CHUNK} bytes, so any API node serves any of
 * them and no value grows without bound. Limits: {@link io.outrun.core.files.FilesConfig}.
 *
 * <p>Worker writes (artifacts, a workspace's save) are fenced on the execution's lease epoch, as
 * every worker write is: checked when the write starts and again before it commits, without a row
 * lock (a lock on the execution's row would hold up its node's heartbeat for as long as an upload
 * lasts). A stale attempt that slips between the two checks is overwritten by the next attempt,
 * which replaces everything of the execution when it collects.
 */
package io.outrun.core.files;
