package io.outrun.client.wire;

import java.util.List;

/**
 * A page of an owner's executions, newest first.
 *
 * @param next opaque cursor for the following page ({@code ?after=}), null on the last page
 */
public record ExecutionPage(List<ExecutionSummary> executions, String next) {
}
