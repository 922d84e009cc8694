/**
 * Files across the sandbox's edge: input files and restored workspaces written into a run's
 * workdir before its command starts ({@link io.outrun.sandbox.files.RunFiles}), and the workdir
 * read back after it ended ({@link io.outrun.sandbox.files.WorkdirVisitor}), one entry at a time.
 *
 * <p>Both directions travel as tar streams, the Docker engine's archive format: the same tar goes
 * into a fresh container, a pooled one or a host directory. Paths are confined to the workdir:
 * entries with {@code ..}, absolute names or links are never written, and links found in a
 * workdir are reported as links, never followed.
 */
package io.outrun.sandbox.files;
