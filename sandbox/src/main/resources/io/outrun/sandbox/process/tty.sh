# The terminal of a host-process run with "tty": true: written as the run's script file, which
# wrapper.sh sources with $0 that file's path; the command itself is the file beside it,
# "$0.cmd" (ProcessSandbox.ttyCommand). Runs only in bubblewrap (ProcessSandbox refuses a
# terminal without it: script's session would escape a kill of the run's group).
#
# Assumes: bash (any); /usr/bin/script (util-linux, checked by ProcessSandbox before the run);
# a path without a single quote (the sandbox's own scratch directory).
# The caller passes: nothing but $0.
#
# util-linux script gives the command a pseudo-terminal: stdin and output through it, echo on
# as a terminal has it, the command's exit status its own (-e); -q: no start and end lines,
# -f: output flushed at once, the typescript to /dev/null.
exec /usr/bin/script -qfec "/bin/bash '$0.cmd'" /dev/null
