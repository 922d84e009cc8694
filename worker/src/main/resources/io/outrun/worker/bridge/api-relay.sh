# The API relay of a container run (issue 31; ApiAccess, when its node has an API bridge): put
# in front of the run's command, on the command's own first line (before the egress relay when
# the run has both), so that bash's line numbers in the command's errors stay the user's. The
# container has no network: its attempt's bridge socket is at /run/outrun-api/api.sock
# (ApiBridge.CONTAINER_SOCKET; the directory is the mount); this serves it on 127.0.0.1:7171
# (ApiBridge.CONTAINER_PORT, which OUTRUN_API names), in the background, then waits up to 1 s
# until the port answers, so that the command's first request does not race the relay's start.
# socat's own output goes nowhere: the run's output is the command's.
#
# Assumes: bash (/dev/tcp, subshells); socat in the image (the default image has it; without it
# the command runs all the same and its requests to $OUTRUN_API are refused); the socket mounted
# at that path.
# The caller passes: nothing. It reads the one line of code below (BashScript.oneLine) and puts
# the command after it; the code must stay one line, and it leaves no variable behind (_i unset).
(exec socat TCP-LISTEN:7171,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/outrun-api/api.sock </dev/null >/dev/null 2>&1 &); for _i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do (: </dev/tcp/127.0.0.1/7171) 2>/dev/null && break; sleep 0.05; done; unset _i;
