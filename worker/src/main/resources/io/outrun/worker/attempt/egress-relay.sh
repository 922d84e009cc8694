# The egress relay of a container run with "network": "egress" (WorkerNode.spec): put in front of
# the run's command, on the command's own first line, so that bash's line numbers in the
# command's errors stay the user's. The container has no network: its attempt's proxy socket is
# mounted at /run/outrun-egress.sock (EgressProxy.CONTAINER_SOCKET); this serves it on
# 127.0.0.1:3128 (EgressProxy.CONTAINER_PORT, which HTTP_PROXY and HTTPS_PROXY name), in the
# background, then waits up to 1 s until the port answers, so that the command's first request
# does not race the relay's start. socat's own output goes nowhere: the run's output is the
# command's.
#
# Assumes: bash (/dev/tcp, subshells); socat in the image (the default image has it; an image of
# an operator's own needs it for egress runs); the socket mounted at that path.
# The caller passes: nothing. It reads the one line of code below (BashScript.oneLine) and puts
# the command after it; the code must stay one line, and it leaves no variable behind (_i unset).
(exec socat TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/outrun-egress.sock </dev/null >/dev/null 2>&1 &); for _i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do (: </dev/tcp/127.0.0.1/3128) 2>/dev/null && break; sleep 0.05; done; unset _i;
