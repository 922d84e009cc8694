/**
 * The Docker backend of the sandbox: one locked-down container per run, driven through
 * docker-java behind {@link io.outrun.sandbox.Sandbox} and {@link io.outrun.sandbox.Run}.
 *
 * <pre>
 *  start():  create ──► attach (stdin carries the command) ──► start ──► wait stream armed
 *  running:  output frames ──► BoundedCapture per stream (fixed memory)
 *  stop:     own exit │ deadline in awaitExit (kill) │ kill() (cancel, lost lease)
 *            │ from outside: engine shutdown, docker stop/kill/rm -f ──► Exit.lostTo (EngineWatch's events)
 *  engine away: wait for it (engineGrace) ──► running: re-attach + gap marker │ stopped: its exit
 *  close():  streams closed, container force-removed
 *  leftovers of a dead worker: removeLeftovers(policy) at start and periodically
 * </pre>
 */
package io.outrun.sandbox.docker;
