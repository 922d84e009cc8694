# The container bootstrap: the main process of every Outrun container (docker-init's child),
# run as /bin/bash -c <this text> outrun-bootstrap BACKSTOP LEASE [IDLE] by
# io.outrun.sandbox.docker.ContainerRecipe. It reads the run (header, environment, command) from
# stdin, drops to the unprivileged user for the command, and stays root as its kill switch.
#
# Assumes:
#   bash 5 (read -N, printf '%(%s)T', ${@:3}, process substitution; the sandbox image has 5.2);
#   run as root (0:0) with only CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL, docker-init as
#   PID 1, /tmp a root-owned sticky tmpfs (its files cannot be replaced by the command, 10001);
#   /usr/bin/setpriv (util-linux: required, the bootstrap fails closed without it);
#   /usr/bin/script (util-linux: only for a terminal, mode 2); /usr/bin/timeout (coreutils:
#   optional backstop when there is no lease file); head, stat (coreutils: only past 65536
#   bytes), mkfifo (only with stdin open), sleep and socat (only for the API relay, $4) and
#   /bin/cat on PATH. The environment is the
#   container's defaults only (PATH, HOME, NO_COLOR, TERM, PAGER): the run's variables never
#   reach this root shell.
#
# The caller passes:
#   $1  the backstop in seconds: the run is killed that long after its start whatever else
#       happens; '' for a pooled container (its backstop then comes in the header).
#   $2  the path of the run's lease file inside the container (read-only bind mount), '' without
#       one. Its first line is the moment (epoch seconds) after which the lease has lapsed.
#   $3  for a pooled container only: how long to wait for the run (seconds) before giving up;
#       '' for a fresh one.
#   $4  the API relay's port ('' for none): the container's bridge socket,
#       /run/outrun-api/api.sock (ContainerRecipe.API_SOCKET), served on 127.0.0.1:$4, which the
#       run's OUTRUN_API names (issue 31; Limits.API_RELAY_PORT). Started first, as the command's
#       user, and waited for (up to 1 s): a pooled container's before it waits for its run, so a
#       run pays nothing for it; socat (optional: without it the run's requests are refused)
#       connects to the socket only when a connection comes, so a pooled container's socket
#       may be linked in later.
#   stdin, in this order:
#     a header line "n b e i": the command's byte count n; the backstop b (0 when it came as
#     $1); the environment's byte count e; the stdin mode i: 0 none (/dev/null), 1 a pipe its
#     owner writes to, 2 a terminal. A fresh container's header is "n 0 e i".
#     e bytes: the run's environment as `export NAME='value'` lines (sourced only by the
#     dropped command's first bash, never here).
#     n bytes: the command.
#     with i = 1 or 2, frames: a decimal byte count and a newline, then that many bytes, copied
#     to the command's stdin; the frame 0 (or the end of the attach) closes it (see StdinFrames:
#     docker-java never half-closes a hijacked stdin).
#
# Exits with the command's status; 125 when the run did not arrive whole or the image lacks
# what it needs (ContainerRecipe.BOOTSTRAP_FAILED); 137 when the lease had lapsed before the
# start, or the kill switch killed the run (lease lapsed, or backstop reached).
#
# Its own variables (n b e i ol s ef d now end k p st) live only in this root shell: the
# command's bash starts from the environment file, so a run's variable of the same name keeps
# its value.

# The header: the command's byte count; from a pooled container's run also its backstop
# (the container was started before its run was known) and the byte count of the
# run's environment, sent as `export` lines ahead of the command (a pooled container's
# own environment was fixed at its creation). A pooled container waits here for its
# run; one of a node that is gone gives up after POOL_IDLE_S ($3; no lease to watch yet).
# The fourth field, i, is the run's stdin: 0 /dev/null, 1 a pipe its owner writes to, 2 a
# terminal (see the relay below). A fresh container's header is "n 0 e i".
# The API relay ($4), as the command's user (as when it was the command's first line): out
# of this shell's children (docker-init reaps it), its output nowhere.
if [ -n "$4" ] && [ -x /usr/bin/setpriv ] && command -v socat >/dev/null; then
  (exec /usr/bin/setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all socat \
    "TCP-LISTEN:$4,bind=127.0.0.1,fork,reuseaddr" UNIX-CONNECT:/run/outrun-api/api.sock </dev/null >/dev/null 2>&1 &)
  for k in {1..100}; do (: </dev/tcp/127.0.0.1/"$4") 2>/dev/null && break; sleep 0.01; done; k=
fi
read -r ${3:+-t $3} n b e i || { echo 'outrun: no command received' >&2; exit 125; }
[ "${b:-0}" = 0 ] || set -- "$b" "$2"
# Fail closed: without setpriv the command would run as root.
[ -x /usr/bin/setpriv ] || { echo 'outrun: the image needs /usr/bin/setpriv (util-linux) to run the command as an unprivileged user' >&2; exit 125; }
# From the header to the command's first instruction with bash builtins only: every
# process started here (head, stat, mkfifo, timeout) cost a pooled run's start 2 ms on
# a quiet machine and 20-50 ms on a loaded one, 8 of them in all. Byte counts hold
# whatever the run's locale: LC_ALL=C while reading (restored before the command runs).
# read -N reads a pipe a byte per call, so past 65536 bytes head -c is cheaper.
# A NUL byte cannot live in a bash variable: such a command fails the count, never runs
# cut (the API refuses NUL, and so does ContainerRecipe.refuseNul for direct callers).
[ "${LC_ALL+x}" = x ] && ol=$LC_ALL; LC_ALL=C
got() { s=; [ "$1" -gt 0 ] 2>/dev/null || return 0
  if [ "$1" -le 65536 ]; then IFS= read -r -N "$1" s; [ "${#s}" = "$1" ]; return; fi
  head -c "$1" > "$2" && [ "$(stat -c %s "$2")" = "$1" ]; }
