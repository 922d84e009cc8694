# The run wrapper of the process sandbox: the run's own bash, before its command, and then the
# command itself (sourced into this same bash). Written once per sandbox to a file and run as
# setsid /bin/bash <file> SCRIPT LEASE PIDFILE, or, as a spare, setsid /bin/bash <file> with no
# arguments, by io.outrun.sandbox.process.ProcessSandbox (spares: SpareShells).
#
# Assumes:
#   bash 5 (BASH_ARGV0, checked below: an older bash exits 126; mapfile -d '', read -N,
#   printf '%(%s)T'); Linux /proc/$$/stat; builtins only (no other tool on the way to the
#   command); setsid made this bash the leader of a new session and process group, which the
#   node's watchdog (watchdog.sh) and the worker kill as one.
#
# The caller passes, spawned:
#   $1  the command's script file; $2 the lease file ('' without one; its first line is the
#   moment, epoch seconds, after which the lease has lapsed); $3 the pid file to write.
#   The environment is the run's own (ProcessSandbox.baseEnvironment and its variables), the
#   working directory its workdir, stdin /dev/null or the run's pipe. _outrun_relay, when set
#   (runs in bubblewrap with an API socket, and spares made for them), is "PORT:SOCKET": the
#   wrapper serves SOCKET on 127.0.0.1:PORT with socat (the run's way to $OUTRUN_API, issue 31;
#   ProcessSandbox.withApiRelay) before anything else, and waits until the port answers (up to
#   1 s): a spare, before it waits for its run, so that a run handed to it pays nothing for
#   the relay; a spawned run, before its command.
# As a spare (no arguments), on stdin: four decimal digits, the byte length of a go file's
#   path, then the path (nothing else: end of file before any byte means not needed). The go
#   file holds NUL-ended fields: SCRIPT, LEASE, PIDFILE, the workdir ('' for the worker's own),
#   then name and value pairs of the run's environment, ended by an empty name.
#
# Writes $3 (or the go file's PIDFILE): "<pid> <start time> <lease file>" (the start time is
# field 22 of /proc/<pid>/stat), over the placeholder the worker wrote before the spawn.
# Exits with the command's status; 137 when the lease had already lapsed at the first look (the
# command never ran); 126 when the run cannot start guarded (pid file, malformed go file, old
# bash); 0 at once for a spare that was not needed.
#
# The run's own bash (setsid made it the leader of a new session and process group),
# before its command, run as a script file. A lease already lapsed at this first look means the
# worker stalled between claim and start and another node may be running the next attempt: the
# command never runs (137, as killed). Otherwise it writes the pid file so that the node's
# watchdog and the leftover clean-up know the run, then runs the script in this same bash (`.`,
# not a second bash: a process per run less) with $0 the script and no arguments, as
# `bash script` had them. One difference remains: a top-level `return` ends the script with its
# status where `bash script` printed an error and went on. Its own variables are named
# _outrun_* and unset before the command (ProcessSandbox.exportable keeps a run from setting
# one).
#
# A spare is started ahead of need: it waits on stdin for the path of its run's go file, and
# leaves quietly at end of file (not needed, or its worker is gone). The go file, not the pipe:
# anything bash printed meanwhile, such as a locale warning, would fill its stderr before the
# run's pumps exist; mapfile reads it whole in one system call. Then stdin becomes /dev/null, as
# a spawned run's is, SECONDS starts at 0, and it goes on as a spawned run.

# The API relay (see above): in the background, out of the wrapper's process tree (a subshell
# that leaves it to the PID namespace's first process, which ends it with the run), its output
# nowhere; socat connects to SOCKET only when a connection comes, so a spare's socket may
# appear (hard-linked) later.
if [ -n "$_outrun_relay" ]; then
  (exec socat "TCP-LISTEN:${_outrun_relay%%:*},bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:${_outrun_relay#*:}" </dev/null >/dev/null 2>&1 &)
  for _outrun_i in {1..100}; do (: </dev/tcp/127.0.0.1/"${_outrun_relay%%:*}") 2>/dev/null && break; sleep 0.01; done
fi
unset _outrun_relay _outrun_i
# Field 22 of its stat, the start time: exec keeps it, a reused pid does not have it.
# Read first, so that a spare has it before its run comes.
_outrun_st=; read -r _outrun_st < /proc/$$/stat; _outrun_st=(${_outrun_st##*) })
if [ $# = 0 ]; then
  # Four digits, the path's length in bytes, then the path: read -N takes each in one
  # system call (read -d reads a pipe a byte per call), counting bytes under LC_ALL=C
  # whatever bash's own default locale. End of file before any byte: not needed
  # (closed, or its worker died meanwhile), leave quietly. Anything else malformed is
  # a run that must not look like a success: 126. (A case, not [[ =~ ]], which would
  # leave BASH_REMATCH set for the command.)
  LC_ALL=C IFS= read -r -N 4 _outrun_g || { [ -z "$_outrun_g" ] && exit 0; exit 126; }
  case $_outrun_g in [0-9][0-9][0-9][0-9]) ;; *) exit 126;; esac
  LC_ALL=C IFS= read -r -N $((10#$_outrun_g)) _outrun_g || exit 126
  exec 0</dev/null
  # The go file is written whole before its path is sent; a short one never runs: four
  # fields, name and value pairs, and the empty name that ends them.
  mapfile -d '' -t _outrun_a < "$_outrun_g" || exit 126
  _outrun_n=${#_outrun_a[@]}
  [ "$_outrun_n" -ge 5 ] && [ $(( (_outrun_n - 5) % 2 )) = 0 ] && [ -z "${_outrun_a[_outrun_n - 1]}" ] || exit 126
  for (( _outrun_i = 4; _outrun_i < _outrun_n - 1; _outrun_i += 2 )); do
    export "${_outrun_a[_outrun_i]}=${_outrun_a[_outrun_i + 1]}"
  done
  # -P: the physical path, as a spawned bash's $PWD is; OLDPWD as a fresh bash has it
  # (exported, no value).
  if [ -n "${_outrun_a[3]}" ]; then cd -P -- "${_outrun_a[3]}" || exit 126; unset OLDPWD; declare -x OLDPWD; fi
  set -- "${_outrun_a[0]}" "${_outrun_a[1]}" "${_outrun_a[2]}"
  unset _outrun_a _outrun_n _outrun_i _outrun_g; SECONDS=0
fi
if [ -n "$2" ]; then
  _outrun_d=; { read -r _outrun_d < "$2"; } 2>/dev/null; printf -v _outrun_now '%(%s)T' -1
  if [ -n "$_outrun_d" ] && [ "$_outrun_now" -gt "$_outrun_d" ] 2>/dev/null; then exit 137; fi
fi
if ! { printf '%s %s %s\n' "$$" "${_outrun_st[19]}" "$2" > "$3"; } 2>/dev/null; then
  printf 'outrun: cannot write the pid file %s; the run does not start unguarded\n' "$3" >&2; exit 126
fi
_outrun_s=$1; BASH_ARGV0=$1; set --
if [ "$0" != "$_outrun_s" ]; then echo 'outrun: the process sandbox needs bash 5 or later' >&2; exit 126; fi
unset _outrun_d _outrun_now _outrun_s _outrun_st; . "$0"
