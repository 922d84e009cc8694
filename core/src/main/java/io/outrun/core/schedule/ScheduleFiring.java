package io.outrun.core.schedule;


/**
 * What a JobRunr recurring job of Outrun stands for: one schedule of one owner. Each firing is a
 * job with this lambda ({@code f -> f.fire(owner, name)}), which names the schedule on the
 * dashboard. Nothing runs it: JobRunr's servers are given no job and no recurring job
 * ({@code core.books.JobRunrStorage}); Outrun's clock fires the schedule and writes the firing's
 * job, ended ({@code worker.schedule.ScheduleClock}).
 */
public interface ScheduleFiring {
    void fire(String owner, String name) throws Exception;
}
