package io.outrun.core.schedule;


/**
 * What a JobRunr recurring job of Outrun stands for: one schedule of one owner. Each firing is a
 * job with this lambda ({@code f -> f.fire(owner, name)}), which names the schedule on the
 * dashboard. Nothing runs it: JobRunr's servers are given no job ({@code core.books.JobRunrStorage});
 * the fleet's sweeper turns each enqueued firing into an execution ({@code Firings}).
 */
public interface ScheduleFiring {
    void fire(String owner, String name) throws Exception;
}
