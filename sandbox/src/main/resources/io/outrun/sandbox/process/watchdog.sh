# The node watchdog of the process sandbox: every host run's kill switch and reaper, one per
# node, in a session of its own so that it outlives the worker. Run as
# setsid /bin/bash -c <this text> outrun-process-watch RUNS TAG by
# io.outrun.sandbox.process.NodeWatchdog.
#
# Assumes:
#   bash 4 (declare -A, printf '%(%s)T', [[ =~ ]]; the host's bash 5 in practice); Linux
#   /proc/<pid>/stat; builtins only each second (read -t 1 is the sleep: no process per
#   second), except sleep(1) in the rare case below. The environment is PATH alone; stdout and
#   stderr are discarded (never a pipe to the worker: a dead worker's pipe would end the
#   watchdog at its first write).
#
# The caller passes:
#   $1  the directory of pid files; $2 this node's tag: its runs' files are $1/*.$2.pid, each
#       "<pid> <start time> <lease file>" (written by wrapper.sh) or the worker's placeholder
#       "0 0 <lease file>" (written before the spawn). The lease file's first line is the
#       moment (epoch seconds) after which the lease has lapsed.
#   stdin: a pipe from the worker, one command a line: "k <pgid>" kills what is left of the
#       group of a run whose leader ended (a bash that exited may leave background children).
#       End of file: the worker is gone (or closed the sandbox).
#
# Each second it kills the whole process group of every run whose lease has lapsed: the worker
# has stopped confirming the lease (dead, paused, cut off from the database) and another node
# may run the execution's next attempt. Once stdin has ended it stays on guard while any of its
# runs' groups lives, and exits 0 once none does. Once the worker's pipe has closed, it sleeps
# on that same pipe opened read-write here, which never ends (sleep 1 if that fails).

shopt -s nullglob; declare -A gone; up=1; last=; nap=
while :; do
  if [ $up = 1 ]; then
    if read -r -t 1 op arg; then
      # Checked before the deadline pass below, so that the group of a run that ended is
      # killed now, not a second later.
      if [ "$op" = k ]; then kill -KILL -- "-$arg" 2>/dev/null; fi
    elif [ $? -le 128 ]; then
      up=0; exec 0<>/proc/self/fd/0 || nap=1
    fi
  elif [ -n "$nap" ]; then sleep 1
  else read -r -t 1 _
  fi
  printf -v now '%(%s)T' -1
  [ "$now" = "$last" ] && continue
  last=$now; live=0
  for f in "$1"/*."$2".pid; do
    [ -n "${gone[$f]}" ] && continue
    p=; st=; l=; read -r p st l < "$f" 2>/dev/null
    d=; if [ -n "$l" ]; then read -r d < "$l" 2>/dev/null; [[ $d =~ ^[0-9]+$ ]] || d=; fi
    # The worker's placeholder: the run is being spawned and writes its pid soon. It keeps
    # the watchdog (whose worker may have died just now) on guard until 2 s past the lease.
    if [ "$p" = 0 ]; then if [ -n "$d" ] && [ "$now" -le $((10#$d + 2)) ]; then live=1; fi; continue; fi
    [[ $p =~ ^[0-9]+$ ]] && [ "$p" -gt 1 ] || continue
    # Judged by its group, not its leader: a leader that exec'd or ended with children
    # left is still the run. Group gone: once the worker is gone too, nothing deletes the
    # file; remember it, so that a pid handed out again is never taken for this run.
    if ! kill -0 -- "-$p" 2>/dev/null; then [ $up = 1 ] || gone[$f]=1; continue; fi
    # A live leader with another start time: the pid was handed out again, not our run.
    s=; read -r s < "/proc/$p/stat" 2>/dev/null
    if [ -n "$s" ] && [ -n "$st" ]; then a=(${s##*) }); if [ "${a[0]}" != Z ] && [ "${a[19]}" != "$st" ]; then gone[$f]=1; continue; fi; fi
    live=1
    if [ -n "$d" ] && [ "$now" -gt "$d" ]; then
      kill -KILL -- "-$p" 2>/dev/null; [ $up = 1 ] || gone[$f]=1
    fi
  done
  if [ $up = 0 ] && [ $live = 0 ]; then exit 0; fi
done
