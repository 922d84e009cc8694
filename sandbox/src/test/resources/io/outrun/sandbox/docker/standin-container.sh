# A stand-in for a container, for BootstrapScriptTest: the first process of fresh user, mount
# and PID namespaces (unshare --user --map-root-user --mount --pid --fork --mount-proc), as
# docker-init is in a container: it starts the bootstrap as its child and exits with its status;
# its end kills whatever is left in the namespace.
#
# Assumes: bash; mount (util-linux); run as the namespaces' root.
# The caller passes: $1 the stand-in for /usr/bin/setpriv ('' : none, as in an image without
# util-linux); $2 the lease file to mount read-only at /run/outrun-lease ('' : none); $3 the pids
# limit (ulimit -u; '' : none); then the bootstrap's argv (ContainerRecipe.bootstrap).
set -e
if [ -n "$1" ]; then mount --bind "$1" /usr/bin/setpriv; else mount --bind /dev/null /usr/bin/setpriv; fi
mount -t tmpfs tmpfs /run
if [ -n "$2" ]; then : > /run/outrun-lease; mount --bind "$2" /run/outrun-lease; fi
# /tmp as the container has it: a tmpfs, sticky and open to all.
mount -t tmpfs -o mode=1777 tmpfs /tmp
if [ -n "$3" ]; then ulimit -u "$3"; fi
shift 3
set +e
"$@"
exit