# The run's environment goes to a file that only the dropped command reads (see START):
# nothing of it may reach this root shell or what it execs (BASH_ENV, LD_PRELOAD, PATH).
ef=/tmp/.outrun-env; umask 022
got "${e:-0}" "$ef" || { echo 'outrun: the environment arrived truncated' >&2; exit 125; }
[ "${e:-0}" -gt 65536 ] 2>/dev/null || printf '%s' "$s" > "$ef"
if [ "$n" -le 65536 ] 2>/dev/null; then got "$n" && printf '%s' "$s" > /tmp/.outrun-command
else got "$n" /tmp/.outrun-command; fi || { echo 'outrun: the command arrived truncated' >&2; exit 125; }
s=; if [ -n "${ol+x}" ]; then LC_ALL=$ol; else unset LC_ALL; fi
# A run with stdin open gets a fifo the relay below fills from the attach (readable by
# the command, never writable). A terminal needs script.
case ${i:-0} in 0) ;; 1|2) [ "$i" = 1 ] || [ -x /usr/bin/script ] || { echo 'outrun: a terminal (tty) needs /usr/bin/script (util-linux) in the image' >&2; exit 125; }
  mkfifo -m 644 /tmp/.outrun-in || { echo 'outrun: cannot make the stdin pipe' >&2; exit 125; };;
  *) echo 'outrun: unknown stdin mode' >&2; exit 125;; esac
# First look at the lease ($2) before the command starts: a run whose lease lapsed
# already (its worker paused between claim and start, a start slower than the lease)
# never starts.
if [ -n "$2" ]; then d=; read -r d < "$2"; printf -v now '%(%s)T' -1
  if [ -n "$d" ] && [ "$now" -gt "$d" ] 2>/dev/null; then exit 137; fi; end=$((now + $1)); fi
# The relay (stdin open): each frame from the attach, a decimal byte count and a
# newline, then that many bytes (head -c reads no more than it writes), goes to the
# command's stdin; the frame 0 (or the attach's end) closes it. Frames, since
# docker-java never half-closes stdin (see StdinFrames). Without stdin: /dev/null. The
# mode then travels as $3, which no variable of the run's environment can change.
if [ "${i:-0}" = 0 ]; then exec 0</dev/null; else
  ( exec 2>/dev/null; while IFS= read -r k && [ "$k" -gt 0 ] 2>/dev/null; do head -c "$k" || exit 0; done > /tmp/.outrun-in ) <&0 &
  exec 0</tmp/.outrun-in; fi
set -- "$1" "$2" "${i:-0}"
# START: what the dropped command's first bash runs: the run's environment, then the
# command's own bash (so that BASH_ENV and the like act as in a fresh bash). With
# stdin open the command reads an anonymous pipe of its own (a cat from the fifo): a
# fifo would block /dev/stdin reopened after its writer left, a pipe answers EOF.
if [ "$3" = 1 ]; then printf '%s\n' 'exec 0< <(exec /bin/cat); . /tmp/.outrun-env; exec /bin/bash /tmp/.outrun-command' > /tmp/.outrun-start
else printf '%s\n' '. /tmp/.outrun-env; exec /bin/bash /tmp/.outrun-command' > /tmp/.outrun-start; fi
# The command as the unprivileged user (util-linux setpriv: 10001 with no capabilities, not
# even in its bounding set; no_new_privs, set by Docker, stays); this bootstrap (and the relay)
# stay root.
if [ "$3" = 2 ]; then set -- "$1" "$2" /usr/bin/setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all /usr/bin/script -qfec '/bin/bash /tmp/.outrun-start' /dev/null
else set -- "$1" "$2" /usr/bin/setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all /bin/bash /tmp/.outrun-start; fi
# Without a lease file, coreutils' timeout (root, the command's parent) is the
# backstop; an image without it runs without the backstop rather than not at all.
if [ -z "$2" ]; then if [ -x /usr/bin/timeout ]; then exec /usr/bin/timeout -s KILL "$1" "${@:3}"; fi
  "${@:3}"; exit; fi
# The kill switch: this very process, the container's main one (docker-init's child),
# is the watchdog; the command runs as its grandchild. Whatever kills the watchdog
# (the memory killer when the command fills tmpfs; nothing else can: root, and the
# command has no capabilities) ends the container with it: fail-closed. Once the
# moment written in the lease file passes, the worker has stopped confirming the
# lease (dead, paused, cut off from the database) and another node may soon run the
# next attempt, so everything of this run is killed from inside, whatever state the
# worker is in. The same loop is the backstop deadline ($1 seconds from now). Each
# second with builtins only (no fork: a fork bomb's pids limit cannot stop it): the
# sleep is read -t 1 on a pipe only root holds (fd 7), on which the runner, a root
# subshell that waits for the command, writes its exit status the moment it ends.
# A missing or half-written lease file is read again a second later. A terminal's
# script is thus never the process that forked the relay (util-linux #2562: it spins).
exec 7<> <(:)
( "${@:3}" 7>&-; echo "$?" >&7 ) <&0 &
exec 0</dev/null
# read -t reads a pipe a byte at a time: a timeout between the status's digits and its
# newline keeps what it read in st (p collects it), so the exit is never cut.
p=; while :; do if read -r -t 1 -u 7 st; then exit "$p$st"; fi; p=$p$st; d=; read -r d < "$2"; printf -v now '%(%s)T' -1
  if { [ -n "$d" ] && [ "$now" -gt "$d" ]; } 2>/dev/null || [ "$now" -ge "$end" ]; then kill -KILL -1; exit 137; fi; done
