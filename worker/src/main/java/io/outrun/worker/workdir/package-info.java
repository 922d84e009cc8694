/**
 * The worker's side of files across the sandbox's edge: what a claimed execution brings into its
 * workdir ({@link io.outrun.worker.workdir.WorkdirBridge#prepare}) and what is kept of it once its command
 * ended, whatever ended it ({@link io.outrun.worker.workdir.WorkdirBridge#collect}): artifacts, the whole
 * output of a stream that outgrew its bound, the workspace. Collection happens while the attempt
 * still holds its lease (before its end is written), so a client that sees the end sees them too.
 */
package io.outrun.worker.workdir;
